r"""Audit picks that stay a uniform sample of the reviewable edges while edges keep arriving.

The cut's certificate (:mod:`kgr.promotion.certificate`) reads the audit labels as a uniform
sample of the rows it promotes. A queue that drew each time uniformly from the edges present *then*
would not give one: edges present at two draws would have two chances, edges that arrived between
them one (measured on a two-wave stream: 5.9 % of the first wave's rows audited against 2.7 % of
the second's, whose rows were the falser ones). So each draw tops every edge up to one common
**inclusion level** :math:`Q_t`:

* an edge's inclusion so far is :math:`\pi_j = \max\{Q_s : s < t,\ a_s \ge f_j\}` (0 when none):
  the highest level of an earlier draw at whose time :math:`a_s` the edge had been seen
  (:math:`f_j`, its ``first_seen``);
* the draw's level :math:`Q` solves :math:`\sum_j (Q - \pi_j)^+ / (1 - \pi_j) = n`, ``n`` the
  audit picks wanted (bisection; :math:`Q \le 1`);
* edge :math:`j` is picked with probability :math:`r_j = (Q - \pi_j)^+ / (1 - \pi_j)`, as an
  *order sample* of exactly ``n``: the ``n`` smallest :math:`u_j / r_j`, :math:`u_j` uniform from
  a hash of the draw's salt and the edge key (deterministic for one store state).

Then :math:`P(j \text{ ever picked}) = \pi_j + (1 - \pi_j) r_j = \max(\pi_j, Q)`: after the draw,
every edge present has been audited with the same probability :math:`Q` whenever
:math:`Q \ge \max_j \pi_j` (enough picks to lift the newcomers to the old level). An edge that
arrived after the last draw has :math:`\pi_j = 0` until the next one.

Worked example: 100 edges drawn at :math:`Q_1 = 0.1` (10 picks), then 50 new edges and 10 more
picks: :math:`50\,Q + 100\,(Q - 0.1)/0.9 = 10` gives :math:`Q = 19/145 = 0.1310`; the new edges are
picked with probability 0.1310, the old ones with :math:`(Q - 0.1)/0.9 = 0.0345`, and each of the
150 ends at 0.1310.

>>> pi = inclusion(np.array([0.0] * 100 + [5.0] * 50), [(1.0, 0.1)])
>>> round(level(pi, 10), 4), round(float(pick_probabilities(pi, level(pi, 10))[0]), 4)
(0.131, 0.0345)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["inclusion", "level", "pick_probabilities", "draw_audits"]


def inclusion(first_seen: np.ndarray, draws: Sequence[tuple[float, float]]) -> np.ndarray:
    """:math:`\\pi_j`: the highest level of the earlier draws ``(at, level)`` made at or after each
    edge's ``first_seen`` (0 when none)."""
    first_seen = np.asarray(first_seen, dtype=np.float64)
    pi = np.zeros(len(first_seen))
    for at, q in draws:
        pi = np.where(first_seen <= at, np.maximum(pi, q), pi)
    return pi


def pick_probabilities(pi: np.ndarray, q: float) -> np.ndarray:
    """:math:`r_j = (Q - \\pi_j)^+ / (1 - \\pi_j)` (0 where :math:`\\pi_j \\ge 1`)."""
    pi = np.asarray(pi, dtype=np.float64)
    return np.divide(np.maximum(q - pi, 0.0), 1.0 - pi, out=np.zeros(len(pi)), where=pi < 1.0)


def level(pi: np.ndarray, n: int) -> float:
    """The level :math:`Q` at which ``n`` picks are expected (1 when ``n`` reaches the edges left)."""
    pi = np.asarray(pi, dtype=np.float64)
    if n <= 0 or not len(pi):
        return 0.0
    if n >= float(pick_probabilities(pi, 1.0).sum()) - 1e-9:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if pick_probabilities(pi, mid).sum() < n:
            lo = mid
        else:
            hi = mid
    return hi


def _uniform(salt: str, key: str) -> float:
    return (int(hashlib.sha256(f"{salt}|{key}".encode()).hexdigest()[:13], 16) + 0.5) / 16 ** 13


def draw_audits(keys: Sequence[str], pi: np.ndarray, n: int, salt: str) -> tuple[list[int], float]:
    """The indices of the ``n`` picks (order sampling, see the module docstring) and the level.

    >>> idx, q = draw_audits([f"k{i}" for i in range(10)], np.zeros(10), 3, "s")
    >>> len(idx), round(q, 2)
    (3, 0.3)
    """
    n = min(n, len(keys))
    if n <= 0:
        return [], 0.0
    q = level(pi, n)
    r = pick_probabilities(pi, q)
    score = np.array([_uniform(salt, k) / r[i] if r[i] > 0 else np.inf for i, k in enumerate(keys)])
    order = np.lexsort((np.arange(len(keys)), score))
    return [int(i) for i in order[:n] if np.isfinite(score[i])], q
