r"""``query_extraction_density``: is the extraction dense enough for the text and the schema?

Definitions (T = tokens, E = distinct entities, R = distinct relations; token, word, sentence and
mention conventions are those of :mod:`kgr.tools._text`):

* **Densities**: ``entities_per_1k_tokens = 1000·E/T``, ``relations_per_1k_tokens = 1000·R/T``,
  ``kg_density_per_1k_tokens = 1000·(E+R)/T`` (all 0 for an empty text);
  ``entity_relation_ratio = E / max(R, 1)``.
* **Text complexity** (0-1), the mean of three saturating features:
  ``min(avg_sentence_length/25, 1)``, ``min(technical_terms/words / 0.10, 1)`` and
  ``min(entity_mentions/words / 0.20, 1)``.
* **Expected densities**: a domain benchmark ``(b_e, b_r)`` per 1k tokens (:data:`DOMAIN_BENCHMARKS`;
  general = 30 entities, 20 relations) times a complexity factor
  ``(1 + 0.05·min(n_types, 20)) · (0.75 + 0.5·complexity)``, where ``n_types`` is the number of
  schema entity (resp. relation) types; a side with no schema types expects 0.
  ``min = 0.5·expected`` and ``max = 3·expected``; ``schema_complexity`` = entity + relation types.
* **Thresholds in counts**: the minimum is met when ``E ≥ floor(min·T/1000)``; over-extraction is
  ``E > ceil(max·T/1000)`` (same for R). Counting this way keeps short texts from tripping the
  per-1k rates (a 10-token text needs no entity, and may hold a couple).
* **Ratios**: ``entity_density_ratio = rate/expected`` (1.0 when nothing is expected); likewise for
  relations. ``balance_score = min(ratios)/max(ratios)`` (1.0 when a side expects nothing or both
  are 0). ``overall_density_score = 0.4·min(e_ratio,1) + 0.4·min(r_ratio,1) + 0.2·balance``.
* **Adequacy threshold** ``0.65 + 0.15·complexity`` (0.65-0.80: harder texts must be denser).

Assessment level, first rule that applies:

1. ``over_extraction``: a maximum is exceeded (``potential_over_extraction``);
2. ``insufficient``: neither minimum is met;
3. ``moderate``: one minimum is met, or both but ``balance < 0.5`` or the overall score is below
   the adequacy threshold;
4. ``excellent``: both ratios ≥ 1 (at or above the expected densities);
5. ``adequate`` otherwise.

``needs_more_extraction`` is true exactly for ``insufficient`` and ``moderate``: a minimum not met,
a significant imbalance, or a complexity-adjusted score below threshold — and never when a
maximum is exceeded (appendix A.4, "Critical Decision Logic"). An empty text needs nothing more.

Worked example (``tests/tools/test_density.py`` builds this text): 200 tokens, 150 words in 10
sentences, 3 technical terms, 10 mentions; a schema of 2 entity and 1 relation types; general
domain. complexity = (15/25 + (3/150)/0.1 + (10/150)/0.2)/3 = (0.6 + 0.2 + 0.3333)/3 = 0.3778;
text factor 0.75 + 0.5·0.3778 = 0.9389; entity factor 1.1·0.9389 = 1.0328, so 30.98 expected
entities per 1k (min 15.49, max 92.95); relation factor 1.05·0.9389 = 0.9858, so 19.72 expected
relations per 1k (min 9.86). Minimum counts: floor(15.49·0.2) = 3 entities, floor(9.86·0.2) = 1
relation. With E = 6 and R = 3: rates 30 and 15, ratios 0.9683 and 0.7608, balance 0.7857, score
0.4·0.9683 + 0.4·0.7608 + 0.2·0.7857 = 0.8488 ≥ 0.65 + 0.15·0.3778 = 0.7067: ``adequate``, no
more extraction needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgr.model.canonical import name_key
from kgr.model.kg import ExtractedKG
from kgr.model.tools import (
    AssessmentLevel,
    ComplexityFeatures,
    CurrentDensity,
    DensityAssessment,
    ExpectedDensity,
    ExtractionDensityInput,
    ExtractionDensityOutput,
    TextStats,
)
from kgr.tools._cues import category_of, entity_type_evidence, relation_type_evidence
from kgr.tools._kg import covered_entity_types, covered_relation_types, distinct_entities, distinct_relations
from kgr.tools._text import MATCH_BUDGET, RunIndex, TextProfile, WorkBudget, analyze_text
from kgr.tools.context import ToolContext
from kgr.tools.registry import tool

__all__ = [
    "query_extraction_density",
    "DOMAIN_BENCHMARKS",
    "text_complexity",
    "expected_density",
    "min_count",
    "MIN_FACTOR",
    "MAX_FACTOR",
    "BALANCE_THRESHOLD",
]

#: Expected (entities, relations) per 1k tokens before complexity adjustment, by domain.
DOMAIN_BENCHMARKS: dict[str, tuple[float, float]] = {
    "general": (30.0, 20.0),
    "medical": (40.0, 25.0),
    "biomedical": (40.0, 25.0),
    "financial": (35.0, 22.0),
    "finance": (35.0, 22.0),
    "legal": (25.0, 18.0),
    "scientific": (35.0, 25.0),
    "science": (35.0, 25.0),
    "news": (35.0, 20.0),
    "technical": (30.0, 22.0),
    "technology": (30.0, 22.0),
}
#: Minimum density = MIN_FACTOR × expected; maximum = MAX_FACTOR × expected.
MIN_FACTOR = 0.5
MAX_FACTOR = 3.0
#: Below this balance score, entities and relations are significantly imbalanced.
BALANCE_THRESHOLD = 0.5
_EPS = 1e-9


def _r(x: float) -> float:
    return round(x, 4)


def text_complexity(profile: TextProfile) -> float:
    """Text complexity in [0, 1] (definition in the module docstring)."""
    if profile.word_count == 0:
        return 0.0
    s_len = min(profile.avg_sentence_length / 25.0, 1.0)
    s_tech = min(profile.technical_terms / profile.word_count / 0.10, 1.0)
    s_ment = min(len(profile.mentions) / profile.word_count / 0.20, 1.0)
    return (s_len + s_tech + s_ment) / 3.0


def _benchmark(domain: str | None) -> tuple[tuple[float, float], bool]:
    if domain is None:
        return DOMAIN_BENCHMARKS["general"], True
    key = domain.strip().casefold()
    if key in DOMAIN_BENCHMARKS:
        return DOMAIN_BENCHMARKS[key], True
    return DOMAIN_BENCHMARKS["general"], False


def expected_density(n_entity_types: int, n_relation_types: int, complexity: float,
                     domain: str | None = None) -> ExpectedDensity:
    """Expected, minimum and maximum densities per 1k tokens for a schema size and text complexity."""
    (b_e, b_r), _ = _benchmark(domain)
    text_factor = 0.75 + 0.5 * complexity
    ecf = (1 + 0.05 * min(n_entity_types, 20)) * text_factor if n_entity_types else 0.0
    rcf = (1 + 0.05 * min(n_relation_types, 20)) * text_factor if n_relation_types else 0.0
    exp_e, exp_r = b_e * ecf, b_r * rcf
    return ExpectedDensity(
        expected_entities_per_1k=exp_e,
        expected_relations_per_1k=exp_r,
        min_entities_per_1k=MIN_FACTOR * exp_e,
        min_relations_per_1k=MIN_FACTOR * exp_r,
        max_entities_per_1k=MAX_FACTOR * exp_e,
        max_relations_per_1k=MAX_FACTOR * exp_r,
        schema_complexity=n_entity_types + n_relation_types,
        entity_complexity_factor=ecf,
        relation_complexity_factor=rcf,
    )


def min_count(rate_per_1k: float, tokens: int) -> int:
    """Fewest elements a rate asks of ``tokens`` tokens: ``floor(rate_per_1k * tokens / 1000)``, the
    product rounded to 9 decimals first so that float noise cannot drop it below an integer.

    >>> min_count(2.0, 500), min_count(3.0, 499)
    (1, 1)
    """
    return math.floor(round(rate_per_1k * tokens / 1000.0, 9))


def _max_count(rate_per_1k: float, tokens: int) -> int:
    return math.ceil(round(rate_per_1k * tokens / 1000.0, 9))


def _quote(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def unextracted_mentions(profile: TextProfile, kg: ExtractedKG, *, keep_years: bool, limit: int = 8) -> list[str]:
    """Up to ``limit`` mentions in the text matching no extracted entity, in order of appearance.

    A mention matches an entity when either's canonical tokens contain the other's as a contiguous
    run (``"Dr. Smith"`` matches ``"Smith"``; ``"Grace"`` matches ``"Grace Hopper"``).
    """
    index = RunIndex(name_key(n) for names in kg.entities.values() for n in names)
    keys, budget = index.keys, WorkBudget(MATCH_BUDGET)
    out: list[str] = []
    seen: set[str] = set()
    for m in profile.mentions:
        k = name_key(m)
        if not k or k in seen or (not keep_years and k.isdigit()):
            continue
        seen.add(k)
        toks = k.split(" ")[:8]
        inside = any(" ".join(toks[i:j]) in keys for i in range(len(toks)) for j in range(i + 1, len(toks) + 1))
        if inside or any(True for _ in index.holding(k, budget)):
            continue
        if budget.left < 0:  # spent (adversarial input): a mention not compared is not reported
            break
        out.append(m)
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class _Assessment:
    """How an extraction's densities compare with the expected ones (definitions in the module docstring)."""

    e_rate: float
    r_rate: float
    e_ratio: float
    r_ratio: float
    balance: float
    overall: float
    meets_e: bool
    meets_r: bool
    over: bool
    level: AssessmentLevel
    needs_more: bool


