"""Read-only access to a networkx graph plus a few extra edges, and bounded BFS.

The policy evaluates candidates on "the promoted graph plus the edges selected so far in this
round" without copying the graph: :class:`GraphView` layers an overlay of added edges over a
networkx graph that it never mutates. Self-loops in the base graph are ignored everywhere.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import networkx as nx
import numpy as np

from kgr.errors import KgrValidationError

__all__ = ["GraphView", "check_simple_undirected", "node_sort_key", "capped_ball", "bfs_within", "LocalStructure",
           "local_structure", "local_on_ball"]


def check_simple_undirected(G: Any) -> None:
    """Raise unless ``G`` is an undirected, non-multi networkx graph."""
    if not isinstance(G, nx.Graph):
        raise KgrValidationError(f"expected a networkx.Graph, got {type(G).__name__}")
    if G.is_directed():
        raise KgrValidationError("expected an undirected graph; project with G.to_undirected() first")
    if G.is_multigraph():
        raise KgrValidationError("expected a simple graph; project the multigraph with nx.Graph(G) first")


def node_sort_key(node: Hashable) -> tuple[str, str]:
    """Deterministic order of node ids: by ``str``, ties (``1`` vs ``"1"``) by type name."""
    return (str(node), type(node).__name__)


class GraphView:
    """A networkx graph plus an overlay of extra undirected edges; the graph is never mutated.

    ``degrees``, when given, holds the degree of some nodes in a larger graph of which ``G`` is
    only a part (the store fetches the capped balls around candidates, not the whole promoted
    graph): :meth:`degree` and membership use it for those nodes.
    """

    __slots__ = ("_G", "_adj", "_extra", "_degrees")

    def __init__(self, G: nx.Graph, extra: dict[Hashable, set[Hashable]] | None = None,
                 degrees: dict[Hashable, int] | None = None):
        self._G = G
        self._adj = G.adj
        self._extra: dict[Hashable, set[Hashable]] = extra if extra is not None else {}
        self._degrees = degrees

    def __contains__(self, x: Hashable) -> bool:
        if self._degrees is not None and self._degrees.get(x, 0) > 0:
            return True
        return x in self._adj or x in self._extra

    def has_edge(self, a: Hashable, b: Hashable) -> bool:
        if a == b:
            return False
        if a in self._adj and b in self._adj[a]:
            return True
        return b in self._extra.get(a, ())

    def neighbors(self, x: Hashable) -> Iterator[Hashable]:
        if x in self._adj:
            for y in self._adj[x]:
                if y != x:
                    yield y
        yield from self._extra.get(x, ())

    def degree(self, x: Hashable) -> int:
        d = 0
        if self._degrees is not None and x in self._degrees:
            d = self._degrees[x]
        elif x in self._adj:
            nbrs = self._adj[x]
            d = len(nbrs) - (1 if x in nbrs else 0)
        return d + len(self._extra.get(x, ()))

    def plus(self, edges: Iterable[tuple[Hashable, Hashable]]) -> "GraphView":
        """A new view with ``edges`` added (those already present and self-loops are skipped)."""
        extra = {k: set(v) for k, v in self._extra.items()}
        view = GraphView(self._G, extra, self._degrees)
        for a, b in edges:
            if a == b or view.has_edge(a, b):
                continue
            extra.setdefault(a, set()).add(b)
            extra.setdefault(b, set()).add(a)
        return view

    def add_in_place(self, a: Hashable, b: Hashable) -> None:
        """Add one edge to this view's overlay (never to the graph)."""
        if a == b or self.has_edge(a, b):
            return
        self._extra.setdefault(a, set()).add(b)
        self._extra.setdefault(b, set()).add(a)

    def induced_edges(self, nodes: Sequence[Hashable]) -> list[tuple[int, int]]:
        """Edges among ``nodes`` as index pairs ``(i, j)``, ``i < j``, in a deterministic order.

        Each node costs ``min(degree, len(nodes))`` lookups, so a hub inside a small ball is cheap.
        """
        index = {x: i for i, x in enumerate(nodes)}
        k = len(nodes)
        out: list[tuple[int, int]] = []
        for i, x in enumerate(nodes):
            if x in self._adj:
                nbrs = self._adj[x]
                if len(nbrs) <= k:
                    js = (index.get(y) for y in nbrs)
                    out.extend((i, j) for j in js if j is not None and j > i)
                else:
                    out.extend((i, j) for j in range(i + 1, k) if nodes[j] in nbrs)
            for y in self._extra.get(x, ()):
                j = index.get(y)
                if j is not None and j > i:
                    out.append((i, j))
        out.sort()
        return out


