"""Splitting documents into chunks on sentence boundaries, with stable content-hash ids.

Conventions
-----------
- **Size unit.** ``unit="tokens"`` (the default) measures in *approximate* tokens: one token is
  taken as :data:`CHARS_PER_TOKEN` = 4 characters (the usual average for English text with GPT-style
  tokenizers), so ``size=512`` means at most 2048 characters. ``unit="chars"`` measures exact
  characters. No tokenizer is loaded.
- **Boundaries.** Chunks are built from whole sentences (:func:`kgr.text.sentences.sentence_spans`). A sentence longer
  than the chunk size is cut at whitespace (or, for a run without whitespace, hard at the size).
- **Overlap.** Consecutive chunks share whole trailing sentences of the previous chunk, as many as fit
  in ``overlap`` (same unit), never so many that the next chunk would bring no new text. The overlap
  therefore starts on a sentence boundary and never exceeds ``overlap``; it is 0 when the next
  sentence would not fit otherwise.
- **Offsets.** ``chunk.text == document.text[chunk.start:chunk.end]`` (Python string indices, i.e.
  code points, end exclusive). Chunk texts start and end on non-whitespace. Every non-whitespace
  character of the document lies in at least one chunk.
- **Ids.** ``chunk.sha256`` is the SHA-256 of the chunk text (UTF-8); ``chunk.id`` is the SHA-256 of
  ``document_id``, the chunk text and its occurrence (how many earlier chunks of the document have
  the same text) joined by ``\\x1f``. Both are stable across runs and machines, so re-ingesting the
  same document with the same settings is idempotent; and since the position is not in the id, a
  chunk whose text an edit elsewhere in the document did not change keeps its id (re-ingestion does
  not extract it again).

>>> doc_text = "Ada wrote notes. Babbage built engines. Turing broke codes."
>>> [c.text for c in chunk_text(doc_text, "d1", size=40, overlap=0, unit="chars")]
['Ada wrote notes. Babbage built engines.', 'Turing broke codes.']
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgr.errors import KgrValidationError
from kgr.ingest.titles import document_title
from kgr.text.headings import headings, push
from kgr.text.sentences import sentence_spans, strip_span

__all__ = [
    "Chunk",
    "ChunkingConfig",
    "CHARS_PER_TOKEN",
    "chunk_text",
    "chunk_document",
    "iter_chunks",
    "estimate_tokens",
]

#: Characters per approximate token (``unit="tokens"``).
CHARS_PER_TOKEN = 4

def estimate_tokens(text: str) -> int:
    """Approximate token count: ``ceil(len(text) / CHARS_PER_TOKEN)``.

    >>> estimate_tokens("abcdefgh"), estimate_tokens("abcdefghi")
    (2, 3)
    """
    return -(-len(text) // CHARS_PER_TOKEN)


def _split_long(text: str, s: int, e: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """Cut the span ``[s, e)`` into pieces of at most ``max_chars``, at whitespace where possible."""
    while e - s > max_chars:
        limit = s + max_chars
        cut = -1
        for i in range(limit, s, -1):  # last whitespace at or before the limit
            if text[i].isspace():
                cut = i
                break
        if cut <= s:
            cut = limit
        piece = strip_span(text, s, cut)
        if piece:
            yield piece
        nxt = strip_span(text, cut, e)
        if nxt is None:
            return
        s = nxt[0]
    yield (s, e)


class ChunkingConfig(BaseModel):
    """Chunk size and overlap (units in the module docstring)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    size: int = Field(512, gt=0, description="maximum chunk size, in `unit`")
    overlap: int = Field(64, ge=0, description="maximum overlap between consecutive chunks, in `unit`")
    unit: Literal["tokens", "chars"] = "tokens"

    @model_validator(mode="after")
    def _overlap_below_size(self) -> "ChunkingConfig":
        if self.overlap >= self.size:
            raise ValueError(f"'overlap' ({self.overlap}) must be smaller than 'size' ({self.size})")
        return self

    @property
    def max_chars(self) -> int:
        return self.size * (CHARS_PER_TOKEN if self.unit == "tokens" else 1)

    @property
    def overlap_chars(self) -> int:
        return self.overlap * (CHARS_PER_TOKEN if self.unit == "tokens" else 1)


