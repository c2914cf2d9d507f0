"""Constraint penalty, the O(changes) temporal term against dense Laplacians, and R_env."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kgr.errors import KgrValidationError
from kgr.gauge.laplacian import laplacian_from_edges
from kgr.gauge.reward import (
    ConstraintInputs,
    constraint_penalty,
    environmental_reward,
    laplacian_change_norm,
    temporal_term,
)


def test_constraint_penalty_by_hand():
    # max(0, 1)^2 + max(0, -0.5)^2 + max(0, 0.5)^2 = 1 + 0 + 0.25
    assert constraint_penalty([1.0, -0.5, 0.5]) == 1.25
    assert constraint_penalty([]) == 0.0
    c = ConstraintInputs(domain_violation=1.0, functional_conflict=2, other=(0.3, -1.0))
    assert c.values() == (1.0, 0.0, 2.0, 0.0, 0.0, 0.3, -1.0)
    assert c.violated() == ["domain", "functional", "other[0]"]
    assert constraint_penalty(c.values()) == pytest.approx(1 + 4 + 0.09)
    dup = ConstraintInputs(duplicate_entity=1.0, notes=("looks like X",))
    assert dup.violated() == ["duplicate_entity"] and constraint_penalty(dup.values()) == 1.0
    with pytest.raises(KgrValidationError, match="constraint value must be a finite number"):
        constraint_penalty([float("nan")])
    with pytest.raises(ValidationError):
        ConstraintInputs(domain=1.0)  # type: ignore[call-arg]  # extra fields forbidden
    with pytest.raises(ValidationError):
        ConstraintInputs(range_violation=float("inf"))


def dense_change(base, added, removed, nodes, weighted=False):
    after = [e for e in base if frozenset(e[:2]) not in {frozenset(r[:2]) for r in removed}] + list(added)
    L0, _ = laplacian_from_edges(base, nodes, weighted=weighted)
    L1, _ = laplacian_from_edges(after, nodes, weighted=weighted)
    return float(np.linalg.norm((L1 - L0).toarray(), "fro"))


def test_change_norm_by_hand():
    # One edge: Delta L = [[1, -1], [-1, 1]]: sqrt(4) = 2.
    assert laplacian_change_norm([("a", "b")]) == 2.0
    # Star centre c with two new leaves: diag (2, 1, 1), off-diagonal four -1: sqrt(4 + 1 + 1 + 4) = sqrt(10).
    assert laplacian_change_norm([("c", "x"), ("c", "y")]) == pytest.approx(math.sqrt(10))
    # Add (a, b), remove (b, c): diag (1, 0, -1), off-diagonal +-1 four times: sqrt(1 + 1 + 4) = sqrt(6).
    assert laplacian_change_norm([("a", "b")], [("b", "c")]) == pytest.approx(math.sqrt(6))
    # Duplicates collapse when unweighted, add up when weighted; self-loops change nothing.
    assert laplacian_change_norm([("a", "b"), ("b", "a"), ("a", "a")]) == 2.0
    assert laplacian_change_norm([("a", "b", 1.5), ("b", "a", 0.5)], weighted=True) == pytest.approx(4.0)
    assert laplacian_change_norm() == 0.0


@pytest.mark.parametrize(
    ("added", "kwargs", "match"),
    [
        ([("a",)], {}, r"\(u, v\)"),
        ([7], {}, r"\(u, v\)"),
        ([("a", "b")], {"weighted": True}, r"\(u, v, w\)"),
        ([("a", "b", -2.0)], {"weighted": True}, "edge weight must be a finite number >= 0"),
    ],
)
def test_change_norm_errors(added, kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        laplacian_change_norm(added, **kwargs)


@st.composite
def graph_change(draw):
    n = draw(st.integers(2, 12))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    base = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    removed = draw(st.lists(st.sampled_from(base), unique=True)) if base else []
    free = [p for p in pairs if p not in set(base)]
    added = draw(st.lists(st.sampled_from(free), unique=True)) if free else []
    return list(range(n)), base, added, removed


@settings(max_examples=120, deadline=None)
@given(graph_change())
def test_change_norm_equals_dense_frobenius(case):
    nodes, base, added, removed = case
    assert laplacian_change_norm(added, removed) == pytest.approx(dense_change(base, added, removed, nodes), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(graph_change(), st.lists(st.floats(0.1, 3.0), min_size=80, max_size=80))
def test_weighted_change_norm_equals_dense_frobenius(case, weights):
    nodes, base, added, removed = case
    w = dict(zip([*base, *added], weights))
    base_w = [(u, v, w[(u, v)]) for u, v in base]
    added_w = [(u, v, w[(u, v)]) for u, v in added]
    removed_w = [(u, v, w[(u, v)]) for u, v in removed]
    expected = dense_change(base_w, added_w, removed_w, nodes, weighted=True)
    assert laplacian_change_norm(added_w, removed_w, weighted=True) == pytest.approx(expected, abs=1e-9)


def test_temporal_term():
    assert temporal_term([("a", "b")], beta=0.5) == pytest.approx(math.exp(-1.0))  # exp(-0.5 * 2)
    assert temporal_term([("a", "b")], beta=0.0) == 1.0
    assert temporal_term(beta=3.0) == 1.0
    G = nx.karate_club_graph()
    added = [(0, 9), (16, 33)]
    L0, nodes = laplacian_from_edges(G.edges(), list(G))
    L1, _ = laplacian_from_edges(list(G.edges()) + added, nodes)
    dense = np.linalg.norm((L1 - L0).toarray(), "fro")
    assert temporal_term(added, beta=0.3) == pytest.approx(math.exp(-0.3 * dense))
    with pytest.raises(KgrValidationError, match="beta"):
        temporal_term([("a", "b")], beta=-1.0)


def test_environmental_reward_by_hand():
    # 1.0 * 0.4 + 1.0 * (-0.05) - 2.0 * 0.25 - 0.1 * 0.5 = 0.4 - 0.05 - 0.5 - 0.05 = -0.2
    r = environmental_reward(delta_cov=0.4, delta_vn=-0.05, r_contr=0.25, temporal=0.5, lambda_contr=2.0, lambda_t=0.1)
    assert r == pytest.approx(-0.2)
    # Weights switch terms off: only coverage and the temporal term remain: 0.4 - 0.1 * 0.5 = 0.35
    r = environmental_reward(
        delta_cov=0.4, delta_vn=-0.05, r_contr=0.25, temporal=0.5, lambda_contr=0.0, weight_vn=0.0
    )
    assert r == pytest.approx(0.35)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta_cov": float("nan")}, "delta_cov"),
        ({"r_contr": -1.0}, "r_contr must be a finite number >= 0"),
        ({"temporal": 1.5}, "temporal must be a finite number >= 0 and <= 1"),
        ({"lambda_t": -0.1}, "lambda_t must be a finite number >= 0"),
        ({"weight_vn": True}, "weight_vn"),
    ],
)
def test_environmental_reward_errors(kwargs, match):
    args = {"delta_cov": 0.1, "delta_vn": 0.0, "r_contr": 0.0, "temporal": 1.0} | kwargs
    with pytest.raises(KgrValidationError, match=match):
        environmental_reward(**args)
