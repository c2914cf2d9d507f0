"""Coverage: hand values, incremental = full recomputation, locality, (non-)submodularity."""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgr.errors import KgrValidationError
from kgr.gauge.coverage import coverage, coverage_gain


def f(k: int, kappa: float) -> float:
    return 1 - (1 - kappa) ** k


def test_path_by_hand():
    # P_4 = a-b-c-d, kappa = 0.5.
    # h = 1: degrees 1, 2, 2, 1 -> 2 f(1) + 2 f(2) = 2(0.5) + 2(0.75) = 2.5
    # h = 2: |N| = 2, 3, 3, 2 -> 2 f(2) + 2 f(3) = 2(0.75) + 2(0.875) = 3.25
    G = nx.path_graph(["a", "b", "c", "d"])
    assert coverage(G, kappa=0.5) == pytest.approx(2.5)
    assert coverage(G, kappa=0.5, h=2) == pytest.approx(3.25)
    assert coverage(G, kappa=0.5, h=3) == pytest.approx(4 * f(3, 0.5))  # 3.5


def test_isolated_nodes_self_loops_and_empty_graph():
    G = nx.Graph()
    assert coverage(G, kappa=0.3) == 0.0
    G.add_nodes_from(range(5))
    assert coverage(G, kappa=0.3) == 0.0  # N(v; h) excludes v: isolated nodes cover nothing
    G.add_edge(0, 0)
    assert coverage(G, kappa=0.3, h=2) == 0.0
    G.add_edge(0, 1)
    assert coverage(G, kappa=0.3) == pytest.approx(2 * 0.3)


def test_kappa_one_counts_non_isolated_nodes():
    G = nx.Graph([(0, 1), (2, 3), (3, 4)])
    G.add_node(9)
    assert coverage(G, kappa=1.0, h=2) == 5.0


