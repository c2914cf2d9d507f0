r"""The promotion decision core: which staged edges a round promotes, holds or rejects.

Pure and synchronous: it receives the promoted graph (or the union of local balls around the
candidates) as a networkx graph, the candidates with their votes and constraint values, a
:class:`PromotionConfig` and a :class:`PolicyState`; it returns one
:class:`CandidateDecision` per candidate, carrying every input the decision used, so the store
layer can record it and answer "why is this edge here?". It never writes anything but the state
object it is given.

Steps of a round
----------------
1. **Quorum.** ``votes < quorum`` → *hold* (more sources may come; aging expires it otherwise).
2. **Constraints.** Self-loop, or :math:`R_{\text{contr}} = \sum_j \max(0, g_j)^2 >`
   ``max_contr`` → *reject*.
3. **No structural context.** If the ball :math:`S_H` has fewer than
   ``bootstrap_context_edges`` edges (default: none at all — both endpoints new), the gauge has
   nothing to measure; the candidate is *accepted* on votes and constraints (goes to step 5).
4. **Gauge and gates** (:mod:`kgr.gauge.gedig`, :mod:`kgr.gauge.gates`): DG fires
   (:math:`b \le \theta_{DG}`) and the StabilityAudit passes → *accepted* (goes to step 5); DG
   fires but the audit fails → *hold*; :math:`b - \theta_{DG} >` ``reject_margin`` (when set) →
   *reject*; AG fires (:math:`g_0 > \theta_{AG}`) → *hold* as ambiguous, with its multi-hop
   values recorded; neither gate → *hold*. **Strong corroboration** overrides a hold: a
   candidate with at least ``strong_support`` votes is *accepted* whatever the gates say (the
   gauge sets how much evidence an edge needs — the quorum when DG fires, ``strong_support``
   otherwise — rather than vetoing well-supported facts that add no structural insight).
5. **Greedy selection.** Up to ``max_promotions_per_round`` accepted candidates are promoted in
   order of marginal :math:`R_{\text{env}}` on the graph plus the edges already selected in this
   round (lazy evaluation: a max-heap of stale upper bounds, re-evaluating only the top). The
   others stay on *hold*.

Thresholds are read from the state once at the start of the round and the state is updated
after it, in key order, so a round's decisions do not depend on the order of the candidates.
Each candidate feeds the threshold quantiles and the :math:`\lambda` warm-up once, at its
first evaluation (one frame per candidate, as in the paper's stream of episodes).

Locality and cost
-----------------
Everything per candidate is local: the gauge and :math:`\Delta S_{VN}` use the capped ball
:math:`S_H` (at most ``k_max`` nodes), coverage with :math:`h = 1` uses two degrees. The graph
is never copied or modified; edges selected during the round live in an overlay. About 1–2 ms
per candidate at the defaults, whatever the size of the graph.

A candidate's ball is computed once, on the graph at the start of the round, and stays *frozen*
while the greedy step re-evaluates marginal rewards: edges selected earlier in the round are
added inside it (its induced edges are re-read), but it does not grow through them. So the whole
round needs the promoted graph only inside the balls, plus the endpoints' degrees — which a caller
may pass as :class:`Prefetched` instead of the whole graph, with the same decisions (the geDIG
policy of :mod:`kgr.promotion.policies` passes the whole promoted graph, which the calibrated policy
needs anyway for its learned evidence).

Greedy guarantee
----------------
With ``weight_vn = 0`` and ``coverage_hops = 1`` the marginal reward is monotone submodular
(coverage; the constraint and temporal terms are fixed per candidate) and lazy greedy returns
exactly the plain greedy selection, whose coverage gain is within :math:`1 - 1/e` of the best
``k``-set's. The von
Neumann term is not submodular, and neither is coverage for :math:`h \ge 2`: then lazy greedy is
a heuristic (set ``lazy_greedy=False`` for plain greedy).

Note on new entities
--------------------
The gauge charges :math:`c_{\text{node}}` per new entity, and a new entity joins no existing
path, so an edge attaching a new entity to known structure has :math:`b > 0` and is not accepted
at :math:`\theta_{DG} = 0`. It gets through once the calibrated :math:`\theta_{DG}` (a lower
quantile of recent :math:`b`) rises above its :math:`b`, i.e. once it ranks among the best recent
candidates; until then it is held, not rejected. An edge between two new entities has no
structure around it at all and is handled by step 3.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import defaultdict
import zlib
from collections.abc import Hashable, Sequence
from typing import Annotated, Literal

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from kgr.errors import KgrValidationError
from kgr.gauge.graphview import GraphView, LocalStructure, check_simple_undirected, local_on_ball, local_structure
from kgr.gauge.calibration import EWQuantile, ThresholdCalibrator, variance_balanced_lambda
from kgr.gauge.coverage import coverage_gain_view
from kgr.gauge.entropy import dense_entropy_gain
from kgr.gauge.gates import AuditResult, Cooldown, GateResult, evaluate_gates, stability_audit
from kgr.gauge.gedig import GaugeResult, gauge_on_view
from kgr.gauge.reward import (
    ConstraintInputs,
    RewardTerms,
    constraint_penalty,
    environmental_reward,
    temporal_term,
)

__all__ = [
    "Action",
    "Ball",
    "Prefetched",
    "Candidate",
    "PromotionConfig",
    "PolicyState",
    "CandidateDecision",
    "GedigRound",
    "decide_round",
]

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

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    model_config = ConfigDict(extra="forbid")

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

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    model_config = ConfigDict(extra="forbid", frozen=True)

    decisions: tuple[CandidateDecision, ...]
    promoted: tuple[str, ...]
    lam: float
    theta_ag: float
    theta_dg: float
    counts: dict[str, int]


def _candidate_seed(base: int, key: str) -> int:
    return (zlib.crc32(key.encode("utf-8")) ^ base) & 0x7FFFFFFF


def _rewards(
    view: GraphView, c: Candidate, config: PromotionConfig, r_contr: float, local: LocalStructure | None = None
) -> RewardTerms:
    s, o = c.subject, c.object
    d_cov = coverage_gain_view(view, [(s, o)], kappa=config.kappa, h=config.coverage_hops)
    if local is None:
        local = local_structure(view, s, o, config.hops, config.k_max)
    exists = view.has_edge(s, o)
    if exists:
        d_vn = 0.0
    else:
        one = np.ones(1, dtype=np.float64)
        d_vn = dense_entropy_gain(
            len(local.ball), local.ei, local.ej, np.ones(len(local.ei)),
            np.array([local.ball.index(s)]), np.array([local.ball.index(o)]), one, mu=config.mu,
        )
    t = temporal_term([] if exists else [(s, o)], beta=config.beta)
    r_env = environmental_reward(
        delta_cov=d_cov, delta_vn=d_vn, r_contr=r_contr, temporal=t, lambda_contr=config.lambda_contr,
        lambda_t=config.lambda_t, weight_cov=config.weight_cov, weight_vn=config.weight_vn,
    )
    return RewardTerms(delta_cov=d_cov, delta_vn=d_vn, r_contr=r_contr, temporal=t, r_env=r_env)


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def decide_round(
    graph: nx.Graph,
    candidates: Sequence[Candidate],
    config: PromotionConfig | None = None,
    state: PolicyState | None = None,
    *,
    prefetched: Prefetched | None = None,
) -> GedigRound:
    r"""Decide one promotion round: promote, hold or reject each candidate, recording why.

    .. math::

        \text{promote} \iff v \ge q \,\wedge\, R_{\text{contr}} \le r_{\max} \,\wedge\,
        b \le \theta_{DG} \,\wedge\, \text{audit} \,\wedge\,
        c \in \operatorname{greedy}_k\bigl(\Delta R_{\text{env}}\bigr)

    Parameters
    ----------
    graph : networkx.Graph
        Undirected simple projection of the promoted graph, or a subgraph containing the
        ``hops``-ball around every candidate's endpoints. Node ids are the candidates'
        ``subject``/``object`` strings. Not modified.
    candidates : sequence of Candidate
        Staged edges; keys must be unique.
    config : PromotionConfig, optional
        Policy parameters; defaults when omitted.
    state : PolicyState, optional
        Cross-round state, **updated in place** (threshold streams, :math:`\lambda` warm-up,
        cooldown). A fresh state when omitted.
    prefetched : Prefetched, optional
        Balls and degrees computed on the whole promoted graph; ``graph`` then only needs the
        edges among each ball's nodes. Candidates without a ball get one computed on ``graph``.

    Returns
    -------
    decisions : GedigRound
        One :class:`CandidateDecision` per candidate (input order) and the promoted keys in
        selection order.

    Raises
    ------
    KgrValidationError
        ``graph`` directed or a multigraph, duplicate candidate keys, or an element that is not a
        :class:`Candidate`.

    Notes
    -----
    See the module docstring for the steps, locality and the greedy guarantee. Decisions do
    not depend on candidate order: thresholds are fixed for the round, ties break by key,
    audit seeds derive from the key, and state updates happen afterwards in key order.
    Cost: :math:`O(n)` for the quorum and constraint steps plus a few milliseconds per
    candidate that reaches the gauge, plus one marginal re-evaluation per heap pop.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Algorithm 1, Sec. 1.2; Agentic-KGR (004_0801b5666d9a46a7),
    Eqs. 8–11 and Theorem A.3.

    Examples
    --------
    Two triangles joined through node ``m``; the candidate ``a1``–``b1`` shortcuts the path
    through ``m``. A candidate with one vote waits for a second source:

    >>> G = nx.Graph([("a0", "a1"), ("a1", "a2"), ("a0", "a2"), ("a0", "m"),
    ...               ("m", "b0"), ("b0", "b1"), ("b1", "b2"), ("b0", "b2")])
    >>> cands = [Candidate(key="k1", subject="a1", object="b1", relation="R", votes=3),
    ...          Candidate(key="k2", subject="a2", object="b2", relation="R", votes=1)]
    >>> out = decide_round(G, cands)
    >>> [(d.key, d.action) for d in out.decisions]
    [('k1', 'promote'), ('k2', 'hold')]
    >>> out.decisions[1].reason
    'votes 1 < quorum 2'
    """
    check_simple_undirected(graph)
    config = config if config is not None else PromotionConfig()
    if state is None:
        state = PolicyState.initial(config)
    else:
        state.sync(config)
    cands = list(candidates)
    seen: set[str] = set()
    for c in cands:
        if not isinstance(c, Candidate):
            raise KgrValidationError(f"candidates must be Candidate models, got {type(c).__name__}")
        if c.key in seen:
            raise KgrValidationError(f"duplicate candidate key {c.key!r}", field="candidates.key")
        seen.add(c.key)

    theta_ag = state.thresholds.theta_ag
    theta_dg = state.thresholds.theta_dg
    if config.lam is not None:
        lam = config.lam
    elif state.lam is not None:
        lam = state.lam
    else:
        lam = config.lam_initial
    base = GraphView(graph, degrees=dict(prefetched.degrees) if prefetched is not None else None)
    common = {"lam": lam, "theta_ag": theta_ag, "theta_dg": theta_dg}
    frozen: dict[int, tuple[list, list[int], bool]] = {}  # each candidate's ball, fixed for the round

    out: list[dict] = []
    eligible: list[int] = []
    basis: dict[int, str] = {}  # why an eligible candidate was accepted, for its reason string
    samples: list[tuple[str, float, float, GaugeResult]] = []
    for idx, c in enumerate(cands):
        values, violated = c.constraints.values(), tuple(c.constraints.violated())
        if c.subject == c.object and c.constraints.self_loop <= 0:  # detected here if not flagged
            values, violated = values + (1.0,), violated + ("self_loop",)
        r_contr = constraint_penalty(values)
        rec: dict = {
            "key": c.key, "subject": c.subject, "object": c.object, "relation": c.relation,
            "votes": c.votes, "quorum": config.quorum, "confidence": c.confidence,
            "r_contr": r_contr, "violated": violated, **common,
        }
        out.append(rec)
        if c.votes < config.quorum:
            rec.update(action="hold", hold="quorum", reason=f"votes {c.votes} < quorum {config.quorum}")
            continue
        if c.subject == c.object:
            rec.update(action="reject", reason="self-loop: subject and object are the same node")
            continue
        if r_contr > config.max_contr:
            notes = "".join(f"; {n}" for n in c.constraints.notes)
            rec.update(
                action="reject",
                reason=(
                    f"constraint penalty R_contr={_fmt(r_contr)} > max_contr={_fmt(config.max_contr)} "
                    f"({', '.join(violated)}){notes}"
                ),
            )
            continue
        seed = _candidate_seed(config.seed, c.key)
        ball = prefetched.balls.get(c.key) if prefetched is not None else None
        if ball is not None:
            if set(ball.nodes[:2]) != {c.subject, c.object}:  # both endpoints at distance 0 come first
                raise KgrValidationError(f"prefetched ball of {c.key!r} does not start at its endpoints",
                                         field="prefetched.balls")
            local = local_on_ball(base, list(ball.nodes), list(ball.dist), ball.capped)
        else:
            local = local_structure(base, c.subject, c.object, config.hops, config.k_max)
        frozen[idx] = (local.ball, local.dist, local.capped)
        gauge = gauge_on_view(
            base, c.subject, c.object, hops=config.hops, k_max=config.k_max, c_node=config.c_node,
            c_edge=config.c_edge, lam=lam, gamma=config.gamma, eps=1e-9, max_sp_pairs=config.max_sp_pairs,
            seed=seed, use_epc=config.use_epc, use_ig=config.use_ig, use_sp=config.use_sp, local=local,
        )
        g0, g_min = gauge.g0, gauge.g_min
        b = g0 if config.single_threshold else gauge.b
        gates = evaluate_gates(g0, b, theta_ag=theta_ag, theta_dg=theta_dg)
        if config.single_threshold:
            gates = gates.model_copy(update={"ag": False})
        rewards = _rewards(base, c, config, r_contr, local)
        rec.update(gauge=gauge, g0=g0, g_min=g_min, b=b, gates=gates, rewards=rewards)
        context = gauge.hops[-1].edges_before
        if context < config.bootstrap_context_edges:
            basis[idx] = (
                f"no structural context ({context} edges within {config.hops} hops before): "
                "accepted on votes and constraints"
            )
            eligible.append(idx)
            continue
        samples.append((c.key, g0, b, gauge))
        strong = config.strong_support is not None and c.votes >= config.strong_support
        if gates.dg:
            audit = None
            if config.audit:
                audit = stability_audit(
                    gauge, theta_dg=theta_dg, rel_jitter=config.audit_rel_jitter, abs_jitter=config.audit_abs_jitter,
                    trials=config.audit_trials, eps=config.audit_eps, seed=seed, multi_hop=not config.single_threshold,
                )
                rec["audit"] = audit
            if audit is not None and not audit.passed:
                failed = (f"DG fired (b={_fmt(b)} <= theta_DG={_fmt(theta_dg)}) but StabilityAudit failed: "
                          f"margin {_fmt(audit.min_margin)} under jitter < eps {_fmt(audit.eps)}")
                if strong:
                    basis[idx] = f"{failed}; accepted on strong corroboration (votes {c.votes} >= strong_support {config.strong_support})"
                    eligible.append(idx)
                else:
                    rec.update(action="hold", reason=failed)
            else:
                audited = ", audit passed" if audit else ""
                basis[idx] = f"DG fired (b={_fmt(b)} <= theta_DG={_fmt(theta_dg)}){audited}"
                eligible.append(idx)
        elif strong:
            gate = (f"AG fired (g0={_fmt(g0)} > theta_AG={_fmt(theta_ag)})" if gates.ag
                    else f"no gate fired (b={_fmt(b)} > theta_DG={_fmt(theta_dg)})")
            basis[idx] = f"{gate}; accepted on strong corroboration (votes {c.votes} >= strong_support {config.strong_support})"
            eligible.append(idx)
        elif config.reject_margin is not None and b - theta_dg > config.reject_margin:
            rec.update(
                action="reject",
                reason=(
                    f"b={_fmt(b)} exceeds theta_DG={_fmt(theta_dg)} "
                    f"by more than reject_margin={_fmt(config.reject_margin)}"
                ),
            )
        elif gates.ag:
            rec.update(
                action="hold",
                reason=(
                    f"AG fired (g0={_fmt(g0)} > theta_AG={_fmt(theta_ag)}): ambiguous; "
                    f"multi-hop b={_fmt(b)} > theta_DG={_fmt(theta_dg)}"
                ),
            )
        else:
            rec.update(action="hold", reason=f"no gate fired: b={_fmt(b)} > theta_DG={_fmt(theta_dg)}")

    selected = _select(base, cands, eligible, basis, out, config, state.cooldown, frozen)
    for rank, idx in enumerate(selected, start=1):
        r = out[idx]["selection_rewards"]
        out[idx].update(
            action="promote", rank=rank, reason=f"{basis[idx]}; selected #{rank} by marginal R_env={_fmt(r.r_env)}"
        )

    # State updates after the round, in key order (order-independent).
    for key, g0, b, gauge in sorted(samples, key=lambda s: s[0]):
        if not state.first_feed(key, config.calibration_memory):
            continue  # a held candidate re-evaluated: one frame per candidate
        state.thresholds.update(g0=g0, b=b)
        if config.lam is None and state.lam is None:
            for h in gauge.hops[1:]:
                state.lam_epc.append(h.delta_epc if config.use_epc else 0.0)
                ig = (h.delta_h if config.use_ig else 0.0) + (config.gamma * h.delta_sp if config.use_sp else 0.0)
                state.lam_ig.append(ig)
    if config.lam is None and state.lam is None and len(state.lam_epc) >= config.lambda_warmup:
        lo, hi = config.lambda_bounds
        lam0 = variance_balanced_lambda(state.lam_epc, state.lam_ig)
        state.lam = min(max(lam0, lo), hi)
        state.lam_epc, state.lam_ig = [], []
    state.rounds += 1

    decisions = tuple(CandidateDecision(**rec) for rec in out)
    counts = {a: sum(1 for d in decisions if d.action == a) for a in ("promote", "hold", "reject")}
    return GedigRound(
        decisions=decisions, promoted=tuple(cands[i].key for i in selected), counts=counts, **common,
    )


def _select(
    base: GraphView,
    cands: list[Candidate],
    eligible: list[int],
    basis: dict[int, str],
    out: list[dict],
    config: PromotionConfig,
    cooldown: Cooldown,
    frozen: dict[int, tuple[list, list[int], bool]],
) -> list[int]:
    """Greedy selection of up to ``k`` eligible candidates; fills ``selection_rewards`` and hold reasons.

    Marginal rewards are re-evaluated on the graph plus the edges already selected, each
    candidate on its frozen ball (see "Locality and cost").
    """
    k = config.max_promotions_per_round
    view = base.plus(())  # a private overlay: the caller's graph is never touched
    selected: list[int] = []

    def marginal(i: int) -> RewardTerms:
        return _rewards(view, cands[i], config, out[i]["r_contr"], local_on_ball(view, *frozen[i]))

    def blocked(i: int) -> bool:
        return cooldown.blocked(cands[i].subject) or cooldown.blocked(cands[i].object)

    def take(i: int, r: RewardTerms) -> None:
        out[i]["selection_rewards"] = r
        selected.append(i)
        view.add_in_place(cands[i].subject, cands[i].object)
        cooldown.record([cands[i].subject, cands[i].object])

    stopped_by_floor = False
    if config.lazy_greedy:
        # A selected edge (a, b) changes candidate j's marginal reward only if both ends lie in j's
        # frozen ball (its induced edges: dS_VN) or one end is an endpoint of j (its degree: dCov at
        # h = 1; and whether j's edge now exists). Only those entries go stale; the cached values of
        # the others stay exact. Coverage with h > 1 reaches beyond the ball: then all go stale.
        local = config.coverage_hops == 1
        in_ball: dict[Hashable, list[int]] = defaultdict(list)
        at_end: dict[Hashable, list[int]] = defaultdict(list)
        if local:
            for i in eligible:
                for x in frozen[i][0]:
                    in_ball[x].append(i)
                at_end[cands[i].subject].append(i)
                at_end[cands[i].object].append(i)
        stale: set[int] = set()
        heap: list[tuple[float, str, int]] = []
        for i in eligible:
            r = out[i]["rewards"]
            out[i]["selection_rewards"] = r
            heapq.heappush(heap, (-r.r_env, cands[i].key, i))
        deferred: list[tuple[float, str, int]] = []
        while heap and len(selected) < k:
            entry = heapq.heappop(heap)
            neg, key, i = entry
            if blocked(i):
                deferred.append(entry)
                continue
            if i in stale:
                stale.discard(i)
                r = marginal(i)
                out[i]["selection_rewards"] = r
                heapq.heappush(heap, (-r.r_env, key, i))
                continue
            if config.reward_floor is not None and -neg < config.reward_floor:
                stopped_by_floor = True
                break
            take(i, out[i]["selection_rewards"])
            a, b = cands[i].subject, cands[i].object
            if local:
                stale.update(at_end[a], at_end[b], set(in_ball[a]).intersection(in_ball[b]))
            else:
                stale.update(eligible)
            still = []
            for e in deferred:
                (still.append(e) if blocked(e[2]) else heapq.heappush(heap, e))
            deferred = still
    else:
        remaining = list(eligible)
        while remaining and len(selected) < k:
            avail = [i for i in remaining if not blocked(i)]
            if not avail:
                break
            scored = []
            for i in avail:
                r = out[i]["rewards"] if not selected else marginal(i)
                out[i]["selection_rewards"] = r
                scored.append((-r.r_env, cands[i].key, i))
            neg, _, best = min(scored)
            if config.reward_floor is not None and -neg < config.reward_floor:
                stopped_by_floor = True
                break
            take(best, out[best]["selection_rewards"])
            remaining.remove(best)

    chosen = set(selected)
    for i in eligible:
        if i in chosen:
            continue
        rec = out[i]
        head = f"{basis[i]} but not selected: "
        if blocked(i):
            why = f"cooldown ({cooldown.steps} promotions) on an endpoint"
        elif stopped_by_floor:
            why = f"marginal R_env below reward_floor={_fmt(config.reward_floor)}"  # type: ignore[arg-type]
        else:
            why = f"round budget of {k} promotions used"
        rec.update(action="hold", hold="budget" if why.startswith("round budget") else "gate", reason=head + why)
    return selected
