r"""The certificate of a cut: an upper confidence bound on its false-promotion rate from audit labels.

The cut promotes a *top slice* of the ranked rows (:mod:`kgr.promotion.cut`): the ``k`` rows with
the highest :math:`\hat p`. Its false-promotion rate is :math:`\mathrm{FMR}_k = F_k / k`, with
:math:`F_k` the false rows among the slice's *unlabelled* ones (a row labelled true is known).

**Audit labels** are the review queue's uniform picks (:mod:`kgr.store.review` records which
labels they are). An audit row :math:`j` falls in slice :math:`k` when its out-of-fold score
(:attr:`kgr.evidence.scorer.EvidenceScorer.oof_`: the score it would have unlabelled) reaches the
slice's lowest score :math:`\hat p_{(k)}`. Uniform over the rows, the :math:`m_k` audits in the
slice are a uniform sample of it; :math:`f_k` of them are false. The Clopper–Pearson upper bound
at level :math:`1 - \delta` (``level`` = 0.9) on the slice's false rate is

.. math::

    U(f, m) = B^{-1}(1 - \delta;\ f + 1,\ m - f) \qquad (U = 1 \text{ when } f \ge m),

:math:`B^{-1}` the Beta quantile (the exact binomial bound; for a fractional :math:`f`, its
continuous extension).

**Too few audits.** With :math:`m_k` below ``prior_audits`` (:math:`M`; the calibrated policy uses
:math:`M = 20/\varphi`, 200 at the target :math:`\varphi = 0.1`) the bound is not informative on
its own; the model's expectation
:math:`E_k = \sum_{i \le k,\ \text{unlabelled}} (1 - \hat p_i) / u_k` (:math:`u_k` unlabelled rows in
the slice) stands in for the missing audits:

.. math::

    \bar U_k = U\bigl(f_k + (M - m_k)^+ E_k,\ \max(m_k, M)\bigr), \qquad
    \mathrm{bound}_k = \bar U_k \cdot u_k / k .

So without a single label the bound is the model's expected FMR counted as worth :math:`M` audit
labels — more conservative than :math:`E_k` by about
:math:`z_{0.9}\sqrt{E_k(1 - E_k)/M}` — and each audit label replaces one of those pseudo-labels:
the bound moves continuously from the model's word to the labels', and from
:math:`m_k \ge M` on it is the plain Clopper–Pearson bound of the audits alone. A cut is reported
*certified* when that plain bound, :math:`U(f_k, m_k) \cdot u_k / k`, is within the target by
itself.
What the bound does **not** cover without audits: whether the model's :math:`\hat p` are
calibrated at all (:mod:`kgr.evidence.latent` names the assumption).

**Calibration check** (``calibration_check``; off by default: measured, it costs acceptance where
the model is right and does not catch the draws where it is wrong, see ``docs/promotion.md``).
Every labelled row — active and audit picks alike, both selected on the evidence only — whose
out-of-fold score reaches :math:`\hat p_{(k)}` tests the model's calibration in slice :math:`k`:
:math:`F_k` of them are false against :math:`e_k = \sum_j (1 - s_j)` expected. With
:math:`\varphi_k = (M - m_k)^+ E_k` the model's pseudo-failures, the expectation is raised by the
Gamma–Poisson posterior mean of the calibration ratio whose prior weighs as much as those
pseudo-failures, and never lowered:

.. math::

    \rho_k = \max\Bigl(1,\ \frac{\varphi_k + F_k}{\varphi_k + e_k}\Bigr), \qquad
    \bar U_k = U\bigl(f_k + \rho_k \varphi_k,\ \max(m_k, M)\bigr),

so a false label adds at most one pseudo-failure (:math:`\rho_k\varphi_k \le \varphi_k + F_k`):
a few labels near the top of the ranking cannot stop the cut there on their own.

The cut is the largest :math:`k` reached by testing the slices from the top and stopping at the
first whose bound exceeds the target (fixed-sequence testing, as in Learn-then-Test: the
error level holds without a multiplicity correction).

>>> round(clopper_pearson_upper(0, 22), 4), round(clopper_pearson_upper(2, 100), 4)
(0.0994, 0.0523)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv

__all__ = ["calibration_ratio", "clopper_pearson_upper", "SliceBounds", "slice_bounds"]


def clopper_pearson_upper(f, m, level: float = 0.9):  # noqa: ANN001, ANN201 - scalars or arrays
    """Upper Clopper–Pearson bound on a rate from ``f`` failures in ``m`` draws (1 where ``m <= f``)."""
    f = np.asarray(f, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    ok = m > f
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(ok, betaincinv(f + 1.0, np.where(ok, m - f, 1.0), level), 1.0)
    return float(u) if u.ndim == 0 else u


@dataclass(frozen=True)
class SliceBounds:
    """Per top slice ``k = 1..n`` (index ``k - 1``): the model's expected FMR, the audits, the bound.

    Attributes
    ----------
    expected : numpy.ndarray
        :math:`\\sum_{i \\le k,\\ \\text{unlabelled}} (1 - \\hat p_i) / k`.
    audits, audit_false : numpy.ndarray of int
        :math:`m_k`, :math:`f_k`.
    bound : numpy.ndarray
        :math:`\\mathrm{bound}_k` (see the module docstring).
    audit_bound : numpy.ndarray
        The audits' plain bound :math:`U(f_k, m_k)\\, u_k / k` (1 without audits in the slice).
    """

    expected: np.ndarray
    audits: np.ndarray
    audit_false: np.ndarray
    bound: np.ndarray
    audit_bound: np.ndarray


def _reached(scores: np.ndarray, flags: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per threshold ``p[k]``: how many ``scores`` reach it, how many of those are flagged, and their
    :math:`\sum (1 - s)`."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    s_sorted = scores[order]
    flagged = np.concatenate([[0], np.cumsum(np.asarray(flags, bool)[order])])
    miss = np.concatenate([[0.0], np.cumsum(1.0 - s_sorted)])
    m = np.searchsorted(-s_sorted, -p, side="right")
    return m, flagged[m], miss[m]


def calibration_ratio(pseudo_false: np.ndarray, label_false: np.ndarray, label_expected: np.ndarray) -> np.ndarray:
    r""":math:`\rho_k = \max(1, (\varphi_k + F_k) / (\varphi_k + e_k))` (the module docstring); 1 where
    :math:`\varphi_k + e_k = 0`.

    >>> float(calibration_ratio(np.array([1.0]), np.array([2]), np.array([0.2]))[0])
    2.5
    """
    den = pseudo_false + label_expected
    r = np.divide(pseudo_false + label_false, den, out=np.ones(len(den)), where=den > 0)
    return np.maximum(r, 1.0)


def slice_bounds(p: np.ndarray, known: np.ndarray, audit_scores: np.ndarray, audit_false: np.ndarray, *,
                 prior_audits: int, level: float = 0.9, label_scores: np.ndarray | None = None,
                 label_false: np.ndarray | None = None) -> SliceBounds:
    """The bounds of every top slice of ``p`` (sorted high to low; ``known``: labelled true, certain).

    ``audit_scores`` are the audit rows' out-of-fold scores, ``audit_false`` whether each is false;
    ``label_scores`` / ``label_false`` the same for every labelled row, given for the calibration
    check (the module docstring), ``None`` without it.
    """
    p = np.asarray(p, dtype=np.float64)
    n = len(p)
    k = np.arange(1, n + 1)
    unl = ~np.asarray(known, bool)
    u = np.cumsum(unl)
    miss = np.cumsum(np.where(unl, 1.0 - p, 0.0))
    rate = np.divide(miss, u, out=np.zeros(n), where=u > 0)
    m, f, _ = _reached(audit_scores, audit_false, p)  # audits whose score reaches the slice's lowest p[k-1]
    m_eff = np.maximum(m, prior_audits)
    pseudo = (m_eff - m) * rate
    if label_scores is not None and label_false is not None and n:
        _, big_f, e = _reached(label_scores, label_false, p)
        pseudo = pseudo * calibration_ratio(pseudo, big_f, e)
    f_eff = f + pseudo
    bound = np.where(u > 0, clopper_pearson_upper(f_eff, m_eff, level) * u / k, 0.0) if n else np.zeros(0)
    plain = np.where(u > 0, clopper_pearson_upper(f, m, level) * u / k, 0.0) if n else np.zeros(0)
    return SliceBounds(expected=miss / k if n else np.zeros(0), audits=m.astype(np.int64),
                       audit_false=np.asarray(f, dtype=np.int64), bound=np.asarray(bound, dtype=np.float64),
                       audit_bound=np.asarray(plain, dtype=np.float64))
