"""The contract of ``query_entity_disambiguation``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from kgr.model.kg import ExtractedKG

from kgr.model.tools.base import Count, Score, Text, ToolInput, ToolOutput, bounded_kg

__all__ = ["EntityDisambiguationInput", "OriginalEntity", "KBEntity", "Candidate", "DisambiguationResult",
           "Relationship", "RelationshipsResult", "DisambiguationSummary", "EntityDisambiguationOutput",
           "DisambiguationStrategy", "Scalar", "PropertyValue"]

# ------------------------------------------------------------------------------------------------
# Tool 5: query_entity_disambiguation
# ------------------------------------------------------------------------------------------------

DisambiguationStrategy = Literal["exact_match", "semantic_similarity"]
Scalar = str | int | float | bool | None
#: A JSON-able property value of a node or relationship (temporal values are ISO strings).
PropertyValue = Scalar | list[str | int | float | bool]


class EntityDisambiguationInput(ToolInput):
    extracted_kg: ExtractedKG = Field(description="current extraction")
    disambiguation_strategy: DisambiguationStrategy = Field(
        "semantic_similarity", description="exact_match (case-insensitive names and aliases) or semantic_similarity")
    similarity_threshold: Score = Field(0.8, description="minimum confidence for a match (0-1)")
    context: Text | None = Field(None, description="text around the entities; breaks ties between candidates")

    _check_kg = field_validator("extracted_kg")(bounded_kg)


class OriginalEntity(ToolOutput):
    type: str
    name: str


class KBEntity(ToolOutput):
    """An entity of the knowledge base: its name and properties (key, type, aliases, ...)."""

    name: str
    properties: dict[str, PropertyValue]


class Candidate(ToolOutput):
    candidate: KBEntity
    confidence: Score


class DisambiguationResult(ToolOutput):
    original_entity: OriginalEntity
    candidates: list[Candidate]
    best_match: Candidate | None
    is_disambiguated: bool
    confidence: Score


class Relationship(ToolOutput):
    type: str
    target: KBEntity
    properties: dict[str, PropertyValue]
    direction: Literal["out", "in"]


class RelationshipsResult(ToolOutput):
    entity: KBEntity
    relationships: list[Relationship]


class DisambiguationSummary(ToolOutput):
    total_entities: Count
    disambiguated_entities: Count
    disambiguation_rate: Score
    average_confidence: Score
    unmatched_entities: Count


class EntityDisambiguationOutput(ToolOutput):
    disambiguation_results: list[DisambiguationResult]
    relationships_results: list[RelationshipsResult]
    quality_score: Score
    disambiguation_strategy: DisambiguationStrategy
    similarity_threshold: Score
    standardization_suggestions: list[str]
    summary: DisambiguationSummary
    final_kg: ExtractedKG


