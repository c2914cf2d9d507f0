r"""Calibration of the gauge: exponentially weighted quantiles for thresholds, and :math:`\lambda`.

Conventions
-----------
* Thresholds follow the geDIG paper's quantile calibration:
  :math:`\theta_{AG} \leftarrow q_{1-\alpha}(\{g_0\})` (an *upper* quantile: AG fires on the
  most ambiguous candidates) and :math:`\theta_{DG} \leftarrow q_\beta(\{b\})` (a *lower*
  quantile: DG accepts the candidates with the best gauge). kgr feeds :math:`b` of **every**
  evaluated candidate into :math:`q_\beta`, not only of AG frames: kgr evaluates all hops for
  every candidate, and with the default costs AG frames are exactly the candidates with a new
  entity, so the paper's rule would calibrate acceptance of existing-entity edges on a
  different population.
* Quantiles are exponentially weighted (EWQ): the :math:`i`-th most recent value has weight
  :math:`\rho^{i}`; the quantile is the smallest value whose cumulative weight reaches
  :math:`q`. A bounded window keeps the state small and serialisable.
* Until ``warmup`` values have been seen the fixed default thresholds apply (the paper's
  "fixed thresholds during session start warmup").
* These classes are pydantic models so the store can persist them as JSON between rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.gauge.validate import real

__all__ = ["EWQuantile", "ThresholdCalibrator", "variance_balanced_lambda"]


def _finite(name: str, x: object) -> float:
    return real(name, x)


class EWQuantile(BaseModel):
    r"""Exponentially weighted quantiles of a stream of values.

    .. math::

        w_i = \rho^{\,i} \ (i = 0 \text{ newest}), \qquad
        q_p = \min\Bigl\{ x_{(k)} : \sum_{j \le k} w_{(j)} \ge p \sum_j w_j \Bigr\}

    where :math:`x_{(k)}` are the stored values in increasing order with their weights
    :math:`w_{(k)}`.

    Parameters
    ----------
    decay : float, default 0.99
        :math:`\rho \in (0, 1]`; the effective sample size is about :math:`1/(1-\rho) = 100`.
        :math:`\rho = 1` gives the plain empirical quantile of the window.
    window : int, default 512
        Keep at most this many recent values (weights beyond it are below :math:`0.6\%`).
    warmup : int, default 50
        :attr:`ready` once this many values are stored.
    values : list of float
        Stored values, oldest first (state; normally left empty).

    Notes
    -----
    :meth:`update` is :math:`O(1)` amortised; :meth:`quantile` sorts the window,
    :math:`O(W \log W)`. The inverted-CDF rule returns a stored value, never an interpolation.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Sec. 1.2 "Quantile Calibration of Thresholds" (EWQ with
    :math:`\rho \in [0.9, 0.99]`, windows of 256–1024 steps).

    Examples
    --------
    >>> q = EWQuantile(decay=1.0, warmup=3)
    >>> for x in [3.0, 1.0, 2.0, 4.0]:
    ...     q.update(x)
    >>> q.ready, q.quantile(0.5), q.quantile(0.75), q.quantile(1.0)
    (True, 2.0, 3.0, 4.0)
    >>> q = EWQuantile(decay=0.5)
    >>> for x in [10.0, 0.0]:  # weights 1/2 (old) and 1 (new)
    ...     q.update(x)
    >>> q.quantile(0.5), q.quantile(0.7)
    (0.0, 10.0)
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    decay: float = Field(0.99, gt=0.0, le=1.0)
    window: int = Field(512, ge=1)
    warmup: int = Field(50, ge=1)
    values: list[float] = Field(default_factory=list)

    def update(self, value: float) -> None:
        """Add one value (the newest); drop the oldest beyond the window.

        Raises
        ------
        KgrValidationError
            ``value`` is not a finite number.
        """
        self.values.append(_finite("value", value))
        if len(self.values) > self.window:
            del self.values[: len(self.values) - self.window]

    @property
    def ready(self) -> bool:
        """True once ``warmup`` values are stored."""
        return len(self.values) >= self.warmup

    def quantile(self, q: float) -> float:
        """The exponentially weighted ``q``-quantile, ``0 <= q <= 1``.

        Raises
        ------
        KgrValidationError
            ``q`` outside ``[0, 1]`` or no values yet.
        """
        q = _finite("q", q)
        if not 0.0 <= q <= 1.0:
            raise KgrValidationError(f"q must be in [0, 1], got {q!r}")
        if not self.values:
            raise KgrValidationError("no values yet: the quantile is undefined")
        x = np.asarray(self.values, dtype=np.float64)
        ages = np.arange(len(x) - 1, -1, -1, dtype=np.float64)
        w = np.power(self.decay, ages)
        order = np.argsort(x, kind="stable")
        cum = np.cumsum(w[order])
        k = int(np.searchsorted(cum, q * cum[-1] * (1.0 - 1e-12), side="left"))
        return float(x[order][min(k, len(x) - 1)])


