"""What a tool call may use besides its input: the store connection, the KG schema, the source.

The pure tools ignore the context; ``query_entity_disambiguation`` and ``query_kg_storage`` need
``graph``. The server and the CLI build one :class:`ToolContext` per session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgr.model.embedding import EmbedFn

if TYPE_CHECKING:  # the pure tools must not need the driver
    from kgr.model.schema import KGSchema
    from kgr.store.connection import Graph
    from kgr.store.group_commit import GroupWriter

__all__ = ["ToolContext", "EmbedFn"]


@dataclass
class ToolContext:
    """Per-session resources of the tools.

    Attributes
    ----------
    graph:
        The Neo4j connection (:class:`kgr.store.connection.Graph`); required by the two store tools.
    schema:
        The KG schema file in force: its alias table resolves names before lookup and staging, and a
        closed schema rejects unknown types at storage.
    source:
        The vote source for ``query_kg_storage`` (a chunk or document id). When set it wins over the
        input's ``source``, so an agent cannot vote under another source's name.
    source_text:
        The text of the chunk that ``source`` names, when the session has it: ``query_kg_storage``
        then gives each vote the span of the first sentence naming both ends
        (:func:`kgr.text.spans.locate`), which the review queue, explanations and slices quote.
    embed:
        Optional embedding function for ``semantic_similarity`` disambiguation.
    stager:
        Optional :class:`kgr.store.group_commit.GroupWriter` on ``graph``: ``query_kg_storage`` then
        stages through it (shared transactions with concurrent calls) instead of its own.
    batch_size:
        Rows per staging transaction and names per disambiguation query.
    candidates_per_name:
        Fulltext candidates fetched per extracted name.
    relationships_per_entity:
        Relationships fetched per candidate entity.
    known_before:
        When set (a Unix time), fuzzy disambiguation candidates must have existed before it (an
        ingestion run sets its start): a name is then matched to the same entities whatever order
        the run's chunks are processed in, so an ingest at concurrency 8 gives the graph an ingest at
        concurrency 1 gives. Exact matches (the same canonical key) are unaffected.
    """

    graph: "Graph | None" = None
    schema: "KGSchema | None" = None
    source: str | None = None
    source_text: str | None = None
    embed: EmbedFn | None = None
    stager: "GroupWriter | None" = None
    batch_size: int = 2000
    candidates_per_name: int = 5
    relationships_per_entity: int = 10
    known_before: float | None = None
