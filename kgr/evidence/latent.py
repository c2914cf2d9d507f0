r"""The label-free prior: a latent-class model over evidence views with monotone likelihood ratios.

Without labels the scorer (:mod:`kgr.evidence.scorer`) still needs
:math:`\hat p = P(\text{true} \mid \text{evidence})`. The features (:mod:`kgr.evidence.features`)
are grouped into categorical *views*, each ordered from the least to the most favourable evidence:

=================  =====================================================================
view               levels
=================  =====================================================================
``sources``        independent documents :math:`d = 1, 2, 3, \ge 4`
``verifier``       contradicts / silent only / not re-read / supports
``competition``    functional relation, a minority of the subject's support for it / a
                   contested majority / not functional / the subject's only object
``rules``          path/inverse rule noisy-or: none / < 0.3 / < 0.7 / :math:`\ge 0.7`
``quality``        extraction quality: < 0.5 / unknown / < 0.8 / :math:`\ge 0.8`
=================  =====================================================================

A two-class latent-class model (naive Bayes with the class unobserved),
:math:`P(x) = \sum_{y} \pi_y \prod_v \theta_{v, y}(x_v)`, is fitted by EM with symmetric
Dirichlet priors (``alpha``). In every M-step the likelihood ratio
:math:`\theta_{v,1}/\theta_{v,0}` of each view is made non-decreasing in its level
(pool-adjacent-violators, :func:`monotone`): more independent sources, a supporting reading,
firing rules never count *against* a triple. That order names the class *true*. Labelled rows
enter with their class fixed (semi-supervised EM). :data:`VIEW_PRIORS` gives the verifier view a
prior worth ``view_prior_strength`` rows until answers accumulate. The posterior

.. math::

    \hat p_{\text{LCM}}(x) = \sigma\Bigl(\ln\frac{\pi_1}{\pi_0} + \sum_v \ln\frac{\theta_{v,1}(x_v)}{\theta_{v,0}(x_v)}\Bigr)

is the score without labels, and the first input of the supervised stage with labels.

**What it assumes** (and so what the no-label guarantee rests on): the views are independent given
the truth. Where falsehoods are repeated by several sources and close rule paths (a plausible
falsehood), the assumption fails and the posterior is over-confident; the cut then leans on the
certificate's conservative fallback (:mod:`kgr.promotion.certificate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgr.errors import KgrValidationError
from kgr.evidence.features import FEATURES, IX

__all__ = ["VIEWS", "LABEL_FREE_VIEWS", "VIEW_PRIORS", "LatentClass", "LatentScorer", "view_codes", "fit_latent",
           "monotone", "view_contributions"]

#: View name → number of levels, least favourable first.
VIEWS: dict[str, int] = {"sources": 4, "verifier": 4, "competition": 4, "rules": 4, "quality": 4}
LABEL_FREE_VIEWS: tuple[str, ...] = tuple(VIEWS)
#: Informative priors as (false-class, true-class) level distributions, worth ``view_prior_strength``
#: rows: a supporting reading is strong evidence (LR ≈ 5.6), a contradiction stronger against
#: (LR ≈ 0.1), silence evidence against (LR ≈ 0.3: the chunks that mention both endpoints do not
#: state it, what re-reading finds for an extractor's hallucination).
VIEW_PRIORS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "verifier": ((0.20, 0.35, 0.40, 0.05), (0.02, 0.10, 0.60, 0.28)),
}


def _bins(x: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    return np.searchsorted(np.asarray(edges, dtype=np.float64), x, side="right")


def view_codes(X: np.ndarray) -> dict[str, np.ndarray]:
    """Each view's level per row (see the module docstring), least favourable first.

    Parameters
    ----------
    X : numpy.ndarray, shape (m, len(FEATURES))

    Returns
    -------
    dict of str to numpy.ndarray of int64
    """
    docs = np.rint(np.exp(X[:, IX["log_documents"]])).astype(np.int64)
    sup, con, sil = X[:, IX["supports"]], X[:, IX["contradicts"]], X[:, IX["silent"]]
    verifier = np.where(con > 0, 0, np.where(sup > 0, 3, np.where(sil > 0, 1, 2)))
    q = X[:, IX["quality"]]
    quality = np.where(X[:, IX["has_quality"]] > 0, np.where(q < 0.5, 0, 1 + _bins(q, (0.5, 0.8))), 1)
    rules = np.where(X[:, IX["rule_noisy_or"]] > 0, 1 + _bins(X[:, IX["rule_noisy_or"]], (0.3, 0.7)), 0)
    func, contested = X[:, IX["functional"]] > 0, X[:, IX["functional_others"]] > 0
    competition = np.where(func, np.where(contested, np.where(X[:, IX["share_subject"]] < 0.5, 0, 1), 3), 2)
    codes = {"sources": np.clip(docs, 1, 4) - 1, "verifier": verifier, "competition": competition,
             "rules": rules, "quality": quality}
    return {k: v.astype(np.int64) for k, v in codes.items()}


def monotone(c0: np.ndarray, c1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Level probabilities of both classes with a non-decreasing likelihood ratio θ1/θ0.

    Pools adjacent levels that violate the order (pool-adjacent-violators on the ratio, weighted by
    the levels' counts): pooled levels share one ratio, and each class keeps its own total mass.

    Parameters
    ----------
    c0, c1 : numpy.ndarray of float
        Level counts of class 0 and class 1.

    Returns
    -------
    theta0, theta1 : numpy.ndarray of float64
    """
    t0, t1 = c0 / c0.sum(), c1 / c1.sum()
    blocks = [[i] for i in range(len(t0))]
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1):
            if t1[blocks[b]].sum() / t0[blocks[b]].sum() > t1[blocks[b + 1]].sum() / t0[blocks[b + 1]].sum() + 1e-12:
                blocks[b] = blocks[b] + blocks.pop(b + 1)
                changed = True
                break
    n0, n1 = t0.copy(), t1.copy()
    for blk in blocks:
        m0, m1 = t0[blk].sum(), t1[blk].sum()
        share = (t0[blk] + t1[blk]) / (m0 + m1)
        n0[blk], n1[blk] = m0 * share, m1 * share
    return n0 / n0.sum(), n1 / n1.sum()


