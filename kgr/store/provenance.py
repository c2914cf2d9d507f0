"""Lexical provenance and ingestion bookkeeping: documents, chunks, mentions, schema proposals.

``(:Document)<-[:PART_OF]-(:Chunk)-[:MENTIONS]->(:Entity)``, with content-hash ids. A chunk gets
``processed_at`` in the same transaction that stages its votes (:func:`commit_chunks`), which makes
ingestion resumable: a re-run skips processed chunks and redoes the rest.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.chunk_marks import ChunkMark, stage_schema_proposals, write_marks
from kgr.store.connection import Graph
from kgr.store.group_commit import StageUnit, write_units
from kgr.store.stage_rows import StageReport

__all__ = ["ChunkMark", "commit_chunks", "upsert_chunks", "processed_chunk_ids", "write_marks",
           "stage_schema_proposals", "schema_proposals", "document_chunks", "documents_under", "StoredDocument", "StoredChunk",
           "DocumentState", "document_states", "SchemaProposalRow"]


class DocumentState(BaseModel):
    """What the store records of a document's text: the sha256 of the text, the chunking it was cut
    with (a fingerprint), how many chunks that gave, and (read back) how many are processed."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    sha256: str | None = None
    chunking: str | None = None
    chunk_count: int | None = None
    done: int = 0


def upsert_chunks(graph: Graph, chunks: Sequence[Any], *, paths: dict[str, str | None] | None = None,
                  states: dict[str, DocumentState] | None = None, now: float | None = None) -> None:
    """MERGE documents and chunks (objects with id, document_id, index, text, sha256, start, end);
    ``states`` records each document's text hash, chunking and chunk count with them."""
    none = DocumentState()
    rows = []
    for c in chunks:
        st = (states or {}).get(c.document_id, none)
        rows.append({"id": c.id, "document_id": c.document_id, "index": c.index, "text": c.text, "sha256": c.sha256,
                     "start": c.start, "end": c.end, "path": (paths or {}).get(c.document_id),
                     "doc_sha256": st.sha256, "chunking": st.chunking, "chunk_count": st.chunk_count})
    if rows:
        graph.write("upsert_chunks", {"rows": rows, "now": time.time() if now is None else now})


class StoredDocument(BaseModel):
    """A document node: its id and the absolute path of the file it was read from."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str
    path: str | None = None


def document_states(graph: Graph, documents: Iterable[str]) -> dict[str, DocumentState]:
    """The recorded state of each of ``documents`` that exists in the store."""
    ids = sorted(set(documents))
    if not ids:
        return {}
    return {r["document"]: DocumentState(sha256=r["sha256"], chunking=r["chunking"], chunk_count=r["chunk_count"],
                                         done=r["done"]) for r in graph.read("document_state", {"documents": ids})}


class StoredChunk(BaseModel):
    """A chunk node as re-ingestion compares it: id, position, processed or not."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str
    index: int | None = None
    start: int | None = None
    end: int | None = None
    done: bool = False


def document_chunks(graph: Graph, documents: Iterable[str]) -> dict[str, dict[str, StoredChunk]]:
    """The chunks the store holds for each of ``documents``, by chunk id (documents without chunks
    are absent)."""
    ids = sorted(set(documents))
    if not ids:
        return {}
    return {r["document"]: {c["id"]: StoredChunk(**c) for c in r["chunks"]}
            for r in graph.read("document_chunks", {"documents": ids})}


def documents_under(graph: Graph, roots: Iterable[str]) -> list[StoredDocument]:
    """The documents read from a file at or under one of ``roots`` (absolute POSIX paths), by id."""
    roots = sorted({r.rstrip("/") or "/" for r in roots})
    return [StoredDocument(id=r["id"], path=r["path"]) for r in graph.read("documents_under", {"roots": roots})] \
        if roots else []


def processed_chunk_ids(graph: Graph, ids: Iterable[str]) -> set[str]:
    return {r["id"] for r in graph.read("processed_chunks", {"ids": list(ids)})}


def commit_chunks(graph: Graph, marks: Sequence[ChunkMark], *, assertions: Sequence[TripleAssertion] = (),
                  entities: Sequence[tuple[str, str]] = (), schema: KGSchema | None = None,
                  now: float | None = None) -> StageReport:
    """Write chunks' extraction results in ONE transaction through the staging write path
    (:func:`kgr.store.group_commit.write_units`): the votes of ``assertions`` (already validated)
    and the ``entities``, their schema proposals, and their processed marks with MENTIONS. A chunk
    is processed exactly when its votes are in. The chunks are locked first; the votes of a chunk a
    concurrent forget deleted are not staged (see :mod:`kgr.store.forget`).

    Raises whatever the unit raised (:class:`~kgr.errors.KgrDatabaseError` for a refused
    statement, :class:`~kgr.errors.KgrNeo4jUnavailable`); nothing of the group is written then.
    """
    unit = StageUnit(valid=list(assertions), entities=entities, schema=schema, marks=list(marks), now=now)
    return write_units(graph, [unit])[0] if not unit.empty else unit.empty_report()


class SchemaProposalRow(BaseModel):
    """A type outside the schema that extractors proposed, with one vote per chunk."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    kind: str
    name: str
    votes: int
    example: str | None = None
    status: str | None = None


def schema_proposals(graph: Graph) -> list[SchemaProposalRow]:
    """The staged schema proposals, most voted first."""
    return [SchemaProposalRow(**r) for r in graph.read("schema_proposals")]
