"""The store's side of context slices and outcome feedback: typed reads of the promoted graph
around anchors, edge provenance, and the outcome-weight writes (see :mod:`kgr.slices`).

Only **current promoted** edges are ever read for a slice (``valid_from`` set, ``valid_to`` unset,
not a ``PENDING_REL``): pending, held or retired edges never reach an agent's context.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from kgr.model.slices import HABITUAL, INHIBITORY, NEUTRAL_WEIGHT, REFLEX, SliceQuote
from kgr.store.connection import Graph
from kgr.store.versions import ZERO_HASH, current_state

__all__ = ["EdgeRow", "EntityRow", "OutcomeHealth", "SliceState", "Quotes", "PromotedGraph", "promoted_graph", "PromotedQuotes", "promoted_quotes", "edge_rows", "slice_state", "promoted_edges_around", "entities", "edge_quotes",
           "write_outcome", "flag_for_review", "outcome_health", "relax_outcomes",
           "decay_outcomes"]


class EntityRow(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    key: str
    type: str
    name: str


class EdgeRow(BaseModel):
    """A current promoted edge with its endpoints, as the slicer reads it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    key: str
    relation: str
    subject: EntityRow
    object: EntityRow
    confidence: float
    votes: int
    outcome_weight: float | None = None
    twin: str | None = None  # element id of its staged edge, when known (the in-memory graph has it)


class OutcomeHealth(BaseModel):
    """Outcome tiers over the current promoted edges (an unrated edge has the neutral weight)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edges: int
    rated: int
    reflex: int
    habitual: int
    inhibitory: int
    dormant: int
    outcomes: int
    review: int


class SliceState(BaseModel):
    """The store as a slice sees it: version, promoted-graph hash, the relationship types that may
    join two entities as promoted edges (every type but ``PENDING_REL``), and the anchors asked for
    that exist."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    version: int
    hash: str
    types: tuple[str, ...]
    anchors: tuple[EntityRow, ...] = ()
    outcome_seq: int = 0  # outcome writes so far (they change weights without a new version)
    created_at: float | None = None  # when the store was initialised (a wiped store starts again)

    @property
    def markers(self) -> tuple:
        """What identifies the promoted graph as a slice reads it (an in-memory copy is valid for them):
        the store's creation time, version, hash, outcome counter and relationship types."""
        return self.created_at, self.version, self.hash, self.outcome_seq, self.types


def slice_state(graph: Graph, keys: Iterable[str] = ()) -> SliceState:
    """:class:`SliceState` and the entities with ``keys`` (merged-away keys answer with the surviving
    entity), in one read (``(0, ZERO_HASH, ())`` before ``kgr init``)."""
    rows = graph.read("slice_state", {"keys": sorted(set(keys))})
    if not rows:
        return SliceState(version=0, hash=ZERO_HASH, types=())
    r = rows[0]
    anchors = sorted({k: EntityRow(key=k, type=t or "", name=n or k) for k, t, n in r["anchors"] or []}.values(),
                     key=lambda e: e.key)
    return SliceState(version=int(r["version"]), hash=r["hash"], types=tuple(sorted(r["types"] or ())),
                      anchors=tuple(anchors), outcome_seq=int(r["outcome_seq"]), created_at=r["created_at"])


def promoted_edges_around(graph: Graph, keys: Iterable[str], *, fanout: int, types: Sequence[str],
                          weights: tuple[float, float, float] = (1.0, 0.25, 0.5)) -> list[EdgeRow]:
    """The current promoted edges incident to the entities ``keys``, each once: at most ``fanout``
    per entity, the highest base priority first (``weights`` = the slice policy's w_c, w_v, w_o), of
    the relationship ``types`` (:attr:`SliceState.types`)."""
    ks = sorted(set(keys))
    if not ks or not types:
        return []
    w_c, w_v, w_o = weights
    rows = graph.read_value("slice_edges", {"keys": ks, "fanout": fanout, "w_c": w_c, "w_v": w_v, "w_o": w_o,
                                            "neutral": NEUTRAL_WEIGHT}, types=list(types)) or []
    return edge_rows(rows)


