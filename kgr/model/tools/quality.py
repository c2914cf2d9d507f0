"""The contract of ``query_quality_metrics``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from kgr.model.kg import ExtractedKG

from kgr.model.tools.base import Count, Score, Text, ToolInput, ToolOutput, ToolSchema, bounded_kg

__all__ = ["QualityMetricsInput", "ConsistencyDetails", "CompletenessDetails", "AccuracyDetails",
           "SchemaComplianceDetails", "ConsistencyResult", "CompletenessResult", "AccuracyResult",
           "SchemaComplianceResult", "EvaluationResults", "QualityMetricsOutput", "EvaluationAspect",
           "QualityLevel"]

# ------------------------------------------------------------------------------------------------
# Tool 3: query_quality_metrics
# ------------------------------------------------------------------------------------------------

EvaluationAspect = Literal["consistency", "completeness", "accuracy", "schema_compliance"]
QualityLevel = Literal["excellent", "good", "fair", "poor", "very_poor"]


class QualityMetricsInput(ToolInput):
    extracted_kg: ExtractedKG = Field(description="the extraction to evaluate")
    schema_: ToolSchema = Field(alias="schema", description="target schema: entity and relation type names")
    text: Text = Field(description="the original text, for checking extractions against it")
    evaluation_aspects: list[EvaluationAspect] | None = Field(
        None, min_length=1, max_length=4,
        description="dimensions to evaluate (default all): consistency, completeness, accuracy, schema_compliance")


    _check_kg = field_validator("extracted_kg")(bounded_kg)


class ConsistencyDetails(ToolOutput):
    entity_naming_consistency: Score
    relation_consistency: Score
    duplicate_entities: Count
    conflicting_relations: Count


class CompletenessDetails(ToolOutput):
    missing_entity_types: list[str]
    missing_relation_types: list[str]
    entity_type_coverage: Score
    relation_type_coverage: Score
    extraction_density: float


class AccuracyDetails(ToolOutput):
    entities_not_in_text: Count
    relations_not_in_text: Count
    boundary_errors: Count
    type_misclassifications: Count


class SchemaComplianceDetails(ToolOutput):
    valid_entity_types: Count
    invalid_entity_types: Count
    valid_relation_types: Count
    invalid_relation_types: Count
    structure_violations: Count


class ConsistencyResult(ToolOutput):
    score: Score
    issues: list[str]
    details: ConsistencyDetails


class CompletenessResult(ToolOutput):
    score: Score
    issues: list[str]
    details: CompletenessDetails


class AccuracyResult(ToolOutput):
    score: Score
    issues: list[str]
    details: AccuracyDetails


class SchemaComplianceResult(ToolOutput):
    score: Score
    issues: list[str]
    details: SchemaComplianceDetails


class EvaluationResults(ToolOutput):
    """One entry per evaluated aspect; aspects not asked for are ``null``."""

    consistency: ConsistencyResult | None = None
    completeness: CompletenessResult | None = None
    accuracy: AccuracyResult | None = None
    schema_compliance: SchemaComplianceResult | None = None


class QualityMetricsOutput(ToolOutput):
    evaluation_aspects: list[EvaluationAspect]
    evaluation_results: EvaluationResults
    overall_score: Score
    quality_level: QualityLevel
    improvement_suggestions: list[str]
    detailed_metrics: EvaluationResults


