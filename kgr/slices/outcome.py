"""Outcome feedback on slices, and the health check of the outcome weights (``kgr doctor``).

After OpenClawBrain (003_b4e8b77a93384d4f.txt): an agent reports +1 (the slice helped) or −1 (it
misled) for a slice it used, optionally naming the edges that mattered. Each of those current
promoted edges (default: all of the slice's) moves its outcome weight

.. math:: w \\leftarrow \\operatorname{clip}_{[-1, 1]}\\bigl(w + \\eta\\, z\\bigr), \\qquad z \\in \\{+1, -1\\},

starting from the neutral 0.3 (η = 0.1 by default): three rewards take a neutral edge to the reflex
tier (0.6), four punishments to the inhibitory one (−0.1), where the slicer's veto drops it. This
is the seed's "heuristic" update on the fired path (every edge of the trajectory gets the terminal
outcome), not its softmax policy gradient: kgr's slices are chosen by priority, not sampled from a
policy. An edge punished ``review_after`` times (default 3) is put on the promotion review queue
(``kgr review queue``), where a person's label decides whether the fact stays.

Worked example: w = 0.3; +1, +1, +1 → 0.4, 0.5, 0.6 (reflex). w = 0.3; −1 ×4 → 0.2, 0.1, 0.0, −0.1
(inhibitory after the fourth; review requested after the third).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.slices import OutcomeReport, tier_of
from kgr.store.connection import Graph
from kgr.store.embeddings import EmbeddingCoverage, coverage
from kgr.store.slices import (
    OutcomeHealth, decay_outcomes, flag_for_review, outcome_health, relax_outcomes, write_outcome,
)
from kgr.store.slice_records import slice_edges

__all__ = ["report_outcome", "doctor", "DoctorReport", "DEFAULT_ETA", "REVIEW_AFTER"]

DEFAULT_ETA = 0.1
REVIEW_AFTER = 3
#: Seconds feedback looks again for a slice record not found (issued by another process, maybe still
#: being written: :mod:`kgr.store.slice_records`).
RECORD_WAIT = 0.5


def report_outcome(graph: Graph, slice_id: str, outcome: int, *, edges: Sequence[str] = (), eta: float = DEFAULT_ETA,
                   review_after: int = REVIEW_AFTER) -> OutcomeReport:
    """Apply one outcome to an issued slice's edges (all, or the given keys among them).

    Raises
    ------
    KgrNotFound
        No slice with that id was issued here.
    KgrValidationError
        ``outcome`` not ±1, ``eta`` outside (0, 1], or an edge key that is not in the slice.
    """
    if outcome not in (1, -1):
        raise KgrValidationError("outcome must be 1 or -1", field="outcome")
    if not 0 < eta <= 1:
        raise KgrValidationError("eta must be in (0, 1]", field="eta")
    issued = slice_edges(graph, slice_id, wait=RECORD_WAIT)
    if issued is None:
        raise KgrNotFound(f"no slice with id {slice_id[:64]!r} was issued by this store")
    by_key = {k: (k, s, o) for k, s, o in issued}
    unknown = sorted(set(edges) - set(by_key))
    if unknown:
        raise KgrValidationError(f"edge {unknown[0]!r} is not in slice {slice_id}", field="edges")
    chosen = [by_key[k] for k in (edges or sorted(by_key))]
    after = write_outcome(graph, slice_id, outcome, chosen, eta=eta)
    due = [(k, s, o, f"{after[k][1]} negative outcomes from agents (latest in slice {slice_id})")
           for k, s, o in chosen if k in after and outcome < 0 and after[k][1] >= review_after]
    flagged = flag_for_review(graph, due)
    return OutcomeReport(slice_id=slice_id, outcome=outcome, edges=len(after),
                         weights={k: round(w, 9) for k, (w, _) in sorted(after.items())},
                         tiers={k: tier_of(w) for k, (w, _) in sorted(after.items())}, review_flagged=sorted(flagged))


class DoctorReport(BaseModel):
    """Health of the outcome weights, with what to do about it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    relaxed: int = Field(0, description="edges whose weight the maintenance moved back toward neutral (--relax)")
    decayed: int = Field(0, description="rated edges the time-based decay looked at (--half-life-days)")
    health: OutcomeHealth
    shares: dict[str, float] = Field(description="tier -> share of the current promoted edges")
    findings: list[str] = Field(default_factory=list, description="problems found, each with a suggested fix")
    embeddings: EmbeddingCoverage | None = Field(
        None, description="entities with a name embedding from the configured model (none configured: null)")
    ok: bool


