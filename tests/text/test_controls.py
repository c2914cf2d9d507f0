"""Controls and bidi overrides (kgr.text.controls): refused in a reviewer's name, escaped when
kgr prints stored text (issue 31, item 8)."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kgr.text.controls as controls
from kgr.text.controls import BIDI_CONTROLS, escape_unsafe, unsafe_character

HOSTILE = ["\x1b[2J", "\x00", "\n", "\r", "\t", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e", "\u2066",
           "\u200f", "\u061c", "\ud800"]


@pytest.mark.parametrize("bad", HOSTILE)
def test_each_kind_is_found(bad: str) -> None:
    assert unsafe_character(f"ada{bad}lovelace") == bad[0]
    shown = escape_unsafe(f"ada{bad}lovelace")
    assert unsafe_character(shown) is None and shown.startswith("ada\\") and shown.endswith("lovelace")


@pytest.mark.parametrize("fine", ["Ada Lovelace", "Zoë Ünal", "محمد", "मेरा\u200dनाम", "علی\u200cرضا", "李白", "🙂", "a\\x1b"])
def test_names_people_have_are_left_alone(fine: str) -> None:
    assert unsafe_character(fine) is None and escape_unsafe(fine) == fine


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters() | st.sampled_from([h[0] for h in HOSTILE] + sorted(BIDI_CONTROLS)),
               max_size=40))
def test_escaped_text_is_safe_and_keeps_the_rest(text: str) -> None:
    """The escape of any text holds no unsafe character, and removing the escaped characters from
    the input gives what remains between the escapes."""
    shown = escape_unsafe(text)
    assert unsafe_character(shown) is None
    safe = "".join(c for c in text if unsafe_character(c) is None)
    assert all(c in shown for c in safe)
    assert (unsafe_character(text) is None) == (shown == text)


def test_doctests() -> None:
    assert doctest.testmod(controls).failed == 0
