"""Laplacian construction and the density operator, against matrices written out by hand."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kgr.errors import KgrValidationError
from kgr.gauge.laplacian import density_matrix, laplacian_from_edges, laplacian_from_graph


def test_path_laplacian_literal():
    L, nodes = laplacian_from_edges([("a", "b"), ("b", "c"), ("c", "d")])
    assert nodes == ["a", "b", "c", "d"]
    assert isinstance(L, sp.csr_array)
    assert L.dtype == np.float64
    np.testing.assert_allclose(
        L.toarray(),
        [
            [1, -1, 0, 0],
            [-1, 2, -1, 0],
            [0, -1, 2, -1],
            [0, 0, -1, 1],
        ],
    )


def test_explicit_ordering_isolated_node_and_orientation():
    # Node order given explicitly; "z" is isolated; (c, a) is the same edge as (a, c).
    L, nodes = laplacian_from_edges([("c", "a"), ("a", "b")], ["z", "a", "b", "c"])
    assert nodes == ["z", "a", "b", "c"]
    np.testing.assert_allclose(
        L.toarray(),
        [
            [0, 0, 0, 0],
            [0, 2, -1, -1],
            [0, -1, 1, 0],
            [0, -1, 0, 1],
        ],
    )


def test_unweighted_collapses_duplicates_and_ignores_weights_and_self_loops():
    edges = [("a", "b"), ("b", "a"), ("a", "b", 7.0), ("b", "b")]
    L, nodes = laplacian_from_edges(edges)
    assert nodes == ["a", "b"]
    np.testing.assert_allclose(L.toarray(), [[1, -1], [-1, 1]])


def test_weighted_sums_duplicates():
    # (a,b) twice: 2 + 0.5 = 2.5; (b,c): 1.5. deg a = 2.5, b = 4, c = 1.5.
    L, _ = laplacian_from_edges([("a", "b", 2.0), ("b", "a", 0.5), ("b", "c", 1.5)], weighted=True)
    np.testing.assert_allclose(
        L.toarray(),
        [
            [2.5, -2.5, 0.0],
            [-2.5, 4.0, -1.5],
            [0.0, -1.5, 1.5],
        ],
    )


def test_empty_inputs():
    L, nodes = laplacian_from_edges([])
    assert L.shape == (0, 0) and nodes == []
    L, nodes = laplacian_from_edges([], ["x", "y"])
    assert nodes == ["x", "y"]
    np.testing.assert_allclose(L.toarray(), np.zeros((2, 2)))


@pytest.mark.parametrize(
    ("edges", "nodes", "kwargs", "match"),
    [
        ([("a", "b")], ["a"], {}, "not in the node ordering"),
        ([("a", "b")], ["a", "b", "a"], {}, "appears twice"),
        ([("a",)], None, {}, r"\(u, v\) or \(u, v, w\)"),
        ([5], None, {}, r"\(u, v\) or \(u, v, w\)"),
        ([("a", "b")], None, {"weighted": True}, r"needs \(u, v, w\)"),
        ([("a", "b", -1.0)], None, {"weighted": True}, "edge weight must be a finite number >= 0, got -1.0"),
        ([("a", "b", float("nan"))], None, {"weighted": True}, "edge weight must be a finite number >= 0"),
        ([("a", "b", "heavy")], None, {"weighted": True}, "edge weight must be a finite number >= 0, got 'heavy'"),
    ],
)
def test_laplacian_errors(edges, nodes, kwargs, match):
    with pytest.raises(KgrValidationError, match=match):
        laplacian_from_edges(edges, nodes, **kwargs)


def test_from_graph_matches_networkx_unweighted_karate():
    G = nx.karate_club_graph()  # has a "weight" attribute, which the default ignores
    L, nodes = laplacian_from_graph(G)
    expected = nx.laplacian_matrix(G, nodelist=nodes, weight=None).toarray()
    np.testing.assert_allclose(L.toarray(), expected)
    Lw, _ = laplacian_from_graph(G, weight="weight")
    np.testing.assert_allclose(Lw.toarray(), nx.laplacian_matrix(G, nodelist=nodes, weight="weight").toarray())


def test_from_graph_ordering_must_cover_graph():
    with pytest.raises(KgrValidationError, match="not in the node ordering"):
        laplacian_from_graph(nx.path_graph(3), nodes=[0, 1])
    L, nodes = laplacian_from_graph(nx.path_graph(2), nodes=[1, 0, "iso"])
    np.testing.assert_allclose(L.toarray(), [[1, -1, 0], [-1, 1, 0], [0, 0, 0]])


def test_density_matrix_values():
    # Triangle: L = 3I - J, tr L = 6; with mu = 1: (L + I)/9.
    L, _ = laplacian_from_graph(nx.complete_graph(3))
    rho = density_matrix(L)
    np.testing.assert_allclose(rho.toarray(), np.array([[2, -1, -1], [-1, 2, -1], [-1, -1, 2]]) / 6)
    rho = density_matrix(L, mu=1.0)
    np.testing.assert_allclose(rho.toarray(), np.array([[3, -1, -1], [-1, 3, -1], [-1, -1, 3]]) / 9)
    # Edgeless with mu > 0: the maximally mixed state I/n.
    np.testing.assert_allclose(density_matrix(np.zeros((4, 4)), mu=0.2).toarray(), np.eye(4) / 4)


@pytest.mark.parametrize(
    ("L", "mu", "match"),
    [
        (np.zeros((3, 3)), 0.0, "undefined"),
        (np.zeros((0, 0)), 1.0, "undefined"),
        (np.zeros((2, 3)), 0.0, "square"),
        (np.eye(2), -0.1, "mu"),
        (np.eye(2), float("inf"), "mu"),
    ],
)
def test_density_matrix_errors(L, mu, match):
    with pytest.raises(KgrValidationError, match=match):
        density_matrix(L, mu=mu)


edge_lists = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 9), st.floats(0.0, 5.0, allow_nan=False)), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(edge_lists, st.booleans())
def test_laplacian_invariants(edges, weighted):
    L, nodes = laplacian_from_edges(edges, list(range(10)), weighted=weighted)
    dense = L.toarray()
    np.testing.assert_allclose(dense, dense.T)
    np.testing.assert_allclose(dense.sum(axis=1), 0.0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(dense) > -1e-9)  # positive semi-definite
    if not weighted:
        G = nx.Graph()
        G.add_nodes_from(range(10))
        G.add_edges_from((u, v) for u, v, _ in edges if u != v)
        np.testing.assert_allclose(dense, nx.laplacian_matrix(G, nodelist=nodes, weight=None).toarray())
