"""Promotion primitives: apply a round of decisions as one version.

A policy (the simple quorum rule here, or :mod:`kgr.store.policy_runner` with the geDIG gauge)
decides; :func:`apply_decisions` writes. In one transaction it opens a version, creates promoted
edges for ``promote`` decisions, sets ``held`` / ``rejected`` / ``expired`` statuses, records every
decision with its inputs, updates the content hash incrementally and closes the version.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

from kgr.errors import KgrValidationError
from kgr.model.decisions import EdgeDecision, RoundSummary
from kgr.store.connection import Graph, Tx
from kgr.store.versions import add_terms, close_version, open_version

__all__ = ["apply_decisions", "quorum_decisions", "candidates", "round_candidates", "promote_by_quorum",
           "MAX_CANDIDATES_PER_ROUND"]

_STATUS = {"hold": "held", "reject": "rejected", "expire": "expired"}
_UNDECIDED = ("pending", "held")

#: Candidates one round decides at most (one transaction writes them all; see :func:`round_candidates`).
MAX_CANDIDATES_PER_ROUND = 5000


def candidates(graph: Graph, statuses: Sequence[str] = _UNDECIDED) -> list[dict]:
    """Every pending edge with one of ``statuses`` (by default: not yet decided for good), by key."""
    return graph.read("pending_edges", {"statuses": list(statuses)})


def round_candidates(graph: Graph, limit: int = MAX_CANDIDATES_PER_ROUND) -> tuple[list[dict], int]:
    """The undecided edges one round takes, at most ``limit``, and how many it leaves (``deferred``).

    A round is one transaction, so it must stay bounded however large the staged backlog is (a
    20k-edge round overflowed the default transaction memory of the managed Neo4j). Order: edges
    with new evidence since their last decision first, then most votes, oldest, key — so
    newcomers are never starved by a standing backlog of unchanged holds. Repeated rounds
    (``kgr promote --until-done``) work through the rest.
    """
    if limit < 1:
        raise KgrValidationError("limit must be >= 1", field="max_candidates_per_round")
    rows = graph.read("round_candidates", {"statuses": list(_UNDECIDED), "limit": limit})
    total = graph.read("undecided_count", {"statuses": list(_UNDECIDED)})[0]["n"]
    return rows, max(0, total - len(rows))


def apply_decisions(graph: Graph, decisions: Sequence[EdgeDecision], *, kind: str = "promotion",
                    note: str = "", now: float | None = None, decide_ms: float | None = None) -> RoundSummary:
    """Write one round of decisions as one version (nothing is written for an empty round).

    ``decide_ms`` (the policy's decision time for the round) is stored on the version for
    ``kgr metrics``.
    """
    summary = RoundSummary(candidates=len(decisions))
    if not decisions:
        return summary
    keys = [d.key for d in decisions]
    if len(set(keys)) != len(keys):
        raise KgrValidationError("a round may decide each edge once", field="decisions")
    ts = time.time() if now is None else now

    def unit(tx: Tx) -> RoundSummary:
        version, old_hash = open_version(tx)
        rows = [{"id": uuid.uuid4().hex, "key": d.key, "action": d.action, "round": version, "reason": d.reason,
                 "inputs": json.dumps(d.inputs, default=float, sort_keys=True)} for d in decisions]
        ends = {d.key: {"s_key": d.subject_key, "o_key": d.object_key} for d in decisions}
        promote = [{"key": r["key"], **ends[r["key"]], "reason": r["reason"], "decision": r["id"]}
                   for r in rows if r["action"] == "promote"]
        others = [{"key": d.key, **ends[d.key], "status": _STATUS[d.action], "reason": d.reason,
                   "votes": d.inputs.get("votes")}
                  for d in decisions if d.action in _STATUS]
        done = tx.run("promote_edges", {"rows": promote, "version": version, "now": ts}) if promote else []
        if others:
            tx.run("set_pending_status", {"rows": others, "version": version})
        tx.run("record_decisions", {"rows": rows, "version": version, "now": ts})
        new_hash = add_terms(old_hash, added=[r["key"] for r in done])
        close_version(tx, version, new_hash, kind=kind, now=ts, note=note, promoted=len(done), decide_ms=decide_ms)
        counts = {a: sum(1 for d in decisions if d.action == a) for a in ("hold", "reject", "expire")}
        return RoundSummary(version=version, candidates=len(decisions), promoted=len(done), held=counts["hold"],
                            rejected=counts["reject"], expired=counts["expire"], hash=new_hash)

    return graph.write_unit(unit)


def quorum_decisions(rows: Sequence[dict], *, quorum: int = 2) -> list[EdgeDecision]:
    """The simple rule: promote when ``votes >= quorum``, otherwise hold."""
    if quorum < 1:
        raise KgrValidationError("quorum must be >= 1", field="quorum")
    out = []
    for r in rows:
        ok = r["votes"] >= quorum
        out.append(EdgeDecision(
            key=r["key"], subject_key=r["subject_key"], object_key=r["object_key"],
            action="promote" if ok else "hold",
            reason=f"votes {r['votes']} {'>=' if ok else '<'} quorum {quorum}",
            inputs={"votes": r["votes"], "quorum": quorum, "confidence": r["confidence"]},
        ))
    return out


def promote_by_quorum(graph: Graph, *, quorum: int = 2, now: float | None = None,
                      limit: int = MAX_CANDIDATES_PER_ROUND) -> RoundSummary:
    """One round of the simple quorum rule over (at most ``limit``) undecided pending edges."""
    rows, deferred = round_candidates(graph, limit)
    started = time.perf_counter()
    decisions = quorum_decisions(rows, quorum=quorum)
    summary = apply_decisions(graph, decisions, note=f"quorum {quorum}", now=now,
                              decide_ms=(time.perf_counter() - started) * 1000.0)
    summary.deferred = deferred
    return summary
