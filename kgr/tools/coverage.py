"""``query_coverage_feedback``: which schema types the extraction covers, and what it misses.

Definitions:

* A schema type is **covered** when the extraction lists at least one entity (relation) under it.
  Types the extraction uses but the schema lacks are not coverage; they are reported in the
  recommendations.
* ``entity_coverage.coverage_ratio`` = covered / schema entity types; likewise for relations. A
  side with no schema types has ratio 1.0 (nothing can be missing).
* ``overall_coverage`` = all covered types / all schema types (the average weighted by type counts).
* ``coverage_score`` = 0.6 · entity ratio + 0.4 · relation ratio (appendix A.4 weighting). Bands
  (:func:`coverage_band`): ≥ 0.9 excellent, ≥ 0.7 good, ≥ 0.5 moderate, ≥ 0.3 poor, else very poor.
* ``schema_complexity``: ``simple`` up to 5 types, ``moderate`` up to 15, ``complex`` beyond.
* ``missing_entity_types`` / ``missing_relation_types`` list every uncovered schema type in schema
  order. Text-guided detection (:mod:`kgr.tools._cues`) decides which of them the recommendations
  call likely present (with the snippet that suggests them) and which have no support in the text.
* Priority types may be entity or relation types; ``priority_coverage_ratio`` = covered priority
  types / priority types (1.0 when none are given). A priority type the schema lacks is missing.

Recommendations come in the appendix's order: priority types first, then text-guided and
type-specific suggestions, then completion status with the band.
"""

from __future__ import annotations

from typing import Literal

from kgr.model.tools import (
    CoverageFeedbackInput,
    CoverageFeedbackOutput,
    MissingTypes,
    PriorityAnalysis,
    SchemaInfo,
    TypeCoverage,
    TypeCoverageCounts,
)
from kgr.tools._cues import TypeEvidence, entity_type_evidence, relation_type_evidence
from kgr.tools._kg import covered_entity_types, covered_relation_types
from kgr.tools._text import analyze_text
from kgr.tools.context import ToolContext
from kgr.tools.registry import tool

__all__ = ["query_coverage_feedback", "coverage_band", "schema_complexity_label", "ENTITY_WEIGHT", "RELATION_WEIGHT"]

ENTITY_WEIGHT = 0.6
RELATION_WEIGHT = 0.4

CoverageBand = Literal["excellent", "good", "moderate", "poor", "very_poor"]
_BAND_TEXT = {
    "excellent": "excellent coverage, minimal gaps",
    "good": "good coverage, minor improvements needed",
    "moderate": "moderate coverage, significant gaps exist",
    "poor": "poor coverage, major extraction issues",
    "very_poor": "very poor coverage, fundamental problems",
}


def coverage_band(score: float) -> CoverageBand:
    """The appendix's interpretation band of a coverage score (on the score rounded to 4 decimals).

    >>> coverage_band(0.9), coverage_band(0.8999), coverage_band(0.7), coverage_band(0.5), coverage_band(0.3), coverage_band(0.29)
    ('excellent', 'good', 'good', 'moderate', 'poor', 'very_poor')
    """
    s = round(score, 4)
    if s >= 0.9:
        return "excellent"
    if s >= 0.7:
        return "good"
    if s >= 0.5:
        return "moderate"
    if s >= 0.3:
        return "poor"
    return "very_poor"


def schema_complexity_label(total_types: int) -> Literal["simple", "moderate", "complex"]:
    """``simple`` (≤ 5 types), ``moderate`` (≤ 15) or ``complex``."""
    if total_types <= 5:
        return "simple"
    if total_types <= 15:
        return "moderate"
    return "complex"


def _ratio(covered: int, total: int) -> float:
    return covered / total if total else 1.0