def capped_ball(
    view: GraphView, centre: Sequence[Hashable], hops: int, k_max: int
) -> tuple[list[Hashable], list[int], bool]:
    """Nodes within ``hops`` of ``centre``, ordered by ``(distance, node_sort_key)``, first ``k_max``.

    Returns the nodes, their distances (parallel lists) and whether the cap left out any node
    within ``hops``. Centre nodes need not exist in the graph (distance 0, no neighbours).
    Expansion stops at the layer that fills the cap, so the cost is the size of the layers
    actually visited.
    """
    seen: set[Hashable] = set()
    layer: list[Hashable] = []
    for x in centre:
        if x not in seen:
            seen.add(x)
            layer.append(x)
    layer.sort(key=node_sort_key)
    truncated = len(layer) > k_max
    nodes = layer[:k_max]
    dist = [0] * len(nodes)
    d = 0
    while d < hops and layer and not truncated:
        if len(nodes) >= k_max:
            # Full at a layer boundary: capped iff the next layer is not empty.
            truncated = any(y not in seen for x in layer for y in view.neighbors(x))
            break
        d += 1
        nxt: set[Hashable] = set()
        for x in layer:
            for y in view.neighbors(x):
                if y not in seen:
                    seen.add(y)
                    nxt.add(y)
        layer = sorted(nxt, key=node_sort_key)
        take = layer[: k_max - len(nodes)]
        truncated = len(take) < len(layer)
        nodes.extend(take)
        dist.extend([d] * len(take))
    return nodes, dist, truncated


def bfs_within(view: GraphView, sources: Iterable[Hashable], radius: int) -> set[Hashable]:
    """All nodes within ``radius`` hops of any source (sources included), uncapped."""
    seen = set(sources)
    frontier = list(seen)
    for _ in range(radius):
        nxt = []
        for x in frontier:
            for y in view.neighbors(x):
                if y not in seen:
                    seen.add(y)
                    nxt.append(y)
        if not nxt:
            break
        frontier = nxt
    return seen


class LocalStructure(NamedTuple):
    """The capped ball around a candidate (nodes, distances, capped) and its induced edges as index arrays."""

    ball: list[Hashable]
    dist: list[int]
    capped: bool
    ei: np.ndarray
    ej: np.ndarray


def local_structure(view: GraphView, u: Hashable, v: Hashable, hops: int, k_max: int) -> LocalStructure:
    """:class:`LocalStructure` of the candidate ``(u, v)`` on ``view``: :func:`capped_ball` around both."""
    ball, dist, capped = capped_ball(view, [u, v], hops, k_max)
    return local_on_ball(view, ball, dist, capped)


def local_on_ball(view: GraphView, ball: list[Hashable], dist: list[int], capped: bool) -> LocalStructure:
    """:class:`LocalStructure` of a given ball, its induced edges read from ``view`` (indices into ``ball``)."""
    pairs = view.induced_edges(ball)
    ei = np.fromiter((p[0] for p in pairs), dtype=np.int64, count=len(pairs))
    ej = np.fromiter((p[1] for p in pairs), dtype=np.int64, count=len(pairs))
    return LocalStructure(ball, dist, capped, ei, ej)
