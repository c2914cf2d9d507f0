"""The guesses' token kinds are remembered per word list (kgr.extract.guesses; issue 33's wave time)."""

from __future__ import annotations

import pytest

from kgr.extract import lexicon
from kgr.extract.guesses import find_guesses

SENTENCE = "Flask uses WERKZEUG today."


def _guessed(monkeypatch: pytest.MonkeyPatch, with_lexicon: bool) -> list[str]:
    if with_lexicon:
        monkeypatch.delenv("KGR_NO_LEXICON", raising=False)
    else:
        monkeypatch.setenv("KGR_NO_LEXICON", "1")
    lexicon._frequencies.cache_clear()  # noqa: SLF001 - the word list is read once per process
    return [g.name for g in find_guesses(SENTENCE, SENTENCE, [], {0}, {0})]


def test_a_remembered_kind_follows_the_word_list_in_use(monkeypatch):
    """A shouted word is a name only when the word list knows it is no word ("WERKZEUG"); switching
    the list in one process (as scripts/bench_extract.py does) must not reuse the other list's kinds."""
    try:
        if not lexicon.has_lexicon():
            pytest.fail("the nlp extra (pyspellchecker) is part of the test environment")
        with_list = _guessed(monkeypatch, True)
        without = _guessed(monkeypatch, False)
        again = _guessed(monkeypatch, True)
    finally:
        monkeypatch.undo()
        lexicon._frequencies.cache_clear()  # noqa: SLF001
    assert "WERKZEUG" in with_list and again == with_list
    assert "WERKZEUG" not in without
