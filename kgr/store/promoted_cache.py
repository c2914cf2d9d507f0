"""The promoted edges of each store, cached per process and keyed by the store's (version, hash).

:func:`kgr.store.rounds.read_round` and :func:`kgr.store.settle.read_settle` both read the promoted
graph through :data:`PROMOTED_CACHE` (one ``round_promoted_read`` per store version); a round that
promotes moves the cached copy forward (:meth:`PromotedGraphCache.advance`) instead of re-reading.
A settle needs only the structure (:meth:`PromotedGraphCache.structure`), which is also kept on disk
between processes when the Graph names a cache directory (:mod:`kgr.store.promoted_disk`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from kgr.model.promotion import EdgeList, RoundContext
from kgr.store import promoted_disk
from kgr.store.connection import Graph

__all__ = ["PromotedGraphCache", "PROMOTED_CACHE"]


@dataclass
class _Cached:
    version: int
    hash: str
    edges: EdgeList
    types: dict[str, str]


class PromotedGraphCache:
    """The promoted edges of each store seen by this process, keyed by its (version, hash).

    A hit costs nothing; a round that wrote promotions moves the cached copy to its new version
    (:meth:`advance`); anything else (another process's round, a rollback) misses and re-reads.
    """

    def __init__(self) -> None:
        self._by_store: dict[tuple[str, str], _Cached] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _store(graph: Graph) -> tuple[str, str]:
        return (graph.uri, graph.database)

    def get(self, graph: Graph, ctx: RoundContext) -> tuple[EdgeList, dict[str, str], bool]:
        """The promoted edges at ``ctx``'s version (read when not cached), their types, and whether it was a hit."""
        with self._lock:
            hit = self._by_store.get(self._store(graph))
        if hit is not None and hit.version == ctx.version and hit.hash == ctx.hash:
            return hit.edges, hit.types, True
        key, subject, relation, obj, weight, score = graph.read_value("round_promoted_read")
        edges = EdgeList(subject, relation, obj, [float(w) for w in weight], key, [None if x < 0 else x for x in score])
        types = {k: k.partition(":")[0] for k in set(subject) | set(obj)}
        with self._lock:
            self._by_store[self._store(graph)] = _Cached(ctx.version, ctx.hash, edges, types)
        return edges, types, False

    def structure(self, graph: Graph, ctx: RoundContext) -> tuple[EdgeList, dict[str, str], bool]:
        """The promoted edges' keys, subjects, relations and objects at ``ctx`` (weights 1, no scores),
        their types, and whether it was a hit: from this process's copy, else from the disk copy of
        this state (``graph.cache_dir``, when set and ``ctx.created_at`` is known), else read (and
        then saved to disk)."""
        with self._lock:
            hit = self._by_store.get(self._store(graph))
        if hit is not None and hit.version == ctx.version and hit.hash == ctx.hash:
            return hit.edges, hit.types, True
        directory = getattr(graph, "cache_dir", None)
        if directory is None or ctx.created_at is None:
            return self.get(graph, ctx)
        ident = (graph.uri, graph.database, ctx.created_at, ctx.hash)
        saved = promoted_disk.load(directory, *ident)
        if saved is not None:
            key, subject, relation, obj = saved
            return (EdgeList(subject, relation, obj, [1.0] * len(key), key),
                    {k: k.partition(":")[0] for k in set(subject) | set(obj)}, True)
        edges, types, _ = self.get(graph, ctx)
        promoted_disk.save(directory, *ident, list(edges.key), list(edges.subject), list(edges.relation),
                           list(edges.object))
        return edges, types, False

    def advance(self, graph: Graph, base: RoundContext, version: int, new_hash: str,
                added: Sequence[tuple[str, str, str, str, float, float | None]], types: dict[str, str]) -> None:
        """Move the cached copy from ``base`` to ``version`` by appending ``added`` (key, s, r, o, votes, p_hat)."""
        with self._lock:
            hit = self._by_store.get(self._store(graph))
            if hit is None or hit.version != base.version or hit.hash != base.hash:
                self._by_store.pop(self._store(graph), None)
                return
            e = hit.edges
            edges = EdgeList(list(e.subject) + [a[1] for a in added], list(e.relation) + [a[2] for a in added],
                             list(e.object) + [a[3] for a in added], list(e.weight) + [a[4] for a in added],
                             list(e.key) + [a[0] for a in added], list(e.score) + [a[5] for a in added])
            merged = dict(hit.types)
            for a in added:
                merged.setdefault(a[1], types.get(a[1], a[1].partition(":")[0]))
                merged.setdefault(a[3], types.get(a[3], a[3].partition(":")[0]))
            self._by_store[self._store(graph)] = _Cached(version, new_hash, edges, merged)

    def clear(self) -> None:
        with self._lock:
            self._by_store.clear()


#: The process-wide cache used by :func:`read_round`.
PROMOTED_CACHE = PromotedGraphCache()
