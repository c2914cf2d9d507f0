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

__all__ = ["apply_decisions", "quorum_decisions", "candidates", "promote_by_quorum"]

_STATUS = {"hold": "held", "reject": "rejected", "expire": "expired"}


def candidates(graph: Graph, statuses: Sequence[str] = ("pending", "held")) -> list[dict]:
    """Pending edges a round considers (by default: not yet decided for good)."""
    return graph.read("pending_edges", {"statuses": list(statuses)})


def apply_decisions(graph: Graph, decisions: Sequence[EdgeDecision], *, kind: str = "promotion",
                    note: str = "", now: float | None = None) -> RoundSummary:
    """Write one round of decisions as one version (nothing is written for an empty round)."""
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
        close_version(tx, version, new_hash, kind=kind, now=ts, note=note, promoted=len(done))
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


def promote_by_quorum(graph: Graph, *, quorum: int = 2, now: float | None = None) -> RoundSummary:
    """One round of the simple quorum rule over all undecided pending edges."""
    return apply_decisions(graph, quorum_decisions(candidates(graph), quorum=quorum), note=f"quorum {quorum}", now=now)