class ThresholdCalibrator(BaseModel):
    r"""The AG and DG thresholds: fixed defaults during warm-up, then EW quantiles.

    .. math::

        \theta_{AG} = q_{p_{AG}}(\{g_0\}), \qquad \theta_{DG} = q_{p_{DG}}(\{b\})

    Parameters
    ----------
    theta_ag_default : float, default 0.75
        :math:`\theta_{AG}` before warm-up (between :math:`g_0 = 1/2`, an edge between known
        entities, and :math:`g_0 = 1`, an edge to a new entity, at the default costs).
    theta_dg_default : float, default 0.0
        :math:`\theta_{DG}` before warm-up: accept only when information gain outweighs cost.
    ag_quantile : float, default 0.9
        :math:`p_{AG} = 1 - \alpha`, an upper quantile of recent :math:`g_0`.
    dg_quantile : float, default 0.25
        :math:`p_{DG} = \beta`, a lower quantile of recent :math:`b`.
    calibrate : bool, default True
        False keeps the defaults forever.
    g0, b : EWQuantile
        The two streams (state).

    Notes
    -----
    After warm-up, DG accepts roughly the best :math:`\beta` share of recent candidates
    *whatever their absolute value*: quantile thresholds rank candidates against recent ones.
    Set ``calibrate=False`` for absolute thresholds.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Sec. 1.2, "Quantile Calibration of Thresholds".

    Examples
    --------
    >>> c = ThresholdCalibrator(g0=EWQuantile(warmup=2), b=EWQuantile(warmup=2))
    >>> c.theta_ag, c.theta_dg
    (0.75, 0.0)
    >>> c.update(g0=0.5, b=0.2); c.update(g0=1.0, b=-0.1)
    >>> c.theta_ag, c.theta_dg
    (1.0, -0.1)
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    theta_ag_default: float = Field(0.75, allow_inf_nan=False)
    theta_dg_default: float = Field(0.0, allow_inf_nan=False)
    ag_quantile: float = Field(0.9, ge=0.0, le=1.0)
    dg_quantile: float = Field(0.25, ge=0.0, le=1.0)
    calibrate: bool = True
    g0: EWQuantile = Field(default_factory=EWQuantile)
    b: EWQuantile = Field(default_factory=EWQuantile)

    def update(self, *, g0: float, b: float) -> None:
        """Record one candidate's :math:`g_0` and :math:`b`."""
        self.g0.update(g0)
        self.b.update(b)

    @property
    def theta_ag(self) -> float:
        r"""Current :math:`\theta_{AG}`."""
        if self.calibrate and self.g0.ready:
            return self.g0.quantile(self.ag_quantile)
        return self.theta_ag_default

    @property
    def theta_dg(self) -> float:
        r"""Current :math:`\theta_{DG}`."""
        if self.calibrate and self.b.ready:
            return self.b.quantile(self.dg_quantile)
        return self.theta_dg_default


def variance_balanced_lambda(
    delta_epc: Sequence[float], delta_ig: Sequence[float], *, eps: float = 1e-6
) -> float:
    r"""Initial :math:`\lambda` that gives the structural and information terms equal spread.

    .. math::

        \lambda_0 = \frac{\operatorname{Std}[\Delta\mathrm{EPC}_{\text{norm}}]}
        {\max\{\operatorname{Std}[\Delta\mathrm{IG}_{\text{norm}}],\ \varepsilon\}}

    Parameters
    ----------
    delta_epc, delta_ig : sequence of float
        Paired samples from a warm-up (pilot) set of candidates, same length :math:`\ge 2`.
    eps : float, default 1e-6
        Floor of the denominator, :math:`\varepsilon > 0`.

    Returns
    -------
    lam0 : float
        :math:`\lambda_0 \ge 0` (population standard deviations, ``ddof=0``).

    Raises
    ------
    KgrValidationError
        Lengths differ, fewer than 2 samples, a non-finite sample, or ``eps <= 0``.

    Notes
    -----
    With :math:`\lambda_0` the two terms of :math:`\mathcal{F}` vary on the same scale, so
    neither dominates the gates by units alone. The paper then compares
    :math:`\{\lambda_0/2, \lambda_0, 2\lambda_0\}` and **fixes** :math:`\lambda`; kgr's policy
    fixes :math:`\lambda_0` after its warm-up and never re-tunes it. :math:`O(N)`.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Sec. 1.2 "Scaling (:math:`\lambda`)" and "Determination
    Procedure for :math:`\lambda`" (pilot :math:`N \approx 100`, :math:`\varepsilon = 10^{-6}`).

    Examples
    --------
    Std of (0, 1) is 1/2, of (0, 0.25) is 1/8:

    >>> variance_balanced_lambda([0.0, 1.0], [0.0, 0.25])
    4.0
    >>> variance_balanced_lambda([0.0, 1.0], [0.3, 0.3])  # no spread in IG: eps floor
    500000.0
    """
    eps = real("eps", eps, gt=0.0)
    a = np.asarray(delta_epc, dtype=np.float64)
    b = np.asarray(delta_ig, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise KgrValidationError(f"delta_epc and delta_ig must be paired 1-d samples, got {a.shape} and {b.shape}")
    if a.size < 2:
        raise KgrValidationError("variance balancing needs at least 2 samples")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise KgrValidationError("samples must be finite numbers")
    return float(a.std() / max(float(b.std()), eps))
