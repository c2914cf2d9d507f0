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

import zlib
from collections.abc import Sequence

import networkx as nx

from kgr.errors import KgrValidationError
from kgr.gauge.calibration import variance_balanced_lambda
from kgr.gauge.gates import GateResult, evaluate_gates, stability_audit
from kgr.gauge.gedig import GaugeResult, gauge_on_view
from kgr.gauge.graphview import GraphView, check_simple_undirected, local_on_ball, local_structure
from kgr.gauge.reward import constraint_penalty
from kgr.promotion.gedig_models import (
    Action,
    Ball,
    Candidate,
    CandidateDecision,
    GedigRound,
    PolicyState,
    Prefetched,
    PromotionConfig,
)
from kgr.promotion.gedig_select import candidate_rewards, fmt, select

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
    config, state, cands = _checked(candidates, config, state)
    lam = config.lam if config.lam is not None else state.lam if state.lam is not None else config.lam_initial
    common = {"lam": lam, "theta_ag": state.thresholds.theta_ag, "theta_dg": state.thresholds.theta_dg}
    rnd = _Round(GraphView(graph, degrees=dict(prefetched.degrees) if prefetched is not None else None),
                 config, prefetched, common)
    for idx, c in enumerate(cands):
        rnd.evaluate(idx, c)
    selected = select(rnd.base, cands, rnd.eligible, rnd.basis, rnd.out, config, state.cooldown, rnd.frozen)
    for rank, idx in enumerate(selected, start=1):
        r = rnd.out[idx]["selection_rewards"]
        rnd.out[idx].update(
            action="promote", rank=rank, reason=f"{rnd.basis[idx]}; selected #{rank} by marginal R_env={fmt(r.r_env)}"
        )
    _update_state(state, config, rnd.samples)
    decisions = tuple(CandidateDecision(**rec) for rec in rnd.out)
    counts = {a: sum(1 for d in decisions if d.action == a) for a in ("promote", "hold", "reject")}
    return GedigRound(
        decisions=decisions, promoted=tuple(cands[i].key for i in selected), counts=counts, **common,
    )


def _candidate_seed(base: int, key: str) -> int:
    return (zlib.crc32(key.encode("utf-8")) ^ base) & 0x7FFFFFFF


def _checked(candidates: Sequence[Candidate], config: PromotionConfig | None,
             state: PolicyState | None) -> tuple[PromotionConfig, PolicyState, list[Candidate]]:
    """The round's config (default if None), its state (new, or synced to the config) and the
    candidates, checked: :class:`Candidate` models with distinct keys."""
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
    return config, state, cands


class _Round:
    """Steps 1-4 of a round for each candidate: its record (``out``), and for the accepted ones
    their index (``eligible``), the reason they were accepted (``basis``) and their frozen ball."""

    def __init__(self, base: GraphView, config: PromotionConfig, prefetched: Prefetched | None,
                 common: dict[str, float]) -> None:
        self.base, self.config, self.prefetched, self.common = base, config, prefetched, common
        self.out: list[dict] = []
        self.eligible: list[int] = []
        self.basis: dict[int, str] = {}
        self.samples: list[tuple[str, float, float, GaugeResult]] = []
        self.frozen: dict[int, tuple[list, list[int], bool]] = {}  # each candidate's ball, fixed for the round

    def accept(self, idx: int, why: str) -> None:
        self.basis[idx] = why
        self.eligible.append(idx)

    def evaluate(self, idx: int, c: Candidate) -> None:
        """Quorum, constraints, then the gauge and its gates (module docstring, steps 1-4)."""
        config = self.config
        rec = self._screen(c)
        self.out.append(rec)
        if "action" in rec:
            return
        seed = _candidate_seed(config.seed, c.key)
        gauge, gates = self._gauge(idx, c, rec, seed)
        context = gauge.hops[-1].edges_before
        if context < config.bootstrap_context_edges:
            self.accept(idx, f"no structural context ({context} edges within {config.hops} hops before): "
                             "accepted on votes and constraints")
            return
        self.samples.append((c.key, rec["g0"], rec["b"], gauge))
        why = _gate_decision(rec, c, gauge, gates, config, seed)
        if why is not None:
            self.accept(idx, why)

    def _screen(self, c: Candidate) -> dict:
        """The candidate's record; with an ``action`` already when the quorum or a constraint decides."""
        config = self.config
        values, violated = c.constraints.values(), tuple(c.constraints.violated())
        if c.subject == c.object and c.constraints.self_loop <= 0:  # detected here if not flagged
            values, violated = values + (1.0,), violated + ("self_loop",)
        r_contr = constraint_penalty(values)
        rec: dict = {
            "key": c.key, "subject": c.subject, "object": c.object, "relation": c.relation,
            "votes": c.votes, "quorum": config.quorum, "confidence": c.confidence,
            "r_contr": r_contr, "violated": violated, **self.common,
        }
        if c.votes < config.quorum:
            rec.update(action="hold", hold="quorum", reason=f"votes {c.votes} < quorum {config.quorum}")
        elif c.subject == c.object:
            rec.update(action="reject", reason="self-loop: subject and object are the same node")
        elif r_contr > config.max_contr:
            notes = "".join(f"; {n}" for n in c.constraints.notes)
            rec.update(
                action="reject",
                reason=(
                    f"constraint penalty R_contr={fmt(r_contr)} > max_contr={fmt(config.max_contr)} "
                    f"({', '.join(violated)}){notes}"
                ),
            )
        return rec

    def _gauge(self, idx: int, c: Candidate, rec: dict, seed: int) -> tuple[GaugeResult, GateResult]:
        """The gauge on the candidate's ball (prefetched or computed, then frozen), its gates and rewards."""
        config, base = self.config, self.base
        ball = self.prefetched.balls.get(c.key) if self.prefetched is not None else None
        if ball is not None:
            if set(ball.nodes[:2]) != {c.subject, c.object}:  # both endpoints at distance 0 come first
                raise KgrValidationError(f"prefetched ball of {c.key!r} does not start at its endpoints",
                                         field="prefetched.balls")
            local = local_on_ball(base, list(ball.nodes), list(ball.dist), ball.capped)
        else:
            local = local_structure(base, c.subject, c.object, config.hops, config.k_max)
        self.frozen[idx] = (local.ball, local.dist, local.capped)
        gauge = gauge_on_view(
            base, c.subject, c.object, hops=config.hops, k_max=config.k_max, c_node=config.c_node,
            c_edge=config.c_edge, lam=self.common["lam"], gamma=config.gamma, eps=1e-9,
            max_sp_pairs=config.max_sp_pairs, seed=seed, use_epc=config.use_epc, use_ig=config.use_ig,
            use_sp=config.use_sp, local=local,
        )
        b = gauge.g0 if config.single_threshold else gauge.b
        gates = evaluate_gates(gauge.g0, b, theta_ag=self.common["theta_ag"], theta_dg=self.common["theta_dg"])
        if config.single_threshold:
            gates = gates.model_copy(update={"ag": False})
        rewards = candidate_rewards(base, c, config, rec["r_contr"], local)
        rec.update(gauge=gauge, g0=gauge.g0, g_min=gauge.g_min, b=b, gates=gates, rewards=rewards)
        return gauge, gates


