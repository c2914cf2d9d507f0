"""Where a slice starts: anchor entities from keys, from a text query, and from embeddings.

A query finds anchors two ways, and a slice starts from both:

- **fulltext** (always): the ``entity_names`` index over names and aliases; the hits scoring at
  least half the best hit's score;
- **embeddings** (when an embedder is configured, e.g. ``KGR_EMBEDDING_MODEL``): the query's
  embedding against the entities' name embeddings (:mod:`kgr.store.embeddings`, filled by
  :func:`embed_entities` / ``kgr embed``); the nearest entity and those within
  :data:`EMBEDDING_TIE` of its score, at most :data:`EMBEDDING_ANCHORS`. This finds an entity whose
  name shares no word with the query ("the first programmer" → Ada Lovelace).

Worked example: the nearest names score 0.962, 0.955 and 0.91 (cosine scores, (1 + cos) / 2);
with the tie 0.01 the first two become anchors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.embedding import EmbedFn
from kgr.store import embeddings as stored
from kgr.store import inspect
from kgr.store.connection import Graph
from kgr.store.slices import EntityRow, entities

__all__ = ["resolve_anchors", "user_anchor_keys", "embed_query", "QueryVector", "embed_entities", "EmbedReport", "MAX_ANCHORS", "EMBEDDING_ANCHORS", "EMBEDDING_TIE"]

#: Most anchors one slice starts from.
MAX_ANCHORS = 64
#: Most anchors a query's embedding adds.
EMBEDDING_ANCHORS = 3
#: Score distance from the nearest name within which another name is an anchor too.
EMBEDDING_TIE = 0.01


def model_of(embed: EmbedFn) -> str:
    """The model name an embedder declares (``.model``), which tags the vectors it made."""
    model = getattr(embed, "model", None)
    if not isinstance(model, str) or not model:
        raise KgrValidationError("the embedder must name its model (an attribute .model)", field="embedding_model")
    return model


class QueryVector(BaseModel):
    """A query's embedding and the model that made it (what nearest-name reads need)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    model: str
    vector: list[float]


def embed_query(embed: EmbedFn, query: str) -> QueryVector:
    """Embed ``query`` once (a slice that reads the graph again reuses it)."""
    return QueryVector(model=model_of(embed), vector=[float(x) for x in embed([query])[0]])


def check_anchor_count(keys: Sequence[str]) -> None:
    """Raise :class:`KgrValidationError` for more than :data:`MAX_ANCHORS` keys."""
    if len(keys) > MAX_ANCHORS:
        raise KgrValidationError(f"at most {MAX_ANCHORS} anchors", field="anchors")


def user_anchor_keys(keys: Sequence[str]) -> list[str]:
    """Anchor keys as a user typed them, each name canonicalised as staging does
    (``Software:Flask`` → ``Software:flask``), duplicates dropped, order kept. A string that is no
    ``TYPE:NAME`` key is kept as it is (:func:`kgr.store.inspect.user_entity_key`): it names no
    entity, which :func:`resolve_anchors` reports with a did-you-mean, as for any unknown key.
    """
    return list(dict.fromkeys(inspect.user_entity_key(k) for k in keys))


def resolve_anchors(graph: Graph, keys: Sequence[str], query: str | None,
                    query_vector: QueryVector | None = None, *,
                    known: Sequence[EntityRow] | None = None) -> list[EntityRow]:
    """The anchors: the entities with ``keys`` and those ``query`` finds (fulltext, and the names
    nearest to ``query_vector``: see the module docstring), by key.

    Raises
    ------
    KgrNotFound
        A key does not exist (without a query), or nothing matches.
    KgrValidationError
        More than :data:`MAX_ANCHORS` keys; a query embedding of another dimension than the store's.
    """
    check_anchor_count(keys)
    found = list(known) if known is not None else entities(graph, keys)
    missing = sorted(set(keys) - {e.key for e in found})
    if missing and not query:
        raise KgrNotFound(inspect.no_entity_message(
            graph, missing[0], suffix=f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    if query:
        hits = inspect.search_entities(graph, query, limit=5)
        best = hits[0].score if hits else 0.0
        chosen = [h.key for h in hits if h.score >= 0.5 * best]
        if query_vector is not None:
            chosen += _nearest(graph, query_vector)
        found += entities(graph, chosen)
    if not found:
        raise KgrNotFound(f"no entity matches {query!r}" if query else "give at least one anchor")
    return sorted({e.key: e for e in found}.values(), key=lambda e: e.key)


def _nearest(graph: Graph, q: QueryVector) -> list[str]:
    near = stored.nearest_entities(graph, q.vector, model=q.model, k=EMBEDDING_ANCHORS + 2)
    if not near:
        return []
    top = near[0][1]
    return [k for k, score in near[:EMBEDDING_ANCHORS] if score >= top - EMBEDDING_TIE]


class EmbedReport(BaseModel):
    """What :func:`embed_entities` did."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    model: str
    dimensions: int | None = Field(None, description="of the model's vectors (the index's)")
    entities: int = Field(0, description="entities in the store (merged-away ones aside)")
    embedded: int = Field(0, description="entities embedded by this run")
    already: int = Field(0, description="entities that had this model's embedding before")
    seconds: float = 0.0


def embed_entities(graph: Graph, embed: EmbedFn, *, batch: int = 64, replace: bool = False,
                   on_batch: Callable[[int, int], None] | None = None) -> EmbedReport:
    """Give every entity without one an embedding of its name from ``embed`` (its ``.model``).

    Works in batches of ``batch`` names: one embedding request and one write each, so an
    interruption loses at most a batch and a re-run carries on. The index is created with the
    first vectors' dimension (``replace``: a model of another dimension replaces the index).
    ``on_batch(done, total)`` reports progress.
    """
    if batch < 1:
        raise KgrValidationError("batch must be >= 1", field="batch")
    started = time.perf_counter()
    model = model_of(embed)
    todo = stored.entities_to_embed(graph, model)
    before = stored.coverage(graph, model)
    rep = EmbedReport(model=model, entities=before.entities, already=before.embedded)
    state = stored.index_state(graph)
    rep.dimensions = state.dimensions if state else None
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        vectors = embed([name for _, name in part])
        if len(vectors) != len(part):
            raise KgrValidationError(f"the embedder answered {len(vectors)} vectors for {len(part)} names",
                                     field="embedding_model")
        if i == 0 or rep.dimensions is None:
            rep.dimensions = stored.ensure_index(graph, len(vectors[0]), replace=replace).dimensions
        rep.embedded += stored.write_embeddings(graph, model, [(k, v) for (k, _), v in zip(part, vectors)])
        if on_batch is not None:
            on_batch(min(i + batch, len(todo)), len(todo))
    rep.seconds = round(time.perf_counter() - started, 3)
    return rep
