"""The geDIG gauge on hand-built graphs, with every term computed by hand."""

from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from kgr.errors import KgrValidationError
from kgr.gauge.gates import evaluate_gates, stability_audit
from kgr.gauge.gedig import degree_entropy, gedig_gauge, local_ball


def H(degrees):
    """Shannon entropy of p_v = deg/sum(deg), written out."""
    total = sum(degrees)
    return -sum(d / total * math.log(d / total) for d in degrees if d)


def two_cliques():
    """Two K_4 (a0..a3, b0..b3) joined by the path a0 - p - b0."""
    G = nx.complete_graph(["a0", "a1", "a2", "a3"])
    G.add_edges_from(nx.complete_graph(["b0", "b1", "b2", "b3"]).edges())
    G.add_edges_from([("a0", "p"), ("p", "b0")])
    return G


def test_degree_entropy():
    assert degree_entropy([1, 2, 1]) == pytest.approx(1.5 * math.log(2))  # p = 1/4, 1/2, 1/4
    assert degree_entropy([0, 3, 3]) == pytest.approx(math.log(2))
    assert degree_entropy([0, 0, 0]) == pytest.approx(math.log(3))  # edgeless: uniform
    assert degree_entropy([5]) == 0.0
    with pytest.raises(KgrValidationError, match="non-empty"):
        degree_entropy([])
    with pytest.raises(KgrValidationError, match=">= 0"):
        degree_entropy([1, -1])


def test_local_ball_order_cap_and_new_nodes():
    G = nx.Graph([("m", "b"), ("m", "a"), ("a", "z"), ("b", "c")])
    # Distance 0: {m}; 1: {a, b}; 2: {c, z}; sorted by str within a layer.
    assert local_ball(G, ["m"], hops=2, k_max=10) == ["m", "a", "b", "c", "z"]
    assert local_ball(G, ["m"], hops=2, k_max=4) == ["m", "a", "b", "c"]
    assert local_ball(G, ["m"], hops=0, k_max=4) == ["m"]
    assert local_ball(G, ["new", "m"], hops=1, k_max=10) == ["m", "new", "a", "b"]
    # Mixed node types order deterministically by (str, type name).
    M = nx.Graph([(1, "1"), (1, 2)])
    assert local_ball(M, [1], hops=1, k_max=5) == [1, "1", 2]
    with pytest.raises(KgrValidationError, match="k_max"):
        local_ball(G, ["m"], hops=1, k_max=0)


def test_closing_a_square_by_hand():
    # Path a-b-c-d; candidate (a, d) makes C_4. lam = gamma = 1, c_node = c_edge = 1.
    G = nx.path_graph(["a", "b", "c", "d"])
    r = gedig_gauge(G, "a", "d")
    assert (r.new_nodes, r.edge_exists, r.capped) == (0, False, False)
    h0, h1, h2 = r.hops
    # Hop 0: S_0 = {a, d}, no edge before (uniform: ln 2), one edge after (1/2, 1/2: ln 2).
    assert h0.n_nodes == 2 and (h0.edges_before, h0.edges_after) == (0, 1)
    assert h0.delta_epc == pytest.approx(1 / (1 + 1))  # (0 * c_node + c_edge) / (c_node + c_edge * 1)
    assert h0.delta_h == 0.0 and h0.delta_sp == 0.0
    assert r.g0 == pytest.approx(0.5)
    # Hop 1: S_1 = all four nodes; 3 edges before, 4 after.
    assert h1.n_nodes == 4 and (h1.edges_before, h1.edges_after) == (3, 4)
    assert h1.delta_epc == pytest.approx(1 / 5)
    # Degrees (1, 2, 2, 1) -> (2, 2, 2, 2): H_b = (1/3) ln 6 + (2/3) ln 3, H_a = ln 4.
    h_b = math.log(6) / 3 + 2 * math.log(3) / 3
    assert h1.entropy_before == pytest.approx(h_b)
    assert h1.entropy_after == pytest.approx(math.log(4))
    dh = (h_b - math.log(4)) / math.log(4)
    assert h1.delta_h == pytest.approx(dh)  # about -0.040852: uniform degrees = more uncertainty
    # Pairs: ab 1, ac 2, ad 3, bc 1, bd 2, cd 1 -> 10/6; after ad = 1 -> 8/6. dSP = (2/6)/(10/6) = 0.2.
    assert h1.n_pairs == 6
    assert (h1.path_before, h1.path_after) == (pytest.approx(10 / 6), pytest.approx(8 / 6))
    assert h1.delta_sp == pytest.approx(0.2)
    assert h1.f == pytest.approx(0.2 - (dh + 0.2))  # = -dh = 0.040852
    assert h2 == h1.model_copy(update={"hop": 2})  # the ball is already complete at hop 1
    assert r.g_min == pytest.approx(-dh)
    assert r.b == pytest.approx(-dh)


