"""Lexical provenance and ingestion bookkeeping: documents, chunks, mentions, schema proposals.

``(:Document)<-[:PART_OF]-(:Chunk)-[:MENTIONS]->(:Entity)``, with content-hash ids. A chunk gets
``processed_at`` in the same transaction that stages its votes (:func:`finish_chunk`), which makes
ingestion resumable: a re-run skips processed chunks and redoes the rest.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from kgr.store.connection import Graph, Tx

__all__ = ["upsert_chunks", "processed_chunk_ids", "finish_chunk", "stage_schema_proposals", "schema_proposals"]


def upsert_chunks(graph: Graph, chunks: Sequence[Any], *, paths: dict[str, str | None] | None = None,
                  now: float | None = None) -> None:
    """MERGE documents and chunks (objects with id, document_id, index, text, sha256, start, end)."""
    rows = [{"id": c.id, "document_id": c.document_id, "index": c.index, "text": c.text, "sha256": c.sha256,
             "start": c.start, "end": c.end, "path": (paths or {}).get(c.document_id)} for c in chunks]
    if rows:
        graph.write("upsert_chunks", {"rows": rows, "now": time.time() if now is None else now})


def processed_chunk_ids(graph: Graph, ids: Iterable[str]) -> set[str]:
    return {r["id"] for r in graph.read("processed_chunks", {"ids": list(ids)})}


def finish_chunk(tx: Tx, chunk_id: str, entity_keys: Sequence[str], *, extractor: str, rounds: int,
                 now: float | None = None) -> None:
    """Inside a write unit: mark the chunk processed and write its MENTIONS."""
    tx.run("finish_chunk", {"chunk_id": chunk_id, "entity_keys": sorted(set(entity_keys)), "extractor": extractor,
                            "rounds": rounds, "now": time.time() if now is None else now})


def stage_schema_proposals(tx: Tx, chunk_id: str, proposals: Sequence[tuple[str, str, str]],
                           *, now: float | None = None) -> int:
    """Inside a write unit: one vote per chunk for each ``(kind, name, example)`` proposal."""
    rows = [{"kind": k, "name": n, "example": ex[:500], "chunk_id": chunk_id} for k, n, ex in proposals]
    if not rows:
        return 0
    return tx.run("stage_schema_proposals", {"rows": rows, "now": time.time() if now is None else now})[0]["proposals"]


def schema_proposals(graph: Graph) -> list[dict]:
    return graph.read("schema_proposals")
