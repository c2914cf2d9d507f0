"""``query_quality_metrics``: consistency, completeness, accuracy and schema compliance of an extraction.

Each aspect scores 0-1; ``overall_score`` is their weighted mean with the appendix's weights
(:data:`WEIGHTS`: completeness 0.30, accuracy 0.30, consistency 0.25, schema compliance 0.15),
renormalised over the aspects evaluated. ``quality_level`` (:func:`quality_level`): ≥ 0.9
excellent, ≥ 0.8 good, ≥ 0.7 fair, ≥ 0.6 poor, below very_poor.

"Distinct" entities and relations are by type and :func:`~kgr.model.canonical.name_key`
(:mod:`kgr.tools._kg`); a relation endpoint refers to the extracted entities with its name key or,
failing that, its :func:`~kgr.model.canonical.variant_key` (:class:`~kgr.tools._kg.EntityIndex`).

**Consistency** = mean of

* ``entity_naming_consistency`` = 1 − (duplicates + cross-type names) / entity entries, where
  ``duplicate_entities`` counts entries whose ``variant_key`` repeats an earlier entry of the same type
  (``"I.B.M."`` after ``"IBM"``, ``"Microsoft Corp."`` after ``"Microsoft"``) and a cross-type name
  counts once per extra type it is listed under;
* ``relation_consistency`` = share of relation entries with no problem: not a repeat, both
  endpoints among the entities, not a self-loop, not the reverse of an earlier relation of the same
  type. ``conflicting_relations`` counts self-loops plus relations asserted in both directions
  (once per pair).

**Completeness** = 0.7 · (0.6 · entity type coverage + 0.4 · relation type coverage) + 0.3 · density
factor. Coverage as in ``query_coverage_feedback`` (1.0 when the schema has no types of a kind);
``extraction_density`` = distinct elements per 1k tokens; the density factor is
``min(1, (E+R) / required)`` with ``required`` the minimum counts of ``query_extraction_density``
(general domain), and 1.0 when nothing is required.

**Accuracy** = 0.6 · entity accuracy + 0.4 · relation accuracy (each 1.0 when there is nothing to
check). Per distinct entity, the penalty is the largest of: 1 if it is **not in the text**; 0.5 for a
**boundary error** (its canonical form occurs only inside a longer word, or only a part of at
least half its tokens occurs, or it is a strict part of a capitalised mention such as ``"Grace"``
in ``"Grace Hopper"``); 1 for a **type misclassification** (its form signals another category than
its type's, e.g. ``"Acme Inc."`` as ``Person``, see :mod:`kgr.tools._cues`). Entity accuracy =
1 − mean penalty. A relation is **in the text** when both endpoints occur in the same or adjacent
sentences; relation accuracy = share of distinct relations in the text.

**Schema compliance** = (valid entities + valid relations − structure violations) / (entities +
relations), clipped at 0 (1.0 for an empty extraction). ``valid_*``/``invalid_*`` count distinct
elements whose type is / is not in the schema; ``structure_violations`` counts distinct relations
whose endpoint is missing from the entities or listed under several entity types (the type of the
endpoint cannot be told, so it could not be stored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kgr.model.canonical import name_key, variant_key
from kgr.model.kg import ExtractedKG
from kgr.model.tools import (
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
    ToolSchema,
)
from kgr.tools._cues import category_of, name_category
from kgr.tools._kg import (
    EntityIndex,
    covered_entity_types,
    covered_relation_types,
    distinct_entities,
    distinct_relations,
)
from kgr.tools._score_memo import remember
from kgr.tools._text import MATCH_BUDGET, RunIndex, TextProfile, WorkBudget, analyze_text
from kgr.tools.context import ToolContext
from kgr.tools.density import expected_density, min_count, text_complexity
from kgr.tools.registry import tool

__all__ = ["query_quality_metrics", "WEIGHTS", "ASPECTS", "quality_level", "evaluate", "QualityReport"]

#: Aspect weights of the overall score (appendix A.4).
WEIGHTS: dict[str, float] = {"completeness": 0.30, "accuracy": 0.30, "consistency": 0.25, "schema_compliance": 0.15}
#: Aspects in output order.
ASPECTS: tuple[EvaluationAspect, ...] = ("consistency", "completeness", "accuracy", "schema_compliance")

_TITLES = ("mr ", "mrs ", "ms ", "dr ", "prof ", "sir ")
#: Names longer than this (in tokens) are not searched for partial spans.
_MAX_SPAN_TOKENS = 8
#: Characters of canonical text scanned for in-word fragments per call: on very long texts only
#: the first entities missing from the text get the (linear-time) fragment check.
_FRAGMENT_BUDGET = 50_000_000


def _r(x: float) -> float:
    return round(x, 4)


def quality_level(score: float) -> QualityLevel:
    """The appendix's quality level of an overall score (on the score rounded to 4 decimals).

    >>> [quality_level(s) for s in (0.9, 0.8999, 0.8, 0.7, 0.6, 0.5999)]
    ['excellent', 'good', 'good', 'fair', 'poor', 'very_poor']
    """
    s = round(score, 4)
    if s >= 0.9:
        return "excellent"
    if s >= 0.8:
        return "good"
    if s >= 0.7:
        return "fair"
    if s >= 0.6:
        return "poor"
    return "very_poor"


def _q(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@dataclass
class _Aspect:
    score: float
    issues: list[str]
    codes: list[str]
    suggestion: str | None
    details: object


@dataclass
class QualityReport:
    """The tool output plus machine-readable issue codes (used by ``query_iterative_feedback``)."""

    output: QualityMetricsOutput
    codes: list[str] = field(default_factory=list)


# -- consistency ---------------------------------------------------------------------------------

def _naming(kg: ExtractedKG) -> tuple[float, list[str], dict[str, list[str]]]:
    """``entity_naming_consistency``, the duplicate entries (described) and the names listed under
    several types (variant key → types)."""
    entries = sum(len(v) for v in kg.entities.values())
    dup_names: list[str] = []
    type_of_key: dict[str, list[str]] = {}
    for etype, names in kg.entities.items():
        first: dict[str, str] = {}
        for n in names:
            k = variant_key(n)
            if k in first:
                dup_names.append(f"{n}' ({etype}) repeats '{first[k]}")
            else:
                first[k] = n
                type_of_key.setdefault(k, []).append(etype)
    cross = {k: ts for k, ts in type_of_key.items() if len(ts) > 1}
    n_cross = sum(len(ts) - 1 for ts in cross.values())
    naming = 1.0 - (len(dup_names) + n_cross) / entries if entries else 1.0
    return max(0.0, naming), dup_names, cross


@dataclass
class _RelationProblems:
    """The relation entries of an extraction with a problem, by kind (definitions in the module docstring)."""

    total: int = 0
    bad: int = 0
    repeats: int = 0
    dangling: list[str] = field(default_factory=list)
    self_loops: list[str] = field(default_factory=list)
    reverse: list[str] = field(default_factory=list)


def _relation_problems(kg: ExtractedKG) -> _RelationProblems:
    out = _RelationProblems()
    index = EntityIndex(kg)
    seen: set[tuple[str, str, str]] = set()
    pairs_flagged: set[tuple[str, frozenset[str]]] = set()
    for rtype, rels in kg.relations.items():
        for p in rels:
            out.total += 1
            s, o = variant_key(p.subject), variant_key(p.object)
            problem = False
            if (rtype, s, o) in seen:
                out.repeats += 1
                problem = True
            if not index.lookup(p.subject) or not index.lookup(p.object):
                out.dangling.append(f"{rtype}({p.subject}, {p.object})")
                problem = True
            if s == o:
                out.self_loops.append(f"{rtype}({p.subject}, {p.object})")
                problem = True
            elif (rtype, o, s) in seen and (rtype, frozenset((s, o))) not in pairs_flagged:
                pairs_flagged.add((rtype, frozenset((s, o))))
                out.reverse.append(f"{rtype} between '{p.subject}' and '{p.object}'")
                problem = True
            seen.add((rtype, s, o))
            out.bad += problem
    return out


def _consistency(kg: ExtractedKG) -> _Aspect:
    issues: list[str] = []
    naming, dup_names, cross = _naming(kg)
    if dup_names:
        issues.append(f"{len(dup_names)} duplicate entities: " + "; ".join(f"'{d}'" for d in dup_names[:5]))
    if cross:
        issues.append("Names listed under several types: " + "; ".join(
            f"'{k}' ({', '.join(ts)})" for k, ts in list(cross.items())[:5]))

    rp = _relation_problems(kg)
    total, bad, repeats = rp.total, rp.bad, rp.repeats
    dangling, self_loops, reverse = rp.dangling, rp.self_loops, rp.reverse
    rel_cons = 1.0 - bad / total if total else 1.0
    conflicting = len(self_loops) + len(reverse)
    if repeats:
        issues.append(f"{repeats} repeated relations")
    if dangling:
        issues.append(f"{len(dangling)} relations name entities missing from entities: {_q(dangling)}")
    if self_loops:
        issues.append(f"Self-loops: {_q(self_loops)}")
    if reverse:
        issues.append(f"Relations asserted in both directions: {_q(reverse)}")
    codes = (["duplicate_entities"] if dup_names else []) + (["cross_type_names"] if cross else []) + (
        ["repeated_relations"] if repeats else []) + (["dangling_relations"] if dangling else []) + (
        ["conflicting_relations"] if conflicting else [])
    suggestion = None
    if issues:
        parts = []
        if dup_names or cross:
            parts.append("use one name per entity and one type per name")
        if dangling:
            parts.append("add every relation endpoint to entities under its exact name")
        if repeats or self_loops or reverse:
            parts.append("remove repeated, self-loop and contradictory relations")
        suggestion = "Consistency: " + "; ".join(parts) + f" ({issues[0]})."
    return _Aspect(
        score=(naming + rel_cons) / 2,
        issues=issues,
        codes=codes,
        suggestion=suggestion,
        details=ConsistencyDetails(entity_naming_consistency=_r(naming), relation_consistency=_r(rel_cons),
                                   duplicate_entities=len(dup_names), conflicting_relations=conflicting),
    )


# -- completeness --------------------------------------------------------------------------------

def _completeness(kg: ExtractedKG, schema: ToolSchema, profile: TextProfile) -> _Aspect:
    got_e, got_r = set(covered_entity_types(kg)), set(covered_relation_types(kg))
    miss_e = [t for t in schema.entity_schema if t not in got_e]
    miss_r = [t for t in schema.relation_schema if t not in got_r]
    n_e, n_r = len(schema.entity_schema), len(schema.relation_schema)
    e_cov = (n_e - len(miss_e)) / n_e if n_e else 1.0
    r_cov = (n_r - len(miss_r)) / n_r if n_r else 1.0
    E, R = len(distinct_entities(kg)), len(distinct_relations(kg))
    T = profile.token_count
    density = 1000.0 * (E + R) / T if T else 0.0
    exp = expected_density(n_e, n_r, text_complexity(profile))
    required = (min_count(exp.min_entities_per_1k, T) + min_count(exp.min_relations_per_1k, T)) if T else 0
    factor = min(1.0, (E + R) / required) if required else 1.0
    score = 0.7 * (0.6 * e_cov + 0.4 * r_cov) + 0.3 * factor
    issues: list[str] = []
    if miss_e:
        issues.append(f"Entity types with no entities: {', '.join(miss_e)}")
    if miss_r:
        issues.append(f"Relation types with no relations: {', '.join(miss_r)}")
    if factor < 1.0:
        issues.append(f"{E + R} elements extracted where the text calls for at least {required}")
    codes = [f"missing_entity_type:{t}" for t in miss_e] + [f"missing_relation_type:{t}" for t in miss_r] + (
        ["low_density"] if factor < 1.0 else [])
    suggestion = None
    if issues:
        parts = []
        if miss_e or miss_r:
            parts.append(f"extract the missing types {', '.join([*miss_e, *miss_r])}")
        if factor < 1.0:
            parts.append(f"extract at least {required - E - R} more elements the text states")
        suggestion = "Completeness: " + "; ".join(parts) + "."
    return _Aspect(
        score=score, issues=issues, codes=codes, suggestion=suggestion,
        details=CompletenessDetails(missing_entity_types=miss_e, missing_relation_types=miss_r,
                                    entity_type_coverage=_r(e_cov), relation_type_coverage=_r(r_cov),
                                    extraction_density=_r(density)),
    )


# -- accuracy ------------------------------------------------------------------------------------

def _partial_span_found(name: str, profile: TextProfile) -> bool:
    toks = name_key(name).split(" ")
    n = len(toks)
    if n < 2 or n > _MAX_SPAN_TOKENS:
        return False
    need = max(1, math.ceil(n / 2))
    for size in range(n - 1, need - 1, -1):
        for i in range(0, n - size + 1):
            if profile.contains(" ".join(toks[i : i + size])):
                return True
    return False


def _strip_title(k: str) -> str:
    for t in _TITLES:
        if k.startswith(t):
            return k[len(t):]
    return k


def _too_short(name: str, mentions: RunIndex, budget: WorkBudget) -> bool:
    """Whether a longer mention (canonical, titles stripped) holds ``name`` as a run, not as a variant."""
    k = name_key(name)
    if not k or k in mentions.keys:
        return False
    nk = variant_key(name)
    return any(len(m) > len(k) and variant_key(m) != nk for m in mentions.holding(k, budget))


def _accuracy(kg: ExtractedKG, profile: TextProfile) -> _Aspect:
    mentions = profile.memo("quality.mentions", lambda: RunIndex(_strip_title(name_key(m)) for m in profile.mentions))
    budget = WorkBudget(MATCH_BUDGET)
    entities = distinct_entities(kg)
    fragment_budget = _FRAGMENT_BUDGET // max(len(profile.canonical_text), 1)
    not_in: list[str] = []
    boundary: list[str] = []
    misclass: list[str] = []
    penalty = 0.0
    for etype, name in entities:
        p = 0.0
        if profile.contains(name):
            if _too_short(name, mentions, budget):
                boundary.append(name)
                p = 0.5
        elif _partial_span_found(name, profile) or (
                len(not_in) + len(boundary) < fragment_budget and profile.contains_fragment(name)):
            boundary.append(name)
            p = 0.5
        else:
            not_in.append(name)
            p = 1.0
        want, got = category_of(etype), name_category(name)
        if want is not None and got is not None and want != got:
            misclass.append(f"{name}' as {etype}, looks like {got}")
            p = 1.0
        penalty += p
    e_acc = 1.0 - penalty / len(entities) if entities else 1.0

    rels = distinct_relations(kg)
    rel_missing: list[str] = []
    for rtype, s, o in rels:
        if not profile.near(s, o):
            rel_missing.append(f"{rtype}({s}, {o})")
    r_acc = 1.0 - len(rel_missing) / len(rels) if rels else 1.0

    issues: list[str] = []
    if not_in:
        issues.append(f"{len(not_in)} entities not found in the text: {_q(not_in)}")
    if boundary:
        issues.append(f"{len(boundary)} entities with span boundary errors: {_q(boundary)}")
    if misclass:
        issues.append(f"{len(misclass)} likely type misclassifications: " + "; ".join(f"'{m}" for m in misclass[:5]))
    if rel_missing:
        issues.append(f"{len(rel_missing)} relations whose endpoints never appear near each other in the text: "
                      f"{_q(rel_missing)}")
    codes = (["entities_not_in_text"] if not_in else []) + (["boundary_errors"] if boundary else []) + (
        ["type_misclassifications"] if misclass else []) + (["relations_not_in_text"] if rel_missing else [])
    suggestion = None
    if issues:
        parts = []
        if not_in:
            parts.append(f"drop or correct entities the text does not state ({_q(not_in, 3)})")
        if boundary:
            parts.append(f"use the exact, complete mention as the entity name ({_q(boundary, 3)})")
        if misclass:
            parts.append("re-type misclassified entities")
        if rel_missing:
            parts.append("keep relations the text states between co-occurring entities")
        suggestion = "Accuracy: " + "; ".join(parts) + "."
    return _Aspect(
        score=0.6 * e_acc + 0.4 * r_acc, issues=issues, codes=codes, suggestion=suggestion,
        details=AccuracyDetails(entities_not_in_text=len(not_in), relations_not_in_text=len(rel_missing),
                                boundary_errors=len(boundary), type_misclassifications=len(misclass)),
    )


# -- schema compliance ---------------------------------------------------------------------------

def _schema_compliance(kg: ExtractedKG, schema: ToolSchema) -> _Aspect:
    ents = distinct_entities(kg)
    rels = distinct_relations(kg)
    et, rt = set(schema.entity_schema), set(schema.relation_schema)
    valid_e = sum(1 for t, _ in ents if t in et)
    valid_r = sum(1 for t, _, _ in rels if t in rt)
    bad_e = sorted({t for t, _ in ents if t not in et})
    bad_r = sorted({t for t, _, _ in rels if t not in rt})
    index = EntityIndex(kg)
    violations: list[str] = []
    for t, s, o in rels:
        problems = [x for x in (s, o) if len({ty for ty, _ in index.lookup(x)}) != 1]
        if problems:
            violations.append(f"{t}({s}, {o})")
    total = len(ents) + len(rels)
    score = max(0.0, valid_e + valid_r - len(violations)) / total if total else 1.0
    issues: list[str] = []
    if bad_e:
        issues.append(f"Entity types not in the schema: {', '.join(bad_e)}")
    if bad_r:
        issues.append(f"Relation types not in the schema: {', '.join(bad_r)}")
    if violations:
        issues.append(f"{len(violations)} relations with an endpoint missing from entities or listed under "
                      f"several types: {_q(violations)}")
    codes = (["invalid_entity_types"] if bad_e else []) + (["invalid_relation_types"] if bad_r else []) + (
        ["structure_violations"] if violations else [])
    suggestion = None
    if issues:
        parts = []
        if bad_e or bad_r:
            parts.append(f"use schema types only (replace {', '.join([*bad_e, *bad_r])})")
        if violations:
            parts.append("list every relation endpoint under exactly one entity type")
        suggestion = "Schema compliance: " + "; ".join(parts) + "."
    return _Aspect(
        score=score, issues=issues, codes=codes, suggestion=suggestion,
        details=SchemaComplianceDetails(valid_entity_types=valid_e, invalid_entity_types=len(ents) - valid_e,
                                        valid_relation_types=valid_r, invalid_relation_types=len(rels) - valid_r,
                                        structure_violations=len(violations)),
    )


def evaluate(kg: ExtractedKG, schema: ToolSchema, text: str,
             aspects: list[EvaluationAspect] | None = None) -> QualityReport:
    """Evaluate ``kg``; the tool output plus issue codes (for iteration feedback)."""
    wanted = [a for a in ASPECTS if aspects is None or a in aspects]
    profile = analyze_text(text)
    results: dict[str, _Aspect] = {}
    for a in wanted:
        if a == "consistency":
            results[a] = _consistency(kg)
        elif a == "completeness":
            results[a] = _completeness(kg, schema, profile)
        elif a == "accuracy":
            results[a] = _accuracy(kg, profile)
        else:
            results[a] = _schema_compliance(kg, schema)
    weight = sum(WEIGHTS[a] for a in wanted)
    overall = sum(WEIGHTS[a] * results[a].score for a in wanted) / weight
    models = {
        "consistency": ConsistencyResult, "completeness": CompletenessResult,
        "accuracy": AccuracyResult, "schema_compliance": SchemaComplianceResult,
    }

    def results_model() -> EvaluationResults:  # built twice, nothing shared: cheaper than a deep copy
        return EvaluationResults(**{
            a: models[a](score=_r(r.score), issues=list(r.issues),  # type: ignore[arg-type]
                         details=type(r.details)(**{k: list(v) if isinstance(v, list) else v  # type: ignore[arg-type]
                                                    for k, v in r.details}))  # type: ignore[attr-defined]
            for a, r in results.items()
        })

    ev = results_model()
    by_deficit = sorted(wanted, key=lambda a: (-WEIGHTS[a] * (1.0 - results[a].score), ASPECTS.index(a)))
    suggestions = [results[a].suggestion for a in by_deficit if results[a].suggestion]
    if not suggestions:
        suggestions = ["No quality issues found: continue with query_entity_disambiguation."]
    out = QualityMetricsOutput(
        evaluation_aspects=wanted,
        evaluation_results=ev,
        overall_score=_r(overall),
        quality_level=quality_level(overall),
        improvement_suggestions=suggestions,  # type: ignore[arg-type]
        detailed_metrics=results_model(),
    )
    report = QualityReport(output=out, codes=[c for a in wanted for c in results[a].codes])
    if aspects is None or len(wanted) == len(ASPECTS):
        remember(kg, schema, text, out.overall_score, report.codes)
    return report


@tool(read_only=True, idempotent=True)
def query_quality_metrics(params: QualityMetricsInput, *, context: ToolContext) -> QualityMetricsOutput:
    """Optional quality check of an extraction against its text and schema: consistency (duplicates, naming, conflicting relations), completeness (missing types, density), accuracy (entities and relations not in the text, span boundary errors, type misclassifications) and schema compliance, each scored 0-1, combined with weights 30/30/25/15 into an overall score and a level (excellent >= 0.9, good >= 0.8, fair >= 0.7, poor >= 0.6, very_poor), with prioritised improvement suggestions.

    Definitions are in the module docstring.
    """
    return evaluate(params.extracted_kg, params.schema_, params.text, params.evaluation_aspects).output