def edge_rows(rows: Iterable[Sequence]) -> list[EdgeRow]:
    """:class:`EdgeRow` of packed rows ``[key, relation, s_key, s_type, s_name, o_key, o_type, o_name,
    confidence, votes, outcome_weight(, twin element id)]``, each entity one object. (Validated
    construction: with pydantic 2 it is faster than ``model_construct``; ``docs/benchmarks.md``.)"""
    ents: dict[str, EntityRow] = {}

    def ent(key: str, type_: str | None, name: str | None) -> EntityRow:
        e = ents.get(key)
        if e is None:
            e = ents[key] = EntityRow(key=key, type=type_ or "", name=name or key)
        return e

    return [EdgeRow(
        key=r[0], relation=r[1], confidence=float(r[8]), votes=int(r[9]),
        outcome_weight=None if r[10] is None else float(r[10]), twin=r[11] if len(r) > 11 else None,
        subject=ent(r[2], r[3], r[4]), object=ent(r[5], r[6], r[7]))
        for r in rows]


class PromotedGraph(BaseModel):
    """Every current promoted edge (:func:`promoted_graph`) as packed rows (the ``slice_edges``
    shape, as tuples of plain values: nothing for Python's cycle collector to scan), and the
    markers read after them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    rows: list[tuple]
    markers: tuple = Field(description="as SliceState.markers")
    complete: bool


def promoted_graph(graph: Graph, types: Sequence[str], *, limit: int) -> PromotedGraph:
    """All current promoted edges of ``types`` (at most ``limit``: ``complete`` says whether that was
    all), then the store's creation time, version, hash and outcome counter (one read)."""
    if not types:
        return PromotedGraph(rows=[], markers=(), complete=False)  # nothing to hold: slices read Neo4j
    rows = graph.read("slice_graph", {"limit": limit + 1}, types=list(types))
    if not rows:
        return PromotedGraph(rows=[], markers=(), complete=False)
    r = rows[0]
    packed = r["rows"] or []
    return PromotedGraph.model_construct(
        rows=[tuple(x) for x in packed[:limit]], complete=len(packed) <= limit,
        markers=_markers(r, types))


def _markers(r: dict, types: Sequence[str]) -> tuple:
    """:attr:`SliceState.markers` of a record with the ``state_markers`` columns, for ``types``."""
    return r["created_at"], int(r["version"]), r["hash"], int(r["outcome_seq"]), tuple(types)


class PromotedQuotes(BaseModel):
    """The first vote sources of every current promoted edge (:func:`promoted_quotes`), each chunk
    among them once, and the markers read after them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    sources: dict[str, tuple[str, ...]] = Field(description="edge key -> its first per_edge sources, oldest first")
    span_quotes: dict[str, tuple[str, ...]] = Field(default_factory=dict, description=(
        "edge key -> the quote of each of those votes from its sentence span ('' for a vote without one: "
        "its chunk's text is the quote)"))
    chunks: dict[str, tuple[str | None, str | None, str | None]] = Field(
        description="source that is a chunk -> (document id, document path, the first chars of its text)")
    markers: tuple = Field(description="as SliceState.markers")


def promoted_quotes(graph: Graph, types: Sequence[str], *, limit: int, per_edge: int, chars: int) -> PromotedQuotes:
    """For every current promoted edge of ``types`` (at most ``limit``), what :func:`edge_quotes`
    would read with ``per_edge`` and ``chars``, in one read: its first sources, and the chunks
    among them with document and quote; then the markers."""
    rows = graph.read("slice_graph_quotes", {"limit": limit, "per_edge": per_edge, "chars": chars},
                      types=list(types)) if types else []
    if not rows:
        return PromotedQuotes.model_construct(sources={}, span_quotes={}, chunks={}, markers=())
    r = rows[0]
    return PromotedQuotes.model_construct(
        sources={key: tuple(sources) for key, sources, _ in r["edges"] or []},
        span_quotes={key: tuple(quotes) for key, _, quotes in r["edges"] or []},
        chunks={cid: (doc, path, text) for cid, doc, path, text in r["chunks"] or []},
        markers=_markers(r, types))


def entities(graph: Graph, keys: Iterable[str]) -> list[EntityRow]:
    """The entities with these keys that exist (merged-away keys answer with the surviving entity)."""
    ks = sorted(set(keys))
    if not ks:
        return []
    return [EntityRow(key=r["key"], type=r["type"] or "", name=r["name"] or r["key"])
            for r in graph.read("slice_entities", {"keys": ks})]


class Quotes(BaseModel):
    """Provenance quotes by edge key, and the store's ``(version, hash)`` read after them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    by_edge: dict[str, list[SliceQuote]]
    state: tuple[int, str]


