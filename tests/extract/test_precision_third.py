"""Rules made from the second sample's errors once the third (blind) sample was committed (issue 32):
objects a verb does not have, comparisons, standards modifying a product noun, trigger nouns before
a preposition, guesses that are acronyms, files, options or adverbs, "Hard dependency on", and
WRITTEN_IN said by a noun phrase ("a Python library") with the document's own name.

These tests check the reading rules, so the extractor runs with ``abstain=False``: abstention by path
(issue 32, seventh round) is tested in ``test_abstention.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.extract.cues import mask_markup
from kgr.extract.guesses import find_guesses
from kgr.extract.phrases import title_mention, title_variants
from kgr.extract.rules import RulesExtractor
from kgr.model.schema import load_schema

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "data" / "extract" / "schema.json")
WIDEN = ["Candidate entity mentions not extracted yet: extract more"]  # what the density tool asks


def triples(text: str, title: str | None = None) -> set[tuple[str, str, str]]:
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=WIDEN, title=title)
    return {(p.subject, rel, p.object) for rel, ps in r.kg.relations.items() for p in ps}


def guessed(text: str) -> list[str]:
    masked = mask_markup(text)
    return [g.name for g in find_guesses(text, masked, [], {0}, {0})]


def test_a_verb_followed_by_and_has_no_object_after_it():
    # "formats that PIL supports": the object is before the verb; "ANSI sequences" is the list's next item
    assert triples("Output formats: HTML, LaTeX, all image formats that Pillow supports and ANSI sequences.") == set()
    # two verbs sharing one object still read it
    assert triples("The Pallets organization develops and supports ItsDangerous and other packages.") == {
        ("ItsDangerous", "DEVELOPED_BY", "Pallets")}


def test_a_comparison_is_no_object():
    assert triples("It supports higher compression than JPEG 1991.", "libopenjp2-7") == set()
    assert triples("It supports JPEG.", "libopenjp2-7") == {("libopenjp2-7", "SUPPORTS", "JPEG")}


@pytest.mark.parametrize("text", [
    "SQLite is a C library that implements an SQL database engine.",
    "Specifically, it provides the nss implementation of the XML security library cryptography functions.",
    "The libjpeg-turbo JPEG library is an API/ABI compatible with the IJG JPEG library.",
])
def test_a_standard_before_a_product_noun_is_no_end(text):
    assert not {t for t in triples(text) if t[2] in ("SQL", "XML", "JPEG")}


def test_a_trigger_noun_before_a_preposition_reads_nothing():
    assert triples("Manually enable C++ exception support only on i386 and amd64.", "libunwind") == set()
    # "support for" is its own trigger (before: "Enable C++ support for amd64." read amd64 SUPPORTS C++ backwards)
    assert triples("libunwind has support for C++.", "libunwind") == {("libunwind", "SUPPORTS", "C++")}


@pytest.mark.parametrize("text, name", [
    ("The library is an API/ABI compatible with the IJG JPEG library.", "API/ABI"),   # acronyms
    ("Let foo depend on bar so that opengl.pc is available.", "opengl.pc"),          # a file name
    ("using an environment compatible with the -ansiC specification", "ansiC"),       # an option
    ("Manually enable exception support.", "Manually"),                               # adverbs
    ("Specifically, it provides the nss implementation.", "Specifically"),
])
def test_acronyms_files_options_and_adverbs_are_no_guesses(text, name):
    assert name not in guessed(text)


def test_a_name_ending_in_ly_is_still_a_guess():
    assert "Plotly" in guessed("Plotly supports Python 3.")


def test_hard_dependency_on_takes_the_title():
    assert triples("Hard dependency on python3-pkg-resources to be able to use it", "pygments") == {
        ("pygments", "DEPENDS_ON", "python3-pkg-resources")}
    assert triples("Hard dependency on python3-pkg-resources to be able to use it") == set()


@pytest.mark.parametrize("text, title, expected", [
    ("SQLite is a C library that implements an SQL database engine.", "libsqlite3-0", ("SQLite", "C")),
    ("Hypothesis is the property-based testing library for Python.", "hypothesis", ("Hypothesis", "Python")),
    ("TimeDate is a collection of Perl modules useful for dates.", "libtimedate-perl", ("TimeDate", "Perl")),
    ("A Python library for the Docker Engine API.", "docker", ("docker", "Python")),
    ("uchardet is a C language binding of the original C++ implementation.", "libuchardet0", ("uchardet", "C")),
])
def test_written_in_said_by_a_noun_phrase(text, title, expected):
    got = {(s, o) for s, rel, o in triples(text, title) if rel == "WRITTEN_IN"}
    assert got == {expected}


@pytest.mark.parametrize("text", [
    "It is a Python library.",                  # "it" may be anything
    "SQLite is not a Python library.",          # negated
    "SQLite calls a Python library.",           # no copula: not what it is
    "A Python library for it would help.",      # only with a title ...
])
def test_written_in_noun_phrase_needs_subject_and_copula(text):
    assert not {t for t in triples(text, "libsqlite3-0" if "SQLite" in text else None) if t[1] == "WRITTEN_IN"}


def test_the_documents_own_name_opening_a_sentence():
    assert "sqlite" in title_variants("libsqlite3-0") and "timedate" in title_variants("libtimedate-perl")
    assert title_mention("SQLite is small.", "libsqlite3-0") == (0, 6, "SQLite")
    assert title_mention("Time passes quickly.", "time") is None     # a common word needs "is"
    assert title_mention("Time is a C program.", "time") == (0, 4, "Time")
    assert title_mention("Other text first.", "sqlite") is None


def test_a_capitalised_preposition_after_a_trigger_starts_a_name():
    """The preposition rule reads lower case only: "wrote On Computable Numbers" names a paper
    (it dropped the re-ingest test's AUTHORED facts when it ignored case)."""
    examples = load_schema(Path(__file__).resolve().parents[2] / "examples" / "schema.json")
    kg = RulesExtractor().extract("Ada Lovelace wrote On Computable Numbers.", examples).kg
    assert [(r.subject, r.object) for r in kg.relations.get("AUTHORED", [])] == [("Ada Lovelace", "On Computable Numbers")]
