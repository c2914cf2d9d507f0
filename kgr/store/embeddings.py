"""Entity name embeddings in Neo4j: the ``entity_embeddings`` vector index and nearest-name reads.

Each entity's name embedding lives on its node (``e.embedding``, a float32 vector property) with
the model that made it (``e.embedding_model``). The index is a Neo4j vector index with cosine
similarity; its score is :math:`(1 + \\cos\\theta) / 2 \\in [0, 1]`. The index is created with the
first vectors' dimension; embedding the store with a model of another dimension replaces it
(:func:`ensure_index` with ``replace=True``), since one index holds one dimension. Reads filter by
model, so vectors of an earlier model never answer a query embedded by another.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kgr.errors import KgrValidationError
from kgr.store.connection import Graph

__all__ = ["INDEX_NAME", "MAX_DIMENSIONS", "IndexState", "EmbeddingCoverage", "index_state", "ensure_index",
           "entities_to_embed", "write_embeddings", "nearest_entities", "coverage"]

INDEX_NAME = "entity_embeddings"
#: Largest vector Neo4j 5's vector index accepts.
MAX_DIMENSIONS = 4096


class IndexState(BaseModel):
    """The entity embedding index as the catalogue shows it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    dimensions: int
    similarity: str
    state: str


class EmbeddingCoverage(BaseModel):
    """How many entities have a name embedding from one model."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    entities: int
    embedded: int


def index_state(graph: Graph) -> IndexState | None:
    """The index's dimensions and state, or None when there is none."""
    rows = graph.read("embedding_index_state", {"name": INDEX_NAME})
    if not rows:
        return None
    r = rows[0]
    return IndexState(dimensions=int(r["dimensions"]), similarity=str(r["similarity"]).lower(), state=r["state"])


def ensure_index(graph: Graph, dimensions: int, *, replace: bool = False, wait_seconds: int = 300) -> IndexState:
    """Create the index for ``dimensions``-dimensional vectors (if absent) and wait until it is online.

    Raises :class:`KgrValidationError` when it exists with another dimension, unless ``replace``
    (then it is dropped and created again; the vectors stay on the nodes and are re-indexed).
    """
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise KgrValidationError(f"embeddings must have 1 to {MAX_DIMENSIONS} dimensions, not {dimensions}",
                                 field="dimensions")
    have = index_state(graph)
    if have is not None and have.dimensions != dimensions:
        if not replace:
            raise KgrValidationError(
                f"the store's entity embedding index holds {have.dimensions}-dimensional vectors; this model makes "
                f"{dimensions}: re-embed every entity with it (kgr embed --replace)", field="dimensions")
        graph.run_script("embedding_index_drop")
    graph.run_script("embedding_index_create", dimensions=int(dimensions))
    graph.read("embedding_index_await", {"seconds": wait_seconds})
    state = index_state(graph)
    assert state is not None
    return state


def entities_to_embed(graph: Graph, model: str) -> list[tuple[str, str]]:
    """``(key, name)`` of every entity without an embedding from ``model``, in key order."""
    return [(k, n) for k, n in graph.read_value("embedding_todo", {"model": model}) or []]


def write_embeddings(graph: Graph, model: str, rows: Sequence[tuple[str, Sequence[float]]]) -> int:
    """Store ``(key, vector)`` rows as ``model``'s embeddings in one transaction; how many landed."""
    if not rows:
        return 0
    out = graph.write("embedding_write", {"model": model,
                                          "rows": [{"key": k, "vector": [float(x) for x in v]} for k, v in rows]})
    return int(out[0]["written"]) if out else 0


def nearest_entities(graph: Graph, vector: Sequence[float], *, model: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` entities nearest to ``vector`` among ``model``'s embeddings: ``(key, score)``, best
    first; none before any entity was embedded (no index yet).

    Raises :class:`KgrValidationError` when the index holds vectors of another dimension than ``vector``.
    """
    state = index_state(graph)
    if state is None:
        return []
    if state.dimensions != len(vector):
        raise KgrValidationError(f"the query's embedding has {len(vector)} dimensions, the store's entity "
                                 f"embeddings {state.dimensions}: embed with the same model", field="embedding_model")
    rows = graph.read("embedding_nearest", {"vector": [float(x) for x in vector], "k": int(k), "model": model})
    return [(r["key"], float(r["score"])) for r in rows]


def coverage(graph: Graph, model: str) -> EmbeddingCoverage:
    r = graph.read("embedding_status", {"model": model})[0]
    return EmbeddingCoverage(entities=int(r["entities"]), embedded=int(r["embedded"]))
