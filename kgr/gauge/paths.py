"""Shortest-path terms of the geDIG gauge: hop distances on a small ball, before and after one edge.

Conventions: nodes are the integers ``0 .. k-1`` of a ball (:func:`kgr.gauge.graphview.local_on_ball`),
edges are two index arrays, undirected and unweighted; distances are in hops, ``inf`` when unreachable.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

__all__ = ["distances", "path_terms"]

_DENSE_BFS_MAX = 160  # below this many nodes a dense matrix BFS beats scipy's per-call overhead


def distances(k: int, ei: np.ndarray, ej: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Hop distances from ``rows`` (all nodes when None) on ``k`` nodes with edges ``(ei, ej)``.

    Parameters
    ----------
    k : int
        Number of nodes.
    ei, ej : numpy.ndarray of int
        Edge endpoints (undirected).
    rows : numpy.ndarray of int or None
        Source nodes; None for all.

    Returns
    -------
    numpy.ndarray
        ``(len(rows), k)`` distances in hops, ``inf`` when unreachable.
    """
    if k <= _DENSE_BFS_MAX:
        A = np.zeros((k, k), dtype=np.float32)
        A[ei, ej] = 1.0
        A[ej, ei] = 1.0
        src = np.arange(k) if rows is None else rows
        D = np.full((len(src), k), np.inf)
        frontier = np.zeros((len(src), k), dtype=bool)
        frontier[np.arange(len(src)), src] = True
        reached = frontier.copy()
        D[frontier] = 0.0
        d = 0
        while frontier.any():
            d += 1
            frontier = ((frontier.astype(np.float32) @ A) > 0) & ~reached
            D[frontier] = d
            reached |= frontier
        return D
    csr = sp.csr_array((np.ones(len(ei)), (ei, ej)), shape=(k, k))
    if rows is None:
        return shortest_path(csr, method="D", unweighted=True, directed=False)
    return shortest_path(csr, method="D", unweighted=True, directed=False, indices=rows)


def path_terms(
    ei: np.ndarray, ej: np.ndarray, k: int, iu: int, iv: int, *, max_sp_pairs: int, seed: int
) -> tuple[int, float, float]:
    r"""Mean shortest-path length over the pairs connected before, before and after adding ``(iu, iv)``.

    .. math::

        L = \frac{1}{|P|}\sum_{(a,b) \in P} d(a, b), \qquad
        d'(a, b) = \min\bigl(d(a,b),\ d(a,u) + 1 + d(v,b),\ d(a,v) + 1 + d(u,b)\bigr)

    over :math:`P`, the node pairs connected before: all pairs when :math:`k(k-1)/2 \le`
    ``max_sp_pairs``, else every pair from a seeded sample of :math:`\lceil`
    ``max_sp_pairs`` :math:`/(k-1)\rceil` source nodes.

    Parameters
    ----------
    ei, ej : numpy.ndarray of int
        Endpoints of the ball's edges, node indices in ``[0, k)``.
    k : int
        Number of nodes of the ball.
    iu, iv : int
        Indices of the candidate edge's endpoints.
    max_sp_pairs : int
        Most pairs evaluated exactly (keyword-only).
    seed : int
        Seed of the source sample when sampling (keyword-only).

    Returns
    -------
    n_pairs : int
        :math:`|P|` (0 when no pair is connected; then both means are 0).
    path_before, path_after : float
        :math:`L` before and after the edge, in hops.

    Notes
    -----
    :math:`O(k^3)` dense BFS up to 160 nodes, Dijkstra on a sparse matrix above.

    Examples
    --------
    A path 0-1-2-3; the chord (0, 3) shortens the pairs (0, 3) and (0, 2)/(1, 3):

    >>> import numpy as np
    >>> path_terms(np.array([0, 1, 2]), np.array([1, 2, 3]), 4, 0, 3, max_sp_pairs=100, seed=0)
    (6, 1.6666666666666667, 1.3333333333333333)
    """
    if k * (k - 1) // 2 <= max_sp_pairs:
        D = distances(k, ei, ej, None)
        du, dv = D[iu], D[iv]
        DA = np.minimum(D, np.minimum(du[:, None] + 1.0 + dv[None, :], dv[:, None] + 1.0 + du[None, :]))
        a, b = np.triu_indices(k, 1)
        before, after = D[a, b], DA[a, b]
    else:
        n_src = min(k, max(1, math.ceil(max_sp_pairs / (k - 1))))
        rng = np.random.default_rng(seed)
        src = np.sort(rng.choice(k, size=n_src, replace=False))
        D = distances(k, ei, ej, np.concatenate([src, [iu, iv]]))
        Ds, du, dv = D[:n_src], D[n_src], D[n_src + 1]
        DA = np.minimum(Ds, np.minimum(du[src][:, None] + 1.0 + dv[None, :], dv[src][:, None] + 1.0 + du[None, :]))
        mask = np.ones_like(Ds, dtype=bool)
        mask[np.arange(n_src), src] = False
        before, after = Ds[mask], DA[mask]
    connected = np.isfinite(before)
    n_pairs = int(connected.sum())
    if n_pairs == 0:
        return 0, 0.0, 0.0
    return n_pairs, float(before[connected].mean()), float(after[connected].mean())
