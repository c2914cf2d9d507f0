"""Decisions about staged edges, as the store records them.

Every promote / hold / reject / expire / retire / restore decision is stored as a ``(:Decision)``
node with its reason and its inputs (votes, gauge terms, gates, rewards, thresholds) as JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Action", "EdgeDecision", "RoundSummary"]

Action = Literal["promote", "hold", "reject", "expire", "retire", "restore"]


class EdgeDecision(BaseModel):
    """What a policy decided about one staged edge, and why."""

    model_config = ConfigDict(extra="forbid")

    key: str
    subject_key: str
    object_key: str
    action: Action
    reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)


class RoundSummary(BaseModel):
    """The outcome of one promotion round (``kgr promote --json``)."""

    version: int | None = Field(None, description="version opened by the round (None if nothing changed)")
    candidates: int = 0
    promoted: int = 0
    held: int = 0
    rejected: int = 0
    expired: int = 0
    deferred: int = Field(0, description="undecided edges left for later rounds (a round decides a bounded number)")
    rolled_back: bool = False
    hash: str = ""
    timings: dict[str, float] = Field(default_factory=dict, description="seconds per phase")
    graph_read: dict[str, int | str] = Field(default_factory=dict,
                                             description="what the round read of the promoted graph: "
                                                         "fetch ('local' region or 'full'), edges, nodes, queries")
    decision_latency_ms: dict[str, float] = Field(default_factory=dict, description="p50/p95 per candidate")

    @property
    def settled(self) -> bool:
        """True when another round now would make no progress: this one promoted nothing, and it
        either left nothing deferred or wrote nothing at all (it only re-held unchanged holds)."""
        return self.promoted == 0 and (self.deferred == 0 or self.version is None)
