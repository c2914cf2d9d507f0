"""What the read side returns: entity search hits, an entity's neighbourhood, an edge's explanation.

These are the rows :mod:`kgr.store.inspect` reads, typed. The tool server's helpers, the
:class:`~kgr.engine.Engine` and the CLI all return or print these same models.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgr.model.review import EvidenceLink

__all__ = ["EntityHit", "EntityRef", "NeighbourEdge", "Neighbourhood", "DecisionRecord", "EdgeExplanation"]


class _Row(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class EntityHit(_Row):
    """One fulltext match of an entity's name or alias."""

    key: str
    name: str
    type: str | None
    aliases: list[str]
    score: float = Field(description="fulltext relevance; higher is better")


class EntityRef(_Row):
    key: str
    name: str
    type: str | None


class NeighbourEdge(_Row):
    """One edge at an entity: promoted (current) or staged."""

    relation: str
    key: str | None = Field(description="edge key (pass to explain_edge)")
    direction: Literal["out", "in"] = Field(description="out: the entity is the subject")
    status: str = Field(description="'promoted' for a current promoted edge, else the PENDING_REL status")
    votes: int | None
    confidence: float | None
    neighbour: EntityRef


class Neighbourhood(_Row):
    """An entity and its one-hop edges, current promoted edges first."""

    entity: EntityRef
    aliases: list[str]
    edges: list[NeighbourEdge]
    truncated: bool = Field(description="more edges exist than limit")


class DecisionRecord(_Row):
    """One decision recorded about an edge (promote, hold, reject, expire, retire, restore, merge, label)."""

    action: str
    version: int | None
    at: float | None = Field(description="Unix time of the decision")
    reason: str
    inputs: dict[str, Any] = Field(description="what the policy looked at: votes, gauge terms, gates, rewards, thresholds")

    @field_validator("inputs", mode="before")
    @classmethod
    def _parse(cls, raw: Any) -> dict[str, Any]:
        """Decisions store their inputs as a JSON string; a malformed one is kept as ``{"raw": ...}``."""
        if isinstance(raw, dict):
            return raw
        try:
            data = json.loads(raw or "{}")
        except (TypeError, ValueError):
            return {"raw": str(raw)}
        return data if isinstance(data, dict) else {"value": data}


class EdgeExplanation(_Row):
    """Why an edge is where it is: its staged state, its last score and every decision about it."""

    key: str
    subject: str
    relation: str
    object: str
    status: str
    votes: int
    documents: int = Field(0, description=(
        "distinct documents its votes come from: the independent sources (the chunks of one document are one)"))
    confidence: float
    p_hat: float | None = Field(None, description="the calibrated probability of its last scored decision")
    features: list[float] | None = Field(None, description="the feature vector of that decision")
    feature_set: str | None = Field(None, description="the version of the feature list the vector follows")
    decisions: list[DecisionRecord] = Field(description="oldest first")
    evidence: list[EvidenceLink] = Field(default_factory=list, description=(
        "its first inline votes: source, chunk, document, and the sentence that produced the vote"))
