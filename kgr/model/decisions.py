"""Decisions about staged edges, as the store records them.

Every promote / hold / reject / expire / retire / restore decision is stored as a ``(:Decision)``
node with its reason and its inputs (votes, gauge terms, gates, rewards, thresholds) as JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgr.model.review import RereadReport

__all__ = ["Action", "EdgeDecision", "CutReport", "RoundSummary"]

Action = Literal["promote", "hold", "reject", "expire", "retire", "restore", "label"]


class EdgeDecision(BaseModel):
    """What a policy decided about one staged edge, and why."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    key: str
    subject_key: str
    object_key: str
    action: Action
    reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    p_hat: float | None = Field(None, ge=0.0, le=1.0, description="calibrated P(true | evidence), when scored")
    features: list[float] | None = Field(None, description="the scorer's feature vector (kept on the edge for refits)")
    feature_set: str | None = Field(None, description="name and version of the feature vector's layout")
    hold: str | None = Field(None, description="why a hold: quorum, evidence, escalated, budget, functional, gate")


class CutReport(BaseModel):
    """What the calibrated policy's cut promises, and on what (:mod:`kgr.promotion.certificate`)."""

    target_fmr: float = Field(description="the false-promotion rate the promoted set is held to")
    promoted: int = Field(0, description="edges the cut promotes (the policy's own; pinned ones aside)")
    held: int = Field(0, description="managed edges held after the settle (below the cut, escalated, quorum)")
    rejected: int = Field(0, description="managed edges rejected after the settle (hard violations, labelled false)")
    expected_fmr: float | None = Field(None, description="the model's expected FMR of them: sum(1 - p_hat) / promoted")
    bound: float | None = Field(None, description="the upper confidence bound on their FMR (within the target)")
    level: float = Field(0.9, description="confidence level of the bound")
    audit_labels: int = Field(0, description="uniform audit labels that fall in the promoted set")
    audits_needed: int = Field(0, description="audit labels the model's expectation counts as in the bound: from "
                                              "this many on the bound rests on the audits alone")
    audit_bound: float | None = Field(None, description="the Clopper-Pearson bound of the audit labels alone")
    certified: bool = Field(False, description="the audit labels alone (at least one) bound the FMR within the "
                                                "target")
    labels: int = Field(0, description="labels the scorer learnt from (audit and active)")
    advice: str | None = Field(None, description="why nothing is promoted, and what to do (when nothing is)")

    def describe(self) -> str:
        """One clause for people."""
        now = f"now {self.promoted} promoted, {self.held} held, {self.rejected} rejected"
        if not self.promoted:
            return f"{now}; target FMR {self.target_fmr:g}, nothing promoted" + (f": {self.advice}" if self.advice else "")
        alone = "" if self.audit_bound is None or not self.audit_labels else f" at {self.audit_bound:.4f}"
        stand_in = f"the model's expectation stands in for {max(0, self.audits_needed - self.audit_labels)}"
        if not self.audit_labels:  # no audit label certifies nothing, whatever the flag says
            cert = f"not certified: no audit label falls in the promoted set; {stand_in} audit labels"
        elif self.certified:
            cert = f"certified: its {self.audit_labels} audit labels alone bound it{alone}"
        else:
            cert = f"not certified: {self.audit_labels} audit labels bound it{alone or ' at 1'} alone; {stand_in} more"
        return (f"{now}; target FMR {self.target_fmr:g}: expected FMR {self.expected_fmr:.4f}, "
                f"{self.level:.0%} bound {self.bound:.4f} ({cert})")


class RoundSummary(BaseModel):
    """The outcome of one promotion round (``kgr promote --json``)."""

    version: int | None = Field(None, description="version opened by the round (None if nothing changed)")
    candidates: int = 0
    promoted: int = 0
    held: int = 0
    rejected: int = 0
    expired: int = 0
    retired: int = Field(0, description="promoted edges retired (their expected FMR no longer fits the target)")
    deferred: int = Field(0, description="undecided edges left for later rounds (a round decides a bounded number)")
    rolled_back: bool = False
    escalated: int = Field(0, description="ambiguous candidates that need more evidence (verifier or review)")
    budget_held: int = Field(0, description="acceptable candidates held only because the round's budget was used")
    expected_fmr: float | None = Field(None, description="predicted false-promotion rate of the promoted graph after "
                                                         "the round: sum(1 - p_hat) / promoted edges with a score")
    policy: str = Field("", description="the policy that decided the round")
    reread: RereadReport | None = Field(None, description="what re-reading the escalated candidates found, when a "
                                                         "verifier was given")
    hash: str = ""
    timings: dict[str, float] = Field(default_factory=dict, description="seconds per phase")
    graph_read: dict[str, int | str] = Field(default_factory=dict,
                                             description="what the round read of the promoted graph: "
                                                         "fetch ('local' region or 'full'), edges, nodes, queries")
    decision_latency_ms: dict[str, float] = Field(default_factory=dict, description="p50/p95 per candidate")
    settle: bool = Field(False, description="the round decided every managed edge at once (the calibrated policy)")
    cut: CutReport | None = Field(None, description="the calibrated policy's cut: target, expected FMR, bound")

    def describe(self) -> str:
        """One line for people: what the round did."""
        head = f"v{self.version}" if self.version is not None else "no change"
        extra = ""
        if self.cut is not None:
            extra += f"; {self.cut.describe()}"
        elif self.expected_fmr is not None:
            extra += f", expected FMR {self.expected_fmr:.4f}"
        if self.escalated:
            extra += f", {self.escalated} escalated"
        if self.retired:
            extra += f", {self.retired} retired"
        if self.reread is not None:
            r = self.reread
            extra += f"; re-read {r.claims} chunks: {r.supports} supports, {r.contradicts} contradicts, {r.silent} silent"
        return (f"{head}: {self.promoted} promoted, {self.held} held, {self.rejected} rejected, {self.expired} expired "
                f"of {self.candidates} candidates" + (f", {self.deferred} deferred" if self.deferred else "") + extra
                + (" (round rolled back by audit)" if self.rolled_back else ""))

    @property
    def settled(self) -> bool:
        """True when another round now would make no progress: a settle (it decided everything at
        once), or a round that promoted nothing and either left nothing deferred or wrote nothing at
        all (it only re-held unchanged holds)."""
        return self.settle or (self.promoted == 0 and self.budget_held == 0
                               and (self.deferred == 0 or self.version is None))
