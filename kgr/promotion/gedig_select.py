"""Step 5 of a geDIG round: greedy selection of the accepted candidates by marginal :math:`R_{\\text{env}}`.

See :mod:`kgr.promotion.gedig` ("Greedy selection", "Greedy guarantee"): up to
``max_promotions_per_round`` accepted candidates in order of marginal reward on the graph plus the
edges already selected (lazy evaluation by default), each on its ball frozen at the start of the round.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Hashable

import numpy as np

from kgr.gauge.coverage import coverage_gain_view
from kgr.gauge.entropy import dense_entropy_gain
from kgr.gauge.gates import Cooldown
from kgr.gauge.graphview import GraphView, LocalStructure, local_on_ball, local_structure
from kgr.gauge.reward import RewardTerms, environmental_reward, temporal_term
from kgr.promotion.gedig_models import Candidate, PromotionConfig

__all__ = ["candidate_rewards", "select", "fmt"]


def candidate_rewards(
    view: GraphView, c: Candidate, config: PromotionConfig, r_contr: float, local: LocalStructure | None = None
) -> RewardTerms:
    """The candidate's :math:`R_{\\text{env}}` terms on ``view`` (its ball ``local``, computed when None).

    Parameters
    ----------
    view : GraphView
        The promoted graph plus the edges selected so far in this round.
    c : Candidate
        The candidate.
    config : PromotionConfig
        The round's settings (coverage, entropy and temporal weights).
    r_contr : float
        Its constraint penalty.
    local : LocalStructure, optional
        Its (frozen) ball.

    Returns
    -------
    RewardTerms
        :math:`\\Delta\\mathrm{Cov}`, :math:`\\Delta S_{VN}`, :math:`R_{\\text{contr}}`, the temporal term and
        :math:`R_{\\text{env}}`.
    """
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


def fmt(x: float) -> str:
    """A number as reasons print it (4 decimals)."""
    return f"{x:.4f}"


def select(
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

    Parameters
    ----------
    base : GraphView
        The promoted graph at the start of the round (never modified: selection uses an overlay).
    cands, eligible, basis, out
        The round's candidates, the indices of the accepted ones, why each was accepted, and the
        records (``out[i]["rewards"]`` read; ``selection_rewards``, ``action``, ``reason`` written).
    config : PromotionConfig
        ``max_promotions_per_round``, ``lazy_greedy``, ``reward_floor``, ``coverage_hops``.
    cooldown : Cooldown
        Endpoints promoted recently are skipped (and recorded on each promotion).
    frozen : dict
        Each eligible candidate's ball ``(nodes, dist, capped)``.

    Returns
    -------
    list of int
        The selected indices, in selection order.
    """
    sel = _Selection(base, cands, out, config, cooldown, frozen)
    stopped_by_floor = sel.lazy(eligible) if config.lazy_greedy else sel.plain(eligible)
    chosen = set(sel.selected)
    k = config.max_promotions_per_round
    for i in eligible:
        if i in chosen:
            continue
        rec = out[i]
        head = f"{basis[i]} but not selected: "
        if sel.blocked(i):
            why = f"cooldown ({cooldown.steps} promotions) on an endpoint"
        elif stopped_by_floor:
            why = f"marginal R_env below reward_floor={fmt(config.reward_floor)}"  # type: ignore[arg-type]
        else:
            why = f"round budget of {k} promotions used"
        rec.update(action="hold", hold="budget" if why.startswith("round budget") else "gate", reason=head + why)
    return sel.selected


