"""AG/DG gates, the StabilityAudit and the cooldown."""

from __future__ import annotations

import networkx as nx
import pytest

from kgr.errors import KgrValidationError
from kgr.gauge.gates import Cooldown, evaluate_gates, stability_audit
from kgr.gauge.gedig import gedig_gauge


def test_gate_boundaries():
    g = evaluate_gates(0.75, 0.0, theta_ag=0.75, theta_dg=0.0)
    assert not g.ag  # strictly greater fires AG
    assert g.dg  # b <= theta fires DG
    assert g.margin == 0.0
    g = evaluate_gates(1.0, 0.3, theta_ag=0.75, theta_dg=0.1)
    assert g.ag and not g.dg and g.margin == pytest.approx(-0.2)
    with pytest.raises(KgrValidationError, match="theta_dg"):
        evaluate_gates(1.0, 0.3, theta_ag=0.75, theta_dg=float("nan"))


@pytest.fixture
def square():
    # Path a-b-c-d closed into C_4: b = 0.040852 (see test_gedig.test_closing_a_square_by_hand).
    return gedig_gauge(nx.path_graph(["a", "b", "c", "d"]), "a", "d")


def test_audit_without_jitter_is_the_margin(square):
    at = stability_audit(square, theta_dg=square.b, rel_jitter=0.0, abs_jitter=0.0)
    assert at.passed and at.margin == 0.0 and at.min_margin == pytest.approx(0.0, abs=1e-15)
    below = stability_audit(square, theta_dg=square.b - 1e-9, rel_jitter=0.0, abs_jitter=0.0)
    assert not below.passed
    demanding = stability_audit(square, theta_dg=square.b + 0.01, rel_jitter=0.0, abs_jitter=0.0, eps=0.02)
    assert not demanding.passed


def test_audit_jitter_rejects_thin_margins_and_keeps_wide_ones(square):
    thin = stability_audit(square, theta_dg=square.b + 0.001)
    wide = stability_audit(square, theta_dg=square.b + 0.2)
    assert not thin.passed and thin.margin > 0 and thin.min_margin < 0
    assert wide.passed and wide.min_margin > 0.15
    # Seeded: the same seed gives the same verdict and numbers, another seed other numbers.
    theta = square.b + 0.05
    assert stability_audit(square, theta_dg=theta, seed=3) == stability_audit(square, theta_dg=theta, seed=3)
    assert stability_audit(square, theta_dg=square.b + 0.05, seed=3).min_margin != stability_audit(
        square, theta_dg=square.b + 0.05, seed=4
    ).min_margin


def test_audit_single_hop_mode(square):
    # g0 = 0.5: with multi_hop=False only hop 0 counts, so theta 0.1 leaves a negative margin.
    assert stability_audit(square, theta_dg=0.1).passed
    assert not stability_audit(square, theta_dg=0.1, multi_hop=False).passed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"rel_jitter": -0.1}, ">= 0"), ({"trials": 0}, "trials"), ({"abs_jitter": float("inf")}, "abs_jitter")],
)
def test_audit_errors(square, kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        stability_audit(square, theta_dg=0.0, **kwargs)


def test_cooldown_counts_promotions():
    c = Cooldown(steps=2)
    c.record(["a", "b"])  # promotion #0
    assert c.blocked("a") and c.blocked("b") and not c.blocked("c")
    c.record(["c", "d"])  # #1
    assert c.blocked("a")  # next is #2: 2 - 0 <= 2
    c.record(["e", "f"])  # #2
    assert not c.blocked("a")  # next is #3
    assert c.blocked("c")
    off = Cooldown()
    off.record(["a"])
    assert not off.blocked("a")
    assert Cooldown.model_validate_json(c.model_dump_json()) == c


def test_cooldown_forgets_expired_entries():
    c = Cooldown(steps=1)
    for i in range(200):
        c.record([f"n{i}"])
    assert len(c.last) <= 4 * 1 + 64 + 1
    assert c.blocked("n199") and not c.blocked("n0")
