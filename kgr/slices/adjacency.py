"""The slicer's in-memory copy of the promoted graph: hop reads without a round trip.

A slice's expansion reads, per hop, the best ``fanout`` current promoted edges of each frontier
entity (``slice_edges``). :class:`PromotedAdjacency` answers the same question from memory, with
the same rule — the base priority

.. math:: b(e) = w_c\\,c_e + w_v \\min(v_e, 10) / 10 + w_o \\max(o_e, 0)

(:math:`o_e` the outcome weight, the neutral 0.3 when unrated), highest first, ties by key —
computed with the same floating-point operations in the same order as the template, so a slice cut
from memory equals the slice cut from Neo4j (same id; tested on graphs full of ties).

**When it is used.** A copy is valid for the markers it was read with: the store's version and
promoted-graph hash (every promotion, retirement, merge, forget or rollback moves them), its
outcome counter (outcome feedback, relax and decay change weights without a version) and the
relationship types. A slice uses the copy only when its own state read shows the same markers;
the copy also keeps the complete quote lists slices read (see :meth:`PromotedAdjacency.keep_quotes`);
otherwise it reads Neo4j as before and the copy is read again in a background thread (one at a
time per store), so a version change never makes a slice wait for the whole graph. The copy is
kept for graphs of at most ``KGR_SLICE_CACHE_MAX_EDGES`` promoted edges (default 2,000,000, about
0.5 KB each); ``KGR_SLICE_CACHE=0`` turns it off.

Worked example: a node with edges e1 (c 0.9, 4 votes, unrated) and e2 (c 0.9, 4 votes, weight
0.3) under w = (1, 0.25, 0.5): both have b = 0.9 + 0.1 + 0.15 = 1.15; the tie goes to the smaller key.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterable, Sequence

from kgr.model.slices import NEUTRAL_WEIGHT, SliceQuote
from kgr.store.connection import Graph
from kgr.store.slices import EdgeRow, SliceState, edge_rows, promoted_graph, slice_state

__all__ = ["PromotedAdjacency", "adjacency_for", "warm_adjacency", "cache_settings"]

log = logging.getLogger(__name__)

#: Default most promoted edges held in memory per store.
DEFAULT_MAX_EDGES = 2_000_000
#: Most quote lists kept per copy (then it starts again).
MAX_KEPT_QUOTES = 500_000


#: Positions in a packed edge row (the ``slice_edges`` shape).
_KEY, _S_KEY, _O_KEY, _CONF, _VOTES, _WEIGHT = 0, 2, 5, 8, 9, 10


def base_key(row: Sequence, weights: tuple[float, float, float]) -> float:
    """:math:`b(e)` of a packed edge row exactly as ``slice_edges`` computes it (same operations,
    same order)."""
    w_c, w_v, w_o = weights
    votes = 10 if row[_VOTES] > 10 else row[_VOTES]
    w = NEUTRAL_WEIGHT if row[_WEIGHT] is None else row[_WEIGHT]
    return w_c * row[_CONF] + w_v * votes / 10.0 + w_o * (w if w > 0 else 0.0)


class PromotedAdjacency:
    """The current promoted edges by entity, valid for ``markers`` (see the module docstring).

    Edges are held as packed rows (tuples of plain values, which Python's cycle collector does not
    scan) and indexed by entity; :class:`~kgr.store.slices.EdgeRow` objects are made only for the
    edges a hop returns."""

    def __init__(self, rows: Sequence[tuple], markers: tuple):
        self.markers = markers
        self.edges = len(rows)
        self._rows = list(rows)
        self._incident: dict[str, list[int]] = {}
        for i, r in enumerate(self._rows):
            self._incident.setdefault(r[_S_KEY], []).append(i)
            if r[_O_KEY] != r[_S_KEY]:
                self._incident.setdefault(r[_O_KEY], []).append(i)
        self._ranked: dict[tuple[str, tuple[float, float, float]], list[int]] = {}
        self._quotes: dict[tuple[str, int, int], list[SliceQuote]] = {}
        self._lock = threading.Lock()

    def around(self, keys: Iterable[str], fanout: int, weights: tuple[float, float, float]) -> list[EdgeRow]:
        """What ``promoted_edges_around(keys, fanout=fanout, weights=weights)`` reads, from memory."""
        chosen: dict[int, None] = {}
        for k in sorted(set(keys)):
            for i in self._best(k, weights)[:fanout]:
                chosen.setdefault(i)
        return edge_rows(self._rows[i] for i in chosen)

    def cached_quotes(self, edges: Sequence[EdgeRow], per_edge: int,
                      chars: int) -> tuple[dict[str, list[SliceQuote]], list[EdgeRow]]:
        """The quotes of ``edges`` kept from earlier slices, and the edges whose quotes must be read."""
        have: dict[str, list[SliceQuote]] = {}
        missing: list[EdgeRow] = []
        for e in edges:
            q = self._quotes.get((e.key, per_edge, chars))
            if q is None:
                missing.append(e)
            else:
                have[e.key] = q
        return have, missing

    def forget_quotes(self) -> None:
        """Drop the kept quotes (benchmarks measure a first pass with them)."""
        with self._lock:
            self._quotes.clear()

    def keep_quotes(self, by_edge: dict[str, list[SliceQuote]], per_edge: int, chars: int) -> None:
        """Keep the quote lists that are complete (``per_edge`` of them). A staged edge's sources only
        grow at the end between versions (a forget, a merge or a rollback opens a version, and so
        a new copy), so its first ``per_edge`` sources, and their chunks, stay what they are; a
        shorter list may still grow and is read again next time."""
        with self._lock:
            if len(self._quotes) > MAX_KEPT_QUOTES:
                self._quotes.clear()
            for key, quotes in by_edge.items():
                if len(quotes) == per_edge:
                    self._quotes[(key, per_edge, chars)] = quotes

    def _best(self, key: str, weights: tuple[float, float, float]) -> list[int]:
        memo = (key, weights)
        ranked = self._ranked.get(memo)
        if ranked is None:
            rows = self._rows
            ranked = sorted(self._incident.get(key, ()), key=lambda i: (-base_key(rows[i], weights), rows[i][_KEY]))
            with self._lock:
                if len(self._ranked) > 200_000:  # many policies over many nodes: start again
                    self._ranked.clear()
                self._ranked[memo] = ranked
        return ranked


class _Holder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: PromotedAdjacency | None = None
        self.loading = False
        self.too_big: tuple | None = None  # markers at which the graph was over the limit


_HOLDERS: "weakref.WeakKeyDictionary[Graph, _Holder]" = weakref.WeakKeyDictionary()
_HOLDERS_LOCK = threading.Lock()


def cache_settings() -> tuple[bool, int]:
    """(enabled, most edges) from ``KGR_SLICE_CACHE`` and ``KGR_SLICE_CACHE_MAX_EDGES``."""
    enabled = os.environ.get("KGR_SLICE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")
    try:
        most = int(os.environ.get("KGR_SLICE_CACHE_MAX_EDGES", DEFAULT_MAX_EDGES))
    except ValueError:
        most = DEFAULT_MAX_EDGES
    return enabled and most > 0, most


def _holder(graph: Graph) -> _Holder:
    with _HOLDERS_LOCK:
        h = _HOLDERS.get(graph)
        if h is None:
            h = _HOLDERS[graph] = _Holder()
        return h


def adjacency_for(graph: Graph, state: SliceState) -> PromotedAdjacency | None:
    """The in-memory copy when it is valid for ``state``; else None, and a background read of a new
    copy starts (unless one is running, or the graph is over the limit at these markers)."""
    enabled, most = cache_settings()
    if not enabled:
        return None
    h = _holder(graph)
    adj = h.current
    if adj is not None and adj.markers == state.markers:
        return adj
    with h.lock:
        if h.loading or h.too_big == state.markers or getattr(graph, "closed", False):
            return None
        h.loading = True
    threading.Thread(target=_load, args=(graph, h, most), name="kgr-slice-graph", daemon=True).start()
    return None


def warm_adjacency(graph: Graph) -> PromotedAdjacency | None:
    """Read the copy now, in this thread (benchmarks, or a server that wants it before the first
    slice); None when it is off or the graph is over the limit."""
    enabled, most = cache_settings()
    if not enabled:
        return None
    h = _holder(graph)
    with h.lock:
        h.loading = True
    _load(graph, h, most)
    return h.current


def _load(graph: Graph, h: _Holder, most: int) -> None:
    """Read the copy: the markers, every edge, the markers again; kept only when they are equal (a
    commit in between would have moved them, and a copy mixing two states is never kept)."""
    try:
        if getattr(graph, "closed", False):
            return
        before = slice_state(graph)
        if not before.types:  # no relationship type yet: no promoted edge, an empty copy is exact
            h.current = PromotedAdjacency([], before.markers)
            return
        if getattr(graph, "closed", False):
            return
        read = promoted_graph(graph, before.types, limit=most)
        if read.markers != before.markers:
            return
        if not read.complete:
            h.too_big, h.current = read.markers, None
            return
        h.current = PromotedAdjacency(read.rows, read.markers)
    except Exception as exc:  # noqa: BLE001 - a failed background read only means slices read Neo4j
        log.debug("the slicer's in-memory graph was not read: %s", exc)
    finally:
        with h.lock:
            h.loading = False