def _assess(E: int, R: int, T: int, exp: ExpectedDensity, complexity: float) -> _Assessment:
    """Rates, ratios, balance, overall score and assessment level of ``E`` entities and ``R``
    relations in ``T`` tokens."""
    e_rate = 1000.0 * E / T if T else 0.0
    r_rate = 1000.0 * R / T if T else 0.0
    e_vacuous = exp.expected_entities_per_1k <= 0
    r_vacuous = exp.expected_relations_per_1k <= 0
    e_ratio = 1.0 if e_vacuous else e_rate / exp.expected_entities_per_1k
    r_ratio = 1.0 if r_vacuous else r_rate / exp.expected_relations_per_1k
    if e_vacuous or r_vacuous or max(e_ratio, r_ratio) <= _EPS:
        balance = 1.0
    else:
        balance = min(e_ratio, r_ratio) / max(e_ratio, r_ratio)
    overall = 0.4 * min(e_ratio, 1.0) + 0.4 * min(r_ratio, 1.0) + 0.2 * balance
    threshold = 0.65 + 0.15 * complexity

    if T == 0:
        meets_e = meets_r = True
        over = E + R > 0
    else:
        meets_e = e_vacuous or E >= min_count(exp.min_entities_per_1k, T)
        meets_r = r_vacuous or R >= min_count(exp.min_relations_per_1k, T)
        over_e = not e_vacuous and E > _max_count(exp.max_entities_per_1k, T)
        over_r = not r_vacuous and R > _max_count(exp.max_relations_per_1k, T)
        over = over_e or over_r

    level: AssessmentLevel
    if over:
        level = "over_extraction"
    elif T == 0:
        level = "insufficient"
    elif not meets_e and not meets_r:
        level = "insufficient"
    elif not (meets_e and meets_r) or balance < BALANCE_THRESHOLD or overall < threshold - _EPS:
        level = "moderate"
    elif e_ratio >= 1.0 - _EPS and r_ratio >= 1.0 - _EPS:
        level = "excellent"
    else:
        level = "adequate"
    return _Assessment(e_rate, r_rate, e_ratio, r_ratio, balance, overall, meets_e, meets_r, over, level,
                       needs_more=T > 0 and level in ("insufficient", "moderate"))


