"""Run the doctests of the extraction and ingestion modules (pytest only doctests kgr/gauge by default)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kgr.extract",
    "kgr.extract.rules",
    "kgr.extract.phrases",
    "kgr.extract.ends",
    "kgr.extract.lexicon",
    "kgr.extract.sections",
    "kgr.extract.mentions",
    "kgr.extract.carried",
    "kgr.extract.notices",
    "kgr.extract.guidance",
    "kgr.extract.llm_client",
    "kgr.extract.llm_prompt",
    "kgr.ingest.chunking",
    "kgr.text.sentences",
    "kgr.text.headings",
    "kgr.text.parse",
    "kgr.ingest.titles",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
