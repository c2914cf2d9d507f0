"""Promotion shortcuts on top of :mod:`kgr.store.rounds`: reading candidates, writing given decisions.

The store decides nothing: a round's policy is built above it (:func:`kgr.engine.promote_by_quorum`,
:meth:`kgr.engine.Engine.promote`) and handed to :func:`kgr.store.rounds.run_round`.
:func:`apply_decisions` writes decisions made
elsewhere (scripts, tests, seeding a benchmark) as one version through the same
:func:`~kgr.store.rounds.write_round`: one transaction, checked against concurrent writers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from kgr.model.decisions import EdgeDecision, RoundSummary
from kgr.model.promotion import RoundDecisions, RoundInputs
from kgr.store.connection import Graph
from kgr.store.rounds import read_context, write_round

__all__ = ["PendingEdgeRow", "apply_decisions", "candidates", "iter_pending", "MAX_CANDIDATES_PER_ROUND"]

_UNDECIDED = ("pending", "held")

#: Candidates one round decides at most (one transaction writes them all).
MAX_CANDIDATES_PER_ROUND = 5000


class PendingEdgeRow(BaseModel):
    """A staged edge (``PENDING_REL``) with its endpoints and its vote record, as listed by key."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    key: str
    relation: str
    subject_key: str
    subject: str
    subject_type: str | None = None
    object_key: str
    object: str
    object_type: str | None = None
    votes: int = 0
    confidence: float | None = None
    status: str
    sources: list[str] = []
    first_seen: float | None = None
    last_seen: float | None = None
    decided_votes: int | None = None


def iter_pending(graph: Graph, statuses: Sequence[str] | None = None) -> Iterator[PendingEdgeRow]:
    """Stream the pending edges with one of ``statuses`` (None: every status), by key."""
    for r in graph.stream("pending_edges", {"statuses": None if statuses is None else list(statuses)}):
        yield PendingEdgeRow(**{**r, "sources": r["sources"] or []})


def candidates(graph: Graph, statuses: Sequence[str] = _UNDECIDED) -> list[PendingEdgeRow]:
    """Every pending edge with one of ``statuses`` (by default: not yet decided for good), by key."""
    return list(iter_pending(graph, statuses))


def apply_decisions(graph: Graph, decisions: Sequence[EdgeDecision], *, note: str = "", now: float | None = None,
                    decide_ms: float | None = None) -> RoundSummary:
    """Write decisions made elsewhere as one version (nothing is written for an empty list)."""
    if not decisions:
        return RoundSummary(candidates=0)
    context, _ = read_context(graph, "external", counts=False)
    inputs = RoundInputs(candidates=(), context=context, now=now or 0.0)
    return write_round(graph, RoundDecisions(decisions=list(decisions), note=note, decide_ms=decide_ms or 0.0),
                       inputs, policy="external")
