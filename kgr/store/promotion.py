"""Promotion shortcuts on top of :mod:`kgr.store.rounds`: the quorum rule, and writing given decisions.

:func:`promote_by_quorum` is one round of the plain vote rule (:class:`kgr.promotion.policies.QuorumPolicy`)
through :func:`kgr.store.rounds.run_round`. :func:`apply_decisions` writes decisions made
elsewhere (scripts, tests, seeding a benchmark) as one version through the same
:func:`~kgr.store.rounds.write_round`: one transaction, checked against concurrent writers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from kgr.errors import KgrValidationError
from kgr.model.decisions import EdgeDecision, RoundSummary
from kgr.model.promotion import RoundDecisions, RoundInputs
from kgr.store.connection import Graph
from kgr.store.rounds import read_context, run_round, write_round

__all__ = ["PendingEdgeRow", "apply_decisions", "candidates", "iter_pending", "promote_by_quorum",
           "MAX_CANDIDATES_PER_ROUND"]

_UNDECIDED = ("pending", "held")

#: Candidates one round decides at most (one transaction writes them all).
MAX_CANDIDATES_PER_ROUND = 5000


class PendingEdgeRow(BaseModel):
    """A staged edge (``PENDING_REL``) with its endpoints and its vote record, as listed by key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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


def promote_by_quorum(graph: Graph, *, quorum: int = 2, now: float | None = None,
                      limit: int = MAX_CANDIDATES_PER_ROUND) -> RoundSummary:
    """One round of the simple quorum rule over (at most ``limit``) undecided pending edges."""
    from kgr.promotion.policies import QuorumConfig, QuorumPolicy

    if quorum < 1:
        raise KgrValidationError("quorum must be >= 1", field="quorum")
    return run_round(graph, QuorumPolicy(QuorumConfig(quorum=quorum, max_candidates_per_round=limit)), now=now)
