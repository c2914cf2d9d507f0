"""Inside a write unit: what marks chunks processed (claims, schema proposals, processed marks and
MENTIONS). The staging writer (:mod:`kgr.store.group_commit`) runs these in the transaction that
stages the chunks' votes, so a chunk is processed exactly when its votes are in.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from kgr.store.connection import Tx

__all__ = ["ChunkMark", "claim_chunks", "write_marks", "stage_schema_proposals"]


class ChunkMark(BaseModel):
    """What marks one chunk processed: the entities it mentions, who extracted it, how."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    chunk_id: str
    entity_keys: list[str] = Field(default_factory=list, description="keys of the entities the chunk mentions")
    extractor: str
    rounds: int = Field(1, ge=0, description="extraction rounds the loop ran on the chunk")
    quality: float | None = Field(None, description="the quality tool's overall score / 100, if it ran")
    proposals: list[tuple[str, str, str]] = Field(
        default_factory=list, description="schema proposals (kind, name, example) the chunk's extraction made")


def claim_chunks(tx: Tx, chunk_ids: Sequence[str], *, now: float) -> set[str]:
    """Write-lock ``chunk_ids`` (sorted) and return those that still exist (a forget may have
    deleted some since they were read: see :mod:`kgr.store.forget`)."""
    if not chunk_ids:
        return set()
    return {r["id"] for r in tx.run("claim_chunks", {"ids": sorted(set(chunk_ids)), "now": now})}


def write_marks(tx: Tx, marks: Sequence[ChunkMark], *, now: float | None = None) -> None:
    """Every chunk's processed mark and MENTIONS, in one statement."""
    rows = sorted(({"chunk_id": m.chunk_id, "entity_keys": sorted(set(m.entity_keys)), "extractor": m.extractor,
                    "rounds": m.rounds, "quality": m.quality} for m in marks), key=lambda r: r["chunk_id"])
    if rows:
        tx.run("finish_chunks", {"rows": rows, "now": time.time() if now is None else now})


def stage_schema_proposals(tx: Tx, chunk_id: str, proposals: Sequence[tuple[str, str, str]],
                           *, now: float | None = None) -> int:
    """One vote per chunk for each ``(kind, name, example)`` proposal."""
    rows = [{"kind": k, "name": n, "example": ex[:500], "chunk_id": chunk_id} for k, n, ex in proposals]
    if not rows:
        return 0
    return tx.run("stage_schema_proposals", {"rows": rows, "now": time.time() if now is None else now})[0]["proposals"]
