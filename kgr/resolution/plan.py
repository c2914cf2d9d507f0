"""One entity type resolved: block, compare, fit, cut, cluster, and turn clusters into moves and merges.

**Two passes.** Term frequencies (:mod:`kgr.resolution.compare`) are first counted over the units;
but one person's ten records make their own name look ten times as common, which is the wrong
:math:`u` (the chance that a *different* person agrees). So the type is resolved twice: the second
pass counts each name, word and value once per cluster of the first (the share of *people* holding
it), refits, and decides.

**The cut.** Merge decisions are held to the same target error as promotion: among the cross-entity
pairs ranked by :math:`p`, the accepted set is the longest prefix whose expected share of wrong
merges :math:`\\sum (1 - p) / k` stays within ``target_fmr`` (and :math:`p \\ge 0.5`),
(:func:`merge_cut`). Pairs in ``[band_low, tau)`` are the uncertain band: with
a tie-break (an LLM) its verdict decides them and is recorded as evidence; otherwise they go to the
review queue. A reviewer's label overrides both (a merge label is a must-link, no-merge a cannot-link).

**An entity's own units** (its source groups, :mod:`kgr.resolution.units`) are scored like any pair;
staging put them together by their spelling alone, so they stay together where the model finds them
more likely the same than not (:math:`p \\ge` ``keep``, 0.5: keeping is not a merge, so the merge
cut does not apply). Below that they are an *own* link (:mod:`kgr.resolution.cluster`), tried after
every accepted pair: it rejoins a unit that found no other home (so an entity with few sources is
not cut into pieces), but does not chain two clusters that each absorbed other entities unless their
pairs support it — records of a common name that the model placed with two different people stay
apart, and a cannot-link between the groups is reported as the split's reason. A name that is a
short form of several others (:func:`kgr.resolution.units.short_forms`: "edward" beside "edward
phipson" and "edward cocker") is no identity: its own links need :math:`p \\ge` ``short_floor``
(0.1), so a lone "edward" record the model finds unlike the other "edward" ones becomes its own
entity instead of following them into Edward Phipson's cluster. When two
of its units hold clearly different values of a functional relation (a cannot-link), they are kept
together only if the rest of the evidence alone (every comparison but the functional ones) reaches
the merge cut: one chunk that extracted a wrong birth date for "alan turing" is extraction noise
(his rare name and context outweigh it; promotion holds the conflicting fact), one "charlie" born
1748 and another born 1762 are two people.

**From clusters to operations** (:func:`operations`). Each entity has a *home* cluster, the one with
most of its sources (ties: the cluster's first unit id). A cluster's kept entity is the entity at
home there with most sources (ties: the smaller key); when no entity is at home in a cluster (all its
units come from entities that live elsewhere) a new entity is created for it, keyed
:func:`split_key`. Then: sources of an entity's units outside its home move, with their votes, to
their cluster's kept entity (the **splits**), and every other entity at home in a cluster is merged
into the kept one (the **merges**).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgr.model.resolution import MergeProposal, PairEvidence, SplitProposal, TypeModel
from kgr.resolution.blocking import block
from kgr.resolution.cluster import Blocked, Link, constrained_clusters
from kgr.gc_freeze import cycle_collector_paused
from kgr.resolution.compare import comparison_set
from kgr.resolution.fit import RANDOM_PAIRS, Scored, fit, labels_of, random_pairs
from kgr.resolution.operations import operations
from kgr.resolution.units import Unit, short_forms

__all__ = ["TypePlan", "plan_type", "merge_cut", "TieBreak", "RANDOM_PAIRS", "REVIEW_LIMIT"]

#: Band pairs kept for the review queue per type, the most uncertain (p nearest 0.5) first.
REVIEW_LIMIT = 1000
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
    labels: list[int] = field(default_factory=list)  #: per unit, its cluster (the index of its first unit)
    entities: set[str] = field(default_factory=set)
    scored: Scored | None = None  #: the final pass's pairs and model
    cut: float = float("inf")


def merge_cut(p: np.ndarray, *, target: float, min_p: float = 0.5) -> float:
    """The smallest accepted probability: the longest prefix of the pairs ranked by ``p`` whose expected
    share of wrong merges :math:`\\sum_{i \\le k} (1 - p_{(i)}) / k` stays within ``target``, at
    ``p >= min_p``; ``inf`` when none. (Promotion's cut, :mod:`kgr.promotion.cut`, bounds the same
    share with audit labels; merges have no audit sample yet, so this is the model's expectation.)

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


@dataclass
class _Decided:
    links: list[Link]
    band: list[int]
    reviewed: list[PairEvidence]
    llm: int = 0


def _links(sc: Scored, cross: np.ndarray, tau: float, keep: float, band_low: float,
           tie_break: TieBreak | None, short: np.ndarray, short_floor: float) -> _Decided:
    """The links clustering tries (module docstring), the band rows left to review, and the tie-break's
    verdicts as evidence. ``short`` marks the units whose name is a short form of several others
    (:func:`kgr.resolution.units.short_forms`): their own links need ``p >= short_floor``."""
    fcols = np.array([c.startswith("f:") for c in sc.comps.names], dtype=bool)
    conflict = (sc.gamma[:, fcols] == 0).any(axis=1) if fcols.any() else np.zeros(len(sc.p), dtype=bool)
    p_rest = 1.0 / (1.0 + np.exp2(-np.clip(sc.weight - sc.bits[:, fcols].sum(axis=1), -60, 60)))
    forced = ~cross & conflict & (p_rest >= tau)
    stay = ~cross & ~conflict & (sc.p >= keep)
    accept = cross & (sc.y < 0) & (sc.p >= tau)
    must = cross & (sc.y == 1)
    band = np.nonzero(cross & (sc.y < 0) & (sc.p < tau) & (sc.p >= band_low))[0]
    own = ~cross & ~conflict & ~stay & (~short[sc.cand.i] | (sc.p >= short_floor))
    rows = np.nonzero(forced | stay | own | accept | must)[0]
    out = _Decided([Link(a, b, q, must=m, force=f, own=o) for a, b, q, m, f, o in
                    zip(*(x[rows].tolist() for x in (sc.cand.i, sc.cand.j, sc.p, must, forced, own)))], [], [])
    for r in band.tolist():
        a, b = int(sc.cand.i[r]), int(sc.cand.j[r])
        verdict, note = tie_break(sc.units[a], sc.units[b]) if tie_break is not None else (None, "")
        if verdict is None:
            out.band.append(r)  # evidence built afterwards for the most uncertain ones only
            continue
        out.llm += 1
        out.reviewed.append(sc.evidence(r, "llm_merge" if verdict else "llm_reject", note))
        if verdict:
            out.links.append(Link(a, b, max(float(sc.p[r]), tau)))
    return out


def plan_type(units: Sequence[Unit], *, functional: Collection[str], declared: Collection[str] = (),
              labels: Mapping[tuple[str, str], bool] | None = None, target_fmr: float = 0.02,
              band_low: float = 0.2, vectors: np.ndarray | None = None, tie_break: TieBreak | None = None,
              window: int = 6, max_block: int = 40, support: float = 0.3, support_large: float = 0.5, keep: float = 0.5,
              passes: int = 2, alpha: float = 1.0, short_floor: float = 0.1) -> TypePlan:
    """Resolve the units of one entity type (module docstring). ``labels`` maps sorted entity-key pairs
    to a reviewer's answer; ``vectors`` are name embeddings (one row per unit) for blocking. Python's
    cyclic garbage collector is paused meanwhile (:func:`kgr.gc_freeze.cycle_collector_paused`), unless a
    ``tie_break`` (a call out, to an LLM) is given."""
    with cycle_collector_paused() if tie_break is None else contextlib.nullcontext():
        labels = labels or {}
        comps = comparison_set(units, list(functional))
        cand = block(units, window=window, max_block=max_block, vectors=vectors)
        y = labels_of(units, cand, labels)
        gamma, agreed = comps.vectors(units, cand.i, cand.j)
        rand = comps.vectors(units, *random_pairs(len(units), RANDOM_PAIRS))[0]
        entity = np.unique([u.entity for u in units], return_inverse=True)[1].reshape(-1) if units else np.zeros(0, int)
        cross = entity[cand.i] != entity[cand.j]
        no = {k for k, v in labels.items() if not v}
        shorts = short_forms(u.name for u in units)
        short = np.array([u.name in shorts for u in units], dtype=bool)
        groups: list[int] | None = None
        for n in range(max(1, passes)):
            if groups is not None:
                comps = comps.with_groups(units, groups, alpha=alpha)
            tf = comps.term_frequencies(gamma, agreed)
            fs = fit(units, comps, cand, y, gamma, tf, rand)
            sc = Scored(units, comps, cand, fs, gamma, tf, y)
            tau = merge_cut(sc.p[cross & (y < 0)], target=target_fmr) if cross.any() else float("inf")
            decided = _links(sc, cross, tau, keep, band_low, tie_break if n == passes - 1 else None, short, short_floor)
            groups, blocked = constrained_clusters(units, decided.links, support=support, support_large=support_large,
                                                   scores=(cand.i, cand.j, sc.p),
                                                   declared=declared,
                                                   no_merge=(lambda a, b: (min(a, b), max(a, b)) in no) if no else None)
        return _finish(units, sc, cross, tau, groups, blocked, decided)


def _finish(units: Sequence[Unit], sc: Scored, cross: np.ndarray, tau: float, cl: list[int],
            blocked: list[Blocked], decided: _Decided) -> TypePlan:
    """The plan of the final pass: model, evidence lists, counts, merges and splits."""
    fs, cand = sc.fs, sc.cand
    plan = TypePlan(model=TypeModel(type=units[0].type if units else "", units=len(units), candidate_pairs=len(cand),
                                    comparisons=sc.comps.names, lambda_=round(fs.lambda_, 6), em_iterations=fs.n_iter_,
                                    labelled_pairs=int((sc.y >= 0).sum()), cut=None if np.isinf(tau) else round(tau, 6)),
                    labels=cl, entities={u.entity for u in units}, scored=sc, cut=tau, llm_decisions=decided.llm)
    plan.review = decided.reviewed
    band = sorted(decided.band, key=lambda r: (abs(float(sc.p[r]) - 0.5), int(cand.i[r]), int(cand.j[r])))
    plan.review += [sc.evidence(r, "review") for r in band[:REVIEW_LIMIT]]
    row_of = {pr: r for r, pr in enumerate(zip(cand.i.tolist(), cand.j.tolist()))}
    refused = sorted(blocked, key=lambda b: (-b.p, b.i, b.j))  # an entity's own units too: a split's reason
    plan.blocked = [sc.evidence(row_of[(b.i, b.j)], "blocked", b.reason) for b in refused[:REVIEW_LIMIT]]
    lab = np.asarray(cl, dtype=np.int64)
    joined = cross & (sc.p >= tau) & (lab[cand.i] == lab[cand.j]) if len(cand) else np.zeros(0, dtype=bool)
    plan.accepted = int(joined.sum())
    plan.expected_wrong = round(float((1.0 - sc.p[joined]).sum()), 6)
    plan.merges, plan.splits = operations(units, cl, blocked, evidence=lambda i, j: _best(sc, row_of, i, j, cl))
    return plan


def _best(sc: Scored, row_of: Mapping[tuple[int, int], int], keep_units: Sequence[int], drop_units: Sequence[int],
          cl: Sequence[int]) -> PairEvidence | None:
    best = None
    for i in keep_units:
        for j in drop_units:
            r = row_of.get((min(i, j), max(i, j)))
            if r is not None and cl[i] == cl[j] and (best is None or sc.p[r] > sc.p[best]):
                best = r
    return sc.evidence(best, "merge") if best is not None else None
