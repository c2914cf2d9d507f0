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

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgr.model.kg import ExtractedKG
from kgr.model.schema import Identifier, KGSchema

__all__ = [
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

#: Longest ``text``/``context`` accepted, in characters.
MAX_TEXT_CHARS = 1_000_000
#: Most entities (and, separately, relations) one ``extracted_kg`` may hold.
MAX_KG_ITEMS = 20_000
#: Most entity (and, separately, relation) types a tool schema may list.
MAX_SCHEMA_TYPES = 200
#: Most rounds ``extraction_history`` / ``feedback_history`` may hold.
MAX_HISTORY = 50

Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Score = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=0)]


class ToolInput(BaseModel):
    """Base of the tool inputs: strict, closed."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ToolOutput(BaseModel):
    """Base of the tool outputs: closed."""

    model_config = ConfigDict(extra="forbid")


def _bounded_kg(kg: ExtractedKG) -> ExtractedKG:
    if kg.entity_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} entities per call, got {kg.entity_count}")
    if kg.relation_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} relations per call, got {kg.relation_count}")
    return kg


class ToolSchema(BaseModel):
    """The target schema as the tools take it: entity type names and relation type names."""

    model_config = ConfigDict(extra="forbid", strict=True)

    entity_schema: list[Identifier] = Field(default_factory=list, max_length=MAX_SCHEMA_TYPES,
                                            description="entity type names, e.g. [\"Person\", \"Organization\"]")
    relation_schema: list[Identifier] = Field(default_factory=list, max_length=MAX_SCHEMA_TYPES,
                                              description="relation type names, e.g. [\"WORKS_AT\"]")

    @field_validator("entity_schema", "relation_schema")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))

    @classmethod
    def from_kg_schema(cls, schema: KGSchema) -> "ToolSchema":
        """The type names of a KG schema file."""
        return cls(entity_schema=list(schema.entity_types), relation_schema=list(schema.relation_types))


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


    _check_kg = field_validator("extracted_kg")(_bounded_kg)


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


# ------------------------------------------------------------------------------------------------
# Tool 2: query_coverage_feedback
# ------------------------------------------------------------------------------------------------


class CoverageFeedbackInput(ToolInput):
    text: Text = Field(description="the input text")
    schema_: ToolSchema = Field(alias="schema", description="target schema: entity and relation type names")
    extracted_kg: ExtractedKG = Field(description="current extraction")
    priority_types: list[Identifier] | None = Field(
        None, max_length=2 * MAX_SCHEMA_TYPES, description="entity or relation types to examine first")


    _check_kg = field_validator("extracted_kg")(_bounded_kg)


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


    _check_kg = field_validator("extracted_kg")(_bounded_kg)


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


# ------------------------------------------------------------------------------------------------
# Tool 4: query_iterative_feedback
# ------------------------------------------------------------------------------------------------

Trend = Literal["improving", "stagnant", "declining"]
ConvergenceStatus = Literal["insufficient_data", "converging", "converged", "oscillating", "diverging"]
StrategyType = Literal["quality_focus", "coverage_expansion", "balanced_improvement", "pattern_specific"]
IterationFocus = Literal["coverage_expansion", "quality_improvement", "refinement"]
Effectiveness = Literal["high", "medium", "low", "stagnant", "insufficient_data"]
Severity = Literal["high", "medium", "low"]


class FeedbackEntry(BaseModel):
    """One earlier round's feedback (all optional).

    ``issues`` feed the recurring-problem analysis; ``iteration``, ``quality_score`` and
    ``recommendations`` are accepted for the caller's bookkeeping (progress is measured by
    re-scoring the extraction history, not by trusting reported scores).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    iteration: Annotated[int, Field(ge=1)] | None = None
    quality_score: Score | None = None
    issues: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=200)
    recommendations: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=200)


