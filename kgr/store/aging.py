"""Aging: unconfirmed edges decay; stale pending edges expire; stale promoted edges may retire.

Agentic-KGR's update operator (its "Aging & Consistency" term): relations not re-observed within a
window decay, and past a hard window are removed. kgr applies it to both kinds of edge, with
``age`` = days since the edge's last new vote (re-observation = a new source voting for it):

- **pending** edges (noisy-or confidence c):

  .. math:: w = c \\, e^{-\\xi \\cdot \\mathrm{age}}

  and after ``ttl_days`` without a new vote the edge expires (status ``expired``, kept with its
  votes, a recorded ``expire`` decision; a new vote re-opens it);
- **promoted** edges decay only after a soft window,

  .. math:: w_p = c \\, e^{-\\xi_p \\cdot \\max(0,\\ \\mathrm{age} - \\mathrm{soft})}

  and those past the hard window whose :math:`w_p` fell below ``floor`` are **retired** as one
  version (kind ``aging``) with a recorded ``retire`` decision each (age, weight, windows, floor);
  their pending edge becomes ``expired``, so a new vote re-opens it for the policy. A rollback to a
  snapshot before the aging restores them, as for any version.

The weights are recomputed from the confidence on every run (not compounded), so running aging
twice at one time changes nothing. **Concurrency:** the run write-locks every edge it weighs (in the
writers' lock order, :mod:`kgr.store.edge_locks`) and decides expiry on the edge read again under
that lock, so a vote that lands while aging runs is never expired with its edge. Defaults retire nothing (``floor = 0``): a daily job over a
stable corpus only lowers weights; set a floor to let aging retire.

Worked examples: c = 0.9, ξ = 0.1/day, age = 7 days → w = 0.9·e^{-0.7} ≈ 0.447. A promoted edge
with c = 0.8 last confirmed 50 days ago, soft = 7, ξ_p = 0.01/day → w_p = 0.8·e^{-0.43} ≈ 0.520:
retired with ``floor = 0.6`` (50 > 45 days and 0.520 < 0.6), kept with ``floor = 0.5``.
"""

from __future__ import annotations

import json
import time
import uuid

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgr.errors import KgrValidationError
from kgr.store.connection import Graph, Tx
from kgr.store.versions import add_terms, close_version, current_state, open_version

__all__ = ["AgingConfig", "AgingReport", "age"]


class AgingConfig(BaseModel):
    """How edges age (formulas in :mod:`kgr.store.aging`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    xi: float = Field(0.1, ge=0, description="decay rate of pending edges, 1/day")
    xi_promoted: float = Field(0.01, ge=0, description="decay rate of promoted edges past the soft window, 1/day")
    ttl_days: float = Field(30.0, gt=0, description="days without a new vote before a pending edge expires")
    soft_window_days: float = Field(7.0, ge=0, description="days a promoted edge keeps its full weight")
    hard_window_days: float = Field(45.0, gt=0, description="days without a new vote before a promoted edge "
                                                            "may be retired (if its weight is below floor)")
    floor: float = Field(0.0, ge=0, le=1, description="promoted edges past the hard window with a weight below "
                                                      "this are retired; 0 (default) retires nothing")

    @model_validator(mode="after")
    def _windows(self) -> "AgingConfig":
        if self.hard_window_days < self.soft_window_days:
            raise ValueError("hard_window_days must be at least soft_window_days")
        return self


class AgingReport(BaseModel):
    """What one aging run did."""

    aged: int = Field(0, description="pending edges (any status) whose weight was recomputed")
    expired: int = Field(0, description="pending edges expired")
    expired_keys: list[str] = Field(default_factory=list)
    retired: int = Field(0, description="promoted edges retired")
    retired_keys: list[str] = Field(default_factory=list)
    version: int | None = Field(None, description="the version that retired them (None: nothing retired)")


def age(graph: Graph, config: AgingConfig | None = None, *, now: float | None = None) -> AgingReport:
    """Decay every pending and promoted edge, expire stale pending ones, retire stale promoted ones
    (a version, only when some are due), recording why for each."""
    cfg = config or AgingConfig()
    ts = time.time() if now is None else now
    if ts <= 0:
        raise KgrValidationError("now must be a positive epoch time", field="now")
    version, _ = current_state(graph)
    windows = {"soft_window": cfg.soft_window_days, "xi_promoted": cfg.xi_promoted}

    def unit(tx: Tx) -> AgingReport:
        stale = tx.run("age_pending", {"now": ts, "xi": cfg.xi, "ttl_days": cfg.ttl_days, **windows})
        rows = tx.run("age_expire", {"rows": stale, "now": ts, "ttl_days": cfg.ttl_days}) if stale else []
        decisions = [{"id": uuid.uuid4().hex, "key": r["key"], "action": "expire", "round": version,
                      "reason": r["reason"],
                      "inputs": json.dumps({"age_days": r["age_days"], "votes": r["votes"], "weight": r["weight"],
                                            "ttl_days": cfg.ttl_days, "xi": cfg.xi})} for r in rows]
        if decisions:
            tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
        return AgingReport(expired=len(rows), expired_keys=[r["key"] for r in rows])

    report = graph.write_unit(unit)
    due = {"now": ts, "hard_window": cfg.hard_window_days, "floor": cfg.floor, **windows}
    if cfg.floor > 0 and graph.read("age_promoted_due", due):
        report = report.model_copy(update=graph.write_unit(lambda tx: _retire(tx, due, cfg, ts)))
    counts = graph.read("graph_counts")[0]
    report.aged = sum(n for _, n in counts["pending_by_status"])
    return report


def _retire(tx: Tx, due: dict, cfg: AgingConfig, ts: float) -> dict:
    """Inside a write unit: retire the promoted edges due (selected again under the version lock)."""
    version, old_hash = open_version(tx)
    rows = tx.run("age_promoted_due", due)
    reasons = {r["key"]: f"aged out: no new vote for {r['age_days']:.1f} days (hard window "
                         f"{cfg.hard_window_days:g}), weight {r['weight']:.3f} below the floor {cfg.floor:g}"
               for r in rows}
    gone = tx.run("retire_edges", {"rows": [{"key": r["key"], "s_key": r["s_key"], "o_key": r["o_key"],
                                             "reason": reasons[r["key"]]} for r in rows],
                                   "version": version, "status": "expired"}) if rows else []
    decisions = [{"id": uuid.uuid4().hex, "key": r["key"], "action": "retire", "round": version,
                  "reason": reasons[r["key"]],
                  "inputs": json.dumps({"aging": {"age_days": r["age_days"], "weight": r["weight"], "votes": r["votes"],
                                                  "soft_window_days": cfg.soft_window_days,
                                                  "hard_window_days": cfg.hard_window_days,
                                                  "xi_promoted": cfg.xi_promoted, "floor": cfg.floor}})}
                 for r in rows]
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
    keys = [r["key"] for r in gone]
    new_hash = add_terms(old_hash, added=[], removed=keys)
    close_version(tx, version, new_hash, kind="aging", now=ts, note=f"aging retired {len(keys)} promoted edges",
                  retired=len(keys))
    return {"retired": len(keys), "retired_keys": sorted(keys), "version": version}