@dataclass(frozen=True)
class LatentClass:
    r"""A fitted latent-class model: :math:`\pi_1` and :math:`\theta_{v,y}` per view."""

    prior: float
    views: dict[str, np.ndarray]   # view -> array (2, levels): class 0 then class 1
    iterations: int

    def log_ratios(self, codes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        r"""Per view, :math:`\ln \theta_{v,1}(x_v) - \ln \theta_{v,0}(x_v)` per row.

        Parameters
        ----------
        codes : dict of str to numpy.ndarray
            Each view's level per row (:func:`view_codes`).

        Returns
        -------
        dict of str to numpy.ndarray of float64
        """
        return {v: (np.log(th[1]) - np.log(th[0]))[codes[v]] for v, th in self.views.items()}

    def logit(self, X: np.ndarray) -> np.ndarray:
        """The posterior log-odds of every row of ``X``.

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))

        Returns
        -------
        numpy.ndarray of float64, shape (m,)
        """
        z = np.full(len(X), np.log(self.prior) - np.log1p(-self.prior))
        for lr in self.log_ratios(view_codes(X)).values():
            z = z + lr
        return z


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def _start(X: np.ndarray) -> np.ndarray:
    """Initial responsibilities: more independent sources, firing rules, supporting readings."""
    z = (1.2 * (X[:, IX["log_documents"]] - np.log(1.5)) + 1.5 * (X[:, IX["rule_noisy_or"]] - 0.3)
         + 2.0 * X[:, IX["supports"]] - 2.0 * X[:, IX["contradicts"]] - 0.2)
    return _sigmoid(z)


def fit_latent(X: np.ndarray, labels: np.ndarray | None = None, *, alpha: float = 1.0, iterations: int = 200,
               tolerance: float = 1e-7, view_prior_strength: float = 50.0,
               views: Sequence[str] = LABEL_FREE_VIEWS) -> LatentClass:
    """Fit the model by EM on the rows of ``X`` (``labels``: 1, 0, or -1 for none; fixed classes).

    Parameters
    ----------
    X : numpy.ndarray, shape (m, len(FEATURES))
    labels : numpy.ndarray of int, optional
        1, 0 or -1 per row.
    alpha : float, default 1.0
        Dirichlet smoothing of the level probabilities.
    iterations : int, default 200
    tolerance : float, default 1e-7
        EM stops when the log-likelihood gains less.
    view_prior_strength : float, default 50.0
        Pseudo-counts of each view's prior.
    views : sequence of str
        The views used.

    Returns
    -------
    LatentClass
    """
    codes = view_codes(X)
    n = len(X)
    fixed = np.full(n, -1.0) if labels is None else np.where(np.asarray(labels) < 0, -1.0,
                                                            (np.asarray(labels) > 0.5).astype(float))
    resp = np.where(fixed >= 0, fixed, _start(X))
    prev, prior, it = -np.inf, 0.5, 0
    theta: dict[str, np.ndarray] = {}
    for it in range(1, iterations + 1):
        w1, w0 = resp, 1.0 - resp
        prior = float((w1.sum() + alpha) / (n + 2 * alpha))
        for v in views:
            k = VIEWS[v]
            c1 = np.bincount(codes[v], weights=w1, minlength=k) + alpha
            c0 = np.bincount(codes[v], weights=w0, minlength=k) + alpha
            if v in VIEW_PRIORS:
                f0, f1 = VIEW_PRIORS[v]
                c0 = c0 + view_prior_strength * (1.0 - prior) * np.asarray(f0)
                c1 = c1 + view_prior_strength * prior * np.asarray(f1)
            theta[v] = np.vstack(monotone(c0, c1))
        l1 = np.full(n, np.log(prior))
        l0 = np.full(n, np.log1p(-prior))
        for v in views:
            l0 = l0 + np.log(theta[v][0][codes[v]])
            l1 = l1 + np.log(theta[v][1][codes[v]])
        m = np.maximum(l0, l1)
        ll = float(np.mean(m + np.log(np.exp(l0 - m) + np.exp(l1 - m)))) if n else 0.0
        resp = np.where(fixed >= 0, fixed, _sigmoid(l1 - l0))
        if ll - prev < tolerance:
            break
        prev = ll
    return LatentClass(prior=prior, views={v: theta[v] for v in views}, iterations=it)


def view_contributions(latent: LatentClass, X: np.ndarray, *, top: int = 5) -> list[list[list]]:
    """Per row, the ``top`` views whose log-likelihood ratio moved its log-odds most: ``[["view:<v>", lr], ...]``
    (largest magnitude first, 4 decimals).

    Parameters
    ----------
    latent : LatentClass
    X : numpy.ndarray, shape (m, len(FEATURES))
    top : int, default 5

    Returns
    -------
    list
    """
    ratios = latent.log_ratios(view_codes(np.asarray(X, dtype=np.float64)))
    names = [f"view:{v}" for v in ratios]
    C = np.column_stack(list(ratios.values())) if ratios else np.zeros((len(X), 0))
    order = np.argsort(-np.abs(C), axis=1, kind="stable")[:, :top].tolist()
    values = C.tolist()
    return [[[names[k], round(values[i][k], 4)] for k in order[i]] for i in range(len(X))]


class LatentScorer:
    r"""The scorer of a settle without a single label: the latent-class posterior alone, on numpy only.

    It gives exactly what :class:`kgr.evidence.scorer.EvidenceScorer` gives when no row is labelled
    (:math:`\hat p = \sigma(z_{\text{LCM}})`, no out-of-fold scores, view contributions) without
    importing scikit-learn, which a cold ``kgr promote`` would otherwise load for nothing (about a
    second). Same protocol: ``fit`` / ``decision_function`` / ``predict_proba`` / ``contributions``.

    Attributes
    ----------
    latent_ : LatentClass
    model_ : None
    oof_ : numpy.ndarray, shape (0,)
    n_labels_ : int
        Always 0.
    """

    model_ = None

    def fit(self, X: np.ndarray, y: np.ndarray | None = None, *, audit: np.ndarray | None = None) -> "LatentScorer":
        """Fit the latent-class model by EM on every row (``y``: all -1, or None; ``audit`` ignored).

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))
        y : numpy.ndarray, optional
            -1 per row (a labelled row is an error: use ``EvidenceScorer``).
        audit : ignored

        Returns
        -------
        LatentScorer
            ``self``.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(FEATURES) or (y is not None and np.shape(y) != (len(X),)):
            raise KgrValidationError(f"features must be n x {len(FEATURES)} with one label per row", field="features")
        if y is not None and (np.asarray(y) >= 0).any():
            raise KgrValidationError("LatentScorer fits unlabelled rows only", field="labels")
        self.classes_ = np.array([0, 1])
        self.n_labels_ = 0
        self.latent_ = fit_latent(X, None if y is None else np.full(len(X), -1.0))
        self.calibration_ = (1.0, 0.0)
        self.oof_ = np.zeros(0)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """The latent-class log-odds of every row of ``X``.

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))

        Returns
        -------
        numpy.ndarray of float64, shape (m,)
        """
        return self.latent_.logit(np.asarray(X, dtype=np.float64))

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
        """Each view's log-likelihood ratio, largest first (:func:`view_contributions`).

        Parameters
        ----------
        X : numpy.ndarray, shape (m, len(FEATURES))
        top : int, default 5

        Returns
        -------
        list
            Per row, ``[name, contribution]`` pairs.
        """
        return view_contributions(self.latent_, X, top=top)