class IterativeFeedbackInput(ToolInput):
    extraction_history: list[ExtractedKG] = Field(
        max_length=MAX_HISTORY, description="earlier extractions, oldest first (the current one may be repeated last)")
    extracted_kg: ExtractedKG = Field(description="the current extraction")
    text: Text = Field(description="the original text")
    schema_: ToolSchema = Field(alias="schema", description="target schema: entity and relation type names")
    feedback_history: list[Annotated[str, Field(max_length=1000)] | FeedbackEntry] | None = Field(
        None, max_length=MAX_HISTORY, description="earlier feedback: issue strings or {iteration, quality_score, issues}")
    max_iterations: Annotated[int, Field(ge=1, le=100)] = Field(5, description="iteration limit (default 5)")


    _check_kg = field_validator("extracted_kg")(_bounded_kg)

    @field_validator("extraction_history")
    @classmethod
    def _bounded_history(cls, v: list[ExtractedKG]) -> list[ExtractedKG]:
        for kg in v:
            _bounded_kg(kg)
        return v


class ProgressAnalysis(ToolOutput):
    trend: Trend
    recent_improvement: float = Field(description="latest quality change, percentage points")
    overall_quality_change: float = Field(description="quality change since the first round, percentage points")
    extraction_volume_change: float = Field(description="elements now minus elements in the first round")
    convergence_status: ConvergenceStatus


class ProblemPatterns(ToolOutput):
    recurring_issues: list[str]
    pattern_types: list[str]
    suggested_solutions: list[str]
    issue_frequency: dict[str, int]
    severity_levels: dict[str, Severity]


class Strategy(ToolOutput):
    type: StrategyType
    description: str
    actions: list[str]


class OptimizationStrategy(ToolOutput):
    strategies: list[Strategy]
    priority_strategy: Strategy
    iteration_focus: IterationFocus


class IterationEffectiveness(ToolOutput):
    effectiveness: Effectiveness
    average_improvement: float = Field(description="mean quality change per iteration, percentage points")
    improvement_trend: list[float] = Field(description="quality change of each iteration, percentage points")
    total_iterations: Count


class IterativeFeedbackOutput(ToolOutput):
    progress_analysis: ProgressAnalysis
    problem_patterns: ProblemPatterns
    optimization_strategy: OptimizationStrategy
    iteration_effectiveness: IterationEffectiveness
    should_continue_iteration: bool
    current_iteration: Annotated[int, Field(ge=1)]
    max_iterations: Annotated[int, Field(ge=1)]
    next_steps: list[str]


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

    _check_kg = field_validator("extracted_kg")(_bounded_kg)


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


# ------------------------------------------------------------------------------------------------
# Tool 6: query_kg_storage
# ------------------------------------------------------------------------------------------------


class KGStorageInput(ToolInput):
    extracted_kg: ExtractedKG = Field(description="the (disambiguated) extraction to store")
    source: Annotated[str, Field(min_length=1, max_length=512)] | None = Field(
        None, description="who asserts these relations (a chunk or document id); one source is one vote")

    _check_kg = field_validator("extracted_kg")(_bounded_kg)


class OperationStatus(ToolOutput):
    code: Literal[0, -1] = Field(description="0 success, -1 failure (details in message)")
    message: str
    stored_count: Count
    skipped_count: Count
    failed_count: Count


class StorageStatus(ToolOutput):
    overall_success: bool
    entities_storage: OperationStatus
    relations_storage: OperationStatus


class DuplicatesDetected(ToolOutput):
    entity_duplicates: Count
    relation_duplicates: Count


class ProcessingTime(ToolOutput):
    entities_time: float
    relations_time: float
    total_time: float


class StorageDetails(ToolOutput):
    total_entities: Count
    total_relations: Count
    entity_types_processed: list[str]
    relation_types_processed: list[str]
    duplicates_detected: DuplicatesDetected
    processing_time: ProcessingTime


class DatabaseConfig(ToolOutput):
    host: str
    database: str


class PerformanceMetrics(ToolOutput):
    entities_per_second: float
    relations_per_second: float
    overall_throughput: float


class StorageSummary(ToolOutput):
    operation_timestamp: str
    database_config: DatabaseConfig
    performance_metrics: PerformanceMetrics


class KGStorageOutput(ToolOutput):
    storage_status: StorageStatus
    storage_details: StorageDetails
    final_kg: ExtractedKG
    storage_summary: StorageSummary
    warnings: list[str]
    recommendations: list[str]
