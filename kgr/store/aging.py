"""Aging: unconfirmed pending edges decay and expire.

For a pending edge with noisy-or confidence c whose last new vote is ``age`` days old,

.. math:: w = c \\, e^{-\\xi \\cdot \\mathrm{age}}

and after ``ttl_days`` without a new vote the edge expires (status ``expired``, kept with its
votes and a recorded ``expire`` decision). Promoted edges that are not reconfirmed decay too
(rate ``xi_promoted``): their ``weight`` falls, which the policy and users can read, but only a
decision retires them. This is the second term of Agentic-KGR's update operator (Definition 3).

Worked example: c = 0.9, ξ = 0.1/day, age = 7 days → w = 0.9·e^{-0.7} ≈ 0.447.
"""

from __future__ import annotations

import json
import time
import uuid

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.store.connection import Graph, Tx
from kgr.store.versions import current_state

__all__ = ["AgingConfig", "AgingReport", "age"]


class AgingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    xi: float = Field(0.1, ge=0, description="decay rate of pending edges, 1/day")
    xi_promoted: float = Field(0.01, ge=0, description="decay rate of unconfirmed promoted edges, 1/day")
    ttl_days: float = Field(30.0, gt=0, description="days without a new vote before a pending edge expires")


class AgingReport(BaseModel):
    aged: int = 0
    expired: int = 0
    expired_keys: list[str] = Field(default_factory=list)


def age(graph: Graph, config: AgingConfig | None = None, *, now: float | None = None) -> AgingReport:
    """Apply decay to every pending/promoted edge and expire stale pending ones, recording why."""
    cfg = config or AgingConfig()
    ts = time.time() if now is None else now
    if ts <= 0:
        raise KgrValidationError("now must be a positive epoch time", field="now")
    version, _ = current_state(graph)

    def unit(tx: Tx) -> AgingReport:
        rows = tx.run("age_pending", {"now": ts, "xi": cfg.xi, "xi_promoted": cfg.xi_promoted, "ttl_days": cfg.ttl_days})
        decisions = [{"id": uuid.uuid4().hex, "key": r["key"], "action": "expire", "round": version,
                      "reason": r["reason"],
                      "inputs": json.dumps({"age_days": r["age_days"], "votes": r["votes"], "weight": r["weight"],
                                            "ttl_days": cfg.ttl_days, "xi": cfg.xi})} for r in rows]
        if decisions:
            tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
        return AgingReport(expired=len(rows), expired_keys=[r["key"] for r in rows])

    report = graph.write_unit(unit)
    counts = graph.read("graph_counts")[0]
    report.aged = sum(n for _, n in counts["pending_by_status"])
    return report
