"""Exponentially weighted quantiles, threshold calibration and variance-balanced lambda."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kgr.errors import KgrValidationError
from kgr.gauge.calibration import EWQuantile, ThresholdCalibrator, variance_balanced_lambda


def test_unweighted_quantiles_by_hand():
    q = EWQuantile(decay=1.0, warmup=4)
    for x in [5.0, 1.0, 4.0, 2.0, 3.0]:
        q.update(x)
    # Sorted 1..5 with equal weights: cumulative 0.2, 0.4, ..., 1.0; smallest value reaching q.
    assert [q.quantile(p) for p in (0.0, 0.2, 0.21, 0.5, 0.8, 1.0)] == [1.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert q.ready


def test_exponential_weights_favour_recent_values():
    q = EWQuantile(decay=0.5, warmup=1)
    for x in [0.0, 0.0, 10.0]:  # weights 1/4, 1/2, 1 (newest); total 7/4
        q.update(x)
    # Sorted: 0 (weight 3/4), 10 (weight 1). Median needs 7/8 > 3/4, so it is 10.
    assert q.quantile(0.5) == 10.0
    assert q.quantile(0.4) == 0.0  # 0.4 * 7/4 = 0.7 <= 3/4


def test_window_and_warmup():
    q = EWQuantile(decay=1.0, window=3, warmup=2)
    q.update(100.0)
    assert not q.ready
    for x in [1.0, 2.0, 3.0]:
        q.update(x)
    assert q.values == [1.0, 2.0, 3.0]  # 100 fell out of the window
    assert q.quantile(1.0) == 3.0


def test_quantile_errors_and_roundtrip():
    q = EWQuantile()
    with pytest.raises(KgrValidationError, match="no values"):
        q.quantile(0.5)
    q.update(1.0)
    with pytest.raises(KgrValidationError, match=r"q must be in \[0, 1\]"):
        q.quantile(1.5)
    with pytest.raises(KgrValidationError, match="finite"):
        q.update(float("nan"))
    with pytest.raises(ValidationError):
        EWQuantile(decay=0.0)
    assert EWQuantile.model_validate_json(q.model_dump_json()) == q


def test_thresholds_defaults_then_quantiles():
    c = ThresholdCalibrator(g0=EWQuantile(decay=1.0, warmup=4), b=EWQuantile(decay=1.0, warmup=4))
    assert (c.theta_ag, c.theta_dg) == (0.75, 0.0)
    for g0, b in [(0.5, 0.3), (1.0, -0.2), (1.5, 0.1), (0.5, 0.0)]:
        c.update(g0=g0, b=b)
    # g0 sorted (0.5, 0.5, 1.0, 1.5): q_0.9 needs 3.6 of 4 -> 1.5. b sorted (-0.2, 0, 0.1, 0.3): q_0.25 -> -0.2.
    assert c.theta_ag == 1.5
    assert c.theta_dg == -0.2
    fixed = c.model_copy(update={"calibrate": False})
    assert (fixed.theta_ag, fixed.theta_dg) == (0.75, 0.0)


def test_variance_balanced_lambda_by_hand():
    # Std of (0.2, 0.4, 0.6) = sqrt(2/3) * 0.2; of (0.1, 0.1, 0.4) = sqrt(2) * 0.1.
    lam = variance_balanced_lambda([0.2, 0.4, 0.6], [0.1, 0.1, 0.4])
    assert lam == pytest.approx((0.2 * (2 / 3) ** 0.5) / (0.1 * 2**0.5))
    assert variance_balanced_lambda([1.0, 1.0], [0.0, 1.0]) == 0.0
    assert variance_balanced_lambda([0.0, 2.0], [1.0, 1.0], eps=0.5) == 2.0  # std 1 / eps 0.5


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([1.0], [1.0], {}, "at least 2"),
        ([1.0, 2.0], [1.0], {}, "paired"),
        ([1.0, float("inf")], [1.0, 2.0], {}, "finite"),
        ([1.0, 2.0], [1.0, 2.0], {"eps": 0.0}, "eps"),
    ],
)
def test_variance_balanced_lambda_errors(a, b, kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        variance_balanced_lambda(a, b, **kwargs)
