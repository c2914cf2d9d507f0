r"""The Fellegi–Sunter model: match probabilities from comparison vectors, fitted by EM.

A pair's comparison vector :math:`\gamma` holds one level per comparison
(:mod:`kgr.resolution.compare`; ``-1`` = missing). With :math:`m_c(l) = P(\gamma_c = l \mid
\text{match})`, :math:`u_c(l) = P(\gamma_c = l \mid \text{non-match})` and the prior
:math:`\lambda = P(\text{match})` among candidate pairs, the match weight (bits) and probability are

.. math::

    w(\gamma) = \log_2\frac{\lambda}{1-\lambda} + \sum_{c:\,\gamma_c \ne -1}
    \log_2\frac{m_c(\gamma_c)}{u_c(\gamma_c)}, \qquad p = \frac{1}{1 + 2^{-w}} .

**Term-frequency adjustment.** At a comparison's ``tf_levels`` (an exact name match, a shared word,
an equal value, a shared neighbour) :math:`u` is the pair's own term frequency :math:`\mathrm{tf}`
(the share of groups holding the value agreed on) instead of the level's average, floored at
``tf_floor``: two units named "john smith" are weaker evidence than two named "rhomas chudleigh".

**Estimation** (as splink does it): :math:`u` from pairs drawn at random (almost all non-matches),
then :math:`m` and :math:`\lambda` by EM on the candidate pairs with :math:`u` fixed. E-step
:math:`r_i = p(\gamma_i)`; M-step :math:`m_c(l) = (\sum_i r_i [\gamma_{ic} = l] + \alpha) /
(\sum_i r_i [\gamma_{ic} \ne -1] + \alpha L_c)`, :math:`\lambda = \bar r`, with the pseudo-count
:math:`\alpha` = ``smoothing``. **Supervised**: labelled pairs (``y`` 1 match, 0 non-match, -1
unlabelled) keep :math:`r_i = y_i` through EM, so review labels anchor the fit.

References
----------
Fellegi, I. P. and Sunter, A. B. (1969), A theory for record linkage, JASA 64(328), eqs. (1)–(3).
Winkler, W. E. (1988), Using the EM algorithm for weight computation in the Fellegi–Sunter model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["FellegiSunter"]


class FellegiSunter:
    """Fellegi–Sunter with EM (module docstring), with the scikit-learn estimator contract.

    Parameters
    ----------
    levels:
        Levels per comparison (``L_c``; levels are ``0 .. L_c - 1``).
    tf_levels:
        Per comparison, the levels that are term-frequency adjusted (a level, a tuple of levels, or None).
    max_iter, tol:
        EM iterations at most; stop when no parameter moves more than ``tol``.
    smoothing:
        Pseudo-count :math:`\\alpha` per level.
    tf_floor:
        Smallest term frequency used as :math:`u`.
    lambda_init:
        Starting :math:`\\lambda`.

    Examples
    --------
    >>> X = np.array([[2, 1]] * 30 + [[0, 0]] * 60 + [[1, 0]] * 10)
    >>> fs = FellegiSunter([3, 2]).fit(X, X_random=np.array([[0, 0]] * 95 + [[1, 1]] * 5))
    >>> bool(fs.predict_proba(np.array([[2, 1]]))[0, 1] > 0.99), bool(fs.predict_proba(np.array([[0, 0]]))[0, 1] < 0.01)
    (True, True)
    """

    def __init__(self, levels: Sequence[int], tf_levels: Sequence[int | Sequence[int] | None] | None = None, *, max_iter: int = 60,
                 tol: float = 1e-5, smoothing: float = 0.5, tf_floor: float = 1e-5, lambda_init: float = 0.1,
                 warm_start: bool = False):
        self.levels = list(levels)
        self.tf_levels = list(tf_levels) if tf_levels is not None else [None] * len(self.levels)
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.tf_floor = tf_floor
        self.lambda_init = lambda_init
        self.warm_start = warm_start

    # -- fitting ----------------------------------------------------------------------------------
    def _freq(self, X: np.ndarray, weight: np.ndarray, c: int) -> np.ndarray:
        return self._level_freq(_observed(X, c), weight, c)

    def _level_freq(self, observed: tuple[np.ndarray, np.ndarray], weight: np.ndarray, c: int) -> np.ndarray:
        """Smoothed share of each level of comparison ``c`` among the ``observed`` rows (their indexes
        and levels), each row counted at its ``weight``."""
        rows, levels = observed
        counts = np.bincount(levels, weights=weight[rows], minlength=self.levels[c])[: self.levels[c]]
        return (counts + self.smoothing) / (counts.sum() + self.smoothing * self.levels[c])

    def fit(self, X: np.ndarray, y: np.ndarray | None = None, sample_weight: np.ndarray | None = None, *,
            X_random: np.ndarray | None = None, tf: np.ndarray | None = None,
            use: Sequence[bool] | None = None, update: Sequence[bool] | None = None) -> "FellegiSunter":
        """Fit on candidate pairs ``X`` (pairs × comparisons, -1 missing).

        ``u`` comes from ``X_random`` when given (else EM estimates it too); ``y`` are labels (1, 0,
        -1 unlabelled); ``tf`` term frequencies (pairs × comparisons, or one column for every
        comparison; NaN: none). ``use`` masks the comparisons the E-step
        reads and ``update`` those whose :math:`m` the M-step changes (default: all): a session blocked
        on a comparison must neither read nor update it (its levels are skewed by the blocking).
        With ``warm_start``, :math:`m` and :math:`\\lambda` continue from the previous fit.
        """
        X = np.asarray(X, dtype=np.int64)
        n, C = len(X), len(self.levels)
        use_m = np.ones(C, dtype=bool) if use is None else np.asarray(use, dtype=bool)
        upd = np.ones(C, dtype=bool) if update is None else np.asarray(update, dtype=bool)
        lab = np.full(n, -1) if y is None else np.asarray(y)
        known = lab >= 0
        sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        fixed_u = X_random is not None and len(X_random) > 0
        if fixed_u:
            R = np.asarray(X_random, dtype=np.int64)
            self.u_ = [self._freq(R, np.ones(len(R)), c) for c in range(C)]
        elif not (self.warm_start and hasattr(self, "u_")):
            self.u_ = [self._freq(X, sw, c) for c in range(C)]
        if not (self.warm_start and hasattr(self, "m_")):
            ramp = [np.exp(np.arange(L, dtype=float)) for L in self.levels]
            self.m_ = [r / r.sum() for r in ramp]
            self.lambda_ = float(np.clip(lab[known].mean(), 0.01, 0.99)) if known.any() else self.lambda_init
        self.n_iter_ = 0
        if n == 0:
            return self
        prep = self._prepare(X, tf)  # the same pairs every iteration: only m, u and lambda change
        observed = [_observed(X, c) for c in range(C)]
        for it in range(self.max_iter):
            r = self._posterior(prep, use_m)
            r[known] = lab[known]
            m_new = [self._level_freq(observed[c], r * sw, c) if upd[c] else self.m_[c] for c in range(C)]
            lam = float(np.clip(np.average(r, weights=sw), 1e-6, 1 - 1e-6))
            shift = max([abs(lam - self.lambda_)] + [float(np.abs(a - b).max()) for a, b in zip(m_new, self.m_)])
            self.m_, self.lambda_ = m_new, lam
            if not fixed_u:
                self.u_ = [self._level_freq(observed[c], (1 - r) * sw, c) if upd[c] else self.u_[c] for c in range(C)]
            self.n_iter_ = it + 1
            if shift < self.tol:
                break
        return self

    def _posterior(self, prep: tuple, use: np.ndarray) -> np.ndarray:
        bits = self._bits(prep)
        if not use.all():
            bits *= use  # in place: the same products as ``bits * use``
        w = np.log2(self.lambda_ / (1 - self.lambda_)) + bits.sum(axis=1)
        return 1.0 / (1.0 + np.exp2(-np.clip(w, -60, 60)))

    # -- scoring ----------------------------------------------------------------------------------
    def _prepare(self, X: np.ndarray, tf: np.ndarray | None) -> tuple:
        """What the Bayes factors of ``X`` need that does not change with :math:`m` and :math:`u`
        (computed once per EM fit): each cell's index into the concatenated per-level tables (level
        ``l`` of column ``c`` at ``start[c] + 1 + l``, missing (-1) at ``start[c]``, a 0), and per
        term-frequency adjusted column the rows adjusted, their levels and :math:`\\log_2` of their
        term frequency (floored at ``tf_floor``)."""
        X = np.asarray(X, dtype=np.int64)
        start = np.cumsum([0] + [L + 1 for L in self.levels[:-1]]).astype(np.int64)
        index = X + 1 + start
        adjusted_cols: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        if tf is not None and X.size:
            tf = np.asarray(tf, dtype=float)
            tf = tf[:, None] if tf.ndim == 1 else tf
            for c, levels in enumerate(self.levels):
                adjusted = np.zeros(levels, dtype=bool)
                adjusted[[t for t in np.atleast_1d(np.asarray([] if self.tf_levels[c] is None else self.tf_levels[c],
                                                              dtype=np.int64)).tolist() if t < levels]] = True
                if not adjusted.any():
                    continue
                col = X[:, c]
                ok = col >= 0
                lv = np.where(ok, col, 0)
                t = tf[:, c if tf.shape[1] > 1 else 0]
                rows = np.nonzero(ok & adjusted[lv] & ~np.isnan(t))[0]
                adjusted_cols.append((c, rows, lv[rows], np.log2(np.maximum(t[rows], self.tf_floor))))
        return X.shape, index, adjusted_cols

    def _bits(self, prep: tuple) -> np.ndarray:
        shape, index, adjusted_cols = prep
        if not index.size:
            return np.zeros(shape, dtype=float)
        tables = [np.concatenate([[0.0], np.log2(self.m_[c]) - np.log2(self.u_[c])]) for c in range(len(self.levels))]
        out = np.take(np.concatenate(tables), index)
        for c, rows, lv, log_tf in adjusted_cols:
            out[rows, c] = np.log2(self.m_[c])[lv] - log_tf
        return out

    def bayes_factors(self, X: np.ndarray, tf: np.ndarray | None = None) -> np.ndarray:
        """log2 Bayes factor of each comparison for each pair (0 where missing), pairs × comparisons:
        :math:`\\log_2 m_{c,l} - \\log_2 u_{c,l}` for level :math:`l` of comparison :math:`c`, with
        :math:`u` replaced by the pair's term frequency (at least ``tf_floor``) on adjusted levels."""
        return self._bits(self._prepare(X, tf))

    def match_weight(self, X: np.ndarray, tf: np.ndarray | None = None) -> np.ndarray:
        """The match weight :math:`w` (bits) of each pair."""
        prior = np.log2(self.lambda_ / (1 - self.lambda_))
        return prior + self.bayes_factors(X, tf).sum(axis=1)

    def predict_proba(self, X: np.ndarray, tf: np.ndarray | None = None) -> np.ndarray:
        """``[[1 - p, p], ...]``, ``p`` the match probability of each pair."""
        w = np.clip(self.match_weight(X, tf), -60, 60)
        p = 1.0 / (1.0 + np.exp2(-w))
        return np.column_stack([1 - p, p])


def _observed(X: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``X`` where comparison ``c`` is observed (not -1) and their levels, in row order."""
    rows = np.flatnonzero(X[:, c] >= 0)
    return rows, X[rows, c]
