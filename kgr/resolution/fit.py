"""Fitting and scoring one entity type's candidate pairs with the Fellegi–Sunter model.

As splink estimates a model (its "training sessions"): :math:`u` from pairs of units drawn at random
(almost all non-matches); then :math:`m` by EM in sessions that never read the comparison their pairs
were blocked on — the context comparisons on the pairs found by name rules
(:data:`kgr.resolution.blocking.NAME_RULES`), the name comparison on the pairs found by each
shared-neighbour relation (the sessions' :math:`m` averaged by their pairs); then :math:`\\lambda` by
EM over every candidate pair, rescaled to a random pair's prior (since :math:`u` is a random pair's).
Reviewer labels enter every session with fixed responsibilities (:mod:`kgr.resolution.model`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgr.model.resolution import ComparisonEvidence, PairEvidence
from kgr.resolution.blocking import NAME_RULES, Candidates
from kgr.resolution.compare import ComparisonSet
from kgr.resolution.model import FellegiSunter
from kgr.resolution.units import Unit

__all__ = ["Scored", "fit", "random_pairs", "RANDOM_PAIRS"]

#: Random pairs drawn to estimate u (all pairs when the type has fewer).
RANDOM_PAIRS = 10_000


def random_pairs(n: int, k: int, seed: int = 20240530) -> tuple[np.ndarray, np.ndarray]:
    """``k`` pairs of distinct indexes below ``n``, drawn with a fixed seed (all pairs when fewer)."""
    if n * (n - 1) // 2 <= k:
        i, j = np.triu_indices(n, 1)
        return i.astype(np.int64), j.astype(np.int64)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size=2 * k)
    b = rng.integers(0, n, size=2 * k)
    keep = np.nonzero(a != b)[0][:k]
    return a[keep], b[keep]


class Scored:
    """Candidate pairs with their levels, term frequencies, labels, and what the model says of each."""

    def __init__(self, units: Sequence[Unit], comps: ComparisonSet, cand: Candidates, fs: FellegiSunter,
                 gamma: np.ndarray, tf: np.ndarray, y: np.ndarray):
        self.units, self.comps, self.cand, self.fs = units, comps, cand, fs
        self.gamma, self.tf, self.y = gamma, tf, y
        self.bits = fs.bayes_factors(gamma, tf)
        self.weight = np.log2(fs.lambda_ / (1 - fs.lambda_)) + self.bits.sum(axis=1)
        self.p = 1.0 / (1.0 + np.exp2(-np.clip(self.weight, -60, 60)))

    def evidence(self, row: int, decision: str, reason: str = "") -> PairEvidence:
        """The pair of ``row`` with every comparison's level and log2 Bayes factor."""
        a, b = self.units[int(self.cand.i[row])], self.units[int(self.cand.j[row])]
        # built without validation: the fields are a str, an int and a float by construction
        comps = [ComparisonEvidence.model_construct(comparison=c, level=lv, bits=round(bits, 3))
                 for c, lv, bits in zip(self.comps.names, self.gamma[row].tolist(), self.bits[row].tolist())]
        return PairEvidence(a=a.entity, b=b.entity, a_unit=a.uid, b_unit=b.uid, probability=round(float(self.p[row]), 6),
                            weight=round(float(self.weight[row]), 3), rules=self.cand.rules_of(row), comparisons=comps,
                            decision=decision, reason=reason)  # type: ignore[arg-type]


def labels_of(units: Sequence[Unit], cand: Candidates, labels: Mapping[tuple[str, str], bool]) -> np.ndarray:
    """Per candidate pair, a reviewer's label on its two entities: 1 merge, 0 no-merge, -1 none."""
    y = np.full(len(cand), -1, dtype=np.int64)
    if not labels:
        return y
    for row, (i, j) in enumerate(zip(cand.i.tolist(), cand.j.tolist())):
        ea, eb = units[i].entity, units[j].entity
        lab = labels.get((min(ea, eb), max(ea, eb)))
        if lab is not None and ea != eb:
            y[row] = int(lab)
    return y


def fit(units: Sequence[Unit], comps: ComparisonSet, cand: Candidates, y: np.ndarray, gamma: np.ndarray,
        tf: np.ndarray, rand: np.ndarray) -> FellegiSunter:
    """The model fitted on the candidate pairs (levels ``gamma``, term frequencies ``tf``, labels ``y``)
    and the random pairs' levels ``rand`` (module docstring)."""
    fs = FellegiSunter([c.levels for c in comps.comparisons], [c.tf_levels for c in comps.comparisons],
                       warm_start=True)
    names = comps.names
    ctx = np.array([c != "name" for c in names])
    fs.fit(gamma[:0], y[:0], X_random=rand)  # starting m, u and lambda (no pair: no EM step)
    by_name = cand.found[:, [k for k, r in enumerate(cand.rules) if r in NAME_RULES]].any(axis=1) \
        if len(cand) else np.zeros(0, dtype=bool)
    if by_name.any():  # context comparisons' m on pairs blocked by name (EM reads no name level there)
        fs.fit(gamma[by_name], y[by_name], X_random=rand, tf=tf[by_name], use=ctx, update=ctx)
    _fit_name(fs, names, cand, gamma, y, rand, tf)
    fs.fit(gamma, y, X_random=rand, tf=tf, update=np.zeros(len(ctx), dtype=bool))  # lambda over every pair
    n_all = len(units) * (len(units) - 1) / 2
    if n_all > len(cand) > 0:  # u came from random pairs: score with the prior of a random pair (splink's)
        fs.lambda_ = float(np.clip(fs.lambda_ * len(cand) / n_all, 1e-9, 1 - 1e-9))
    return fs


def _fit_name(fs: FellegiSunter, names: Sequence[str], cand: Candidates, gamma: np.ndarray, y: np.ndarray,
              rand: np.ndarray, tf: np.ndarray) -> None:
    """The name comparison's m: one EM session per relation that blocked pairs by a shared neighbour,
    each reading every comparison but that relation's, the sessions' m averaged by their pairs."""
    m_sum, n_sum = np.zeros_like(fs.m_[0]), 0
    start = [m.copy() for m in fs.m_], fs.lambda_
    for col, rule in enumerate(cand.rules):
        if not rule.startswith("graph:"):
            continue
        rel = rule.removeprefix("graph:")
        rows = cand.found[:, col]
        use = np.array([c not in (f"n:{rel}", f"f:{rel.rstrip('>')}") for c in names])
        fs.m_, fs.lambda_ = [m.copy() for m in start[0]], start[1]
        fs.fit(gamma[rows], y[rows], X_random=rand, tf=tf[rows], use=use, update=np.array([c == "name" for c in names]))
        m_sum += fs.m_[0] * rows.sum()
        n_sum += int(rows.sum())
    fs.m_, fs.lambda_ = start
    if n_sum:
        fs.m_[0] = m_sum / n_sum
