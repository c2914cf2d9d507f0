"""Chunking: sentence boundaries, coverage, overlap bounds and stable ids (property-based)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgr.errors import KgrValidationError
from kgr.ingest.chunking import (
    CHARS_PER_TOKEN,
    Chunk,
    ChunkingConfig,
    chunk_document,
    chunk_text,
    estimate_tokens,
    iter_chunks,
)
from kgr.ingest.loaders import text_document
from kgr.text.sentences import sentence_spans


def sentences_of(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


# -- sentence boundaries -----------------------------------------------------------------------------


def test_sentence_spans_handle_abbreviations_initials_and_markdown():
    text = (
        "# Early computers\n\n"
        "Dr. Grace Hopper wrote code, e.g. the A-0 system. J. Presper Eckert built ENIAC!\n"
        "Was it the first? Many say so... others disagree.\n"
        "- a list item\n"
        "- another one"
    )
    assert sentences_of(text) == [
        "# Early computers",
        "Dr. Grace Hopper wrote code, e.g. the A-0 system.",
        "J. Presper Eckert built ENIAC!",
        "Was it the first?",
        "Many say so... others disagree.",
        "- a list item",
        "- another one",
    ]


def test_sentence_spans_of_blank_text():
    assert sentence_spans("") == [] and sentence_spans(" \n\n \t") == []


def test_quotes_close_sentences():
    assert sentences_of('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]


# -- chunking ----------------------------------------------------------------------------------------


def test_example_packing_and_overlap():
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    # sentences of 14, 14, 17 and 18 characters; size 36 fits two, overlap 17 repeats one
    chunks = list(chunk_text(text, "doc", size=36, overlap=17, unit="chars"))
    assert [c.text for c in chunks] == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert [c.index for c in chunks] == [0, 1, 2]
    assert all(text[c.start : c.end] == c.text for c in chunks)
    # overlap 0: disjoint
    # overlap 16: "Seven eight nine." (17) no longer fits, the last chunk starts fresh
    assert [c.text for c in chunk_text(text, "doc", size=36, overlap=16, unit="chars")][-1] == "Ten eleven twelve."
    assert [c.text for c in chunk_text(text, "doc", size=36, overlap=0, unit="chars")] == [
        "One two three. Four five six.",
        "Seven eight nine. Ten eleven twelve.",
    ]


def test_ids_are_content_hashes():
    (c,) = chunk_text("Ada wrote notes.", "doc-1", size=100, overlap=0)
    assert c.sha256 == hashlib.sha256(b"Ada wrote notes.").hexdigest()
    assert c.id == hashlib.sha256("doc-1\x1fAda wrote notes.\x1f0".encode()).hexdigest()
    (other,) = chunk_text("Ada wrote notes.", "doc-2", size=100, overlap=0)
    assert other.sha256 == c.sha256 and other.id != c.id


def test_ids_survive_edits_elsewhere_and_repeats_are_told_apart():
    base = ["Ada wrote notes.", "Babbage built engines.", "Turing broke codes.", "Ada wrote notes."]
    before = list(chunk_text(" ".join(base), "d", size=25, overlap=0, unit="chars"))
    assert [c.text for c in before] == base
    # the same text twice in one document: two chunks, two ids (occurrence 0 and 1)
    assert before[0].sha256 == before[3].sha256 and before[0].id != before[3].id
    # a sentence inserted at the start shifts every index, but unchanged chunks keep their ids
    after = list(chunk_text(" ".join(["Zuse built the Z3.", *base]), "d", size=25, overlap=0, unit="chars"))
    assert [c.index for c in after[1:]] == [1, 2, 3, 4]
    assert [c.id for c in after[1:]] == [c.id for c in before]


def test_token_unit_is_four_characters():
    text = " ".join(f"Word{i} is here." for i in range(200))
    chunks = list(chunk_text(text, "d", size=10, overlap=0, unit="tokens"))
    assert all(len(c.text) <= 10 * CHARS_PER_TOKEN for c in chunks)
    assert estimate_tokens("x" * 41) == 11
    assert chunks[0].token_estimate == estimate_tokens(chunks[0].text)


def test_long_sentences_are_cut_at_whitespace_or_hard():
    text = "word " * 50 + "end. " + "x" * 95
    chunks = list(chunk_text(text, "d", size=40, overlap=0, unit="chars"))
    assert all(len(c.text) <= 40 for c in chunks)
    assert all(not c.text.startswith(" ") and not c.text.endswith(" ") for c in chunks)
    assert "".join(c.text for c in chunks[-3:]).endswith("x" * 95)
    assert [len(c.text) for c in chunks[-3:]] == [40, 40, 15]


def test_invalid_config():
    with pytest.raises(KgrValidationError, match="overlap"):
        list(chunk_text("a. b.", "d", size=10, overlap=10))
    with pytest.raises(KgrValidationError, match="size"):
        list(chunk_text("a. b.", "d", size=0, overlap=0))


def test_documents_and_streams():
    docs = [text_document("Ada wrote notes. Babbage built engines."), text_document("Turing broke codes.")]
    cfg = ChunkingConfig(size=25, overlap=0, unit="chars")
    per_doc = [list(chunk_document(d, config=cfg)) for d in docs]
    assert [c.document_id for c in per_doc[0]] == [docs[0].id] * 2
    assert list(iter_chunks(iter(docs), config=cfg)) == per_doc[0] + per_doc[1]
    assert list(chunk_text("   \n ", "d")) == []


# -- properties --------------------------------------------------------------------------------------

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFG0123456789-'", min_size=1, max_size=14)
SENTENCE = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(WORD, min_size=1, max_size=25),
    st.sampled_from([".", "!", "?", "", "...", '."']),
)
SEP = st.sampled_from([" ", "  ", "\n", "\n\n", " \t "])
TEXT = st.builds(
    lambda sents, seps: "".join(s + seps[i % len(seps)] for i, s in enumerate(sents)),
    st.lists(SENTENCE, min_size=0, max_size=30),
    st.lists(SEP, min_size=1, max_size=5),
)


@settings(max_examples=150, deadline=None)
@given(text=TEXT, size=st.integers(5, 300), overlap_frac=st.floats(0, 0.9))
def test_chunk_properties(text, size, overlap_frac):
    overlap = min(size - 1, int(size * overlap_frac))
    cfg = ChunkingConfig(size=size, overlap=overlap, unit="chars")
    chunks = list(chunk_text(text, "doc", config=cfg))
    spans = sentence_spans(text)
    sentence_starts = {s for s, _ in spans}

    # exact slices, bounded size, no surrounding whitespace, sequential indexes
    for i, c in enumerate(chunks):
        assert isinstance(c, Chunk) and c.index == i
        assert text[c.start : c.end] == c.text
        assert 0 < len(c.text) <= size
        assert not c.text[0].isspace() and not c.text[-1].isspace()

    # coverage: every non-whitespace character lies in some chunk
    covered = [False] * len(text)
    for c in chunks:
        for k in range(c.start, c.end):
            covered[k] = True
    assert all(covered[k] or text[k].isspace() for k in range(len(text)))

    # progress, overlap bound, and overlaps start at sentence boundaries (when no sentence was cut)
    for a, b in zip(chunks, chunks[1:]):
        assert b.start > a.start and b.end > a.end
        shared = max(0, a.end - b.start)
        assert shared <= overlap
        if shared and all(e - s <= size for s, e in spans):
            assert b.start in sentence_starts

    # stable ids: same input, same ids; distinct chunks, distinct ids
    again = list(chunk_text(text, "doc", config=cfg))
    assert [c.id for c in again] == [c.id for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)


@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_sentence_spans_partition_the_text(text):
    spans = sentence_spans(text)
    prev_end = 0
    for s, e in spans:
        assert s >= prev_end and e > s
        assert text[prev_end:s].strip() == ""
        assert not text[s].isspace() and not text[e - 1].isspace()
        prev_end = e
    assert text[prev_end:].strip() == ""
