"""Inputs and outputs of the six agent tools (Agentic-KGR, 004_0801b5666d9a46a7.txt, Appendix A.4).

Parameter and field names are the appendix's. Inputs are strict (no type coercion, no unknown
keys); outputs are plain typed models. The JSON Schemas of all of them are committed in
``schemas/`` (:mod:`kgr.model.jsonschema`), and the OpenAI/MCP function definitions are generated
from the input models, so these classes are the single source of the tool contracts.

Conventions shared by every tool:

* ``schema`` is the appendix's tool schema ``{"entity_schema": [...], "relation_schema": [...]}``
  (:class:`ToolSchema`), not the richer KG schema file (:class:`kgr.model.schema.KGSchema`);
  :meth:`ToolSchema.from_kg_schema` converts one into the other.
* ``extracted_kg`` is :class:`kgr.model.kg.ExtractedKG`; at most :data:`MAX_KG_ITEMS` entities and
  as many relations per call.
* ``text`` holds at most :data:`MAX_TEXT_CHARS` characters (a 10 MB text is rejected naming ``text``).
* Scores and ratios are floats rounded to 4 decimals.

Additions to the appendix, each needed to make a documented behaviour callable:
``query_entity_disambiguation`` also returns ``final_kg`` (the description says its output includes
"the final generated knowledge graph extraction results"), relationships carry a ``direction``,
and ``query_kg_storage`` takes an optional ``source`` (one source is one vote). The appendix's
``"relations per second"`` is spelled ``relations_per_second``.
"""

from __future__ import annotations

from kgr.model.tools.base import (
    MAX_HISTORY,
    MAX_KG_ITEMS,
    MAX_SCHEMA_TYPES,
    MAX_TEXT_CHARS,
    ToolInput,
    ToolOutput,
    ToolSchema,
    validate_strict,
)
from kgr.model.tools.density import (
    AssessmentLevel,
    ComplexityFeatures,
    CurrentDensity,
    DensityAssessment,
    ExpectedDensity,
    ExtractionDensityInput,
    ExtractionDensityOutput,
    TextStats,
)
from kgr.model.tools.coverage import (
    CoverageFeedbackInput,
    CoverageFeedbackOutput,
    MissingTypes,
    PriorityAnalysis,
    SchemaInfo,
    TypeCoverage,
    TypeCoverageCounts,
)
from kgr.model.tools.quality import (
    AccuracyDetails,
    AccuracyResult,
    CompletenessDetails,
    CompletenessResult,
    ConsistencyDetails,
    ConsistencyResult,
    EvaluationAspect,
    EvaluationResults,
    QualityLevel,
    QualityMetricsInput,
    QualityMetricsOutput,
    SchemaComplianceDetails,
    SchemaComplianceResult,
)
from kgr.model.tools.feedback import (
    ConvergenceStatus,
    Effectiveness,
    FeedbackEntry,
    IterationEffectiveness,
    IterationFocus,
    IterativeFeedbackInput,
    IterativeFeedbackOutput,
    OptimizationStrategy,
    ProblemPatterns,
    ProgressAnalysis,
    Severity,
    Strategy,
    StrategyType,
    Trend,
)
from kgr.model.tools.disambiguation import (
    Candidate,
    DisambiguationResult,
    DisambiguationStrategy,
    DisambiguationSummary,
    EntityDisambiguationInput,
    EntityDisambiguationOutput,
    KBEntity,
    OriginalEntity,
    PropertyValue,
    Relationship,
    RelationshipsResult,
)
from kgr.model.tools.storage import (
    DatabaseConfig,
    DuplicatesDetected,
    KGStorageInput,
    KGStorageOutput,
    OperationStatus,
    PerformanceMetrics,
    ProcessingTime,
    StorageDetails,
    StorageStatus,
    StorageSummary,
)

__all__ = [
    "validate_strict",
    "MAX_TEXT_CHARS",
    "MAX_KG_ITEMS",
    "MAX_HISTORY",
    "MAX_SCHEMA_TYPES",
    "ToolSchema",
    "ToolInput",
    "ToolOutput",
    # query_extraction_density
    "ExtractionDensityInput",
    "ExtractionDensityOutput",
    "TextStats",
    "CurrentDensity",
    "ExpectedDensity",
    "ComplexityFeatures",
    "DensityAssessment",
    "AssessmentLevel",
    # query_coverage_feedback
    "CoverageFeedbackInput",
    "CoverageFeedbackOutput",
    "SchemaInfo",
    "TypeCoverageCounts",
    "TypeCoverage",
    "MissingTypes",
    "PriorityAnalysis",
    # query_quality_metrics
    "QualityMetricsInput",
    "QualityMetricsOutput",
    "EvaluationAspect",
    "QualityLevel",
    "ConsistencyDetails",
    "CompletenessDetails",
    "AccuracyDetails",
    "SchemaComplianceDetails",
    "ConsistencyResult",
    "CompletenessResult",
    "AccuracyResult",
    "SchemaComplianceResult",
    "EvaluationResults",
    # query_iterative_feedback
    "IterativeFeedbackInput",
    "IterativeFeedbackOutput",
    "FeedbackEntry",
    "ProgressAnalysis",
    "ProblemPatterns",
    "Strategy",
    "OptimizationStrategy",
    "IterationEffectiveness",
    "Trend",
    "ConvergenceStatus",
    "StrategyType",
    "IterationFocus",
    "Effectiveness",
    "Severity",
    # query_entity_disambiguation
    "EntityDisambiguationInput",
    "EntityDisambiguationOutput",
    "DisambiguationStrategy",
    "PropertyValue",
    "OriginalEntity",
    "KBEntity",
    "Candidate",
    "DisambiguationResult",
    "Relationship",
    "RelationshipsResult",
    "DisambiguationSummary",
    # query_kg_storage
    "KGStorageInput",
    "KGStorageOutput",
    "OperationStatus",
    "StorageStatus",
    "DuplicatesDetected",
    "ProcessingTime",
    "StorageDetails",
    "DatabaseConfig",
    "PerformanceMetrics",
    "StorageSummary",
]
