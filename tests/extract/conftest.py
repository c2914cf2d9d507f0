"""Fixtures for the extractor tests: the LLM stub server (tests/support/llm_stub.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# With --import-mode=importlib pytest does not put the repository root on sys.path; the shared test
# helpers live in the `tests.support` package there.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.llm_stub import llm_stub, llm_stub_factory  # noqa: E402,F401


import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def corenlp():
    """A real Stanford CoreNLP server for the session (port ``KGR_TEST_CORENLP_PORT``, default 17942; jars
    fetched with Maven on first use, as ``kgr corenlp install`` does in CI), and a client on it."""
    from kgr.runtime.corenlp import CoreNLPConfig, CoreNLPServer
    from kgr.runtime.corenlp_client import ParseClient

    server = CoreNLPServer(CoreNLPConfig(port=int(os.environ.get("KGR_TEST_CORENLP_PORT", "17942"))))
    server.start()
    try:
        yield ParseClient(server.config.url)
    finally:
        server.stop()
