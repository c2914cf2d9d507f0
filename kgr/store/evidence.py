"""Evidence from corpus re-reading, on the store: which chunks to re-read, and what verifiers said.

The calibrated policy holds an ambiguous candidate as ``escalated`` (its AG gate). Re-reading
(:mod:`kgr.ingest.reread`) asks :func:`escalated` for them, :func:`claims` for the chunks that
mention both endpoints (``(:Chunk)-[:MENTIONS]->(:Entity)``) and that this verifier has not read
for the candidate yet, and :func:`record_verdicts` for the answers: one
``(:VerifierAnswer {id: "<edge>|<chunk>|<verifier>", answer, quote})-[:FROM]->(:Chunk)`` per answer,
and on the staged edge the counts of supports / contradicts / silent answers with its evidence
revision moved on, so the next round decides it again with the new evidence.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Sequence

from kgr.errors import KgrValidationError
from kgr.model.review import ClaimRow, VerdictRow
from kgr.store.connection import Graph

__all__ = ["escalated", "claims", "record_verdicts"]


def escalated(graph: Graph, *, limit: int = 1000) -> list[tuple[str, str, str]]:
    """``(key, subject key, object key)`` of escalated candidates not re-read since their votes changed."""
    if limit < 1:
        raise KgrValidationError("limit must be >= 1", field="limit")
    return [tuple(r) for r in graph.read("escalated_edges", {"limit": limit})[0]["rows"]]


def claims(graph: Graph, edges: Sequence[tuple[str, str, str]], *, verifier: str,
           per_edge: int = 3) -> tuple[list[ClaimRow], list[str]]:
    """The (candidate, chunk) pairs to re-read, and the keys of candidates with no such chunk."""
    if not edges:
        return [], []
    rows = graph.read("reread_claims", {"edges": [{"key": k, "s_key": s, "o_key": o} for k, s, o in edges],
                                        "verifier": verifier, "per_edge": per_edge})
    out: list[ClaimRow] = []
    empty: list[str] = []
    for r in rows:
        if not r["chunks"]:
            empty.append(r["key"])
        for cid, text in r["chunks"]:
            out.append(ClaimRow(edge_key=r["key"], subject=r["subject"], subject_type=r["subject_type"],
                                relation=r["relation"], object=r["object"], object_type=r["object_type"],
                                chunk_id=cid, chunk_text=text or ""))
    return out, empty


def record_verdicts(graph: Graph, verdicts: Sequence[VerdictRow], ends: dict[str, tuple[str, str]], *,
                    verifier: str, now: float | None = None) -> int:
    """Record verifier answers (see the module docstring); returns how many were new.

    ``ends`` maps each edge key to its (subject key, object key). Edges that were re-read but got
    no answer still have their re-read mark set (``verdicts`` may be empty for them).
    """
    by_edge: dict[str, list[dict]] = defaultdict(list)
    for v in verdicts:
        by_edge[v.edge_key].append({"chunk_id": v.chunk_id, "answer": v.answer, "quote": v.quote[:300]})
    rows = [{"key": k, "s_key": s, "o_key": o, "verdicts": by_edge.get(k, [])} for k, (s, o) in sorted(ends.items())]
    if not rows:
        return 0
    res = graph.write("evidence_write", {"rows": rows, "verifier": verifier, "now": time.time() if now is None else now,
                                         "tx": uuid.uuid4().hex})
    return int(sum(r["recorded"] or 0 for r in res))
