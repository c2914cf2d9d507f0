"""The promoted edges of each store, cached per process and keyed by the store's (version, hash).

:func:`kgr.store.rounds.read_round` and :func:`kgr.store.settle.read_settle` both read the promoted
graph through :data:`PROMOTED_CACHE` (one ``round_promoted_read`` per store version); a round that
promotes moves the cached copy forward (:meth:`PromotedGraphCache.advance`) instead of re-reading.
A settle needs only the structure (:meth:`PromotedGraphCache.structure`), which is also kept on disk
between processes when the Graph names a cache directory (:mod:`kgr.store.promoted_disk`); the first
process after the promoted graph changed starts from the newest earlier file and reads only the
edges promoted or retired since it (:func:`changed_since`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from kgr.model.promotion import EdgeList, RoundContext
from kgr.store import promoted_disk
from kgr.store.connection import Graph
from kgr.store.versions import add_terms

__all__ = ["PromotedGraphCache", "PROMOTED_CACHE", "changed_since", "read_promoted"]


def changed_since(graph: Graph, earlier: promoted_disk.Saved, hash_: str) -> promoted_disk.Columns | None:
    r"""The promoted graph's structure now, from ``earlier`` (its structure at an earlier version) and
    the edge instances promoted or retired since (``promoted_delta_read``, about a tenth of a second
    on the 100k-edge bench store against 0.7 s for the whole read), or None when the result is not
    provably the current one.

    An instance was current at the earlier version :math:`v` when ``valid_from`` :math:`\le v <`
    ``valid_to`` (unset: still current), and is current now when ``valid_to`` is unset; an edge key
    current then and not now is removed, one current now and not then is added. The result is
    accepted only when it is consistent and the content hash agrees: every removed key is in
    ``earlier``, no added key already is (unless removed and added again), and ``earlier.hash`` plus
    the added keys' terms minus the removed ones' (:func:`kgr.store.versions.add_terms`) equals
    ``hash_``, the store's hash now. So a change missed by the scan (a file that claims a later
    version than it was saved at, a change that did not go through ``valid_from`` / ``valid_to``)
    gives a full read, not a wrong graph. The file's columns themselves are trusted as an exact hit
    trusts them (kgr writes them atomically and checks their identity on load): recomputing their
    hash would cost 0.18 s on the 100k-edge bench store.
    """
    types = graph.read_value("promoted_types_read")
    if not types:
        return None
    since = earlier.version
    columns = graph.read_value("promoted_delta_read", {"since": since}, types=sorted(types))
    added: dict[str, tuple[str, str, str]] = {}
    removed: set[str] = set()
    for key, s, r, o, valid_from, valid_to in zip(*columns):
        current = valid_to < 0
        then = valid_from <= since and (current or valid_to > since)
        if then and not current:
            removed.add(key)
        elif current and not then:
            added[key] = (s, r, o)
    keys, subjects, relations, objects = earlier.columns
    held = set(keys)
    if not removed <= held or any(k in held and k not in removed for k in added) \
            or add_terms(earlier.hash, added=added, removed=removed) != hash_:
        return None
    keep = [i for i, k in enumerate(keys) if k not in removed] if removed else range(len(keys))
    return ([keys[i] for i in keep] + list(added), [subjects[i] for i in keep] + [a[0] for a in added.values()],
            [relations[i] for i in keep] + [a[1] for a in added.values()],
            [objects[i] for i in keep] + [a[2] for a in added.values()])


def read_promoted(graph: Graph, *, structure: bool) -> list[list] | None:
    """Every current promoted edge as parallel columns (``round_promoted_read``): key, subject key,
    relation, object key and, unless ``structure``, votes and recorded p_hat (-1: none). None when
    the store has no relationship type but ``PENDING_REL`` (nothing was ever promoted).

    Two round trips: the types first (``promoted_types_read``, tokens only), then a scan of the
    relationships of those types alone, so the staged edges are never read (about a third less
    time than expanding every entity on the 100k-edge bench store, 0.9M database hits instead of
    1.37M). A type first promoted between the two reads belongs to a later version, which the
    caller's (version, hash) key does not claim to hold.
    """
    types = graph.read_value("promoted_types_read")
    if not types:
        return None
    return graph.read_value("round_promoted_read", types=sorted(types), structure=structure)


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
        columns = read_promoted(graph, structure=False)
        key, subject, relation, obj, weight, score = columns if columns is not None else [[] for _ in range(6)]
        edges = EdgeList(subject, relation, obj, [float(w) for w in weight], key, [None if x < 0 else x for x in score])
        types = {k: k.partition(":")[0] for k in set(subject) | set(obj)}
        with self._lock:
            self._by_store[self._store(graph)] = _Cached(ctx.version, ctx.hash, edges, types)
        return edges, types, False

    def structure(self, graph: Graph, ctx: RoundContext) -> tuple[EdgeList, dict[str, str], bool]:
        """The promoted edges' keys, subjects, relations and objects at ``ctx`` (weights 1, no scores),
        their types, and whether it was a hit: from this process's copy, else from the disk copy of
        this state (``graph.cache_dir``, when set and ``ctx.created_at`` is known), else from the
        newest earlier disk copy and what changed since it (:func:`changed_since`), else read (the
        four columns only). A state not found on disk is saved there for the next process."""
        with self._lock:
            hit = self._by_store.get(self._store(graph))
        if hit is not None and hit.version == ctx.version and hit.hash == ctx.hash:
            return hit.edges, hit.types, True
        directory = getattr(graph, "cache_dir", None)
        if directory is None or ctx.created_at is None:
            return self.get(graph, ctx)
        ident = (graph.uri, graph.database, ctx.created_at, ctx.hash)
        saved = promoted_disk.load(directory, *ident)
        hit = saved is not None
        if not hit:
            earlier = promoted_disk.load_earlier(directory, graph.uri, graph.database, ctx.created_at, ctx.version)
            saved = changed_since(graph, earlier, ctx.hash) if earlier is not None else None
            if saved is None:
                columns = read_promoted(graph, structure=True)
                saved = tuple(columns) if columns is not None else ([], [], [], [])
            promoted_disk.save(directory, *ident, *saved, version=ctx.version)
        key, subject, relation, obj = saved
        return (EdgeList(subject, relation, obj, [1.0] * len(key), key),
                {k: k.partition(":")[0] for k in set(subject) | set(obj)}, hit)

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
