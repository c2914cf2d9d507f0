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
otherwise it reads Neo4j as before, and the second such slice starts a background thread that
reads the copy again (one at a time per store): a version change never makes a slice wait for the
whole graph, and a process that cuts a single slice (``kgr slice``) never reads it. The copy is
kept for graphs of at most ``KGR_SLICE_CACHE_MAX_EDGES`` promoted edges (default 2,000,000; the memory per
edge is in ``docs/benchmarks.md``); ``KGR_SLICE_CACHE=0`` turns it off.

**Quotes.** Right after the edges, the same thread reads every edge's first vote sources and the
start of their chunks' texts (as many and as long as the registered policies ask for:
:func:`preload_limits`; :meth:`PromotedAdjacency.preload_quotes`), so that a slice whose hops come
from memory reads no quote either, and needs one round trip (its state read). A staged edge's first
sources do not change between versions (they only grow at the end; a forget, a merge or a rollback
opens a version), so a **complete** list (as many sources as the slice asks for) stays right; a
shorter one may still grow and is read live, and complete lists read live are kept
(:meth:`PromotedAdjacency.keep_quotes`). Two caveats, both without a new version: a JSONL file moved
and re-ingested under the same ids changes its documents' path, and a vote source that was no
chunk when read becomes one if a chunk with that id is ingested later; either shows in the next
copy.

**Memory layout.** Everything the copy holds is tuples of plain values (rows, the index by entity,
the ranked memo, kept quotes), which Python's cycle collector untracks: a copy of 100,000 edges adds
nothing to the collector's full passes, whose pauses would otherwise be the slices' P99.

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
from kgr.slices.policies import list_policies
from kgr.store.connection import Graph
from kgr.store.slices import (
    EdgeRow, PromotedQuotes, SliceState, edge_rows, promoted_graph, promoted_quotes, slice_state,
)

__all__ = ["PromotedAdjacency", "adjacency_for", "warm_adjacency", "cache_settings", "preload_limits"]

log = logging.getLogger(__name__)

