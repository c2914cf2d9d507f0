"""One entity type resolved: block, compare, fit, cut, cluster, and turn clusters into moves and merges.

**The cut.** Merge decisions are held to the same target error as promotion: among the cross-entity
pairs ranked by :math:`p`, the accepted set is the longest prefix whose expected share of wrong
merges :math:`\\sum (1 - p) / k` stays within ``target_fmr`` (and :math:`p \\ge 0.5`),
:func:`kgr.gauge.calibrated.promotion_cut`. Pairs in ``[band_low, tau)`` are the uncertain band: with
a tie-break (an LLM) its verdict decides them and is recorded as evidence; otherwise they go to the
review queue. A reviewer's label overrides both (a merge label is a must-link, no-merge a cannot-link).

**Splits need context.** Units of one entity are must-links; when their functional values clearly
differ (a cannot-link) they are split only if their *context* (every comparison but the name and the
functional ones) also speaks against them: its log2 Bayes factors sum below ``split_bits`` (0). One
chunk that extracted a wrong birth place for "alan turing" is noise (nothing else tells it apart:
it stays, promotion holds the conflicting fact); two people named "jacob green" with different birth
dates, homes and jobs are two entities.

**From clusters to operations** (:func:`operations`). Each entity has a *home* cluster, the one with
most of its sources (ties: the cluster's first unit id). A cluster's kept entity is the entity at
home there with most sources (ties: the smaller key); when no entity is at home in a cluster (all its
units come from entities that live elsewhere) a new entity is created for it, keyed
:func:`split_key`. Then: sources of an entity's units outside its home move, with their votes, to
their cluster's kept entity (the **splits**), and every other entity at home in a cluster is merged
into the kept one (the **merges**).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgr.model.resolution import ComparisonEvidence, MergeProposal, PairEvidence, SplitProposal, TypeModel
from kgr.resolution.blocking import block
from kgr.resolution.cluster import Blocked, Link, constrained_clusters
from kgr.resolution.compare import ComparisonSet, comparison_set
from kgr.resolution.model import FellegiSunter
from kgr.resolution.operations import operations, split_key
from kgr.resolution.units import Unit

__all__ = ["TypePlan", "plan_type", "merge_cut", "TieBreak", "RANDOM_PAIRS"]

#: Band pairs kept for the review queue per type, the most uncertain (p nearest 0.5) first.
REVIEW_LIMIT = 1000
#: Random pairs drawn to estimate u (fewer when the type has fewer pairs).
RANDOM_PAIRS = 10_000
#: (verdict, note) of a tie-break on two units: True merge, False keep apart, None no answer.
TieBreak = Callable[[Unit, Unit], tuple[bool | None, str]]


@dataclass
class TypePlan:
    """The result of :func:`plan_type` for one entity type."""

    model: TypeModel
    merges: list[MergeProposal] = field(default_factory=list)
    splits: list[SplitProposal] = field(default_factory=list)
    review: list[PairEvidence] = field(default_factory=list)
    blocked: list[PairEvidence] = field(default_factory=list)
    accepted: int = 0
    expected_wrong: float = 0.0
    llm_decisions: int = 0
    labels: list[int] = field(default_factory=list)
    entities: set[str] = field(default_factory=set)
    band: list[int] = field(default_factory=list)  #: candidate rows left to review


def _random_pairs(n: int, k: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(20240530)
    total = n * (n - 1) // 2
    if total <= k:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    a = rng.integers(0, n, size=2 * k)
    b = rng.integers(0, n, size=2 * k)
    return [(int(x), int(y)) for x, y in zip(a, b) if x != y][:k]


def merge_cut(p: np.ndarray, *, target: float, min_p: float = 0.5) -> float:
    """The smallest accepted probability: the longest prefix of the pairs ranked by ``p`` whose expected
    share of wrong merges :math:`\\sum_{i \\le k} (1 - p_{(i)}) / k` stays within ``target``, at
    ``p >= min_p``; ``inf`` when none. The same rule as promotion's cut
    (:func:`kgr.gauge.calibrated.promotion_cut`, without its certain edges; a test holds them equal),
    written here so that resolution does not load the gauge.

    >>> merge_cut(np.array([0.99, 0.97, 0.9, 0.6]), target=0.05)
    0.9
    """
    order = np.sort(np.asarray(p, dtype=np.float64))[::-1]
    order = order[order >= min_p]
    if len(order) == 0:
        return float("inf")
    fmr = np.cumsum(1.0 - order) / np.arange(1, len(order) + 1)
    ok = np.nonzero(fmr <= target + 1e-12)[0]
    return float(order[ok[-1]]) if len(ok) else float("inf")


class _Scored:
    """Candidate pairs with levels, probabilities and what the model says about each."""

    def __init__(self, units: Sequence[Unit], comps: ComparisonSet, fs: FellegiSunter,
                 pairs: list[tuple[int, int]], rules: list[list[str]], gamma: np.ndarray, tf: np.ndarray):
        self.units, self.comps, self.pairs, self.rules, self.gamma, self.tf = units, comps, pairs, rules, gamma, tf
        self.bits = fs.bayes_factors(gamma, tf) if len(pairs) else np.zeros((0, len(comps.comparisons)))
        self.weight = fs.match_weight(gamma, tf) if len(pairs) else np.zeros(0)
        self.p = fs.predict_proba(gamma, tf)[:, 1] if len(pairs) else np.zeros(0)

    def evidence(self, row: int, decision: str, reason: str = "") -> PairEvidence:
        i, j = self.pairs[row]
        a, b = self.units[i], self.units[j]
        comps = [ComparisonEvidence(comparison=c, level=int(self.gamma[row, k]), bits=round(float(self.bits[row, k]), 3))
                 for k, c in enumerate(self.comps.names)]
        return PairEvidence(a=a.entity, b=b.entity, a_unit=a.uid, b_unit=b.uid, probability=round(float(self.p[row]), 6),
                            weight=round(float(self.weight[row]), 3), rules=self.rules[row], comparisons=comps,
                            decision=decision, reason=reason)  # type: ignore[arg-type]


def _fit(units: Sequence[Unit], comps: ComparisonSet, pairs: list[tuple[int, int]], rules: Sequence[set[str]],
         labels: Mapping[tuple[str, str], bool]) -> tuple[FellegiSunter, np.ndarray, np.ndarray, np.ndarray]:
    gamma, tf = comps.vectors(units, pairs)
    rand, _ = comps.vectors(units, _random_pairs(len(units), RANDOM_PAIRS))
    y = np.full(len(pairs), -1)
    for row, (i, j) in enumerate(pairs):
        ea, eb = units[i].entity, units[j].entity
        lab = labels.get((min(ea, eb), max(ea, eb)))
        if lab is not None and ea != eb:
            y[row] = int(lab)
    fs = FellegiSunter([c.levels for c in comps.comparisons], [c.tf_level for c in comps.comparisons], warm_start=True)
    names = comps.names
    ctx = np.array([c != "name" for c in names])
    fs.fit(gamma[:0], y[:0], X_random=rand)  # starting m, u and lambda (no pair: no EM step)
    by_name = np.array([any(not r.startswith("graph:") for r in rules[k]) for k in range(len(pairs))], dtype=bool)
    if by_name.any():  # context comparisons' m on pairs blocked by name (EM reads no name level there)
        fs.fit(gamma[by_name], y[by_name], X_random=rand, tf=tf[by_name], use=ctx, update=ctx)
    _fit_name(fs, names, gamma, y, rand, tf, rules)
    fs.fit(gamma, y, X_random=rand, tf=tf, update=np.zeros(len(ctx), dtype=bool))  # lambda over every pair
    n_all = len(units) * (len(units) - 1) / 2
    if n_all > len(pairs) > 0:  # u came from random pairs: score with the prior of a random pair (splink's)
        fs.lambda_ = float(np.clip(fs.lambda_ * len(pairs) / n_all, 1e-9, 1 - 1e-9))
    return fs, gamma, tf, y


def _fit_name(fs: FellegiSunter, names: Sequence[str], gamma: np.ndarray, y: np.ndarray, rand: np.ndarray,
              tf: np.ndarray, rules: Sequence[set[str]]) -> None:
    """The name comparison's m, as splink estimates a comparison's m: one EM session per relation
    that blocked pairs by a shared neighbour, each reading every comparison but that relation's, the
    sessions' m averaged by their pairs (context m fixed)."""
    m_sum, n_sum = np.zeros_like(fs.m_[0]), 0
    start = [m.copy() for m in fs.m_], fs.lambda_
    for rel in sorted({r.removeprefix("graph:") for rs in rules for r in rs if r.startswith("graph:")}):
        rows = np.array([f"graph:{rel}" in rs for rs in rules], dtype=bool)
        use = np.array([c not in (f"n:{rel}", f"f:{rel.rstrip('>')}") for c in names])
        fs.m_, fs.lambda_ = [m.copy() for m in start[0]], start[1]
        fs.fit(gamma[rows], y[rows], X_random=rand, tf=tf[rows], use=use, update=np.array([c == "name" for c in names]))
        m_sum += fs.m_[0] * rows.sum()
        n_sum += int(rows.sum())
    fs.m_, fs.lambda_ = start
    if n_sum:
        fs.m_[0] = m_sum / n_sum


