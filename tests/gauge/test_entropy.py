"""Von Neumann entropy against closed forms, SLQ against exact, and exact entropy differences."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from kgr.errors import KgrValidationError
from kgr.gauge import entropy as entropy_module
from kgr.gauge.entropy import (
    SLQ_AUTO_THRESHOLD,
    vn_entropy,
    vn_entropy_exact,
    vn_entropy_gain,
    vn_entropy_slq,
)
from kgr.gauge.laplacian import laplacian_from_edges, laplacian_from_graph


def lap(G):
    return laplacian_from_graph(G)[0]


def entropy_of(rho_eigs):
    """-sum p ln p over the given density eigenvalues (zeros skipped)."""
    return -sum(p * math.log(p) for p in rho_eigs if p > 0)


@pytest.mark.parametrize("n", range(2, 9))
def test_complete_graph_is_ln_n_minus_1(n):
    # Spectrum of K_n: 0 once, n with multiplicity n-1; tr L = n(n-1). rho: 1/(n-1), n-1 times.
    assert vn_entropy(lap(nx.complete_graph(n))) == pytest.approx(math.log(n - 1), abs=1e-12)


def test_star_closed_form():
    # K_{1,5}: spectrum {0, 1 (x4), 6}, tr L = 2*5 = 10.
    # rho = {1/10 (x4), 6/10}: S = 4 * (1/10) ln 10 + (6/10) ln(10/6).
    expected = 0.4 * math.log(10) + 0.6 * math.log(10 / 6)
    assert expected == pytest.approx(1.2275294, abs=1e-7)  # 0.921034 + 0.306495
    assert vn_entropy(lap(nx.star_graph(5))) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [3, 4, 7, 12])
def test_cycle_closed_form(n):
    # C_n: eigenvalues 2 - 2cos(2 pi k / n), k = 0..n-1; tr L = 2n.
    eig = [2 - 2 * math.cos(2 * math.pi * k / n) for k in range(n)]
    expected = entropy_of([x / (2 * n) for x in eig])
    assert vn_entropy(lap(nx.cycle_graph(n))) == pytest.approx(expected, abs=1e-12)


def test_cycle_c4_by_hand():
    # C_4: spectrum {0, 2, 2, 4}, tr = 8: rho = {1/4, 1/4, 1/2}: S = 2(1/4)ln4 + (1/2)ln2 = (3/2) ln 2.
    assert vn_entropy(lap(nx.cycle_graph(4))) == pytest.approx(1.5 * math.log(2), abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_path_closed_form(n):
    # P_n: eigenvalues 2 - 2cos(pi k / n), k = 0..n-1; tr L = 2(n-1).
    eig = [2 - 2 * math.cos(math.pi * k / n) for k in range(n)]
    expected = entropy_of([x / (2 * (n - 1)) for x in eig])
    assert vn_entropy(lap(nx.path_graph(n))) == pytest.approx(expected, abs=1e-12)


def test_k5_with_mu_by_hand():
    # K_5: spectrum {0, 5, 5, 5, 5}. With mu = 0.1: L + mu I has {0.1, 5.1 (x4)}, trace 20 + 0.5 = 20.5.
    # S = -(0.1/20.5) ln(0.1/20.5) - 4 (5.1/20.5) ln(5.1/20.5)
    p0, p1 = 0.1 / 20.5, 5.1 / 20.5
    expected = -(p0 * math.log(p0)) - 4 * p1 * math.log(p1)
    assert expected == pytest.approx(1.410364, abs=1e-6)  # 0.025966 + 1.384398
    assert vn_entropy(lap(nx.complete_graph(5)), mu=0.1) == pytest.approx(expected, abs=1e-12)


def test_karate_club_unweighted():
    # Zachary's karate club, 34 nodes, 78 edges, unweighted Laplacian, mu = 0.
    L, _ = laplacian_from_graph(nx.karate_club_graph())  # weight=None by default
    assert L.diagonal().sum() == 2 * 78
    assert vn_entropy(L) == pytest.approx(3.154096, abs=5e-7)


def test_edgeless_and_degenerate_cases():
    # No edges, mu = 0: the mu -> 0+ limit rho = I/n, S = ln n. With mu > 0 it is exactly I/n.
    assert vn_entropy(np.zeros((5, 5))) == pytest.approx(math.log(5))
    assert vn_entropy(np.zeros((5, 5)), mu=0.3) == pytest.approx(math.log(5))
    assert vn_entropy(np.zeros((1, 1))) == 0.0
    assert vn_entropy(np.array([[1.0, -1.0], [-1.0, 1.0]])) == 0.0  # one edge: a pure state
    with pytest.raises(KgrValidationError, match="no nodes"):
        vn_entropy(np.zeros((0, 0)))
    with pytest.raises(KgrValidationError, match="square"):
        vn_entropy(np.zeros((2, 3)))
    with pytest.raises(KgrValidationError, match="mu"):
        vn_entropy(np.eye(2), mu=-1.0)
    with pytest.raises(KgrValidationError, match="method"):
        vn_entropy(np.eye(2), method="fast")  # type: ignore[arg-type]
    with pytest.raises(KgrValidationError, match="n_probes"):
        vn_entropy_slq(np.eye(2), n_probes=0)
    with pytest.raises(KgrValidationError, match="lanczos_steps"):
        vn_entropy_slq(np.eye(2), lanczos_steps=0)


def test_relabelling_invariance():
    G = nx.karate_club_graph()
    order = list(G)[::-1]
    L1, _ = laplacian_from_graph(G)
    L2, _ = laplacian_from_graph(G, nodes=order)
    assert vn_entropy(L1) == pytest.approx(vn_entropy(L2), abs=1e-12)


@pytest.fixture(scope="module")
def random_graphs_2000():
    graphs = {
        "erdos_renyi": nx.gnp_random_graph(2000, 0.005, seed=11),
        "barabasi_albert": nx.barabasi_albert_graph(2000, 3, seed=12),
    }
    return {name: (lap(G), vn_entropy_exact(lap(G))) for name, G in graphs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["erdos_renyi", "barabasi_albert"])
def test_slq_within_half_percent_on_2000_nodes(random_graphs_2000, name):
    L, exact = random_graphs_2000[name]
    est = vn_entropy_slq(L, seed=2024)
    assert abs(est - exact) / exact < 0.005
    assert vn_entropy_slq(L, seed=2024) == est  # fixed seed: reproducible


def test_slq_with_mu_and_small_graphs():
    L = lap(nx.cycle_graph(400))
    assert vn_entropy_slq(L, mu=0.5, seed=3) == pytest.approx(vn_entropy_exact(L, mu=0.5), rel=1e-3)
    # n smaller than the number of Lanczos steps: the quadrature is exact.
    L = lap(nx.complete_graph(6))
    assert vn_entropy_slq(L) == pytest.approx(math.log(5), abs=1e-9)
    assert vn_entropy_slq(np.zeros((4, 4))) == pytest.approx(math.log(4))


def test_auto_switches_at_threshold(monkeypatch):
    assert SLQ_AUTO_THRESHOLD == 3000  # documented switch point
    monkeypatch.setattr(entropy_module, "SLQ_AUTO_THRESHOLD", 40)  # same rule, cheaper sizes
    small = lap(nx.path_graph(40))
    assert vn_entropy(small) == vn_entropy_exact(small)
    big = lap(nx.path_graph(41))
    assert vn_entropy(big, seed=5) == vn_entropy_slq(big, seed=5)
    assert vn_entropy(big, method="exact") == vn_entropy_exact(big)
    assert vn_entropy(small, method="slq", seed=5) == vn_entropy_slq(small, seed=5)


def test_gain_closing_a_triangle_by_hand():
    # Path a-b-c: spectrum {0, 1, 3}, tr 4: rho {1/4, 3/4}. Triangle: {0, 3, 3}, tr 6: rho {1/2, 1/2}.
    before = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    after = math.log(2)
    assert vn_entropy_gain([("a", "b"), ("b", "c")], [("c", "a")]) == pytest.approx(after - before, abs=1e-12)


def test_gain_equals_difference_of_exact_entropies_on_subgraph():
    G = nx.karate_club_graph()
    sub = G.subgraph(nx.single_source_shortest_path_length(G, 0, cutoff=1)).copy()
    nodes = sorted(sub)
    added = [(5, 6), (4, 10)] if not sub.has_edge(5, 6) else [(4, 10)]
    added = [e for e in added if not sub.has_edge(*e)]
    H = sub.copy()
    H.add_edges_from(added)
    for mu in (0.0, 0.25):
        expected = vn_entropy_exact(lap_on(H, nodes), mu=mu) - vn_entropy_exact(lap_on(sub, nodes), mu=mu)
        got = vn_entropy_gain(list(sub.edges()), added, nodes=nodes, mu=mu)
        assert got == pytest.approx(expected, abs=1e-12)


def lap_on(G, nodes):
    return laplacian_from_graph(G, nodes=nodes)[0]


def test_gain_with_new_node_is_isolated_before():
    # New node "n" attached to "a" of the edge a-b. Before (3 nodes, one edge): rho {0, 0, 1} at mu=0,
    # S = 0. After (path n-a-b): rho {0, 1/4, 3/4}.
    after = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert vn_entropy_gain([("a", "b")], [("a", "n")]) == pytest.approx(after, abs=1e-12)
    # With mu = 1 the isolated node matters: before L + I has {1, 1, 3}, trace 5; after {1, 2, 4}, trace 7.
    before_mu = entropy_of([1 / 5, 1 / 5, 3 / 5])
    after_mu = entropy_of([1 / 7, 2 / 7, 4 / 7])
    assert vn_entropy_gain([("a", "b")], [("a", "n")], mu=1.0) == pytest.approx(after_mu - before_mu, abs=1e-12)


def test_gain_from_edgeless_uses_the_limit_and_existing_edge_is_zero():
    # Two isolated nodes (S = ln 2 in the limit) joined by one edge (S = 0).
    assert vn_entropy_gain([], [("a", "b")]) == pytest.approx(-math.log(2))
    assert vn_entropy_gain([("a", "b")], [("a", "b")]) == 0.0
    # Weighted: adding weight to an existing edge changes nothing in a one-edge graph (still pure)...
    assert vn_entropy_gain([("a", "b", 1.0)], [("a", "b", 2.0)], weighted=True) == 0.0
    # ...but does in a path: a-b weight 1 -> 3, b-c weight 1. Spectrum of [[3,-3,0],[-3,4,-1],[0,-1,1]].
    L_after, _ = laplacian_from_edges([("a", "b", 3.0), ("b", "c", 1.0)], weighted=True)
    L_before, _ = laplacian_from_edges([("a", "b", 1.0), ("b", "c", 1.0)], weighted=True)
    expected = vn_entropy_exact(L_after) - vn_entropy_exact(L_before)
    got = vn_entropy_gain([("a", "b", 1.0), ("b", "c", 1.0)], [("a", "b", 2.0)], weighted=True)
    assert got == pytest.approx(expected, abs=1e-12)


def test_gain_refuses_large_graphs():
    edges = list(nx.path_graph(30).edges())
    with pytest.raises(KgrValidationError, match="local subgraph"):
        vn_entropy_gain(edges, [(0, 29)], max_nodes=20)
    with pytest.raises(KgrValidationError, match="no nodes"):
        vn_entropy_gain([], [])
