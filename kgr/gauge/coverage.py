r"""Submodular coverage of a graph and its exact incremental gain.

Conventions
-----------
* :math:`\mathcal{N}(v; h)` is the set of nodes at hop distance :math:`1 \ldots h` from
  :math:`v`, **excluding** :math:`v` itself. Excluding :math:`v` makes an isolated node cover
  nothing (:math:`1 - (1-\kappa)^0 = 0`), so a graph's coverage does not depend on whether
  isolated or not-yet-existing nodes are listed, and a brand-new node enters Eq. 9's sum
  over :math:`V_{t+1}` with exactly the coverage its new edges give it.
* Graphs are undirected simple networkx graphs; self-loops are ignored.
* :math:`0 < \kappa \le 1`; :math:`h \ge 1` hops.

Submodularity
-------------
For :math:`h = 1`, :math:`|\mathcal{N}(v;1)| = \deg v` is *modular* in the set of added edges
and :math:`x \mapsto 1-(1-\kappa)^x` is concave and non-decreasing, so
:math:`S \mapsto \mathrm{Cov}_\kappa(G \cup S; 1)` is monotone submodular and greedy selection of
:math:`k` edges is within :math:`1 - 1/e` of the best :math:`k`-set (Nemhauser–Wolsey–Fisher).
For :math:`h \ge 2` paths through several added edges create neighbourhoods no single edge
creates, and submodularity fails:

* the path :math:`u - x - v` on three isolated nodes: with :math:`f(k) = 1-(1-\kappa)^k`,
  adding :math:`(x, v)` gains :math:`2f(1)` alone but :math:`3f(2) - 2f(1)` after
  :math:`(u, x)`, which is larger whenever :math:`\kappa < 2/3`;
* for every :math:`0 < \kappa < 1`: on the path :math:`a - c - d` plus an isolated :math:`b`,
  adding :math:`(b, d)` gains :math:`2f(3) - f(2)` alone and :math:`4f(3) - 3f(2)` after
  :math:`(a, d)`, larger by :math:`2(f(3) - f(2)) > 0`.

(Agentic-KGR, Theorem A.3, claims submodularity for any :math:`h`; its proof sketch uses only
the concavity of :math:`f`, which is not enough once neighbourhoods are not modular.) kgr's
promotion policy therefore defaults to :math:`h = 1`, where its lazy greedy selection is exact.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import networkx as nx

from kgr.errors import KgrValidationError
from kgr.gauge.validate import integer, real
from kgr.gauge.graphview import GraphView, bfs_within, check_simple_undirected

__all__ = ["coverage", "coverage_gain"]


def _check(kappa: Any, h: Any) -> tuple[float, int]:
    return real("kappa", kappa, gt=0.0, le=1.0), integer("h", h, ge=1)


def _term(size: int, kappa: float) -> float:
    return 1.0 - (1.0 - kappa) ** size


def _nbhd_size(view: GraphView, v: Hashable, h: int) -> int:
    if h == 1:
        return view.degree(v)
    return len(bfs_within(view, (v,), h)) - 1


def coverage(G: nx.Graph, *, kappa: float, h: int = 1) -> float:
    r"""Coverage of a graph: how many nodes have a reasonably large :math:`h`-hop neighbourhood.

    .. math::

        \mathrm{Cov}_\kappa(G; h) = \sum_{v \in V} \bigl[1 - (1-\kappa)^{|\mathcal{N}_G(v;h)|}\bigr]

    with :math:`\mathcal{N}_G(v;h)` the nodes within :math:`h` hops of :math:`v`, :math:`v`
    excluded.

    Parameters
    ----------
    G : networkx.Graph
        Undirected simple graph (self-loops ignored).
    kappa : float
        Saturation rate :math:`0 < \kappa \le 1`: each neighbour covers a further fraction
        :math:`\kappa` of what is left.
    h : int, default 1
        Neighbourhood radius in hops, :math:`h \ge 1`.

    Returns
    -------
    cov : float
        Coverage, in :math:`[0, |V|)`.

    Raises
    ------
    KgrValidationError
        ``G`` is directed or a multigraph; ``kappa`` or ``h`` out of range.

    Notes
    -----
    Empty graph: ``0.0``; isolated nodes contribute 0. :math:`O(|V| + |E|)` for :math:`h = 1`
    (degrees), otherwise one BFS of depth :math:`h` per node.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 4, Eq. 9.

    Examples
    --------
    The star with three leaves at :math:`\kappa = 1/2`, :math:`h = 1`: the centre covers
    :math:`1 - 2^{-3} = 7/8`, each leaf :math:`1/2`:

    >>> coverage(nx.star_graph(3), kappa=0.5)
    2.375
    >>> coverage(nx.star_graph(3), kappa=0.5, h=2)  # every node now sees the other three
    3.5
    """
    check_simple_undirected(G)
    kappa, h = _check(kappa, h)
    view = GraphView(G)
    return float(math.fsum(_term(_nbhd_size(view, v, h), kappa) for v in G))


def coverage_gain(
    G: nx.Graph,
    added_edges: Iterable[Sequence[Hashable]],
    *,
    kappa: float,
    h: int = 1,
) -> float:
    r"""Exact change of coverage when edges are added, recomputing only the vertices that can change.

    .. math::

        \Delta\mathrm{Cov}_\kappa = \sum_{w \in A} \Bigl[(1-\kappa)^{|\mathcal{N}_G(w;h)|}
        - (1-\kappa)^{|\mathcal{N}_{G'}(w;h)|}\Bigr], \qquad
        A = \{\, w : d_{G'}(w, X) \le h - 1 \,\}

    where :math:`G' = G + E_{\text{add}}` and :math:`X` is the set of endpoints of the added edges
    (nodes absent from :math:`G` count with an empty neighbourhood before).

    Parameters
    ----------
    G : networkx.Graph
        The graph before the change (not modified).
    added_edges : iterable of (u, v)
        Edges to add; endpoints may be new nodes. Self-loops and edges already in ``G`` change
        nothing and are skipped.
    kappa : float
        Saturation rate, :math:`0 < \kappa \le 1`.
    h : int, default 1
        Neighbourhood radius, :math:`h \ge 1`.

    Returns
    -------
    delta : float
        :math:`\mathrm{Cov}_\kappa(G') - \mathrm{Cov}_\kappa(G)`, :math:`\ge 0`.

    Raises
    ------
    KgrValidationError
        ``G`` directed or a multigraph; a malformed edge; ``kappa`` or ``h`` out of range.

    Notes
    -----
    **Why only** :math:`A` **changes.** Adding edges only shortens distances, so
    :math:`\mathcal{N}_G(w;h) \subseteq \mathcal{N}_{G'}(w;h)`, with equality unless some node
    :math:`y` enters :math:`w`'s ball. Then a shortest :math:`w`–:math:`y` path in :math:`G'`
    of length :math:`\le h` uses an added edge; let :math:`(a, b)` be the first one on it. The
    part from :math:`w` to :math:`a` is a path of length :math:`\le h - 1` (at least the edge
    :math:`(a, b)` follows it), so :math:`d_{G'}(w, a) \le h - 1` (indeed even
    :math:`d_G(w, a) \le h - 1`, as that part uses no added edge). Every other vertex keeps its
    neighbourhood and its term. For :math:`h = 1`, :math:`A = X`: only endpoints change.

    Cost: a BFS of depth :math:`h - 1` from :math:`X` in :math:`G'`, then two BFS of depth
    :math:`h` per vertex of :math:`A` (degrees when :math:`h = 1`); independent of the size of
    the rest of the graph. No edges effectively added: ``0.0``.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 4, Eq. 9.

    Examples
    --------
    Joining two leaves of the star :math:`K_{1,3}` at :math:`\kappa = 1/2`, :math:`h = 1`: each
    leaf goes from degree 1 to 2, gaining :math:`(1 - 1/4) - (1 - 1/2) = 1/4`:

    >>> coverage_gain(nx.star_graph(3), [(1, 2)], kappa=0.5)
    0.5
    >>> coverage_gain(nx.star_graph(3), [(0, 1)], kappa=0.5)  # already there
    0.0
    """
    check_simple_undirected(G)
    kappa, h = _check(kappa, h)
    edges = []
    for e in added_edges:
        try:
            u, v = e
        except (TypeError, ValueError):
            raise KgrValidationError(f"an added edge must be a (u, v) pair, got {e!r}") from None
        edges.append((u, v))
    return coverage_gain_view(GraphView(G), edges, kappa=kappa, h=h)


def coverage_gain_view(
    before: GraphView, edges: Sequence[tuple[Hashable, Hashable]], *, kappa: float, h: int
) -> float:
    """:func:`coverage_gain` on a :class:`GraphView` (arguments already validated)."""
    real = [(u, v) for u, v in edges if u != v and not before.has_edge(u, v)]
    if not real:
        return 0.0
    after = before.plus(real)
    endpoints = {x for e in real for x in e}
    affected = bfs_within(after, endpoints, h - 1)
    q = 1.0 - kappa
    total = math.fsum(
        q ** (_nbhd_size(before, w, h) if w in before else 0) - q ** _nbhd_size(after, w, h) for w in affected
    )
    return max(0.0, float(total))
