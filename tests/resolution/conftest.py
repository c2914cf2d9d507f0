"""Fixtures for the resolution tests: the LLM stub server (tests/support/llm_stub.py)."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.llm_stub import llm_stub, llm_stub_factory  # noqa: E402,F401
