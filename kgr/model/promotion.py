"""What a promotion round reads and what it decides: the typed rows at the store/policy boundary.

A round is ``read_round(graph) -> RoundInputs``, ``policy.decide(inputs, state) -> RoundDecisions``,
``write_round(graph, decisions) -> RoundSummary`` (:mod:`kgr.store.rounds`). The store fills
these types and never decides; the policies (:mod:`kgr.promotion.policies`) decide and never touch
the database. Bulk rows are frozen dataclasses with slots (a round carries thousands of them and
a promoted graph of 100k edges); the records a user sees (decisions, summaries) are pydantic
models in :mod:`kgr.model.decisions`.

Conventions: entity keys are ``"<Type>:<canonical name>"``; an edge key identifies one staged
triple; times are Unix seconds; ``documents`` counts *independent* sources — the distinct
documents behind an edge's votes (chunks of one document count once; a staged source
``"doc-17#3"`` belongs to document ``"doc-17"``; a source with neither a chunk nor a ``#`` is its
own document).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from kgr.model.decisions import EdgeDecision
from kgr.model.schema import KGSchema

__all__ = [
    "PolicyName",
    "POLICY_NAMES",
    "DEFAULT_POLICY",
    "RoundContext",
    "RoundRequest",
    "ScoredEdge",
    "CandidateRow",
    "EdgeList",
    "LabelRow",
    "RoundInputs",
    "RoundDecisions",
    "HoldKind",
    "Answer",
]

#: The registered promotion policies (``kgr promote --policy``, ``IngestConfig.policy``,
#: ``Engine.promote``); implementations in :mod:`kgr.promotion.policies`.
PolicyName = Literal["calibrated", "gedig", "quorum"]
POLICY_NAMES: tuple[PolicyName, ...] = ("calibrated", "gedig", "quorum")
DEFAULT_POLICY: PolicyName = "calibrated"

#: Why a candidate was last held: ``quorum`` (too few votes), ``evidence`` (scored too low),
#: ``escalated`` (ambiguous: waiting for a verifier or a reviewer), ``budget`` (acceptable, but the
#: round's promotion budget was used: decided again next round), ``audit`` (the grace-period audit
#: refused it: decided again next round), ``functional`` (a conflicting object), ``gate`` (the geDIG
#: gates held it).
HoldKind = Literal["quorum", "evidence", "escalated", "budget", "audit", "functional", "gate"]
#: A verifier's answer about one triple in one chunk.
Answer = Literal["supports", "contradicts", "silent"]


@dataclass(frozen=True)
class RoundContext:
    """What the store tells a policy before a round reads anything (cheap to read).

    Attributes
    ----------
    version : int
        The store's current version.
    hash : str
        The promoted graph's content hash.
    labels : int
        Labels received so far.
    promoted : int
        Current promoted edges.
    promoted_scored : int
        Current promoted edges that carry a score :math:`\\hat p`.
    promoted_expected_false : float
        :math:`\\sum (1 - \\hat p)` over those.
    created_at : float or None
        When the store was initialised (seconds since the epoch): with ``hash``, what identifies the
        promoted graph across processes (:mod:`kgr.store.promoted_disk`). None when not read.
    """

    version: int
    hash: str
    labels: int = 0
    promoted: int = 0
    promoted_scored: int = 0
    promoted_expected_false: float = 0.0
    created_at: float | None = None


@dataclass(frozen=True)
class RoundRequest:
    """What a policy asks the store to read for a round (:meth:`Policy.plan`).

    Attributes
    ----------
    limit : int
        Candidates at most.
    epoch : int
        The policy's epoch: held edges decided in an earlier epoch are decided again.
    graph : bool
        Read every current promoted edge.
    pending : bool
        Read every undecided staged edge (the vote-weighted graph).
    labels : bool
        Read every label with its recorded features.
    promoted_features : bool
        Read the feature vectors of the current promoted edges (to rescore them after a refit).
    background : int
        Also read at most this many already decided staged edges (held or promoted), a uniform
        sample (those whose key, a hash, starts with one hex digit, another each round): the
        population a scorer is fitted on besides the round's own candidates.
    settle : bool
        Read every *managed* staged edge instead of a bounded batch of candidates (a settle,
        :mod:`kgr.promotion.settle`): pending, held, rejected, and promoted with a score; the
        promoted edges without a score (another policy's) come as ``RoundInputs.promoted``.
    settled_version : int or None
        With ``settle``: the version the policy last settled at; when the store is still at it and
        no managed edge has new evidence, nothing is read (``RoundInputs.nothing_new``).
    """

    limit: int
    epoch: int = 0
    graph: bool = True
    pending: bool = False
    labels: bool = False
    promoted_features: bool = False
    background: int = 0
    settle: bool = False
    settled_version: int | None = None


@dataclass(frozen=True, slots=True)
class ScoredEdge:
    """A current promoted edge with the feature vector recorded when it was promoted."""

    key: str
    subject_key: str
    object_key: str
    features: tuple[float, ...]
    feature_set: str | None


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """One undecided staged edge offered to a round, with all evidence the store holds about it.

    Attributes
    ----------
    key, relation : str
        Edge key and relationship type.
    subject_key, subject_type, object_key, object_type : str
        The endpoints.
    votes : int
        Distinct sources (chunks, or staged source strings).
    documents : int
        Distinct documents among those sources (independent sources, ``1 <= documents <= votes``
        for an edge with votes).
    confidence : float
        Noisy-or of the sources' confidences, in ``[0, 1]``.
    mean_confidence : float
        Mean confidence of the inline sources.
    quality : float or None
        Mean extraction quality score (the quality tool's ``overall_score`` / 100) of the source
        chunks that have one; None when none has.
    supports, contradicts, silent : int
        Verifier answers recorded so far (one per re-read chunk).
    label : bool or None
        A reviewer's label, when there is one.
    status : str
        ``pending`` (never decided, or new evidence) or ``held``.
    decided_votes : int or None
        Votes at the last decision.
    hold : str or None
        :data:`HoldKind` of the last hold.
    first_seen, last_seen : float
        When the first and the latest vote arrived.
    chunked : bool
        Some of its sources are ingested chunks, so the corpus can be re-read for it.
    p_hat : float or None
        The score recorded at its last decision (settles only).
    label_kind : str or None
        ``audit`` (a uniform pick of the review queue) or ``active`` (any other label); None unlabelled.
    dirty : bool
        New votes or evidence since its last decision (or never decided).
    reread : bool
        A verifier was asked about it since its votes last changed (settles only).
    """

    key: str
    relation: str
    subject_key: str
    subject_type: str
    object_key: str
    object_type: str
    votes: int
    documents: int
    confidence: float
    mean_confidence: float
    quality: float | None = None
    supports: int = 0
    contradicts: int = 0
    silent: int = 0
    label: bool | None = None
    status: str = "pending"
    decided_votes: int | None = None
    hold: str | None = None
    first_seen: float = 0.0
    last_seen: float = 0.0
    chunked: bool = False
    p_hat: float | None = None
    label_kind: str | None = None
    dirty: bool = True
    reread: bool = False


@dataclass(frozen=True)
class EdgeList:
    """Typed directed edges by entity key, as parallel lists (one promoted or staged fact each).

    ``weight`` is the vote count (distinct sources) behind each edge; ``key`` the edge keys and
    ``score`` their recorded :math:`\\hat p` (None where none was recorded); both may be empty
    when the reader did not need them.
    """

    subject: Sequence[str] = ()
    relation: Sequence[str] = ()
    object: Sequence[str] = ()
    weight: Sequence[float] = ()
    key: Sequence[str] = ()
    score: Sequence[float | None] = ()

    def __post_init__(self) -> None:
        n = len(self.subject)
        if not (len(self.relation) == len(self.object) == len(self.weight) == n) or len(self.key) not in (0, n) \
                or len(self.score) not in (0, n):
            raise ValueError("EdgeList columns must have the same length")

    def __len__(self) -> int:
        return len(self.subject)


@dataclass(frozen=True, slots=True)
class LabelRow:
    """A reviewer's label on an edge, with the evidence features recorded at its last decision.

    ``features`` is None when the edge was labelled before any scored decision (the scorer then
    learns from it once it has been scored).
    """

    key: str
    label: bool
    reviewer: str
    features: tuple[float, ...] | None
    feature_set: str | None = None


@dataclass(frozen=True)
class RoundInputs:
    """Everything a policy may look at in one round (read by :func:`kgr.store.rounds.read_round`).

    Attributes
    ----------
    candidates : tuple of CandidateRow
        The round's candidates (at most ``max_candidates_per_round``; new evidence first).
    promoted : EdgeList
        Every current promoted edge.
    pending : EdgeList
        Every undecided staged edge with at least one vote (candidates included): the
        vote-weighted part of the graph that learned plausibility may train on.
    entity_types : dict of str to str
        Type of every entity key in ``promoted``, ``pending`` and the candidates.
    labels : tuple of LabelRow
        Every label received so far.
    promoted_features : tuple of ScoredEdge
        Feature vectors of the current promoted edges (only when the policy asked for them).
    background : tuple of CandidateRow
        A uniform sample of already decided staged edges, held or promoted (only when asked for).
    schema : KGSchema or None
        The KG schema (declared domain, range, functional relations).
    context : RoundContext
        The store's version, hash and counts when the round started (the round opens
        ``context.version + 1``).
    epoch : int
        The policy's epoch the candidates were read for.
    deferred : int
        Undecided edges left for later rounds.
    now : float
        The round's clock (Unix seconds).
    nothing_new : bool
        A settle found the store where it last settled: nothing was read.
    """

    candidates: tuple[CandidateRow, ...]
    promoted: EdgeList = field(default_factory=EdgeList)
    pending: EdgeList = field(default_factory=EdgeList)
    entity_types: dict[str, str] = field(default_factory=dict)
    labels: tuple[LabelRow, ...] = ()
    promoted_features: tuple[ScoredEdge, ...] = ()
    background: tuple[CandidateRow, ...] = ()
    schema: KGSchema | None = None
    context: RoundContext = field(default_factory=lambda: RoundContext(version=0, hash=""))
    epoch: int = 0
    deferred: int = 0
    now: float = 0.0
    nothing_new: bool = False


@dataclass(frozen=True)
class RoundDecisions:
    """What a policy decided in one round, for :func:`kgr.store.rounds.write_round`.

    Attributes
    ----------
    decisions : list of EdgeDecision
        One per candidate that needs a record (a hold on unchanged evidence may be left out:
        ``unchanged`` counts those).
    promoted_order : tuple of str
        Keys promoted, in selection order.
    state : str or None
        The policy's new cross-round state (JSON), persisted with the round; None: unchanged.
    rescored : dict of str to float
        New :math:`\\hat p` of current promoted edges after the scorer was refit (written on them).
    unchanged : int
        Candidates held again on unchanged evidence (counted as held, not recorded again).
    note : str
        The version's note (policy name and settings).
    decide_ms : float
        The policy's own time for the round.
    escalated : tuple of str
        Keys of ambiguous candidates that need more evidence (verifier or reviewer).
    refreshed : tuple of (key, subject key, object key, p_hat, decided)
        Staged edges whose outcome did not change but whose score moved, or whose new evidence
        was weighed (``decided``: mark it decided on its current votes and evidence revision); no
        decision record is written for them.
    report : dict
        What the policy reports about its cut (:class:`~kgr.model.decisions.CutReport` fields).
    """

    decisions: list[EdgeDecision]
    promoted_order: tuple[str, ...] = ()
    state: str | None = None
    rescored: dict[str, float] = field(default_factory=dict)
    unchanged: int = 0
    note: str = ""
    decide_ms: float = 0.0
    escalated: tuple[str, ...] = ()
    refreshed: tuple[tuple[str, str, str, float | None, bool], ...] = ()
    report: dict = field(default_factory=dict)