def test_bridge_between_two_clusters_fires_dg():
    G = two_cliques()
    r = gedig_gauge(G, "a1", "b1")
    h1, h2 = r.hops[1], r.hops[2]
    # Hop 1: {a1, b1} and their neighbours, 8 nodes; 12 edges before, 13 after; p is at distance 2.
    assert (h1.n_nodes, h1.edges_after) == (8, 13)
    assert h1.delta_epc == pytest.approx(1 / 14)
    assert h1.delta_sp == 0.0  # the two K_4 are not connected inside S_1: only within-side pairs
    assert h1.n_pairs == 12
    # Hop 2: all 9 nodes, 15 edges after. 36 pairs, distance sums 82 before, 65 after:
    # within A 6, within B 6, p-A 1+2+2+2 = 7, p-B 7, A x B 2 + 3*3 + 3*3 + 4*9 = 56   -> 82
    # A x B after: a1b1 1, a1-{b0,b2,b3} 2*3, {a0,a2,a3}-b1 2*3, a0b0 2, other eight 3*8 -> 39 -> 65
    assert (h2.n_nodes, h2.edges_after, h2.n_pairs) == (9, 15, 36)
    assert h2.delta_epc == pytest.approx(1 / 16)
    assert h2.path_before == pytest.approx(82 / 36)
    assert h2.path_after == pytest.approx(65 / 36)
    assert h2.delta_sp == pytest.approx(17 / 82)
    # Degrees: a0 4, a1..a3 3, p 2, b0 4, b1..b3 3 (sum 28) -> a1, b1 become 4 (sum 30).
    before = [4, 3, 3, 3, 2, 4, 3, 3, 3]
    after = [4, 4, 3, 3, 2, 4, 4, 3, 3]
    dh = (H(before) - H(after)) / math.log(9)
    assert h2.delta_h == pytest.approx(dh)
    assert h2.f == pytest.approx(1 / 16 - (dh + 17 / 82))  # about -0.1467
    assert r.b == h2.f < -0.1
    gates = evaluate_gates(r.g0, r.b, theta_ag=0.75, theta_dg=0.0)
    assert gates.dg and not gates.ag
    assert stability_audit(r, theta_dg=0.0).passed


def test_redundant_chord_in_clique_is_not_accepted():
    # K_6 minus (0, 1): dEPC = dSP = 1/16 exactly (15 pairs, one at distance 2; 15 edges after),
    # and the degrees become uniform, so entropy rises and F = -lam * dH > 0.
    G = nx.complete_graph(6)
    G.remove_edge(0, 1)
    r = gedig_gauge(G, 0, 1)
    h1 = r.hops[1]
    assert h1.delta_epc == pytest.approx(1 / 16)
    assert h1.delta_sp == pytest.approx((16 / 15 - 1) / (16 / 15))  # = 1/16
    dh = (H([4, 4, 5, 5, 5, 5]) - math.log(6)) / math.log(6)
    assert h1.delta_h == pytest.approx(dh) and dh < 0
    assert r.b == pytest.approx(-dh) and r.b > 0
    assert not evaluate_gates(r.g0, r.b, theta_ag=0.75, theta_dg=0.0).dg


def test_existing_edge_changes_nothing_but_costs():
    G = nx.complete_graph(5)
    r = gedig_gauge(G, 0, 1)
    assert r.edge_exists
    for h in r.hops[1:]:
        assert h.delta_h == 0.0 and h.delta_sp == 0.0 and h.edges_before == h.edges_after == 10
        assert h.f == pytest.approx(1 / 11)  # c_edge / (c_node + c_edge * 10)
    assert r.b > 0


def test_dead_end_new_node_raises_g0_above_theta_ag():
    G = two_cliques()
    r = gedig_gauge(G, "a1", "new")
    assert r.new_nodes == 1
    # Hop 0: (1 * c_node + c_edge) / (c_node + c_edge * 1) = 2 / 2 = 1.0 > 0.75.
    assert r.g0 == pytest.approx(1.0)
    # Hop 1: a1, its neighbours a0 a2 a3, and "new": 7 edges after; a leaf joins no path (dSP = 0).
    h1 = r.hops[1]
    assert (h1.n_nodes, h1.edges_after, h1.delta_sp) == (5, 7, 0.0)
    assert h1.delta_epc == pytest.approx(2 / 8)
    dh = (H([3, 3, 3, 3, 0]) - H([3, 4, 3, 3, 1])) / math.log(5)  # order a0, a1, a2, a3, new
    assert h1.delta_h == pytest.approx(dh) and dh < 0
    gates = evaluate_gates(r.g0, r.b, theta_ag=0.75, theta_dg=0.0)
    assert gates.ag and not gates.dg


