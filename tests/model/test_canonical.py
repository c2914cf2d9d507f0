"""One canonicaliser (kgr.model.canonical): names, texts, entity keys, name and variant keys."""

from __future__ import annotations

import pytest

from kgr.errors import KgrValidationError
from kgr.model.canonical import (
    MAX_NAME_CHARS,
    canonical_name,
    canonical_text,
    entity_key,
    name_key,
    normalise_entity_key,
    variant_key,
)


@pytest.mark.parametrize("s", ["  I.B.M. ", "Straße", "O'Neil", "ＡＢＣ", "New-York   City", "Zoë Ünal"])
def test_canonical_text_agrees_with_canonical_name(s: str) -> None:
    assert canonical_text(s) == canonical_name(s)


def test_canonical_text_handles_long_and_empty() -> None:
    assert canonical_text("x " * 5000) == " ".join(["x"] * 5000)
    assert canonical_text("!!!") == ""


def test_canonical_name_refuses_what_canonical_text_tolerates() -> None:
    with pytest.raises(KgrValidationError, match="no letters or digits"):
        canonical_name("!!!")
    with pytest.raises(KgrValidationError, match="no letters or digits"):
        canonical_name("\u0301")  # a combining mark alone is no name
    with pytest.raises(KgrValidationError, match=f"longer than {MAX_NAME_CHARS}"):
        canonical_name("x" * (MAX_NAME_CHARS + 1))


def test_combining_marks_stay_in_the_name() -> None:
    """Rule 4 keeps letters, digits and combining marks: a Devanagari vowel sign is part of the word."""
    assert canonical_name("हिन्दी") == canonical_text("हिन्दी") == "हिन्दी"
    assert canonical_name("हिन्दी") != canonical_name("ह न द")  # the letters without their signs


def test_entity_keys() -> None:
    assert entity_key("Organization", "I.B.M.") == "Organization:ibm"
    assert normalise_entity_key("Person:Ada  LOVELACE") == "Person:ada lovelace"
    for bad in ("Person", ":ada", "Person:"):
        with pytest.raises(KgrValidationError, match="is not TYPE:NAME"):
            normalise_entity_key(bad)


def test_name_and_variant_keys() -> None:
    assert variant_key("Microsoft Corp.") == variant_key("Microsoft") == "microsoft"
    assert variant_key("The Beatles") == "beatles"
    assert name_key("The Beatles") == "the beatles"
    assert name_key("!!!") == "!!!" and name_key("??") != name_key("!!!")  # nothing canonical: the name itself
    assert variant_key(" !!! ") == name_key(" !!! ") == "!!!"
