"""Sentence splitting and the tools' text cues take linear time on any text (issue 31, item 5).

Before, a run of ``.``, ``!`` or ``?`` without whitespace made both sentence splitters quadratic
(16k dots: 20 s; one ``query_extraction_density`` call with 20,000 dots: 46 s, holding the GIL),
a run of digits made the percent cue quadratic and ``A.A.A…`` the organisation cue. The new
patterns must find exactly what the plain ones found: the plain forms are kept here as references
and compared on random texts (Hypothesis) where they are fast (short texts).
"""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgr.text.sentences import sentence_spans, strip_span
from kgr.tools._cues import _ORG_SUFFIX, TEXT_CUES
from kgr.tools._text import ABBREVIATIONS, _sentence_spans, analyze_text, has_cjk
from kgr.tools.registry import call_tool

# -- references: the plain (backtracking) forms, as they were -----------------------------------

_REF_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al fig no nos vol pp ed eds est approx
    dept univ inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt capt
    rev hon sen rep gov u.s u.k""".split()
)
_REF_SENT_END = re.compile(r"""[.!?…]+["'”’)\]]*(?=\s)""")
_REF_PARA = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s))")
_REF_WORD_BEFORE = re.compile(r"([\w.]+)$")
_REF_NEXT_CHAR = re.compile(r"\s+(\S)")


def ref_sentence_spans(text: str) -> list[tuple[int, int]]:
    """:func:`kgr.text.sentences.sentence_spans` as it was (quadratic on punctuation runs)."""
    def is_end(dot_start: int, end: int) -> bool:
        if text[dot_start] == ".":
            m = _REF_WORD_BEFORE.search(text, max(0, dot_start - 40), dot_start)
            word = m.group(1) if m else ""
            if word.casefold() in _REF_ABBREVIATIONS:
                return False
            if len(word) == 1 and word.isalpha() and word.isupper():
                return False
            if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):
                return False
        m = _REF_NEXT_CHAR.match(text, end)
        return not (m and m.group(1).islower())

    cuts = {m.start() for m in _REF_PARA.finditer(text)}
    cuts |= {m.end() for m in _REF_SENT_END.finditer(text) if is_end(m.start(), m.end())}
    spans, prev = [], 0
    for c in sorted(cuts) + [len(text)]:
        sp = strip_span(text, prev, c)
        if sp:
            spans.append(sp)
        prev = c
    return spans


_REF_TOOL_END = re.compile("[.!?\u2026]+[\"'\u201d\u2019)\\]]*(?=\\s|$)|[\u3002\uff01\uff1f]+|\\n[ \\t]*\\n")
_REF_TOOL_NEXT = re.compile(r"\s*(\S)")
_REF_LAST_WORD = re.compile(r"(\w+)$")


def ref_tool_spans(text: str) -> list[tuple[int, int]]:
    """:func:`kgr.tools._text._sentence_spans` as it was (quadratic on punctuation and newline runs)."""
    spans, start = [], 0
    for m in _REF_TOOL_END.finditer(text):
        end, mark = m.end(), m.group(0)
        follow = _REF_TOOL_NEXT.match(text, end)
        if mark[0] in ".!?\u2026" and follow:
            nxt = follow.group(1)
            if nxt.isalpha() and not nxt.isupper() and not has_cjk(nxt):
                continue
            if mark[0] == ".":
                last = _REF_LAST_WORD.search(text[max(start, m.start() - 64): m.start()])
                word = last.group(1) if last else ""
                if word.casefold() in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                    continue
        spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    return [(a, b) for a, b in spans if re.search(r"[^\W_]", text[a:b])]


REF_ORG = re.compile(rf"\b[A-Z][\w&.-]*\s+{_ORG_SUFFIX}\b")
REF_PERCENT = re.compile(r"\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b)", re.IGNORECASE)

# -- random texts rich in what the rules look at -------------------------------------------------

PIECES = [".", ".", "!", "?", "\u2026", "...", '"', "'", "\u201d", ")", "]", " ", " ", "  ", "\n", "\n\n", "\t",
          "\n1. ", "\n- ", "\n# ", "A", "J", "Dr", "dr", "e.g", "U.S", "Inc", "approx", "ada", "Ada",
          "word", "x", "7", "12", "\u3002", "\uff01", "\u6211", "_", "&", "-", "%"]
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
    st.text(alphabet=".!?\u2026\"') \n\tAaJ1", max_size=120),
    st.text(max_size=80),
)
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True)