def test_two_new_nodes_and_isolated_counts_as_new():
    G = nx.path_graph(3)
    r = gedig_gauge(G, "x", "y")
    assert r.new_nodes == 2
    for h in r.hops:  # S_h = {x, y} at every hop: (2 + 1) / (1 + 1)
        assert h.f == pytest.approx(1.5)
    G.add_node("x")  # isolated in G: still new, same result
    assert gedig_gauge(G, "x", "y") == r


def test_entropy_sign_reduction_lowers_f():
    # Path a-b-c-d-e, add (b, d): degrees (1,2,2,2,1) -> (1,3,2,3,1): more concentrated, entropy falls.
    G = nx.path_graph(["a", "b", "c", "d", "e"])
    r = gedig_gauge(G, "b", "d", hops=2)
    h = r.hops[2]
    assert h.entropy_before == pytest.approx(H([1, 2, 2, 2, 1]))
    assert h.entropy_after == pytest.approx(H([1, 3, 2, 3, 1]))
    assert h.entropy_after < h.entropy_before
    assert h.delta_h == pytest.approx((h.entropy_before - h.entropy_after) / math.log(5)) and h.delta_h > 0
    off = gedig_gauge(G, "b", "d", hops=2, use_ig=False).hops[2]
    assert h.f == pytest.approx(off.f - 1.0 * h.delta_h) and h.f < off.f  # information gain lowers F


def test_ablation_switches_and_constants():
    G = two_cliques()
    full = gedig_gauge(G, "a1", "b1", lam=2.0, gamma=0.5)
    h = full.hops[2]
    assert h.f == pytest.approx(h.delta_epc - 2.0 * (h.delta_h + 0.5 * h.delta_sp))
    no_epc = gedig_gauge(G, "a1", "b1", lam=2.0, gamma=0.5, use_epc=False).hops[2]
    assert no_epc.f == pytest.approx(-2.0 * (h.delta_h + 0.5 * h.delta_sp))
    no_sp = gedig_gauge(G, "a1", "b1", lam=2.0, gamma=0.5, use_sp=False).hops[2]
    assert no_sp.f == pytest.approx(h.delta_epc - 2.0 * h.delta_h)
    epc_only = gedig_gauge(G, "a1", "b1", use_ig=False, use_sp=False)
    assert all(t.f == pytest.approx(t.delta_epc) for t in epc_only.hops)
    costly = gedig_gauge(G, "a1", "new", c_node=3.0, c_edge=0.5)
    assert costly.g0 == pytest.approx((3.0 + 0.5) / (3.0 + 0.5 * 1))


def test_cap_and_deterministic_order():
    G = nx.star_graph(100)  # centre 0 with 100 leaves
    r = gedig_gauge(G, 1, 2, k_max=10)
    assert r.capped and r.hops[-1].n_nodes == 10
    assert not gedig_gauge(G, 1, 2, k_max=200).capped
    # Same graph built in another edge order gives the identical result.
    edges = list(two_cliques().edges())
    random.Random(3).shuffle(edges)
    assert gedig_gauge(nx.Graph(edges), "a1", "b1") == gedig_gauge(two_cliques(), "a1", "b1")


def test_sampled_path_pairs_are_seeded_and_close_to_all_pairs():
    G = nx.connected_watts_strogatz_graph(60, 4, 0.2, seed=1)
    u, v = 0, 30
    full = gedig_gauge(G, u, v, hops=3, k_max=60)
    k = full.hops[3].n_nodes
    assert k == 38 and full.hops[3].n_pairs == k * (k - 1) // 2  # 703 pairs, all connected
    s1 = gedig_gauge(G, u, v, hops=3, k_max=60, max_sp_pairs=600, seed=7)
    s2 = gedig_gauge(G, u, v, hops=3, k_max=60, max_sp_pairs=600, seed=7)
    assert s1 == s2
    # 703 > 600: ceil(600 / 37) = 17 sampled sources, each paired with the 37 other nodes.
    assert s1.hops[3].n_pairs == 17 * 37
    assert s1.hops[3].delta_sp == pytest.approx(full.hops[3].delta_sp, abs=0.05)


@pytest.mark.parametrize(
    ("G", "args", "kwargs", "match"),
    [
        (nx.path_graph(3), (0, 0), {}, "self-loop"),
        (nx.DiGraph([(0, 1)]), (0, 1), {}, "undirected"),
        (nx.MultiGraph([(0, 1)]), (0, 2), {}, "simple graph"),
        (nx.path_graph(3), (0, 2), {"hops": 0}, "hops"),
        (nx.path_graph(3), (0, 2), {"k_max": 1}, "k_max"),
        (nx.path_graph(3), (0, 2), {"c_edge": 0.0}, "c_edge"),
        (nx.path_graph(3), (0, 2), {"lam": -1.0}, "lam"),
        (nx.path_graph(3), (0, 2), {"gamma": float("nan")}, "gamma"),
    ],
)
def test_gauge_errors(G, args, kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        gedig_gauge(G, *args, **kwargs)
