r"""The cut: one ranking of every managed row, one top slice promoted.

Given every managed row's :math:`\hat p` (labelled-true rows :math:`\hat p = 1`), the rows that
may be promoted at all (``eligible``: no hard violation, not labelled false, not held for a quorum)
are ranked by :math:`\hat p` (high first, ties by edge key: the order is a function of the
evidence, never of arrival). On a **functional** relation only the best-ranked object of a subject
stays eligible (the others are held ``functional``), and none when the subject already has a
*pinned* object (promoted by another policy). The promoted set is the largest top slice whose
bound (:mod:`kgr.promotion.certificate`) stays within the target, found by testing the slices from
the top and stopping at the first that fails, and never past a row with
:math:`\hat p <` ``min_p``:

.. math::

    k^\ast = \max\{k : \mathrm{bound}_j \le \varphi \ \wedge\ \hat p_{(j)} \ge p_{\min}
             \ \text{for all } j \le k\}, \qquad \tau = \hat p_{(k^\ast)} .

>>> c = cut(np.array([0.99, 0.6, 0.97, 0.9]), ["a", "b", "c", "d"], target=0.1, prior_audits=50)
>>> c.k, [int(i) for i in c.order[:c.k]], round(c.tau, 2)
(2, [0, 2], 0.97)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the bound (scipy.special) loads with the first cut, not with the package
    from kgr.promotion.certificate import SliceBounds


__all__ = ["Cut", "cut", "functional_winners"]


@dataclass(frozen=True)
class Cut:
    """A cut over the ranked eligible rows.

    Attributes
    ----------
    order : numpy.ndarray of int
        Eligible row indices, best first.
    k : int
        How many of them are promoted (a prefix of ``order``).
    tau : float
        The lowest promoted :math:`\\hat p` (``inf`` when none).
    bounds : SliceBounds
        Per prefix length, the expected FMR, the audits and the bound.
    losers : dict of int to str
        Rows held because a better object of the same subject holds a functional relation.
    """

    order: np.ndarray
    k: int
    tau: float
    bounds: SliceBounds
    losers: dict[int, str] = field(default_factory=dict)

    @property
    def expected_fmr(self) -> float | None:
        """The model's expected FMR of the promoted slice (None when nothing is promoted)."""
        return float(self.bounds.expected[self.k - 1]) if self.k else None

    @property
    def bound(self) -> float | None:
        """The bound on the promoted slice's FMR (None when nothing is promoted)."""
        return float(self.bounds.bound[self.k - 1]) if self.k else None

    @property
    def audit_bound(self) -> float | None:
        """The audits' own bound on the promoted slice's FMR (None when nothing is promoted)."""
        return float(self.bounds.audit_bound[self.k - 1]) if self.k else None

    @property
    def audits(self) -> int:
        """Audit labels in the promoted slice."""
        return int(self.bounds.audits[self.k - 1]) if self.k else 0


def functional_winners(p: np.ndarray, keys: Sequence[str], groups: Sequence[str | None], blocked: np.ndarray,
                       eligible: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """``eligible`` without the rows that lose their functional group (see the module docstring)."""
    out = eligible.copy()
    losers: dict[int, str] = {}
    best: dict[str, int] = {}
    for i in np.nonzero(eligible)[0]:
        g = groups[i]
        if g is None:
            continue
        if blocked[i]:
            out[i] = False
            losers[int(i)] = f"functional relation: the subject already has a promoted object ({g})"
            continue
        j = best.get(g)
        if j is None or (p[i], keys[j]) > (p[j], keys[i]):
            best[g] = int(i)
    for i in np.nonzero(out)[0]:
        g = groups[i]
        if g is not None and best.get(g) != i:
            out[i] = False
            losers[int(i)] = f"functional relation: a better supported object of the same subject ranks first ({g})"
    return out, losers


def cut(p: np.ndarray, keys: Sequence[str], *, target: float, prior_audits: int, eligible: np.ndarray | None = None,
        known: np.ndarray | None = None, groups: Sequence[str | None] | None = None,
        blocked: np.ndarray | None = None, audit_scores: np.ndarray = np.zeros(0),
        audit_false: np.ndarray = np.zeros(0, bool), min_p: float = 0.5, level: float = 0.9,
        label_scores: np.ndarray | None = None, label_false: np.ndarray | None = None) -> Cut:
    """The cut (see the module docstring); arrays are per row, ``audit_*`` per audit label, ``label_*``
    per labelled row (out-of-fold scores, for the certificate's calibration check; ``None``: off)."""
    p = np.asarray(p, dtype=np.float64)
    n = len(p)
    eligible = np.ones(n, bool) if eligible is None else np.asarray(eligible, bool)
    known = np.zeros(n, bool) if known is None else np.asarray(known, bool)
    losers: dict[int, str] = {}
    if groups is not None:
        eligible, losers = functional_winners(p, keys, groups, np.zeros(n, bool) if blocked is None else blocked,
                                              eligible)
    idx = np.nonzero(eligible)[0]
    key_rank = np.empty(n, np.int64)
    key_rank[np.argsort(np.asarray(keys, dtype=object), kind="stable")] = np.arange(n)
    order = idx[np.lexsort((key_rank[idx], -p[idx]))] if len(idx) else idx
    from kgr.promotion.certificate import slice_bounds

    bounds = slice_bounds(p[order], known[order], audit_scores, audit_false, prior_audits=prior_audits, level=level,
                          label_scores=label_scores, label_false=label_false)
    ok = (bounds.bound <= target + 1e-12) & ((p[order] >= min_p) | known[order])
    k = int(np.argmin(ok)) if len(ok) and not ok.all() else len(ok)
    tau = float(p[order[k - 1]]) if k else math.inf
    return Cut(order=order, k=k, tau=tau, bounds=bounds, losers=losers)