def test_gain_by_hand_and_degenerate_inputs():
    G = nx.path_graph(["a", "b", "c"])
    # h = 1, kappa = 0.5, add (a, c): a and c go from degree 1 to 2: 2 (f(2) - f(1)) = 2 (0.25) = 0.5.
    assert coverage_gain(G, [("a", "c")], kappa=0.5) == pytest.approx(0.5)
    # Adding a brand-new node "n" to "c": c 1 -> 2 (+0.25), n enters with degree 1 (+0.5).
    assert coverage_gain(G, [("c", "n")], kappa=0.5) == pytest.approx(0.75)
    # h = 2: (c, n) gives n: {c, b} -> f(2) = 0.75; c: {b, a, n} vs {b, a}: f(3) - f(2) = 0.125;
    # b: {a, c, n} vs {a, c}: 0.125; a unchanged (n at distance 3). Total 1.0.
    assert coverage_gain(G, [("c", "n")], kappa=0.5, h=2) == pytest.approx(1.0)
    assert coverage_gain(G, [("a", "b")], kappa=0.5) == 0.0  # already present
    assert coverage_gain(G, [("a", "a")], kappa=0.5) == 0.0  # self-loop
    assert coverage_gain(G, [], kappa=0.5) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kappa": 0.0}, "kappa"),
        ({"kappa": 1.5}, "kappa"),
        ({"kappa": True}, "kappa"),
        ({"kappa": 0.5, "h": 0}, "h must be"),
        ({"kappa": 0.5, "h": 1.0}, "h must be"),
    ],
)
def test_argument_errors(kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        coverage(nx.path_graph(3), **kwargs)
    with pytest.raises(KgrValidationError, match=match):
        coverage_gain(nx.path_graph(3), [(0, 2)], **kwargs)


def test_graph_type_and_edge_errors():
    with pytest.raises(KgrValidationError, match="undirected"):
        coverage(nx.DiGraph([(0, 1)]), kappa=0.5)
    with pytest.raises(KgrValidationError, match="simple graph"):
        coverage_gain(nx.MultiGraph([(0, 1)]), [(0, 2)], kappa=0.5)
    with pytest.raises(KgrValidationError, match=r"\(u, v\) pair"):
        coverage_gain(nx.path_graph(3), [(0, 1, 2)], kappa=0.5)


@st.composite
def graph_and_additions(draw):
    n = draw(st.integers(1, 12))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from((u, v) for u, v in draw(st.lists(pairs, max_size=20)) if u != v)
    # Added edges may touch new nodes n..n+2 and may repeat or already exist.
    new_pairs = st.tuples(st.integers(0, n + 2), st.integers(0, n + 2))
    added = draw(st.lists(new_pairs, min_size=1, max_size=5))
    return G, added


@settings(max_examples=150, deadline=None)
@given(graph_and_additions(), st.integers(1, 3), st.floats(0.05, 1.0))
def test_incremental_equals_full_recomputation(data, h, kappa):
    G, added = data
    after = G.copy()
    after.add_edges_from((u, v) for u, v in added if u != v)
    full = coverage(after, kappa=kappa, h=h) - coverage(G, kappa=kappa, h=h)
    assert coverage_gain(G, added, kappa=kappa, h=h) == pytest.approx(full, abs=1e-9)
    assert G.number_of_edges() == nx.Graph(G).number_of_edges()  # input untouched


class _SpyAdj(Mapping):
    def __init__(self, adj, touched):
        self._adj, self._touched = adj, touched

    def __getitem__(self, key):
        self._touched.add(key)
        return self._adj[key]

    def __contains__(self, key):
        return key in self._adj

    def __iter__(self):
        raise AssertionError("coverage_gain must not iterate over the whole graph")

    def __len__(self):
        return len(self._adj)


class SpyGraph(nx.Graph):
    """A graph that records which nodes' adjacency was read."""

    touched: set

    @property
    def adj(self):
        return _SpyAdj(super().adj, self.touched)


@pytest.mark.parametrize("h", [1, 2, 3])
def test_gain_reads_only_the_neighbourhood_of_the_change(h):
    G = SpyGraph()
    G.touched = set()
    G.add_edges_from(nx.path_graph(5000).edges())
    gain = coverage_gain(G, [(2500, 2502)], kappa=0.5, h=h)
    assert gain > 0
    # Vertices that can change are within h-1 of {2500, 2502}; their h-balls reach 2h-1 further.
    reach = 2 * h - 1
    assert {2500, 2502} <= G.touched  # the spy does see the reads
    assert G.touched <= set(range(2500 - reach, 2502 + reach + 1))


@st.composite
def submodular_case(draw):
    n = draw(st.integers(2, 10))
    all_pairs = [(u, v) for u in range(n + 2) for v in range(u + 1, n + 2)]
    G = nx.Graph()
    G.add_nodes_from(range(n))
    base = draw(st.lists(st.sampled_from([p for p in all_pairs if p[1] < n]), max_size=12, unique=True))
    G.add_edges_from(base)
    free = [p for p in all_pairs if not G.has_edge(*p)]
    assume(len(free) >= 2)
    chosen = draw(st.lists(st.sampled_from(free), min_size=2, max_size=6, unique=True))
    e, rest = chosen[0], chosen[1:]
    k = draw(st.integers(0, len(rest)))
    return G, e, rest[:k], rest  # A = rest[:k] is a subset of B = rest


@settings(max_examples=150, deadline=None)
@given(submodular_case(), st.floats(0.05, 1.0))
def test_submodular_for_one_hop(case, kappa):
    G, e, A, B = case

    def gain_given(S):
        H = G.copy()
        H.add_edges_from(S)
        return coverage_gain(H, [e], kappa=kappa, h=1)

    assert gain_given(A) >= gain_given(B) - 1e-12  # diminishing returns
    assert gain_given(B) >= 0.0  # monotone


def test_two_hop_path_counterexample():
    # Three isolated nodes u, x, v; e1 = (u, x), e2 = (x, v); h = 2, kappa = 0.5, f(1) = 0.5, f(2) = 0.75.
    # Gain of e2 alone: x and v each see one node: 2 f(1) = 1.0.
    # Gain of e2 after e1: all three see the other two: 3 f(2) - [u, x see each other] 2 f(1) = 2.25 - 1.0 = 1.25.
    G = nx.Graph()
    G.add_nodes_from(["u", "x", "v"])
    alone = coverage_gain(G, [("x", "v")], kappa=0.5, h=2)
    G_e1 = G.copy()
    G_e1.add_edge("u", "x")
    after_e1 = coverage_gain(G_e1, [("x", "v")], kappa=0.5, h=2)
    assert alone == pytest.approx(1.0)
    assert after_e1 == pytest.approx(1.25)
    assert after_e1 > alone  # submodularity violated
    # The same path stops being a counterexample at kappa >= 2/3 (3 f(2) <= 4 f(1)).
    k = 0.7
    assert coverage_gain(G_e1, [("x", "v")], kappa=k, h=2) <= coverage_gain(G, [("x", "v")], kappa=k, h=2)


@pytest.mark.parametrize("kappa", [0.1, 0.5, 0.9, 0.99])
def test_two_hop_counterexample_for_every_kappa_below_one(kappa):
    # Path a-c-d plus isolated b; e1 = (a, d), e2 = (b, d). Gain of e2 alone: 2 f(3) - f(2);
    # after e1: 4 f(3) - 3 f(2); the difference is 2 (f(3) - f(2)) > 0.
    G = nx.Graph([("a", "c"), ("c", "d")])
    G.add_node("b")
    alone = coverage_gain(G, [("b", "d")], kappa=kappa, h=2)
    G_e1 = G.copy()
    G_e1.add_edge("a", "d")
    after = coverage_gain(G_e1, [("b", "d")], kappa=kappa, h=2)
    assert alone == pytest.approx(2 * f(3, kappa) - f(2, kappa))
    assert after == pytest.approx(4 * f(3, kappa) - 3 * f(2, kappa))
    assert after - alone == pytest.approx(2 * (f(3, kappa) - f(2, kappa)))
    assert after > alone