@tool(read_only=True, idempotent=True)
def query_coverage_feedback(params: CoverageFeedbackInput, *, context: ToolContext) -> CoverageFeedbackOutput:
    """Optional coverage check: which entity and relation types of the schema the extraction covers, which are missing, which missing types the text suggests are present (with the phrase that suggests them), how the priority types fare, and a coverage score weighting entity types 0.6 and relation types 0.4 (>= 0.9 excellent, >= 0.7 good, >= 0.5 moderate, >= 0.3 poor).

    Definitions are in the module docstring.
    """
    schema, kg = params.schema_, params.extracted_kg
    profile = analyze_text(params.text)
    got_e, got_r = set(covered_entity_types(kg)), set(covered_relation_types(kg))
    cov_e = [t for t in schema.entity_schema if t in got_e]
    cov_r = [t for t in schema.relation_schema if t in got_r]
    miss_e = [t for t in schema.entity_schema if t not in got_e]
    miss_r = [t for t in schema.relation_schema if t not in got_r]
    n_e, n_r = len(schema.entity_schema), len(schema.relation_schema)
    e_ratio, r_ratio = _ratio(len(cov_e), n_e), _ratio(len(cov_r), n_r)
    overall = _ratio(len(cov_e) + len(cov_r), n_e + n_r)
    score = ENTITY_WEIGHT * e_ratio + RELATION_WEIGHT * r_ratio

    priority = list(dict.fromkeys(params.priority_types or []))
    covered_all = set(cov_e) | set(cov_r)
    cov_p = [t for t in priority if t in covered_all]
    miss_p = [t for t in priority if t not in covered_all]

    evidence: dict[str, TypeEvidence | None] = {t: entity_type_evidence(t, profile) for t in miss_e}
    evidence.update({t: relation_type_evidence(t, profile) for t in miss_r})

    recs: list[str] = []
    schema_types = set(schema.entity_schema) | set(schema.relation_schema)
    for t in miss_p:
        if t not in schema_types:
            recs.append(f"Priority type {t} is not in the schema: add it to the schema or drop it from priority_types.")
            continue
        kind = "entities" if t in schema.entity_schema else "relations"
        ev = evidence.get(t)
        hint = f"; the text suggests them: '{ev.snippet}'" if ev else ""
        recs.append(f"Priority: extract {t} {kind} first{hint}.")
    likely = [t for t in [*miss_e, *miss_r] if t not in miss_p and evidence.get(t) is not None]
    unsupported = [t for t in [*miss_e, *miss_r] if t not in miss_p and evidence.get(t) is None]
    for t in likely:
        kind = "entities" if t in schema.entity_schema else "relations"
        recs.append(f"Extract {t} {kind}: likely present in the text ('{evidence[t].snippet}').")  # type: ignore[union-attr]
    if unsupported:
        recs.append(f"Check the text for {', '.join(unsupported)}: no cue for them was found, they may be absent.")
    extra = sorted((got_e | got_r) - schema_types)
    if extra:
        recs.append(f"Types outside the schema: {', '.join(extra)}. Map them to schema types or drop them.")
    band = coverage_band(score)
    if not miss_e and not miss_r:
        recs.append(f"Coverage is complete ({score:.2f}, {_BAND_TEXT[band]}): every schema type is covered.")
    else:
        recs.append(f"Coverage score {score:.2f}: {_BAND_TEXT[band]}.")

    return CoverageFeedbackOutput(
        schema_info=SchemaInfo(
            entity_types=list(schema.entity_schema),
            relation_types=list(schema.relation_schema),
            total_types=n_e + n_r,
            schema_complexity=schema_complexity_label(n_e + n_r),
        ),
        type_coverage=TypeCoverage(
            entity_coverage=TypeCoverageCounts(covered_types=cov_e, total_types=n_e, coverage_ratio=round(e_ratio, 4)),
            relation_coverage=TypeCoverageCounts(covered_types=cov_r, total_types=n_r, coverage_ratio=round(r_ratio, 4)),
            overall_coverage=round(overall, 4),
        ),
        missing_types=MissingTypes(missing_entity_types=miss_e, missing_relation_types=miss_r),
        priority_analysis=PriorityAnalysis(
            has_priority=bool(priority),
            priority_types=priority,
            covered_priority=cov_p,
            missing_priority=miss_p,
            priority_coverage_ratio=round(_ratio(len(cov_p), len(priority)), 4),
        ),
        coverage_score=round(score, 4),
        recommendations=recs,
    )