@tool(read_only=True, idempotent=True)
def query_extraction_density(params: ExtractionDensityInput, *, context: ToolContext) -> ExtractionDensityOutput:
    """Mandatory first check after every extraction attempt: measures the text (tokens, sentences, complexity), compares the density of extracted entities and relations per 1,000 tokens with the range expected for the schema, text and domain, and says whether to extract more (needs_more_extraction) and what to extract next. Repeat extraction and this call until needs_more_extraction is false; only then call the other tools.

    Definitions and thresholds are in the module docstring.
    """
    profile = analyze_text(params.text)
    schema = params.schema_
    kg = params.extracted_kg
    T = profile.token_count
    entities = distinct_entities(kg)
    relations = distinct_relations(kg)
    E, R = len(entities), len(relations)
    n_et, n_rt = len(schema.entity_schema), len(schema.relation_schema)

    complexity = text_complexity(profile)
    exp = expected_density(n_et, n_rt, complexity, params.domain)
    a = _assess(E, R, T, exp, complexity)
    recs = _recommendations(params, profile, exp, E=E, R=R, e_rate=a.e_rate, r_rate=a.r_rate, e_ratio=a.e_ratio,
                            r_ratio=a.r_ratio, balance=a.balance, level=a.level, over=a.over,
                            needs_more=a.needs_more, meets_e=a.meets_e, meets_r=a.meets_r)

    return ExtractionDensityOutput(
        text_stats=TextStats(token_count=T, sentence_count=profile.sentence_count, word_count=profile.word_count,
                             character_count=profile.character_count),
        current_density=CurrentDensity(
            total_entities=E,
            total_relations=R,
            total_kg_elements=E + R,
            entity_type_count=len(covered_entity_types(kg)),
            relation_type_count=len(covered_relation_types(kg)),
            entities_per_1k_tokens=_r(a.e_rate),
            relations_per_1k_tokens=_r(a.r_rate),
            kg_density_per_1k_tokens=_r(a.e_rate + a.r_rate),
            entity_relation_ratio=_r(E / max(R, 1)),
        ),
        expected_density=ExpectedDensity(**{k: (_r(v) if isinstance(v, float) else v) for k, v in exp.model_dump().items()}),
        complexity_features=ComplexityFeatures(
            entity_mentions=len(profile.mentions),
            avg_sentence_length=_r(profile.avg_sentence_length),
            technical_terms=profile.technical_terms,
            schema_entity_types=n_et,
            schema_relation_types=n_rt,
            complexity_score=_r(complexity),
        ),
        density_assessment=DensityAssessment(
            entity_density_ratio=_r(a.e_ratio),
            relation_density_ratio=_r(a.r_ratio),
            overall_density_score=_r(a.overall),
            assessment_level=a.level,
            is_adequate=a.level in ("adequate", "excellent"),
            meets_minimum_thresholds=a.meets_e and a.meets_r,
            potential_over_extraction=a.over,
            balance_score=_r(a.balance),
        ),
        needs_more_extraction=a.needs_more,
        recommendations=recs,
    )


