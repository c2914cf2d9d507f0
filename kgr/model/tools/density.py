"""The contract of ``query_extraction_density``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from kgr.model.kg import ExtractedKG

from kgr.model.tools.base import Count, Score, Text, ToolInput, ToolOutput, ToolSchema, bounded_kg

__all__ = ["ExtractionDensityInput", "TextStats", "CurrentDensity", "ExpectedDensity", "ComplexityFeatures",
           "DensityAssessment", "ExtractionDensityOutput", "AssessmentLevel"]

# ------------------------------------------------------------------------------------------------
# Tool 1: query_extraction_density
# ------------------------------------------------------------------------------------------------

AssessmentLevel = Literal["insufficient", "moderate", "adequate", "excellent", "over_extraction"]


class ExtractionDensityInput(ToolInput):
    text: Text = Field(description="the input text the KG was extracted from")
    schema_: ToolSchema = Field(alias="schema", description="target schema: entity and relation type names")
    extracted_kg: ExtractedKG = Field(description="current extraction: {entities: {Type: [names]}, relations: {Type: [{subject, object}]}}")
    domain: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description="domain for density benchmarks: general, medical, financial, legal, scientific, news, technical")


    _check_kg = field_validator("extracted_kg")(bounded_kg)


class TextStats(ToolOutput):
    token_count: Count
    sentence_count: Count
    word_count: Count
    character_count: Count


class CurrentDensity(ToolOutput):
    total_entities: Count
    total_relations: Count
    total_kg_elements: Count
    entity_type_count: Count
    relation_type_count: Count
    entities_per_1k_tokens: float
    relations_per_1k_tokens: float
    kg_density_per_1k_tokens: float
    entity_relation_ratio: float


class ExpectedDensity(ToolOutput):
    expected_entities_per_1k: float
    expected_relations_per_1k: float
    min_entities_per_1k: float
    min_relations_per_1k: float
    max_entities_per_1k: float
    max_relations_per_1k: float
    schema_complexity: Count
    entity_complexity_factor: float
    relation_complexity_factor: float


class ComplexityFeatures(ToolOutput):
    entity_mentions: Count
    avg_sentence_length: float
    technical_terms: Count
    schema_entity_types: Count
    schema_relation_types: Count
    complexity_score: Score


class DensityAssessment(ToolOutput):
    entity_density_ratio: float
    relation_density_ratio: float
    overall_density_score: Score
    assessment_level: AssessmentLevel
    is_adequate: bool
    meets_minimum_thresholds: bool
    potential_over_extraction: bool
    balance_score: Score


class ExtractionDensityOutput(ToolOutput):
    text_stats: TextStats
    current_density: CurrentDensity
    expected_density: ExpectedDensity
    complexity_features: ComplexityFeatures
    density_assessment: DensityAssessment
    needs_more_extraction: bool
    recommendations: list[str]


