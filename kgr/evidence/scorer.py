r"""The promotion scorer: a scikit-learn estimator of :math:`\hat p = P(\text{true} \mid \text{evidence})`.

:class:`EvidenceScorer` follows the estimator protocol (``fit`` / ``predict_proba`` /
``decision_function``). ``fit(X, y, audit=...)`` takes every managed row: ``y`` is 1 or 0 for a
labelled row and -1 for the others (scikit-learn's semi-supervised convention).

**1. Without labels** the score is the latent-class posterior (:mod:`kgr.evidence.latent`),
fitted by EM on every row.

**2. With labels** (at least ``min_labels``, and ``min_per_class`` of each class: a handful of
minority labels fits a base rate, not a ranking) a
:class:`sklearn.linear_model.LogisticRegression` is fitted on the labelled rows over the design

.. math::

    d(x) = \bigl(\kappa\, z_{\text{LCM}}(x),\ \tilde x_1, \ldots, \tilde x_p\bigr),

:math:`z_{\text{LCM}}` the latent-class log-odds, :math:`\tilde x_j` the standardised features
(:class:`sklearn.preprocessing.StandardScaler` fitted on *every* row, the population), and
:math:`\kappa` = ``latent_scale`` (10): the L2 penalty :math:`\lVert w\rVert^2 / (2C)` then barely
touches the latent-class weight (its effective penalty is :math:`\kappa^{-2}` of the others'),
so a few labels recalibrate the prior (a Platt scaling of it) while the features earn weights of
either sign only as the labels support them.

**Selection.** Labels are not a uniform sample: a reviewer answers the review queue, whose
*active* picks sit near the cut and whose *audit* picks are uniform (:mod:`kgr.store.review`).
Each labelled row is weighted by the inverse of its selection propensity (Horvitz–Thompson),

.. math::

    \pi(x) = \frac{n_{\text{audit}}}{N} + \frac{\#\{\text{active labels in } b(x)\}}{\#\{\text{rows in } b(x)\}},
    \qquad w = 1/\pi(x),

with :math:`b(x)` the decile of :math:`z_{\text{LCM}}` (the active picks follow the score), the
weights clipped to ``[m/clip, m·clip]`` (m their median) and normalised to mean 1. The fitted probabilities are
then calibrated for the *population* of rows, not for the labelled ones, which the FMR of a cut
needs.

**Calibrated out of fold.** A model fitted on few labels is over-confident on them; its
probabilities are therefore recalibrated by a sigmoid (Platt scaling) fitted on its *out-of-fold*
log-odds, as :class:`sklearn.calibration.CalibratedClassifierCV` does with ``ensemble=False``:

.. math::

    \hat p(x) = \sigma\bigl(a\, \eta(x) + b\bigr), \qquad (a, b) = \arg\min
    \textstyle\sum_j w_j\, \ell\bigl(y_j, \sigma(a\, \eta_{-k(j)}(x_j) + b)\bigr),

:math:`\eta` the full model's log-odds. **Cross-fitting.** The labelled rows are split into
``folds`` folds (:class:`sklearn.model_selection.KFold`, shuffled by ``random_state``: a row's fold
does not depend on its own label); :math:`\eta_{-k}` is the *whole* pipeline refitted with fold
:math:`k`'s labels hidden (-1) — the latent-class model :math:`z_{-k}` (EM on every row, fold
:math:`k`'s classes free), the selection weights from :math:`z_{-k}`, and the logistic regression
on the other folds' design
:math:`d(x; z_{-k})` (coefficients :math:`\beta_{-k}`) — so the out-of-fold score of row :math:`j` is

.. math::

    \eta_{-k(j)}(x_j) = \beta_{-k(j)}^\top d\bigl(x_j;\, z_{-k(j)}\bigr), \qquad
    z_{-k(j)} = \text{logit of } \mathrm{fit\_latent}\bigl(X,\ y \text{ with fold } k(j) \text{ set to } -1\bigr).

(The latent-class model is semi-supervised: a latent logit fitted with row :math:`j`'s label has
seen it, through the level probabilities of :math:`j`'s own views, so it is refitted per fold too.)
:attr:`EvidenceScorer.oof_` holds :math:`\sigma(a\,\eta_{-k(j)}(x_j) + b)`, and without the
supervised stage :math:`\sigma(z_{-k(j)}(x_j))`: where a labelled row would rank if it were
unlabelled. The certificate (:mod:`kgr.promotion.certificate`) places the audit labels by these
scores, so no audit label certifies a cut its own fit moved. Cost: ``folds`` more EM fits
(:func:`~kgr.evidence.latent.fit_latent`) per fit with labels.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler

from kgr.errors import KgrValidationError
from kgr.evidence.features import FEATURES
from kgr.evidence.latent import LatentClass, fit_latent, view_contributions

__all__ = ["EvidenceScorer", "selection_weights"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def selection_weights(z: np.ndarray, labelled: np.ndarray, audit: np.ndarray, *, bins: int = 10,
                      clip: float = 10.0) -> np.ndarray:
    r"""Inverse selection propensities of the labelled rows (see the module docstring), mean 1.

    Parameters
    ----------
    z : numpy.ndarray, shape (n,)
        The latent-class log-odds of every row (the population).
    labelled, audit : numpy.ndarray of bool, shape (n,)
        Labelled rows; of those, the uniform audit picks.

    Returns
    -------
    numpy.ndarray, shape (labelled.sum(),)
        One weight per labelled row, in row order.

    >>> z = np.linspace(-3, 3, 100)
    >>> lab = np.zeros(100, bool); lab[45:55] = True; lab[::20] = True
    >>> w = selection_weights(z, lab, np.arange(100) % 20 == 0)
    >>> bool(w[lab[::1].nonzero()[0] < 40].mean() > w.mean())   # the audit picks far from the cut weigh more
    True
    """
    n = len(z)
    if not labelled.any():
        return np.zeros(0)
    edges = np.unique(np.quantile(z, np.linspace(0, 1, bins + 1)[1:-1])) if n > bins else np.zeros(0)
    b = np.searchsorted(edges, z, side="right")
    active = labelled & ~audit
    rows = np.bincount(b, minlength=len(edges) + 1).astype(np.float64)
    pi = audit.sum() / n + np.bincount(b[active], minlength=len(edges) + 1)[b] / np.maximum(rows[b], 1.0)
    w = 1.0 / np.maximum(pi[labelled], 1e-12)
    mid = float(np.median(w))
    w = np.clip(w, mid / clip, mid * clip)
    return w / w.mean()


class EvidenceScorer(ClassifierMixin, BaseEstimator):
    """The scorer (see the module docstring).

    Parameters
    ----------
    min_labels : int
        Labels before the supervised stage (fewer: the latent-class posterior alone).
    min_per_class : int
        Labels of each class needed as well.
    C : float
        Inverse L2 strength of the logistic regression (standardised features).
    latent_scale : float
        :math:`\\kappa`, the scale of the latent-class log-odds in the design.
    folds : int
        Folds of the cross-fitted (out-of-fold) log-odds: at most the number of labels; with the
        supervised stage at most the smaller class's labels, and at least 2.
    clip : float
        Selection weights are clipped to ``[median/clip, median*clip]``.
    min_slope : float
        The out-of-fold sigmoid's slope :math:`a` below which the supervised stage is dropped (its
        out-of-fold log-odds barely rank: the labels do not yet teach a ranking, only a base rate).
    random_state : int
        Seeds the folds (the fit is deterministic).

    Attributes
    ----------
    latent_ : LatentClass
    scaler_ : StandardScaler or None
    model_ : LogisticRegression or None
        None without enough labels.
    calibration_ : tuple of float
        :math:`(a, b)` of the out-of-fold sigmoid.
    oof_ : numpy.ndarray
        Out-of-fold :math:`\\hat p` of each labelled row (row order).
    n_labels_ : int
    """

    def __init__(self, *, min_labels: int = 20, min_per_class: int = 10, C: float = 1.0, latent_scale: float = 10.0,
                 folds: int = 5, clip: float = 100.0, min_slope: float = 0.25, random_state: int = 0):
        self.min_labels = min_labels
        self.min_per_class = min_per_class
        self.C = C
        self.latent_scale = latent_scale
        self.folds = folds
        self.clip = clip
        self.min_slope = min_slope
        self.random_state = random_state

    def _design(self, X: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.column_stack([self.latent_scale * np.clip(z, -20, 20), self.scaler_.transform(X)])

    def fit(self, X: np.ndarray, y: np.ndarray, *, audit: np.ndarray | None = None) -> "EvidenceScorer":
        """Fit on every managed row; ``y``: 1, 0 or -1 (no label); ``audit``: the uniform picks.

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))
        y : numpy.ndarray of int, shape (m,)
        audit : numpy.ndarray of bool, optional

        Returns
        -------
        EvidenceScorer
            ``self``.
        """
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(FEATURES) or y.shape != (len(X),):
            raise KgrValidationError(f"features must be n x {len(FEATURES)} with one label per row", field="features")
        audit = np.zeros(len(X), bool) if audit is None else np.asarray(audit, bool)
        lab = y >= 0
        y = np.where(lab, y, -1.0)
        self.classes_ = np.array([0, 1])
        self.n_labels_ = int(lab.sum())
        self.latent_: LatentClass = fit_latent(X, y)
        z = self.latent_.logit(X)
        self.scaler_, self.model_, self.calibration_ = None, None, (1.0, 0.0)
        t = (y[lab] > 0.5).astype(int)
        supervised = self.n_labels_ >= self.min_labels and np.bincount(t, minlength=2).min() >= self.min_per_class
        if supervised:
            self.scaler_ = StandardScaler().fit(X)
        w = selection_weights(z, lab, audit & lab, clip=self.clip)
        z_oof, eta = self._cross_fit(X, y, t, audit, supervised=supervised)
        self.oof_ = _sigmoid(z_oof)
        if not supervised:
            return self
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model_ = self._logistic().fit(self._design(X, z)[lab], t, sample_weight=w)
            platt = LogisticRegression(C=1e4, max_iter=1000).fit(eta[:, None], t, sample_weight=w)
        a, b = float(platt.coef_[0, 0]), float(platt.intercept_[0])
        if a < self.min_slope:  # out of fold, the fit ranks no better than chance: the labels teach nothing yet
            self.model_, self.scaler_ = None, None
            return self
        self.calibration_ = (a, b)
        self.oof_ = _sigmoid(a * eta + b)
        return self

    def _folds(self, t: np.ndarray, supervised: bool) -> np.ndarray:
        """The fold of each labelled row: ``KFold`` (shuffled, ``random_state``), so a row's fold does
        not depend on its own label; with the supervised stage, stratified instead if a training split
        would miss a class."""
        n = len(t)
        k = int(min(self.folds, n)) if not supervised else int(max(2, min(self.folds, np.bincount(t).min())))
        fold = np.zeros(n, np.int64)
        if k < 2:
            return fold
        for i, (_, test) in enumerate(KFold(k, shuffle=True, random_state=self.random_state).split(t)):
            fold[test] = i
        if supervised and any(len(np.unique(t[fold != i])) < 2 for i in range(k)):
            cv = StratifiedKFold(k, shuffle=True, random_state=self.random_state)
            for i, (_, test) in enumerate(cv.split(np.zeros(n), t)):
                fold[test] = i
        return fold

    def _cross_fit(self, X: np.ndarray, y: np.ndarray, t: np.ndarray, audit: np.ndarray, *,
                   supervised: bool) -> tuple[np.ndarray, np.ndarray]:
        r"""Out-of-fold log-odds of the labelled rows: :math:`z_{-k(j)}(x_j)` and, with the supervised
        stage, :math:`\eta_{-k(j)}(x_j)` (see the module docstring); row order. Everything fold
        :math:`k`'s rows are scored by — the latent-class model, the selection weights, the
        logistic regression — is fitted with fold :math:`k`'s labels hidden."""
        lab = np.nonzero(y >= 0)[0]
        z_oof, eta = np.zeros(len(lab)), np.zeros(len(lab))
        if not len(lab):
            return z_oof, eta
        fold = self._folds(t, supervised)
        for k in np.unique(fold):
            out = fold == k
            hidden = y.copy()
            hidden[lab[out]] = -1.0
            z_k = fit_latent(X, hidden).logit(X)
            z_oof[out] = z_k[lab[out]]
            if supervised:
                D = self._design(X[lab], z_k[lab])
                w = selection_weights(z_k, y >= 0, audit & (y >= 0), clip=self.clip)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    m = self._logistic().fit(D[~out], t[~out], sample_weight=w[~out])
                eta[out] = m.decision_function(D[out])
        return z_oof, eta

    def _logistic(self) -> LogisticRegression:
        return LogisticRegression(C=self.C, max_iter=2000)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """The calibrated log-odds of every row of ``X``.

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))

        Returns
        -------
        numpy.ndarray of float64, shape (m,)
        """
        X = np.asarray(X, dtype=np.float64)
        z = self.latent_.logit(X)
        if self.model_ is None:
            return z
        a, b = self.calibration_
        return a * self.model_.decision_function(self._design(X, z)) + b

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """``[1 - p_hat, p_hat]`` per row.

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))

        Returns
        -------
        numpy.ndarray of float64, shape (m, 2)
        """
        p = _sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def contributions(self, X: np.ndarray, *, top: int = 5) -> list[list[list]]:
        """What moved each row's log-odds most: ``[[name, contribution], ...]`` (4 decimals).

        Without labels: each view's log-likelihood ratio. With them: the latent-class term and
        each feature's :math:`a\\, w_j \\tilde x_j` (the calibrated weight times the standardised value).

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))
        top : int, default 5
            Contributions kept per row.

        Returns
        -------
        list
            Per row, ``[name, contribution]`` pairs, largest magnitude first.
        """
        X = np.asarray(X, dtype=np.float64)
        if self.model_ is None:
            return view_contributions(self.latent_, X, top=top)
        D = self._design(X, self.latent_.logit(X))
        names = ["latent_class", *FEATURES]
        C = D * (self.calibration_[0] * self.model_.coef_[0])
        order = np.argsort(-np.abs(C), axis=1, kind="stable")[:, :top]
        return [[[names[k], round(float(C[i, k]), 4)] for k in order[i]] for i in range(len(X))]
