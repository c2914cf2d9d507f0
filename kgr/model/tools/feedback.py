"""The contract of ``query_iterative_feedback``: its input and output models (conventions in :mod:`kgr.model.tools`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgr.model.kg import ExtractedKG

from kgr.model.tools.base import MAX_HISTORY, Count, Score, Text, ToolInput, ToolOutput, ToolSchema, bounded_kg

__all__ = ["FeedbackEntry", "IterativeFeedbackInput", "ProgressAnalysis", "ProblemPatterns", "Strategy",
           "OptimizationStrategy", "IterationEffectiveness", "IterativeFeedbackOutput", "Trend",
           "ConvergenceStatus", "StrategyType", "IterationFocus", "Effectiveness", "Severity"]

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

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)

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


    _check_kg = field_validator("extracted_kg")(bounded_kg)

    @field_validator("extraction_history")
    @classmethod
    def _bounded_history(cls, v: list[ExtractedKG]) -> list[ExtractedKG]:
        for kg in v:
            bounded_kg(kg)
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