@PROPERTY
@given(texts)
def test_sentence_spans_equal_the_plain_rule(text: str) -> None:
    assert sentence_spans(text) == ref_sentence_spans(text)


@PROPERTY
@given(texts)
def test_tool_sentence_spans_equal_the_plain_rule(text: str) -> None:
    assert _sentence_spans(text) == ref_tool_spans(text)


org_texts = st.lists(st.sampled_from(["A", "a", "Acme", ".", "-", "&", "_", " ", "  ", "\n", "Inc", "Co", "Corp",
                                      "Corporation", "x", "9", "B.V"]), max_size=40).map("".join)
pct_texts = st.lists(st.sampled_from(["1", "12", ".", ".5", " ", "%", "percent", "per cent", "x", "a", "PERCENT",
                                      "\u0663"]), max_size=30).map("".join)


@PROPERTY
@given(org_texts)
def test_organisation_cue_finds_what_the_plain_pattern_finds(text: str) -> None:
    new, old = TEXT_CUES["organization"][0].search(text), REF_ORG.search(text)
    assert (new and (new.start("at"), new.end())) == (old and (old.start(), old.end()))


@PROPERTY
@given(pct_texts)
def test_percent_cue_finds_what_the_plain_pattern_finds(text: str) -> None:
    new, old = TEXT_CUES["percent"][0].search(text), REF_PERCENT.search(text)
    assert (new and new.span()) == (old and old.span())


def test_normal_text_keeps_its_sentences() -> None:
    text = ("Dr. Grace Hopper wrote code... J. Presper Eckert built ENIAC! Was it? \"Yes.\" (It was.) "
            "It cost approx. ten dollars, e.g. a lot. The U.S. Army paid.\n\nNew paragraph?! Yes.")
    assert sentence_spans(text) == ref_sentence_spans(text)
    assert [text[a:b] for a, b in sentence_spans(text)][:3] == [
        "Dr. Grace Hopper wrote code...", "J. Presper Eckert built ENIAC!", "Was it?"]
    assert _sentence_spans(text) == ref_tool_spans(text)


# -- bounded time on hostile runs ----------------------------------------------------------------

RUNS = {
    "dots": "." * 20_000 + "x",
    "bangs": "!" * 20_000 + "x",
    "questions": "?" * 20_000 + "x",
    "mixed": "!?.\u2026" * 5_000 + "x",
    "quoted": '."' * 10_000 + "x",
    "newlines": "\n" * 20_000 + "x",
    "words_then_dot": ("a" * 37 + "-. ") * 2_000,
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_splitters_are_fast_on_punctuation_runs(kind: str) -> None:
    text = RUNS[kind] * 5  # 100k characters: the quadratic forms took minutes
    for split in (sentence_spans, _sentence_spans):
        started = time.perf_counter()
        split(text)
        assert time.perf_counter() - started < 3.0, (kind, split.__module__)


@pytest.mark.parametrize("text", ["A." * 50_000, "A-" * 50_000, "1" * 100_000, "A&" * 50_000],
                         ids=["initials", "dashes", "digits", "ampersands"])
def test_cues_are_fast_on_runs(text: str) -> None:
    for cat, patterns in TEXT_CUES.items():
        for pat in patterns:
            started = time.perf_counter()
            pat.search(text)
            assert time.perf_counter() - started < 2.0, (cat, pat.pattern)


def test_a_tool_call_with_20000_dots_answers_quickly() -> None:
    analyze_text.cache_clear()
    call_tool("query_extraction_density", {"text": "Warm up.", "schema": {}, "extracted_kg": {}})  # imports
    schema = {"entity_schema": ["Person", "Organization", "Percent"], "relation_schema": ["WORKS_AT"]}
    for text in (RUNS["dots"], RUNS["mixed"], "1" * 20_000 + " x", "A." * 10_000 + " Inc"):
        for name in ("query_extraction_density", "query_coverage_feedback", "query_quality_metrics"):
            started = time.perf_counter()
            call_tool(name, {"text": text, "schema": schema, "extracted_kg": {}})
            assert time.perf_counter() - started < 2.0, (name, text[:10])
