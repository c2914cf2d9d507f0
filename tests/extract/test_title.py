"""The rules extractor given the document's title (issue 32, second sample): the title names a
sentence-initial "It" / "This package", the missing subject of "Add support for …" and of a
"License: …" line; relative clauses and "<X> support is provided by Y" stay unread.

These tests check the reading rules, so the extractor runs with ``abstain=False``: abstention by path
(issue 32, seventh round) is tested in ``test_abstention.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.extract.rules import RulesExtractor
from kgr.model.schema import load_schema

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "data" / "extract" / "schema.json")


def triples(text: str, title: str | None) -> set[tuple[str, str, str]]:
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, title=title)
    return {(p.subject, rel, p.object) for rel, ps in r.kg.relations.items() for p in ps}


@pytest.mark.parametrize("text, expected", [
    ("It is written in portable C.", {("jq", "WRITTEN_IN", "C")}),
    ("This package supports Python 3.", {("jq", "SUPPORTS", "Python")}),
    ("- Add support for Python 3.13", {("jq", "SUPPORTS", "Python")}),
    ("* License: MIT or Apache 2, your choice", {("jq", "LICENSED_UNDER", "MIT"),
                                                 ("jq", "LICENSED_UNDER", "Apache-2.0")}),
])
def test_the_title_is_the_implicit_subject(text, expected):
    assert triples(text, "jq") == expected
    assert triples(text, None) == set()  # without a title nothing is carried


@pytest.mark.parametrize("text", [
    "- Drop support for Python 3.8",
    "It is a Python library.",  # a description of "it", not a relation of the title
    "It does not support Python 2.",
])
def test_the_title_carries_no_negated_or_descriptive_sentence(text):
    assert triples(text, "jq") == set()


def test_a_relative_clause_is_not_the_earlier_names_predicate():
    text = "Restrict default-jdk and maven-repo-helper build dependencies to architectures that support Java."
    assert not any(rel == "SUPPORTS" for _, rel, _ in triples(text, "gettext"))


def test_support_provided_by_is_not_the_providers_support():
    assert triples("SSL support is provided by OpenSSL.", None) == set()
