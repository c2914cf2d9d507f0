"""The rules extractor on real-text shapes (issue 32): negation and change verbs, changelog lines,
headings and list fragments, boilerplate, one type per guessed name, and sentence spans; and the
LLM extractor's quote → span rule.

These tests check the reading rules, so the extractor runs with ``abstain=False``: abstention by path
(issue 32, seventh round) is tested in ``test_abstention.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgr.extract.cues import mask_markup, negated
from kgr.extract.guesses import find_guesses
from kgr.extract.llm_prompt import parse_reply
from kgr.extract.rules import RulesExtractor
from kgr.text.spans import locate
from kgr.model.schema import load_schema

DATA = Path(__file__).resolve().parents[1] / "data" / "extract"
SCHEMA = load_schema(DATA / "schema.json")
WIDEN = ["Candidate entity mentions not extracted yet: extract more"]  # what the density tool asks


def triples(text: str) -> set[tuple[str, str, str, str, str]]:
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=WIDEN)
    types = {n: t for t, names in r.kg.entities.items() for n in names}
    return {(p.subject, types[p.subject], rel, p.object, types[p.object]) for rel, ps in r.kg.relations.items()
            for p in ps}


@pytest.mark.parametrize("text", [
    "- Drop support for Python 3.8.",
    "* Dropped support for Python 3.9 as it has reached end of life.",
    "Support for PyPy has been removed.",
    "Joblib can dump numpy arrays but does not require numpy to be installed.",
    "Flask no longer depends on Werkzeug.",
    "control: Drop python3-libxml2 from build-depends, it's not used.",
    "Certifi does not support any modification of the CA trust store content.",
    "Traitlets may depend on the state of other attributes.",
    "Uvicorn does not support HTTP/3.",
    "Granian dropped support for Python 3.8.",
    "Granian may support HTTP/3 later.",
])
def test_negated_removed_or_hedged_relations_assert_nothing(text):
    assert triples(text) == set()


@pytest.mark.parametrize("text", [
    "Currently it supports Python 3 and PyPy 3.",           # a sentence-initial adverb is no name
    "Added support for parsing dates with TZ spec.",         # a changelog verb is no name
    "Removed Volapük support from the list.",
    "Licensed under the Apache License, Version 2.0 (the \"License\"); you may not use this file except in "
    "compliance with the License.",                           # licence boilerplate
    "Unless required by applicable law, software distributed under the License is distributed AS IS.",
    "**Full API support**: cuDF, Modin, pandas, Polars, PyArrow.",  # a heading fragment, an acronym
])
def test_line_starts_boilerplate_and_fragments_assert_nothing(text):
    assert triples(text) == set()


def test_true_statements_are_read_with_one_type_per_name():
    assert triples("Uvicorn currently supports HTTP/1.1, HTTP/2 and WebSockets.") == {
        ("Uvicorn", "Software", "SUPPORTS", "HTTP/1.1", "Standard"),
        ("Uvicorn", "Software", "SUPPORTS", "HTTP/2", "Standard"),
        ("Uvicorn", "Software", "SUPPORTS", "WebSocket", "Standard")}
    assert triples("Botocore is maintained and published by `Amazon Web Services`_.") == {
        ("Botocore", "Software", "DEVELOPED_BY", "Amazon Web Services", "Organization")}
    assert triples("Most of this Graphene ecosystem has also been created by Syrus Akbary.") == {
        ("Graphene", "Software", "DEVELOPED_BY", "Syrus Akbary", "Person")}
    # "Linux" is Software wherever it stands: never guessed into the closed Language type
    for text in ("Ruff runs on Linux.", "Pyodide supports Linux.", "Tox is written in Linux."):
        assert {(t[3], t[4]) for t in triples(text)} <= {("Linux", "Software")}
    assert triples("Tox is written in Linux.") == set()


def test_masking_keeps_offsets_and_negation_reads_only_the_relations_clause():
    line = "* d/control: Add ``valgrind`` to **Depends**."
    masked = mask_markup(line)
    assert len(masked) == len(line) and masked.split() == ["Add", "valgrind", "to", "Depends", "."]
    text = "Zuse designed the Z3, which Babbage never designed."
    assert not negated(text, [(0, 4), (5, 13), (18, 20)], [(0, 4), (18, 20)])
    assert [g.name for g in find_guesses(text, text, [], {0}, {0})] == ["Zuse", "Z3", "Babbage"]


def test_every_relation_has_the_span_of_its_sentence():
    text = "# pkg\n\nThe winter was cold. Granian supports WebSockets. Ruff supports JSON."
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=WIDEN)
    spans = {(s.subject, s.object): text[s.start:s.end] for s in r.spans}
    assert spans == {("Granian", "WebSocket"): "Granian supports WebSockets.", ("Ruff", "JSON"): "Ruff supports JSON."}


def test_the_llm_quote_becomes_the_sentence_span():
    text = "Intro line here. Flask depends on Werkzeug and on Jinja. It is small."
    s = text.index("Flask")
    assert locate(text, "Flask", "Werkzeug", "flask depends on   werkzeug") == (s, text.index(" It"))
    assert locate(text, "Flask", "Jinja", None) == (s, text.index(" It"))   # no quote: both names
    assert locate(text, "Flask", "Jinja", "Flask relies on Jinja") == (s, text.index(" It"))  # paraphrase
    assert locate(text, "Flask", "Django", "Flask needs Django") is None
    reply = parse_reply(json.dumps({"entities": {"Software": ["Flask", "Werkzeug"]}, "relations": {
        "DEPENDS_ON": [{"subject": "Flask", "object": "Werkzeug", "quote": "Flask depends on Werkzeug"}]}}))
    from kgr.extract.llm import LLMExtractor

    ex = LLMExtractor("openai/test-model", api_base="http://127.0.0.1:9")
    res = ex._result(reply, SCHEMA, ex.new_tally(), text)  # noqa: SLF001 - the reply → result step, offline
    assert [(x.subject, x.object, text[x.start:x.end]) for x in res.spans] == [
        ("Flask", "Werkzeug", "Flask depends on Werkzeug and on Jinja.")]