def _recommendations(params: ExtractionDensityInput, profile: TextProfile, exp: ExpectedDensity, *, E: int, R: int,
                     e_rate: float, r_rate: float, e_ratio: float, r_ratio: float, balance: float,
                     level: str, over: bool, needs_more: bool, meets_e: bool, meets_r: bool) -> list[str]:
    schema, kg = params.schema_, params.extracted_kg
    recs: list[str] = []
    if profile.token_count == 0:
        recs.append("The text is empty: there is nothing to extract.")
        if E + R:
            recs.append("Remove the extracted elements: an empty text supports none of them.")
        return recs

    if over:
        unsupported = [n for _, n in distinct_entities(kg) if not profile.contains(n)]
        if E and e_rate > exp.max_entities_per_1k:
            msg = (f"Entity density {e_rate:.1f} per 1k tokens exceeds the maximum {exp.max_entities_per_1k:.1f}: "
                   "keep only entities the text states")
            recs.append(msg + (f"; not found in the text: {_quote(unsupported)}." if unsupported else "."))
        if R and r_rate > exp.max_relations_per_1k:
            recs.append(f"Relation density {r_rate:.1f} per 1k tokens exceeds the maximum "
                        f"{exp.max_relations_per_1k:.1f}: drop relations the text does not state explicitly.")

    covered_e = set(covered_entity_types(kg))
    covered_r = set(covered_relation_types(kg))
    if needs_more:
        for t in schema.entity_schema:
            if t not in covered_e:
                ev = entity_type_evidence(t, profile)
                hint = f" (the text suggests some: '{ev.snippet}')" if ev else ""
                recs.append(f"Extract {t} entities: none extracted yet{hint}.")
        keep_years = any(category_of(t) == "date" for t in schema.entity_schema)
        missing = unextracted_mentions(profile, kg, keep_years=keep_years, limit=8)
        if missing:
            recs.append(f"Candidate entity mentions not extracted yet: {_quote(missing, 8)}; "
                            "give each the matching schema entity type.")
        for t in schema.relation_schema:
            if t not in covered_r:
                ev = relation_type_evidence(t, profile)
                hint = f" (the text suggests some: '{ev.snippet}')" if ev else ""
                recs.append(f"Extract {t} relations: none extracted yet{hint}.")
        if schema.relation_schema and (not meets_r or r_ratio < 1.0):
            linked = {name_key(x) for _, s, o in distinct_relations(kg) for x in (s, o)}
            isolated = [n for _, n in distinct_entities(kg) if name_key(n) not in linked]
            if isolated:
                recs.append(f"Link the extracted entities: {len(isolated)} take part in no relation "
                            f"({_quote(isolated)}).")
        if balance < BALANCE_THRESHOLD:
            if e_ratio < r_ratio:
                recs.append(f"Entities lag behind relations (ratios {e_ratio:.2f} vs {r_ratio:.2f}): extract the "
                            "remaining entities, including every relation endpoint.")
            else:
                recs.append(f"Relations lag behind entities (ratios {r_ratio:.2f} vs {e_ratio:.2f}): extract the "
                            "relations the text states between the extracted entities.")
        if meets_e and meets_r and balance >= BALANCE_THRESHOLD:
            recs.append(f"Densities meet the minimums but the overall score is below the threshold for this "
                        f"text's complexity: aim for {exp.expected_entities_per_1k:.1f} entities and "
                        f"{exp.expected_relations_per_1k:.1f} relations per 1k tokens.")

    unknown_e = [t for t in covered_e if t not in schema.entity_schema]
    unknown_r = [t for t in covered_r if t not in schema.relation_schema]
    if unknown_e or unknown_r:
        parts = ([f"entity types {', '.join(sorted(unknown_e))}"] if unknown_e else []) + (
            [f"relation types {', '.join(sorted(unknown_r))}"] if unknown_r else [])
        recs.append(f"Not in the schema: {'; '.join(parts)}. Map them to schema types or drop them.")
    if params.domain is not None and not _benchmark(params.domain)[1]:
        recs.append(f"Unknown domain '{params.domain}': general benchmarks used "
                    f"(known: {', '.join(sorted(DOMAIN_BENCHMARKS))}).")
    if not needs_more and not over:
        recs.append(f"Density is {level}: no further extraction needed; continue with query_entity_disambiguation.")
    return recs
