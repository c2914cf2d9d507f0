r"""Graph Laplacians and the density operator, with an explicit node ordering.

Conventions
-----------
* Graphs are **undirected**. An edge ``(u, v)`` and ``(v, u)`` are the same edge.
* The combinatorial Laplacian is :math:`L = D - A`, with :math:`D` the diagonal matrix of
  (weighted) degrees and :math:`A` the symmetric adjacency matrix. Self-loops are ignored: a loop
  adds the same amount to :math:`D` and :math:`A`, so it never changes :math:`L`.
* Every matrix comes with the list of nodes that names its rows and columns: row ``i`` of ``L``
  belongs to ``nodes[i]``. Nothing in this module depends on dict or set iteration order.
* Unweighted (``weighted=False``, the default) is the *simple-graph projection*: duplicate edges
  collapse to one edge of weight 1 and any third tuple element is ignored. Weighted
  (``weighted=True``) needs ``(u, v, w)`` tuples with finite ``w >= 0``; duplicates are summed,
  as in the Laplacian of the multigraph.
* Matrices are ``scipy.sparse.csr_array`` of ``float64``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from kgr.errors import KgrValidationError
from kgr.gauge.validate import real

__all__ = ["laplacian_from_edges", "laplacian_from_graph", "density_matrix"]


def _edge_parts(edge: Any, *, weighted: bool) -> tuple[Hashable, Hashable, float]:
    try:
        n = len(edge)
    except TypeError:
        raise KgrValidationError(f"an edge must be a (u, v) or (u, v, w) tuple, got {edge!r}") from None
    if n not in (2, 3):
        raise KgrValidationError(f"an edge must be a (u, v) or (u, v, w) tuple, got {edge!r}")
    if not weighted:
        return edge[0], edge[1], 1.0
    if n != 3:
        raise KgrValidationError(f"weighted=True needs (u, v, w) tuples, got {edge!r}")
    return edge[0], edge[1], real("edge weight", edge[2], ge=0.0)


def laplacian_from_edges(
    edges: Iterable[Sequence[Any]],
    nodes: Sequence[Hashable] | None = None,
    *,
    weighted: bool = False,
) -> tuple[sp.csr_array, list[Hashable]]:
    r"""Combinatorial Laplacian of an undirected edge list, with its node ordering.

    .. math::

        L = D - A, \qquad A_{ij} = A_{ji} = w_{ij}, \qquad D_{ii} = \sum_{j \ne i} w_{ij}

    Parameters
    ----------
    edges : iterable of tuple
        ``(u, v)`` or ``(u, v, w)`` tuples. Orientation is ignored.
    nodes : sequence of hashable, optional
        The node ordering: row and column ``i`` belong to ``nodes[i]``. It must list every
        edge endpoint exactly once and may add nodes of degree zero. When omitted, nodes are
        ordered by first appearance in ``edges`` (``u`` before ``v``).
    weighted : bool, default False
        False: simple-graph projection (duplicates collapse, weights ignored). True: every edge
        is ``(u, v, w)`` with finite ``w >= 0`` and duplicate pairs add their weights.

    Returns
    -------
    L : scipy.sparse.csr_array, shape (n, n)
        The Laplacian, ``float64``, symmetric, rows summing to zero.
    nodes : list of hashable
        The node ordering of ``L`` (a new list; equal to the argument when one was given).

    Raises
    ------
    KgrValidationError
        A malformed edge or weight, a repeated node in ``nodes``, or an endpoint missing from
        ``nodes``.

    Notes
    -----
    Self-loops are dropped (they cancel in :math:`D - A`); their endpoint still gets a row.
    An empty edge list gives an ``n x n`` zero matrix (``0 x 0`` when ``nodes`` is empty too).
    Time and memory are :math:`O(n + m)` for ``m`` edges.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 4: the Laplacian :math:`\mathbf{L}_{\mathcal{G}}`
    behind the density operator (Eq. 10) and the temporal term.

    Examples
    --------
    >>> L, nodes = laplacian_from_edges([("a", "b"), ("b", "c")])
    >>> nodes
    ['a', 'b', 'c']
    >>> L.toarray()
    array([[ 1., -1.,  0.],
           [-1.,  2., -1.],
           [ 0., -1.,  1.]])
    >>> L, nodes = laplacian_from_edges([("a", "b", 2.0), ("b", "a", 0.5)], ["b", "a", "z"], weighted=True)
    >>> L.toarray()
    array([[ 2.5, -2.5,  0. ],
           [-2.5,  2.5,  0. ],
           [ 0. ,  0. ,  0. ]])
    """
    parsed = [_edge_parts(e, weighted=weighted) for e in edges]
    if nodes is None:
        order: list[Hashable] = []
        index: dict[Hashable, int] = {}
        for u, v, _ in parsed:
            for x in (u, v):
                if x not in index:
                    index[x] = len(order)
                    order.append(x)
    else:
        order = list(nodes)
        index = {}
        for i, x in enumerate(order):
            if x in index:
                raise KgrValidationError(f"node {x!r} appears twice in the node ordering")
            index[x] = i
    n = len(order)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for u, v, w in parsed:
        try:
            i, j = index[u], index[v]
        except KeyError as exc:
            raise KgrValidationError(f"edge endpoint {exc.args[0]!r} is not in the node ordering") from None
        if i == j:
            continue
        rows.append(min(i, j))
        cols.append(max(i, j))
        vals.append(w)
    if not rows:
        return sp.csr_array((n, n), dtype=np.float64), order
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(cols, dtype=np.int64)
    w_arr = np.asarray(vals, dtype=np.float64)
    if not weighted:
        key = np.unique(r * n + c)
        r, c = key // n, key % n
        w_arr = np.ones(len(key), dtype=np.float64)
    upper = sp.coo_array((w_arr, (r, c)), shape=(n, n)).tocsr()  # sums duplicates
    adj = upper + upper.T
    deg = np.asarray(adj.sum(axis=1)).ravel()
    lap = sp.diags_array(deg, format="csr") - adj
    lap = sp.csr_array(lap, dtype=np.float64)
    lap.sum_duplicates()
    lap.sort_indices()
    return lap, order


def laplacian_from_graph(
    G: nx.Graph,
    *,
    nodes: Sequence[Hashable] | None = None,
    weight: str | None = None,
) -> tuple[sp.csr_array, list[Hashable]]:
    r"""Combinatorial Laplacian of a networkx graph, with its node ordering.

    .. math::

        L = D - A

    Parameters
    ----------
    G : networkx.Graph
        An undirected graph. A directed or multi-graph is projected: orientation and parallel
        edges are dropped (weights of parallel edges are summed when ``weight`` is given).
    nodes : sequence of hashable, optional
        Node ordering; defaults to ``list(G)`` (the graph's insertion order). It must contain
        every node of ``G`` exactly once and may add isolated nodes.
    weight : str, optional
        Edge attribute holding the weight (missing attribute counts 1). ``None`` (default)
        ignores weights: the simple unweighted projection.

    Returns
    -------
    L : scipy.sparse.csr_array, shape (n, n)
        The Laplacian.
    nodes : list of hashable
        Its node ordering.

    Raises
    ------
    KgrValidationError
        ``nodes`` repeats a node or misses a node of ``G``; a weight is negative or not finite.

    Notes
    -----
    Unlike :func:`networkx.laplacian_matrix`, the default here ignores the ``"weight"``
    attribute (networkx uses it by default), so ``karate_club_graph()`` gives the unweighted
    Laplacian. :math:`O(n + m)`.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Eq. 10.

    Examples
    --------
    >>> L, nodes = laplacian_from_graph(nx.star_graph(2))
    >>> nodes
    [0, 1, 2]
    >>> L.toarray()
    array([[ 2., -1., -1.],
           [-1.,  1.,  0.],
           [-1.,  0.,  1.]])
    """
    order = list(G) if nodes is None else list(nodes)
    if nodes is not None:
        known = set(order)
        missing = [x for x in G if x not in known]
    else:
        missing = []
    if missing:
        raise KgrValidationError(f"node {missing[0]!r} of the graph is not in the node ordering")
    if weight is None:
        return laplacian_from_edges(G.edges(), order)
    edges = [(u, v, d.get(weight, 1.0)) for u, v, d in G.edges(data=True)]
    return laplacian_from_edges(edges, order, weighted=True)


def density_matrix(L: Any, *, mu: float = 0.0) -> sp.csr_array:
    r"""The density operator of a graph Laplacian: a unit-trace, positive semi-definite matrix.

    .. math::

        \rho = \frac{L + \mu I}{\operatorname{tr}(L + \mu I)}, \qquad \mu \ge 0

    Parameters
    ----------
    L : array_like or scipy sparse matrix, shape (n, n)
        A Laplacian (rows in the caller's node ordering; the ordering is kept).
    mu : float, default 0.0
        The regulariser :math:`\mu \ge 0`. With :math:`\mu > 0` every node gets weight, so the
        operator exists even for an edgeless graph.

    Returns
    -------
    rho : scipy.sparse.csr_array, shape (n, n)
        The density operator, in the same node ordering as ``L``.

    Raises
    ------
    KgrValidationError
        ``L`` is not square, ``mu`` is negative or not finite, or
        :math:`\operatorname{tr}(L + \mu I) = 0` (no nodes, or no edges with ``mu = 0``): the
        operator is undefined.

    Notes
    -----
    :math:`O(\mathrm{nnz}(L) + n)`. The trace is :math:`2W + n\mu` with :math:`W` the total edge
    weight.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 4, the density operator under Eq. 10.

    Examples
    --------
    >>> L, _ = laplacian_from_edges([(0, 1)])
    >>> density_matrix(L).toarray()
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    >>> density_matrix(L, mu=1.0).toarray()
    array([[ 0.5 , -0.25],
           [-0.25,  0.5 ]])
    """
    mu = real("mu", mu, ge=0.0)
    M = sp.csr_array(L, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise KgrValidationError(f"the Laplacian must be square, got shape {M.shape}")
    n = M.shape[0]
    trace = float(M.diagonal().sum()) + n * mu
    if not trace > 0.0:
        raise KgrValidationError(
            "tr(L + mu*I) is 0 (empty graph, or no edges with mu = 0): the density operator is undefined"
        )
    if mu:
        M = M + mu * sp.eye_array(n, format="csr")
    return sp.csr_array(M / trace)