def doctor(graph: Graph, *, relax: float = 0.0, half_life_days: float | None = None,
           now: float | None = None, embedding_model: str | None = None) -> DoctorReport:
    """Tier proportions, dormant mass and other checks of the outcome weights, with suggested fixes.

    With ``half_life_days``, time-based decay runs first: every rated edge's weight moves toward the
    neutral 0.3 by the time since its last outcome (or last decay), halving its distance from
    neutral every ``half_life_days``, :math:`w \\leftarrow 0.3 + (w - 0.3)\\,2^{-\\Delta t / h}`
    (the seed's decay: feedback nobody renews fades; run it on a schedule, runs compose).

    With ``relax`` in (0, 1], maintenance runs first: every rated edge's weight moves that share of
    the way back to the neutral 0.3, :math:`w \\leftarrow 0.3 + (w - 0.3)(1 - r)` (the seed's
    recovery from a dormant-heavy graph: dormant and inhibitory edges become followable again,
    reflex ones less dominant; ``relax = 1`` forgets all feedback).

    With ``embedding_model``, it also counts the entities without a name embedding from that model
    (a query's anchors by meaning cannot reach them until ``kgr embed`` runs again).

    Raises
    ------
    KgrValidationError
        ``relax`` outside [0, 1], or a half-life that is not positive.
    """
    if not 0.0 <= relax <= 1.0:
        raise KgrValidationError("relax must be between 0 and 1", field="relax")
    if half_life_days is not None and not half_life_days > 0:
        raise KgrValidationError("the half-life must be a positive number of days", field="half_life_days")
    decayed = decay_outcomes(graph, half_life_days * 86_400.0, now=now) if half_life_days is not None else 0
    moved = relax_outcomes(graph, relax) if relax > 0 else 0
    h = outcome_health(graph)
    n = max(h.edges, 1)
    shares = {t: round(getattr(h, t) / n, 4) for t in ("reflex", "habitual", "dormant", "inhibitory")}
    findings = []
    if h.edges == 0:
        findings.append("no promoted edge: slices are empty; ingest and promote first (kgr ingest, kgr promote)")
    if h.edges and shares["dormant"] > 0.9:
        findings.append(f"{shares['dormant']:.0%} of the promoted edges are dormant: feedback has pushed most edges "
                        "down; review the negative outcomes (kgr review queue), or relax the weights toward neutral "
                        "(kgr doctor --relax 0.5)")
    if h.edges and shares["inhibitory"] > 0.2:
        findings.append(f"{shares['inhibitory']:.0%} of the promoted edges are inhibitory and vetoed from slices: "
                        "check the agent's outcome reports, or label the edges (kgr review queue)")
    if h.review:
        findings.append(f"{h.review} promoted edge(s) await review after repeated negative outcomes: kgr review queue")
    if h.edges and h.outcomes == 0:
        findings.append("no outcome reported yet: agents can report with kgr feedback / the report_outcome tool")
    informational = [f for f in findings if f.startswith("no outcome reported")]
    cover = coverage(graph, embedding_model) if embedding_model else None
    if cover is not None and cover.embedded < cover.entities:
        findings.append(f"{cover.entities - cover.embedded} of {cover.entities} entities have no name embedding from "
                        f"{embedding_model}: queries cannot find them by meaning until kgr embed runs (it embeds "
                        "only those)")
        informational.append(findings[-1])
    serious = [f for f in findings if f not in informational]
    return DoctorReport(health=h, shares=shares, findings=findings, ok=not serious, relaxed=moved, decayed=decayed,
                        embeddings=cover)
