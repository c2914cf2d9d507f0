"""The geDIG policy's inputs, settings, state and decisions (pydantic models).

:class:`Candidate` (a staged edge with its votes and constraint values), :class:`Ball` and
:class:`Prefetched` (the promoted graph around the candidates, when the caller reads only that),
:class:`PromotionConfig` (every setting, with its default and why), :class:`PolicyState` (the
calibrated thresholds, :math:`\\lambda` and the cooldown, carried across rounds),
:class:`CandidateDecision` and :class:`GedigRound` (what :func:`kgr.promotion.gedig.decide_round`
returns). Semantics in :mod:`kgr.promotion.gedig`.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from kgr.gauge.calibration import EWQuantile, ThresholdCalibrator
from kgr.gauge.gates import AuditResult, Cooldown, GateResult
from kgr.gauge.gedig import GaugeResult
from kgr.gauge.reward import ConstraintInputs, RewardTerms

__all__ = ["Action", "Ball", "Prefetched", "Candidate", "PromotionConfig", "PolicyState", "CandidateDecision",
           "GedigRound"]


Action = Literal["promote", "hold", "reject"]


NodeId = Annotated[str, Field(min_length=1)]


Finite = Annotated[float, Field(allow_inf_nan=False)]


class Candidate(BaseModel):
    """A staged edge offered to a promotion round.

    Attributes
    ----------
    key : str
        The edge key (unique within a round).
    subject, object : str
        Node ids of the endpoints in the graph passed to :func:`decide_round` (entity keys).
    relation : str
        Relationship type (recorded; the structure projection ignores it).
    votes : int
        Distinct sources asserting the edge.
    confidence : float
        Aggregated confidence in ``[0, 1]`` (recorded).
    constraints : ConstraintInputs
        Constraint values :math:`g_j` for this edge.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    key: NodeId
    subject: NodeId
    object: NodeId
    relation: Annotated[str, Field(min_length=1)]
    votes: Annotated[int, Field(ge=0)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    constraints: ConstraintInputs = Field(default_factory=ConstraintInputs)


class Ball(BaseModel):
    """A candidate's capped ball :math:`S_H`, as :func:`kgr.gauge.graphview.capped_ball` builds it.

    Attributes
    ----------
    nodes : tuple of str
        Nodes within ``hops`` of the endpoints in ``(distance, id)`` order, the first ``k_max``.
    dist : tuple of int
        Their distances (parallel to ``nodes``).
    capped : bool
        Whether the cap left out any node within ``hops``.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    nodes: tuple[NodeId, ...]
    dist: tuple[Annotated[int, Field(ge=0)], ...]
    capped: bool

    @model_validator(mode="after")
    def _parallel(self) -> "Ball":
        if len(self.nodes) != len(self.dist) or not self.nodes:
            raise ValueError("a ball needs one distance per node and at least its endpoints")
        return self


class Prefetched(BaseModel):
    """What the store fetched instead of the whole promoted graph (see "Locality and cost").

    With it, the ``graph`` passed to :func:`decide_round` need only hold the edges among each
    ball's nodes.

    Attributes
    ----------
    balls : dict of str to Ball
        Candidate key → its ball on the whole promoted graph.
    degrees : dict of str to int
        Node → its degree in the whole promoted graph (at least every candidate endpoint).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    balls: dict[str, Ball]
    degrees: dict[NodeId, Annotated[int, Field(ge=0)]]


class PromotionConfig(BaseModel):
    r"""Every parameter of the promotion policy, with its default and the reason for it.

    Attributes
    ----------
    quorum : int, default 2
        Minimum distinct sources: one source can be wrong or repeated; two independent ones are
        the smallest corroboration.
    max_promotions_per_round : int, default 1000
        :math:`k`: promotions per round (one round is one version). On the promotion benchmark
        k = 1000 and k = 100 give the same quality (acceptance 0.80 / 0.77, FMR 0.120 / 0.117)
        and 1000 needs a tenth of the rounds on a large backlog.
    max_candidates_per_round : int, default 5000
        Candidates one round decides at most (used by the store's runner, which takes the ones
        with new evidence first): a round is one transaction and must stay bounded whatever the
        backlog; repeated rounds (``kgr promote --until-done``) work through the rest. About 8 s
        of gauge work at the default on a 2-core machine.
    hops : int, default 2
        :math:`H`: largest hop of the gauge and radius of the :math:`\Delta S_{VN}` ball. 2 is
        the smallest radius that sees a one-node detour; cost grows as :math:`O(\bar d^H)`.
    k_max : int, default 64
        :math:`K_{\max}`: cap on ball size (all :math:`\binom{64}{2} = 2016` pairs are used for
        :math:`\Delta\mathrm{SP}`; two 64×64 eigensolves for :math:`\Delta S`).
    c_node, c_edge : float, default 1.0
        Edit costs; equal, so a new entity costs as much as a new edge.
    lam : float or None, default None
        :math:`\lambda`. None: variance balancing — ``lam_initial`` until ``lambda_warmup``
        samples of :math:`(\Delta\mathrm{EPC}, \Delta\mathrm{IG})` (one per candidate and hop
        :math:`1..H`) are collected, then :math:`\lambda_0` clipped to ``lambda_bounds``, fixed
        for good. A number fixes :math:`\lambda` from the start.
    lam_initial : float, default 1.0
        :math:`\lambda` during warm-up.
    lambda_warmup : int, default 100
        Samples before :math:`\lambda_0` is fixed (the paper's pilot :math:`N \approx 100`).
    lambda_bounds : (float, float), default (0.1, 10.0)
        Clip of :math:`\lambda_0`, against a degenerate warm-up.
    gamma : float, default 1.0
        :math:`\gamma`, path shortening counted fully (the paper's RAG default).
    max_sp_pairs : int, default 4096
        Above this many pairs :math:`\Delta\mathrm{SP}` uses a seeded sample of sources.
    theta_ag, theta_dg : float, default 0.75, 0.0
        Thresholds before calibration warm-up (or always, without calibration). 0.75 separates
        :math:`g_0 = 1/2` (known entities) from :math:`g_0 \ge 1` (a new entity);
        :math:`\theta_{DG} = 0` accepts only when information gain outweighs edit cost.
    calibrate_thresholds : bool, default True
        Follow exponentially weighted quantiles of recent :math:`g_0` and :math:`b`.
    ag_quantile, dg_quantile : float, default 0.9, 0.25
        :math:`1 - \alpha` (upper quantile of :math:`g_0`) and :math:`\beta` (lower quantile
        of :math:`b`).
    quantile_decay, quantile_window, quantile_warmup : default 0.99, 512, 50
        EWQ decay :math:`\rho` (about 100 effective samples), window, and values before the
        quantiles replace the fixed thresholds.
    calibration_memory : int, default 65536
        Only a candidate's *first* gauge evaluation feeds the quantiles and :math:`\lambda`
        warm-up; the state remembers this many keys (64-bit hashes). Re-feeding held candidates
        every round would pull :math:`\theta_{DG}` onto the backlog's own values, where their
        margins are too thin for the audit, and stall it. 0 feeds every evaluation.
    strong_support : int or None, default 3
        Votes at which a candidate that the gates would hold (AG, neither gate, or a failed
        audit) is accepted anyway. A fact that adds no structural insight — a triadic closure
        inside a community, a leaf attaching a new entity — is still a fact when enough
        independent sources assert it; without this override the DG quantile gate holds about
        three quarters of such candidates for good (measured in ``scripts/bench_promotion.py``).
        None: the gates alone decide.
    duplicate_similarity : float or None, default 0.85
        Used by the store's runner to flag near-duplicate entities
        (:meth:`kgr.promotion.constraints.PromotedIndex.constraints`): an endpoint new to the promoted graph
        whose canonical name is at least this similar (:func:`kgr.model.canonical.name_similarity`)
        to an entity of the same type that already holds the same relation with the other endpoint
        is a likely misspelling; the edge is rejected on the ``duplicate_entity`` constraint and the
        reason names the twin (merge them with ``kgr merge`` if they are one). 0.85 admits one
        typo in a 12-character name. None: off.
    reject_margin : float or None, default None
        Reject when :math:`b - \theta_{DG}` exceeds it. None: the gauge never rejects, it only
        holds — it measures structural value, which can grow as the neighbourhood grows;
        aging expires what stays unconfirmed.
    bootstrap_context_edges : int, default 1
        When the ball :math:`S_H` has fewer edges than this *before* the change, the gauge has no
        structure to measure (with 1: both endpoints are new or isolated). Such a candidate is
        accepted on quorum and constraints and competes in the greedy step; its values do not
        feed the threshold or :math:`\lambda` calibration. Without this an empty graph could
        never start: an edge between two new entities has :math:`b = 3/2` at every hop. 0
        disables the rule.
    audit : bool, default True
        Run the StabilityAudit before accepting.
    audit_rel_jitter, audit_abs_jitter, audit_trials, audit_eps : default 0.05, 0.005, 8, 0.0
        Relative jitter of the gauge terms (the paper's ±5 %), additive jitter of
        :math:`\theta_{DG}`, number of re-evaluations, required margin.
    cooldown : int, default 0
        Promotions during which a just-promoted node may not be promoted again (0: off; see
        :class:`~kgr.gauge.gates.Cooldown`).
    kappa : float, default 0.1
        Coverage saturation :math:`\kappa`: a node's coverage is 65 % saturated at 10 neighbours.
    coverage_hops : int, default 1
        :math:`h` of coverage; 1 is the submodular case.
    mu : float, default 0.0
        Density-operator regulariser :math:`\mu` (isolated nodes then add nothing to
        :math:`S_{VN}`, so :math:`\Delta S` does not depend on the ball's padding).
    beta : float, default 0.5
        Temporal rate :math:`\beta`; one edge gives :math:`T = e^{-1}`.
    lambda_contr, lambda_t : float, default 1.0, 0.1
        Weights of :math:`R_{\text{contr}}` and :math:`T` in :math:`R_{\text{env}}`.
    weight_cov, weight_vn : float, default 1.0
        Weights of :math:`\Delta\mathrm{Cov}` and :math:`\Delta S_{VN}` (1 in Eq. 11).
    max_contr : float, default 0.5
        Reject when :math:`R_{\text{contr}}` exceeds it: one hard violation (:math:`g = 1`)
        rejects; soft learned values below about 0.7 only lower :math:`R_{\text{env}}`.
    reward_floor : float or None, default None
        Stop selecting when the best marginal :math:`R_{\text{env}}` falls below it.
    lazy_greedy : bool, default True
        Lazy (heap) or plain greedy selection.
    use_epc, use_ig, use_sp : bool, default True
        Ablations: drop :math:`\Delta\mathrm{EPC}`, :math:`\Delta H` or
        :math:`\Delta\mathrm{SP}` from :math:`\mathcal{F}`.
    single_threshold : bool, default False
        Ablation "no gate": accept iff :math:`g_0 \le \theta_{DG}`; AG and multi-hop unused.
    seed : int, default 0
        Base seed of audits and path sampling (mixed with each candidate's key).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    quorum: int = Field(2, ge=1)
    max_promotions_per_round: int = Field(1000, ge=0)
    max_candidates_per_round: int = Field(5000, ge=1)
    hops: int = Field(2, ge=1)
    k_max: int = Field(64, ge=2)
    c_node: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    c_edge: float = Field(1.0, gt=0.0, allow_inf_nan=False)
    lam: float | None = Field(None, ge=0.0, allow_inf_nan=False)
    lam_initial: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    lambda_warmup: int = Field(100, ge=2)
    lambda_bounds: tuple[Finite, Finite] = (0.1, 10.0)
    gamma: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    max_sp_pairs: int = Field(4096, ge=1)
    theta_ag: Finite = 0.75
    theta_dg: Finite = 0.0
    calibrate_thresholds: bool = True
    ag_quantile: float = Field(0.9, ge=0.0, le=1.0)
    dg_quantile: float = Field(0.25, ge=0.0, le=1.0)
    quantile_decay: float = Field(0.99, gt=0.0, le=1.0)
    quantile_window: int = Field(512, ge=1)
    quantile_warmup: int = Field(50, ge=1)
    calibration_memory: int = Field(65536, ge=0)
    strong_support: int | None = Field(3, ge=1)
    duplicate_similarity: float | None = Field(0.85, gt=0.0, le=1.0)
    reject_margin: float | None = Field(None, ge=0.0, allow_inf_nan=False)
    bootstrap_context_edges: int = Field(1, ge=0)
    audit: bool = True
    audit_rel_jitter: float = Field(0.05, ge=0.0, allow_inf_nan=False)
    audit_abs_jitter: float = Field(0.005, ge=0.0, allow_inf_nan=False)
    audit_trials: int = Field(8, ge=1)
    audit_eps: Finite = 0.0
    cooldown: int = Field(0, ge=0)
    kappa: float = Field(0.1, gt=0.0, le=1.0)
    coverage_hops: int = Field(1, ge=1)
    mu: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    beta: float = Field(0.5, ge=0.0, allow_inf_nan=False)
    lambda_contr: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    lambda_t: float = Field(0.1, ge=0.0, allow_inf_nan=False)
    weight_cov: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    weight_vn: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    max_contr: float = Field(0.5, ge=0.0, allow_inf_nan=False)
    reward_floor: float | None = Field(None, allow_inf_nan=False)
    lazy_greedy: bool = True
    use_epc: bool = True
    use_ig: bool = True
    use_sp: bool = True
    single_threshold: bool = False
    seed: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _bounds_ordered(self) -> "PromotionConfig":
        lo, hi = self.lambda_bounds
        if not 0.0 <= lo <= hi:
            raise ValueError(f"lambda_bounds must satisfy 0 <= low <= high, got {self.lambda_bounds}")
        if self.strong_support is not None and self.strong_support < self.quorum:
            raise ValueError(f"strong_support ({self.strong_support}) must be >= quorum ({self.quorum})")
        return self


class PolicyState(BaseModel):
    r"""What the policy learns across rounds; persist it (``model_dump_json``) between rounds.

    Attributes
    ----------
    thresholds : ThresholdCalibrator
        Streams of recent :math:`g_0` and :math:`b`.
    cooldown : Cooldown
        Recent promotions per node.
    lam : float or None
        :math:`\lambda_0` once variance balancing has fixed it.
    lam_epc, lam_ig : list of float
        Warm-up samples for variance balancing.
    fed : list of int
        64-bit hashes of the candidate keys whose first evaluation has fed the calibration,
        oldest first (at most ``calibration_memory``).
    rounds : int
        Rounds decided so far.
    epoch, epoch_promoted : int
        The re-decision epoch (:func:`kgr.promotion.policies.growth_epoch`) and the promoted edge
        count when it began.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    thresholds: ThresholdCalibrator = Field(default_factory=ThresholdCalibrator)
    cooldown: Cooldown = Field(default_factory=Cooldown)
    lam: float | None = None
    lam_epc: list[float] = Field(default_factory=list)
    lam_ig: list[float] = Field(default_factory=list)
    fed: list[int] = Field(default_factory=list)
    rounds: int = 0
    epoch: int = 0
    epoch_promoted: int = 0
    _fed_set: set[int] = PrivateAttr(default_factory=set)

    def first_feed(self, key: str, memory: int) -> bool:
        """Record that ``key`` fed the calibration; False if it already had (within ``memory`` keys)."""
        if memory == 0:
            return True
        if len(self._fed_set) != len(self.fed):
            self._fed_set = set(self.fed)
        h = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")
        if h in self._fed_set:
            return False
        self.fed.append(h)
        self._fed_set.add(h)
        if len(self.fed) > memory:
            drop = len(self.fed) - memory
            self._fed_set.difference_update(self.fed[:drop])
            del self.fed[:drop]
        return True

    @classmethod
    def initial(cls, config: PromotionConfig) -> "PolicyState":
        """A fresh state for ``config``."""
        state = cls()
        state.sync(config)
        return state

    def sync(self, config: PromotionConfig) -> None:
        """Take every setting from ``config`` (the source of truth), keeping the learned data."""
        t = self.thresholds
        streams = {
            name: EWQuantile(
                decay=config.quantile_decay, window=config.quantile_window, warmup=config.quantile_warmup,
                values=getattr(t, name).values[-config.quantile_window :],
            )
            for name in ("g0", "b")
        }
        self.thresholds = ThresholdCalibrator(
            theta_ag_default=config.theta_ag, theta_dg_default=config.theta_dg,
            ag_quantile=config.ag_quantile, dg_quantile=config.dg_quantile,
            calibrate=config.calibrate_thresholds, **streams,
        )
        self.cooldown.steps = config.cooldown


class CandidateDecision(BaseModel):
    r"""The decision on one candidate and everything it was based on.

    Fields computed by a step that was not reached are None (e.g. no gauge for a candidate
    held for lack of votes).

    Attributes
    ----------
    key, subject, object, relation : str
        The candidate.
    action : {"promote", "hold", "reject"}
        The decision.
    reason : str
        One line, naming the deciding rule and its numbers.
    votes, quorum : int
        Votes and the quorum applied.
    confidence : float
        The candidate's confidence.
    r_contr : float
        :math:`R_{\text{contr}}`.
    violated : tuple of str
        Names of violated constraints.
    gauge : GaugeResult or None
        Every term of :math:`\mathcal{F}` per hop.
    g0, g_min, b : float or None
        The gauge summary (``b`` is :math:`g_0` in single-threshold mode).
    gates : GateResult or None
        AG, DG, thresholds and margin.
    audit : AuditResult or None
        The StabilityAudit, when DG fired.
    rewards : RewardTerms or None
        :math:`\Delta\mathrm{Cov}, \Delta S, R_{\text{contr}}, T, R_{\text{env}}` on the graph
        at the start of the round.
    selection_rewards : RewardTerms or None
        The marginal terms last evaluated during selection (at selection time for promoted ones).
    rank : int or None
        1-based position in the round's selection order.
    hold : {"quorum", "gate", "budget"} or None
        Why a hold: too few votes, the gates (or cooldown, reward floor), or only the round's
        promotion budget (``budget`` holds are decided again next round).
    lam, theta_ag, theta_dg : float
        :math:`\lambda` and thresholds in force this round.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    key: str
    subject: str
    object: str
    relation: str
    action: Action
    reason: str
    votes: int
    quorum: int
    confidence: float
    r_contr: float
    violated: tuple[str, ...]
    gauge: GaugeResult | None = None
    g0: float | None = None
    g_min: float | None = None
    b: float | None = None
    gates: GateResult | None = None
    audit: AuditResult | None = None
    rewards: RewardTerms | None = None
    selection_rewards: RewardTerms | None = None
    rank: int | None = None
    hold: Literal["quorum", "gate", "budget"] | None = None
    lam: float
    theta_ag: float
    theta_dg: float


class GedigRound(BaseModel):
    """Decisions of one round.

    Attributes
    ----------
    decisions : tuple of CandidateDecision
        One per candidate, in input order.
    promoted : tuple of str
        Keys of the promoted candidates, in selection order.
    lam, theta_ag, theta_dg : float
        Values in force this round.
    counts : dict of str to int
        Number of decisions per action.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    decisions: tuple[CandidateDecision, ...]
    promoted: tuple[str, ...]
    lam: float
    theta_ag: float
    theta_dg: float
    counts: dict[str, int]
