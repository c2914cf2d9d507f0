"""The contract of ``query_coverage_feedback``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from kgr.model.kg import ExtractedKG
from kgr.model.schema import Identifier

from kgr.model.tools.base import MAX_SCHEMA_TYPES, Count, Score, Text, ToolInput, ToolOutput, ToolSchema, bounded_kg

__all__ = ["CoverageFeedbackInput", "SchemaInfo", "TypeCoverageCounts", "TypeCoverage", "MissingTypes",
           "PriorityAnalysis", "CoverageFeedbackOutput"]

# ------------------------------------------------------------------------------------------------
# Tool 2: query_coverage_feedback
# ------------------------------------------------------------------------------------------------


class CoverageFeedbackInput(ToolInput):
    text: Text = Field(description="the input text")
    schema_: ToolSchema = Field(alias="schema", description="target schema: entity and relation type names")
    extracted_kg: ExtractedKG = Field(description="current extraction")
    priority_types: list[Identifier] | None = Field(
        None, max_length=2 * MAX_SCHEMA_TYPES, description="entity or relation types to examine first")


    _check_kg = field_validator("extracted_kg")(bounded_kg)


class SchemaInfo(ToolOutput):
    entity_types: list[str]
    relation_types: list[str]
    total_types: Count
    schema_complexity: Literal["simple", "moderate", "complex"]


class TypeCoverageCounts(ToolOutput):
    covered_types: list[str]
    total_types: Count
    coverage_ratio: Score


class TypeCoverage(ToolOutput):
    entity_coverage: TypeCoverageCounts
    relation_coverage: TypeCoverageCounts
    overall_coverage: Score


class MissingTypes(ToolOutput):
    missing_entity_types: list[str]
    missing_relation_types: list[str]


class PriorityAnalysis(ToolOutput):
    has_priority: bool
    priority_types: list[str]
    covered_priority: list[str]
    missing_priority: list[str]
    priority_coverage_ratio: Score


class CoverageFeedbackOutput(ToolOutput):
    schema_info: SchemaInfo
    type_coverage: TypeCoverage
    missing_types: MissingTypes
    priority_analysis: PriorityAnalysis
    coverage_score: Score
    recommendations: list[str]