class _Selection:
    """The overlay the greedy step selects into, and the two greedy loops over it."""

    def __init__(self, base: GraphView, cands: list[Candidate], out: list[dict], config: PromotionConfig,
                 cooldown: Cooldown, frozen: dict[int, tuple[list, list[int], bool]]) -> None:
        self.view = base.plus(())  # a private overlay: the caller's graph is never touched
        self.cands, self.out, self.config, self.cooldown, self.frozen = cands, out, config, cooldown, frozen
        self.selected: list[int] = []

    def marginal(self, i: int) -> RewardTerms:
        return candidate_rewards(self.view, self.cands[i], self.config, self.out[i]["r_contr"],
                                 local_on_ball(self.view, *self.frozen[i]))

    def blocked(self, i: int) -> bool:
        return self.cooldown.blocked(self.cands[i].subject) or self.cooldown.blocked(self.cands[i].object)

    def take(self, i: int, r: RewardTerms) -> None:
        self.out[i]["selection_rewards"] = r
        self.selected.append(i)
        self.view.add_in_place(self.cands[i].subject, self.cands[i].object)
        self.cooldown.record([self.cands[i].subject, self.cands[i].object])

    def _stale_index(self, eligible: list[int]) -> tuple[dict[Hashable, list[int]], dict[Hashable, list[int]]]:
        # A selected edge (a, b) changes candidate j's marginal reward only if both ends lie in j's
        # frozen ball (its induced edges: dS_VN) or one end is an endpoint of j (its degree: dCov at
        # h = 1; and whether j's edge now exists). Only those entries go stale; the cached values of
        # the others stay exact. Coverage with h > 1 reaches beyond the ball: then all go stale.
        in_ball: dict[Hashable, list[int]] = defaultdict(list)
        at_end: dict[Hashable, list[int]] = defaultdict(list)
        if self.config.coverage_hops == 1:
            for i in eligible:
                for x in self.frozen[i][0]:
                    in_ball[x].append(i)
                at_end[self.cands[i].subject].append(i)
                at_end[self.cands[i].object].append(i)
        return in_ball, at_end

    def lazy(self, eligible: list[int]) -> bool:
        """Lazy greedy: a max-heap of stale upper bounds, re-evaluating only the top. Whether the
        reward floor stopped it."""
        config, cands, out, k = self.config, self.cands, self.out, self.config.max_promotions_per_round
        local = config.coverage_hops == 1
        in_ball, at_end = self._stale_index(eligible)
        stale: set[int] = set()
        heap: list[tuple[float, str, int]] = []
        for i in eligible:
            r = out[i]["rewards"]
            out[i]["selection_rewards"] = r
            heapq.heappush(heap, (-r.r_env, cands[i].key, i))
        deferred: list[tuple[float, str, int]] = []
        while heap and len(self.selected) < k:
            entry = heapq.heappop(heap)
            neg, key, i = entry
            if self.blocked(i):
                deferred.append(entry)
                continue
            if i in stale:
                stale.discard(i)
                r = self.marginal(i)
                out[i]["selection_rewards"] = r
                heapq.heappush(heap, (-r.r_env, key, i))
                continue
            if config.reward_floor is not None and -neg < config.reward_floor:
                return True
            self.take(i, out[i]["selection_rewards"])
            a, b = cands[i].subject, cands[i].object
            if local:
                stale.update(at_end[a], at_end[b], set(in_ball[a]).intersection(in_ball[b]))
            else:
                stale.update(eligible)
            still = []
            for e in deferred:
                (still.append(e) if self.blocked(e[2]) else heapq.heappush(heap, e))
            deferred = still
        return False

    def plain(self, eligible: list[int]) -> bool:
        """Plain greedy: every remaining candidate re-evaluated after each pick. Whether the reward
        floor stopped it."""
        config, cands, out, k = self.config, self.cands, self.out, self.config.max_promotions_per_round
        remaining = list(eligible)
        while remaining and len(self.selected) < k:
            avail = [i for i in remaining if not self.blocked(i)]
            if not avail:
                break
            scored = []
            for i in avail:
                r = out[i]["rewards"] if not self.selected else self.marginal(i)
                out[i]["selection_rewards"] = r
                scored.append((-r.r_env, cands[i].key, i))
            neg, _, best = min(scored)
            if config.reward_floor is not None and -neg < config.reward_floor:
                return True
            self.take(best, out[best]["selection_rewards"])
            remaining.remove(best)
        return False