class Chunk(BaseModel):
    """One chunk of a document: ``text == document.text[start:end]``."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str = Field(description="sha256 of document_id, text and occurrence joined by \\x1f (hex)")
    document_id: str
    index: int = Field(ge=0)
    text: str
    sha256: str = Field(description="sha256 of the chunk text (hex)")
    start: int = Field(ge=0, description="offset of the first character in the document text")
    end: int = Field(ge=0, description="offset one past the last character")
    title: str | None = Field(None, description="the document's title, for the extractor (kgr.ingest.titles)")
    headings: tuple[tuple[int, str], ...] = Field(
        (), description="the headings in force at the chunk's start, (level, words), outermost first (kgr.text.headings)")

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.text)


def _make_chunk(document_id: str, index: int, text: str, start: int, end: int, seen: dict[str, int]) -> Chunk:
    """The chunk ``text[start:end]``; ``seen`` counts the chunk texts (by sha256) met so far in the document."""
    body = text[start:end]
    sha = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
    occurrence = seen.get(sha, 0)
    seen[sha] = occurrence + 1
    cid = hashlib.sha256(f"{document_id}\x1f{body}\x1f{occurrence}".encode("utf-8", "surrogatepass")).hexdigest()
    return Chunk(id=cid, document_id=document_id, index=index, text=body, sha256=sha, start=start, end=end)


def chunk_text(
    text: str,
    document_id: str,
    *,
    size: int = 512,
    overlap: int = 64,
    unit: Literal["tokens", "chars"] = "tokens",
    config: ChunkingConfig | None = None,
) -> Iterator[Chunk]:
    """Yield the chunks of ``text`` (conventions in the module docstring).

    Parameters
    ----------
    text:
        The document text.
    document_id:
        Goes into every chunk id.
    size, overlap, unit:
        Chunk size and overlap; ignored when ``config`` is given.

    Raises
    ------
    KgrValidationError
        If ``overlap >= size`` or ``size <= 0``.
    """
    if config is None:
        try:
            config = ChunkingConfig(size=size, overlap=overlap, unit=unit)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            raise KgrValidationError.from_pydantic(exc, prefix="chunking") from exc
    max_chars, overlap_chars = config.max_chars, config.overlap_chars
    pieces: list[tuple[int, int]] = []
    for s, e in sentence_spans(text):
        pieces.extend(_split_long(text, s, e, max_chars))
    n = len(pieces)
    i = 0
    index = 0
    seen: dict[str, int] = {}
    while i < n:
        start = pieces[i][0]
        j = i
        while j + 1 < n and pieces[j + 1][1] - start <= max_chars:
            j += 1
        yield _make_chunk(document_id, index, text, start, pieces[j][1], seen)
        index += 1
        if j == n - 1:
            return
        # overlap: the trailing sentences of this chunk that fit in overlap_chars and still leave
        # room for the next sentence in the next chunk
        end = pieces[j][1]
        k = j + 1
        while (
            k - 1 > i
            and end - pieces[k - 1][0] <= overlap_chars
            and pieces[j + 1][1] - pieces[k - 1][0] <= max_chars
        ):
            k -= 1
        i = k


def chunk_document(document, *, config: ChunkingConfig | None = None) -> Iterator[Chunk]:
    """Yield the chunks of a :class:`kgr.ingest.loaders.Document` (``document.id`` goes into chunk ids),
    each carrying the document's title (:func:`kgr.ingest.titles.document_title`) and the headings in
    force at its start (:func:`kgr.text.headings.trail`); neither is part of the id."""
    title = document_title(document)
    found, i, stack = headings(document.text), 0, ()
    for chunk in chunk_text(document.text, document.id, config=config or ChunkingConfig()):
        while i < len(found) and found[i].start < chunk.start:  # chunks come in order of their start
            stack, i = push(stack, found[i].level, found[i].text), i + 1
        update = ({"title": title} if title is not None else {}) | ({"headings": stack} if stack else {})
        yield chunk.model_copy(update=update) if update else chunk


def iter_chunks(documents: Iterable, *, config: ChunkingConfig | None = None) -> Iterator[Chunk]:
    """Chunk a stream of documents lazily: one document is held in memory at a time."""
    config = config or ChunkingConfig()
    for doc in documents:
        yield from chunk_document(doc, config=config)