def _gate_decision(rec: dict, c: Candidate, gauge: GaugeResult, gates: GateResult, config: PromotionConfig,
                   seed: int) -> str | None:
    """Step 4: why the candidate is accepted, or None after recording its hold or reject in ``rec``."""
    g0, b, theta_ag, theta_dg = rec["g0"], rec["b"], rec["theta_ag"], rec["theta_dg"]
    strong = config.strong_support is not None and c.votes >= config.strong_support
    corroborated = f"accepted on strong corroboration (votes {c.votes} >= strong_support {config.strong_support})"
    if gates.dg:
        audit = None
        if config.audit:
            audit = stability_audit(
                gauge, theta_dg=theta_dg, rel_jitter=config.audit_rel_jitter, abs_jitter=config.audit_abs_jitter,
                trials=config.audit_trials, eps=config.audit_eps, seed=seed, multi_hop=not config.single_threshold,
            )
            rec["audit"] = audit
        if audit is not None and not audit.passed:
            failed = (f"DG fired (b={fmt(b)} <= theta_DG={fmt(theta_dg)}) but StabilityAudit failed: "
                      f"margin {fmt(audit.min_margin)} under jitter < eps {fmt(audit.eps)}")
            if strong:
                return f"{failed}; {corroborated}"
            rec.update(action="hold", reason=failed)
            return None
        audited = ", audit passed" if audit else ""
        return f"DG fired (b={fmt(b)} <= theta_DG={fmt(theta_dg)}){audited}"
    if strong:
        gate = (f"AG fired (g0={fmt(g0)} > theta_AG={fmt(theta_ag)})" if gates.ag
                else f"no gate fired (b={fmt(b)} > theta_DG={fmt(theta_dg)})")
        return f"{gate}; {corroborated}"
    if config.reject_margin is not None and b - theta_dg > config.reject_margin:
        rec.update(
            action="reject",
            reason=(
                f"b={fmt(b)} exceeds theta_DG={fmt(theta_dg)} "
                f"by more than reject_margin={fmt(config.reject_margin)}"
            ),
        )
    elif gates.ag:
        rec.update(
            action="hold",
            reason=(
                f"AG fired (g0={fmt(g0)} > theta_AG={fmt(theta_ag)}): ambiguous; "
                f"multi-hop b={fmt(b)} > theta_DG={fmt(theta_dg)}"
            ),
        )
    else:
        rec.update(action="hold", reason=f"no gate fired: b={fmt(b)} > theta_DG={fmt(theta_dg)}")
    return None


def _update_state(state: PolicyState, config: PromotionConfig,
                  samples: list[tuple[str, float, float, GaugeResult]]) -> None:
    """After the round, in key order (order-independent): threshold quantiles, the lambda warm-up."""
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