#: Default most promoted edges held in memory per store.
DEFAULT_MAX_EDGES = 2_000_000
#: Slices that find no current copy before one is read (1: the first; 2: a one-slice process reads none).
LOAD_AFTER_MISSES = 2
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
    edges a hop returns, and dropped with the slice."""

    def __init__(self, rows: Sequence[tuple], markers: tuple):
        self.markers = markers
        self.edges = len(rows)
        self._rows = tuple(rows)
        incident: dict[str, list[int]] = {}
        for i, r in enumerate(self._rows):
            incident.setdefault(r[_S_KEY], []).append(i)
            if r[_O_KEY] != r[_S_KEY]:
                incident.setdefault(r[_O_KEY], []).append(i)
        # tuples of plain values all through (rows, index, memo, kept quotes): the cycle collector
        # untracks them, so a large copy adds nothing to its full passes (the slices' P99)
        self._incident: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in incident.items()}
        self._ranked: dict[tuple[str, tuple[float, float, float]], tuple[int, ...]] = {}
        self._quotes: dict[tuple[str, int, int], tuple[tuple, ...]] = {}  # kept lists, as plain tuples
        self._preloaded: tuple[PromotedQuotes, int, int] | None = None  # (quotes, per_edge, chars) read
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
        """The quotes of ``edges`` known here (kept from earlier slices, or made from the sources read
        with the copy: :meth:`preload_quotes`), and the edges whose quotes must be read."""
        have: dict[str, list[SliceQuote]] = {}
        missing: list[EdgeRow] = []
        if per_edge < 1:
            return have, missing
        for e in edges:
            kept = self._quotes.get((e.key, per_edge, chars))
            if kept is not None:
                have[e.key] = [SliceQuote(source=s, chunk_id=c, document_id=d, path=p, quote=q) for s, c, d, p, q in kept]
                continue
            q = self._preloaded_quotes(e.key, per_edge, chars)
            if q is None:
                missing.append(e)
            else:
                have[e.key] = q
        return have, missing

    @property
    def quoted_edges(self) -> int:
        """Edges whose first sources were read with the copy (0 before :meth:`preload_quotes`)."""
        return len(self._preloaded[0].sources) if self._preloaded else 0

    def preload_quotes(self, read: PromotedQuotes, per_edge: int, chars: int) -> None:
        """Hold every edge's first ``per_edge`` sources and their chunks' first ``chars`` characters
        (read for this copy's markers), so that slices asking for at most that many quotes of at
        most that length read none. Like kept quotes, only **complete** lists are served: an edge
        with fewer sources than a slice asks for may still gain one, and is read live."""
        if read.markers != self.markers:
            raise ValueError("quotes read for other markers than the copy's")
        self._preloaded = (read, per_edge, chars)

    def forget_quotes(self, *, preloaded: bool = False) -> None:
        """Drop the kept quotes, and with ``preloaded`` the sources read with the copy (benchmarks
        measure a first pass with them)."""
        with self._lock:
            self._quotes.clear()
            if preloaded:
                self._preloaded = None

    def _preloaded_quotes(self, key: str, per_edge: int, chars: int) -> list[SliceQuote] | None:
        """The quote list ``edge_quotes`` would read for ``key``, made from the preloaded sources
        (None when they do not hold it completely)."""
        pre = self._preloaded
        if pre is None or per_edge > pre[1] or chars > pre[2]:
            return None
        sources = pre[0].sources.get(key)
        if sources is None or len(sources) < per_edge:
            return None
        chunks, out = pre[0].chunks, []
        spans = pre[0].span_quotes.get(key, ())
        for i, source in enumerate(sources[:per_edge]):
            chunk = chunks.get(source)
            if chunk is None:  # a source that is no chunk (slice_quotes' OPTIONAL MATCH finds nothing)
                out.append(SliceQuote(source=source))
            else:
                doc, path, text = chunk
                said = spans[i] if i < len(spans) else ""  # the vote's sentence, else the chunk's start
                quote = said or text
                out.append(SliceQuote(source=source, chunk_id=source, document_id=doc, path=path,
                                      quote=None if quote is None else quote[:chars]))
        return out

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
                    self._quotes[(key, per_edge, chars)] = tuple(
                        (q.source, q.chunk_id, q.document_id, q.path, q.quote) for q in quotes)

    def _best(self, key: str, weights: tuple[float, float, float]) -> tuple[int, ...]:
        memo = (key, weights)
        ranked = self._ranked.get(memo)
        if ranked is None:
            rows = self._rows
            ranked = tuple(sorted(self._incident.get(key, ()), key=lambda i: (-base_key(rows[i], weights), rows[i][_KEY])))
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
        self.misses = 0  # slices that found no current copy since the last read started


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


def preload_limits() -> tuple[int, int]:
    """(quotes per edge, characters per quote) the copy reads with its edges: the most any
    registered policy asks for (a policy asking more reads its quotes live)."""
    policies = list_policies()
    return (max((p.quotes_per_edge for p in policies), default=0),
            max((p.quote_chars for p in policies), default=0))


def _holder(graph: Graph) -> _Holder:
    with _HOLDERS_LOCK:
        h = _HOLDERS.get(graph)
        if h is None:
            h = _HOLDERS[graph] = _Holder()
        return h


def adjacency_for(graph: Graph, state: SliceState) -> PromotedAdjacency | None:
    """The in-memory copy when it is valid for ``state``; else None, and from the second such call on
    a background read of a new copy starts (unless one is running, or the graph is over the limit
    at these markers)."""
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
        h.misses += 1
        if h.misses < LOAD_AFTER_MISSES:
            return None
        h.misses, h.loading = 0, True
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
        adj = h.current = PromotedAdjacency(read.rows, read.markers)
        per_edge, chars = preload_limits()
        if per_edge and not getattr(graph, "closed", False):  # then the sources, for slices to read none
            quotes = promoted_quotes(graph, before.types, limit=most, per_edge=per_edge, chars=chars)
            if quotes.markers == adj.markers:
                adj.preload_quotes(quotes, per_edge, chars)
    except Exception as exc:  # noqa: BLE001 - a failed background read only means slices read Neo4j
        log.debug("the slicer's in-memory graph was not read: %s", exc)
    finally:
        with h.lock:
            h.loading = False