def edge_quotes(graph: Graph, edges: Sequence[EdgeRow], *, per_edge: int, chars: int) -> Quotes:
    """Up to ``per_edge`` vote sources of each edge (oldest first) with chunk, document and quote;
    then the store's version and hash (one read)."""
    if not edges or per_edge < 1:
        return Quotes(by_edge={}, state=current_state(graph))
    rows = graph.read("slice_quotes", {"rows": [{"key": e.key, "s_key": e.subject.key, "o_key": e.object.key,
                                                 "twin": e.twin} for e in edges],
                                       "per_edge": per_edge, "chars": chars})
    if not rows:  # before kgr init
        return Quotes.model_construct(by_edge={}, state=(0, ZERO_HASH))
    out: dict[str, list[SliceQuote]] = {}
    for key, source, chunk_id, document_id, path, quote in rows[0]["rows"]:
        out.setdefault(key, []).append(SliceQuote(source=source, chunk_id=chunk_id, document_id=document_id,
                                                  path=path, quote=quote))
    return Quotes.model_construct(by_edge=out, state=(int(rows[0]["version"]), rows[0]["hash"]))


def write_outcome(graph: Graph, slice_id: str, outcome: int, edges: Sequence[tuple[str, str, str]], *,
                  eta: float, now: float | None = None) -> dict[str, tuple[float, int]]:
    """Apply one outcome to the current promoted edges ``(key, s_key, o_key)`` (rule in
    ``cypher/outcome_write.cypher.j2``) and record it; returns key -> (weight after, negatives)."""
    rows = [{"key": k, "s_key": s, "o_key": o} for k, s, o in sorted(set(edges))]
    res = graph.write("outcome_write", {"id": uuid.uuid4().hex, "slice_id": slice_id, "outcome": outcome,
                                        "rows": rows, "eta": eta, "neutral": NEUTRAL_WEIGHT,
                                        "now": time.time() if now is None else now})
    return {r["key"]: (float(r["weight"]), int(r["negatives"])) for r in res}


def flag_for_review(graph: Graph, edges: Sequence[tuple[str, str, str, str]], *, now: float | None = None) -> list[str]:
    """Put the staged edges ``(key, s_key, o_key, reason)`` on the review queue (unless labelled)."""
    if not edges:
        return []
    rows = [{"key": k, "s_key": s, "o_key": o, "reason": why} for k, s, o, why in edges]
    return [r["key"] for r in graph.write("outcome_flag_review", {"rows": rows,
                                                                  "now": time.time() if now is None else now})]


def relax_outcomes(graph: Graph, relax: float, *, now: float | None = None) -> int:
    """Move every rated current promoted edge's outcome weight a share ``relax`` back to neutral."""
    res = graph.write("outcome_relax", {"id": uuid.uuid4().hex, "relax": relax, "neutral": NEUTRAL_WEIGHT,
                                        "now": time.time() if now is None else now})
    return int(res[0]["moved"]) if res else 0


def decay_outcomes(graph: Graph, half_life: float, *, now: float | None = None) -> int:
    """Move every rated current promoted edge's outcome weight toward neutral by the time since its
    last outcome or decay: ``w ← n + (w − n)·2^(−Δt / half_life)`` (seconds; rule in
    ``cypher/outcome_decay.cypher.j2``). Returns how many edges it looked at."""
    res = graph.write("outcome_decay", {"id": uuid.uuid4().hex, "half_life": half_life, "neutral": NEUTRAL_WEIGHT,
                                        "now": time.time() if now is None else now})
    return int(res[0]["moved"]) if res else 0


def outcome_health(graph: Graph) -> OutcomeHealth:
    row = graph.read("outcome_health", {"neutral": NEUTRAL_WEIGHT, "reflex": REFLEX, "habitual": HABITUAL,
                                        "inhibitory": INHIBITORY})[0]
    return OutcomeHealth(**{k: int(row[k] or 0) for k in OutcomeHealth.model_fields})