def plan_type(units: Sequence[Unit], *, functional: Collection[str], declared: Collection[str] = (),
              labels: Mapping[tuple[str, str], bool] | None = None, target_fmr: float = 0.02,
              band_low: float = 0.2, vectors: np.ndarray | None = None, tie_break: TieBreak | None = None,
              window: int = 6, max_block: int = 40, support: float = 0.3,
              split_bits: float = 0.0) -> TypePlan:
    """Resolve the units of one entity type (module docstring). ``labels`` maps sorted entity-key pairs
    to a reviewer's answer; ``vectors`` are name embeddings (one row per unit) for blocking."""
    labels = labels or {}
    etype = units[0].type if units else ""
    comps = comparison_set(units, list(functional))
    found = block(units, window=window, max_block=max_block, vectors=vectors)
    pairs = sorted(found)
    fs, gamma, tf, y = _fit(units, comps, pairs, [found[p] for p in pairs], labels)
    sc = _Scored(units, comps, fs, pairs, [sorted(found[p]) for p in pairs], gamma, tf)
    cross = np.array([units[i].entity != units[j].entity for i, j in pairs], dtype=bool)
    tau = merge_cut(sc.p[cross & (y < 0)], target=target_fmr) if cross.any() else float("inf")
    plan = TypePlan(model=TypeModel(type=etype, units=len(units), candidate_pairs=len(pairs), comparisons=comps.names,
                                    lambda_=round(fs.lambda_, 6), em_iterations=fs.n_iter_,
                                    labelled_pairs=int((y >= 0).sum()), cut=None if np.isinf(tau) else round(tau, 6)))
    links: list[Link] = []
    context = np.array([not (c == "name" or c.startswith("f:")) for c in comps.names], dtype=bool)
    for row, (i, j) in enumerate(pairs):
        p = float(sc.p[row])
        if not cross[row]:  # one entity: stays whole unless its context, too, tells the units apart
            links.append(Link(i, j, p, must=True, force=float(sc.bits[row][context].sum()) >= split_bits))
        elif y[row] == 1:
            links.append(Link(i, j, p, must=True))
        elif y[row] == 0:
            continue
        elif p >= tau:
            links.append(Link(i, j, p))
        elif p >= band_low:
            p = _tie_break(plan, sc, row, tie_break, tau)
            if p is not None:
                links.append(Link(i, j, p))
    no = {k for k, v in labels.items() if not v}
    plist, clist = sc.p.tolist(), cross.tolist()
    scores = {pr: plist[r] for r, pr in enumerate(pairs) if clist[r]}
    cl, blocked = constrained_clusters(units, links, cut=tau, support=support, scores=scores, declared=declared,
                                       no_merge=lambda a, b: (min(a, b), max(a, b)) in no)
    plan.labels = cl
    plan.band.sort(key=lambda r: (abs(float(sc.p[r]) - 0.5), pairs[r]))
    plan.review += [sc.evidence(r, "review") for r in plan.band[:REVIEW_LIMIT]]
    plan.entities = {u.entity for u in units}
    row_of = {pr: r for r, pr in enumerate(pairs)}
    refused = sorted((b for b in blocked if cross[row_of[(b.i, b.j)]]), key=lambda b: (-b.p, b.i, b.j))
    plan.blocked = [sc.evidence(row_of[(b.i, b.j)], "blocked", b.reason) for b in refused[:REVIEW_LIMIT]]
    joined = [r for r, (i, j) in enumerate(pairs) if cross[r] and sc.p[r] >= tau and cl[i] == cl[j]]
    plan.accepted = len(joined)
    plan.expected_wrong = round(float(sum(1.0 - sc.p[r] for r in joined)), 6)
    plan.merges, plan.splits = operations(units, cl, blocked, evidence=lambda i, j: _best(sc, row_of, i, j, cl))
    return plan


def _tie_break(plan: TypePlan, sc: _Scored, row: int, tie_break: TieBreak | None, tau: float) -> float | None:
    """A band pair: the tie-break's verdict (recorded as evidence) or the review queue. The probability
    the link takes when the verdict is to merge (None: no link)."""
    i, j = sc.pairs[row]
    if tie_break is not None:
        verdict, note = tie_break(sc.units[i], sc.units[j])
        if verdict is not None:
            plan.llm_decisions += 1
            plan.review.append(sc.evidence(row, "llm_merge" if verdict else "llm_reject", note))
            return max(float(sc.p[row]), tau) if verdict else None
    plan.band.append(row)  # evidence built afterwards for the most uncertain ones only
    return None


def _best(sc: _Scored, row_of: Mapping[tuple[int, int], int], keep_units: Sequence[int], drop_units: Sequence[int],
          cl: Sequence[int]) -> PairEvidence | None:
    best = None
    for i in keep_units:
        for j in drop_units:
            r = row_of.get((min(i, j), max(i, j)))
            if r is not None and cl[i] == cl[j] and (best is None or sc.p[r] > sc.p[best]):
                best = r
    return sc.evidence(best, "merge") if best is not None else None
