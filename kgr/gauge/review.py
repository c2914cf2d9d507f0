r"""Which candidates a person should label first: uncertainty about the cut × impact.

For a pool of scored candidates with :math:`\hat p_i` and the calibrated policy's promotion cut
:math:`\tau`, with :math:`\ell(p) = \ln\frac{p}{1-p}`:

.. math::

    u_i = \exp\bigl(-|\ell(\hat p_i) - \ell(\tau)|\bigr), \qquad
    m_i = 1 + \ln\bigl(1 + \#\{j \ne i : r_j = r_i,\ |\ell(\hat p_j) - \ell(\hat p_i)| < 1\}\bigr),
    \qquad \text{priority}_i = u_i\, m_i .

:math:`u_i \in (0, 1]` is largest for a candidate sitting on the cut: its label decides whether it
is promoted, and it is where the scorer's calibration matters most. :math:`m_i` is the label's
*impact* on others: a label teaches the refit about candidates like it — the same relation and a
similar score — so a candidate with many such neighbours is worth more than an isolated one
(uncertainty sampling weighted by density, as in Settles & Craven 2008, "information density").

Examples
--------
On the cut with one similar neighbour, near the cut, far from it, and on the cut alone:

>>> pr = review_priority([0.9, 0.92, 0.5, 0.9], ["R", "R", "R", "S"], tau=0.9)
>>> [round(float(x), 3) for x in pr]
[1.693, 1.325, 0.111, 1.0]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from kgr.errors import KgrValidationError

__all__ = ["review_priority"]


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q) - np.log1p(-q)


def review_priority(p_hat: Sequence[float], relations: Sequence[str], *, tau: float) -> np.ndarray:
    """Priority of each candidate (see the module docstring); same order as the inputs.

    Raises
    ------
    KgrValidationError
        ``p_hat`` and ``relations`` of different lengths, or ``tau`` outside ``(0, 1)``.
    """
    if len(p_hat) != len(relations):
        raise KgrValidationError("one relation per p_hat", field="relations")
    if not 0.0 < tau < 1.0:
        raise KgrValidationError(f"tau must be in (0, 1), got {tau}", field="tau")
    z = _logit(np.asarray(p_hat, dtype=np.float64))
    u = np.exp(-np.abs(z - _logit(np.array([tau]))[0]))
    near = np.zeros(len(z))
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(relations):
        groups[r].append(i)
    for idx in groups.values():
        zi = np.sort(z[idx])
        lo = np.searchsorted(zi, z[idx] - 1.0, side="right")
        hi = np.searchsorted(zi, z[idx] + 1.0, side="left")
        near[idx] = hi - lo - 1
    return u * (1.0 + np.log1p(np.maximum(near, 0.0)))
