"""``query_iterative_feedback``: is multi-round extraction still paying off, and what to do next?

Rounds are ``extraction_history`` followed by ``extracted_kg`` (when the history already ends with
the current extraction it is not counted twice); ``current_iteration`` = number of rounds. Each
round's quality q is the ``overall_score`` of ``query_quality_metrics`` (all aspects) against the
same text and schema. Changes are in **percentage points** of that 0-1 score ("% per iteration").

* ``improvement_trend`` = ``[100·(q_i − q_{i−1})]``; ``recent_improvement`` = its last value (0 with
  one round); ``average_improvement`` = its mean; ``overall_quality_change`` = 100·(q_last − q_first);
  ``extraction_volume_change`` = elements now − elements in the first round.
* ``trend``: mean of the last (up to) three improvements > 1 → ``improving``, < −1 → ``declining``,
  else ``stagnant`` (also with a single round).
* ``convergence_status``: one round → ``insufficient_data``; the last (up to) two improvements all
  within ±1 → ``converged``; the last two of opposite signs, both beyond ±1 → ``oscillating``; the
  last < −1 → ``diverging``; else ``converging``.
* ``effectiveness`` (on the average improvement): fewer than 2 rounds → ``insufficient_data``;
  > 10 → ``high``; ≥ 5 → ``medium``; > 0 → ``low``; else ``stagnant``.
* ``should_continue_iteration``: false when ``current_iteration ≥ max_iterations``; otherwise true
  for the first round; otherwise false when the trend is declining or the recent improvement is at
  most 1 point; true otherwise (appendix A.4 stop/continue rules).
* ``iteration_focus`` by phase: ``3·i ≤ max`` → ``coverage_expansion``; ``3·i ≤ 2·max`` →
  ``quality_improvement``; else ``refinement`` (i = current iteration).
* Issues are the quality tool's issue codes per round (``missing_entity_type:Date``,
  ``boundary_errors``...) and the issues of ``feedback_history`` (strings, or ``issues`` of entries).
  ``issue_frequency`` counts the rounds (feedback entries) an issue appears in. An issue is
  **recurring** when it appears in at least two rounds and still in the current one (feedback
  issues: in at least two entries). Severity is the share of rounds (entries) it appears in:
  ≥ 0.75 high, ≥ 0.5 medium, else low.
* ``priority_strategy``: ``pattern_specific`` when issues recur; otherwise by phase —
  ``coverage_expansion``, then ``quality_focus``, then ``balanced_improvement`` for refinement.
"""

from __future__ import annotations

from collections import Counter

from kgr.model.kg import ExtractedKG
from kgr.model.tools import (
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
    ToolSchema,
    Trend,
)
from kgr.tools._kg import distinct_entities, distinct_relations
from kgr.tools.context import ToolContext
from kgr.tools._score_memo import recall
from kgr.tools.quality import evaluate
from kgr.tools.registry import tool

__all__ = [
    "query_iterative_feedback",
    "trend_of",
    "convergence_of",
    "effectiveness_of",
    "focus_of",
    "should_continue",
    "score_and_codes",
    "DEFAULT_MAX_ITERATIONS",
]

DEFAULT_MAX_ITERATIONS = 5
#: Improvements (percentage points) within ±this count as no change.
FLAT = 1.0

_CATEGORY = {
    "missing_entity_type": "coverage", "missing_relation_type": "coverage", "low_density": "coverage",
    "duplicate_entities": "consistency", "cross_type_names": "consistency", "repeated_relations": "consistency",
    "dangling_relations": "consistency", "conflicting_relations": "consistency",
    "entities_not_in_text": "accuracy", "boundary_errors": "accuracy", "type_misclassifications": "accuracy",
    "relations_not_in_text": "accuracy",
    "invalid_entity_types": "schema_compliance", "invalid_relation_types": "schema_compliance",
    "structure_violations": "schema_compliance",
}
_SOLUTION = {
    "missing_entity_type": "Search the text specifically for {arg} entities and extract every one it names.",
    "missing_relation_type": "Look for sentences expressing {arg} between extracted entities and extract them.",
    "low_density": "Extract systematically, sentence by sentence, until the density check passes.",
    "duplicate_entities": "Merge naming variants into one canonical name per entity.",
    "cross_type_names": "Give each name one entity type; pick the type the text supports.",
    "repeated_relations": "Emit each relation once.",
    "dangling_relations": "Add every relation endpoint to entities under the exact same name.",
    "conflicting_relations": "Remove self-loops and keep one direction of directed relations.",
    "entities_not_in_text": "Only extract entities the text states; copy names verbatim from the text.",
    "boundary_errors": "Use complete mentions as names (e.g. full person and organisation names).",
    "type_misclassifications": "Re-check entity types against the cue in each name (Inc., Dr., dates).",
    "relations_not_in_text": "Only extract relations between entities mentioned in the same or adjacent sentences.",
    "invalid_entity_types": "Use only the schema's entity types.",
    "invalid_relation_types": "Use only the schema's relation types.",
    "structure_violations": "List each relation endpoint under exactly one entity type.",
}


def _r(x: float) -> float:
    return round(x, 4)


def trend_of(improvements: list[float]) -> Trend:
    """Trend from per-iteration improvements (percentage points).

    >>> trend_of([]), trend_of([5.0, 0.5, 0.0, 0.0]), trend_of([-3.0, -1.5]), trend_of([0.0, 3.0, 0.5])
    ('stagnant', 'stagnant', 'declining', 'improving')
    """
    if not improvements:
        return "stagnant"
    window = improvements[-3:]
    mean = sum(window) / len(window)
    if mean > FLAT:
        return "improving"
    if mean < -FLAT:
        return "declining"
    return "stagnant"


def convergence_of(improvements: list[float]) -> ConvergenceStatus:
    """Convergence status from per-iteration improvements (percentage points)."""
    if not improvements:
        return "insufficient_data"
    last = improvements[-2:]
    if all(abs(d) < FLAT for d in last):
        return "converged"
    if len(last) == 2 and last[0] * last[1] < 0 and all(abs(d) >= FLAT for d in last):
        return "oscillating"
    if last[-1] < -FLAT:
        return "diverging"
    return "converging"


def effectiveness_of(rounds: int, average_improvement: float) -> Effectiveness:
    """Effectiveness level from the number of rounds and the mean improvement (percentage points).

    >>> [effectiveness_of(1, 50.0), effectiveness_of(3, 10.01), effectiveness_of(3, 10.0), effectiveness_of(3, 5.0),
    ...  effectiveness_of(3, 4.99), effectiveness_of(3, 0.0)]
    ['insufficient_data', 'high', 'medium', 'medium', 'low', 'stagnant']
    """
    if rounds < 2:
        return "insufficient_data"
    a = round(average_improvement, 4)
    if a > 10.0:
        return "high"
    if a >= 5.0:
        return "medium"
    if a > 0.0:
        return "low"
    return "stagnant"


def focus_of(iteration: int, max_iterations: int) -> IterationFocus:
    """Phase of an iteration: first third, second third, last third.

    >>> [focus_of(i, 5) for i in range(1, 7)]
    ['coverage_expansion', 'quality_improvement', 'quality_improvement', 'refinement', 'refinement', 'refinement']
    """
    if 3 * iteration <= max_iterations:
        return "coverage_expansion"
    if 3 * iteration <= 2 * max_iterations:
        return "quality_improvement"
    return "refinement"


def should_continue(iteration: int, max_iterations: int, trend: Trend, recent_improvement: float) -> tuple[bool, str]:
    """The continue/stop decision and its reason."""
    if iteration >= max_iterations:
        return False, f"the maximum of {max_iterations} iterations is reached"
    if iteration == 1:
        return True, "first iteration"
    if trend == "declining":
        return False, "quality is declining"
    if round(recent_improvement, 4) <= FLAT:
        return False, f"the last iteration improved quality by {recent_improvement:.2f} points (at most {FLAT:g})"
    return True, f"quality improved by {recent_improvement:.2f} points in the last iteration"


def score_and_codes(kg: ExtractedKG, schema: ToolSchema, text: str) -> tuple[float, tuple[str, ...]]:
    """The overall score and issue codes of a full :func:`kgr.tools.quality.evaluate`, remembered
    from a recent evaluation of the same content when there is one (:mod:`kgr.tools._score_memo`)."""
    hit = recall(kg, schema, text)
    if hit is not None:
        return hit
    report = evaluate(kg, schema, text)
    return report.output.overall_score, tuple(report.codes)


def _norm_issue(s: str) -> str:
    return "feedback:" + " ".join(s.casefold().split())[:80]


def _feedback_issues(history: list[str | FeedbackEntry] | None) -> list[set[str]]:
    out: list[set[str]] = []
    for item in history or []:
        if isinstance(item, str):
            out.append({_norm_issue(item)} if item.strip() else set())
        else:
            out.append({_norm_issue(i) for i in item.issues if i.strip()})
    return out


def _volume(kg: ExtractedKG) -> int:
    return len(distinct_entities(kg)) + len(distinct_relations(kg))


def _strategies(codes: set[str], recurring: list[str], schema: ToolSchema) -> dict[StrategyType, Strategy]:
    missing = [c.split(":", 1)[1] for c in sorted(codes) if c.startswith("missing_")]
    acc = [c for c in sorted(codes) if _CATEGORY.get(c.split(":", 1)[0]) in ("accuracy", "consistency")]
    cov_actions = ([f"Extract the missing types: {', '.join(missing)}."] if missing else []) + [
        "Re-read the text sentence by sentence for entities and relations not extracted yet.",
        "Add the relations between already extracted entities.",
    ]
    qual_actions = [_SOLUTION[c] for c in acc] or ["Verify each entity and relation against the text."]
    pattern_actions = [_SOLUTION.get(c.split(":", 1)[0], "Address: " + c.split(":", 1)[-1]).format(
        arg=c.split(":", 1)[-1]) for c in recurring] or ["No recurring issues to address."]
    return {
        "pattern_specific": Strategy(type="pattern_specific", description="Fix the issues that persist across rounds.",
                                     actions=pattern_actions),
        "coverage_expansion": Strategy(type="coverage_expansion",
                                       description="Extract the entities and relations still missing.",
                                       actions=cov_actions),
        "quality_focus": Strategy(type="quality_focus",
                                  description="Improve the accuracy and consistency of what is extracted.",
                                  actions=qual_actions),
        "balanced_improvement": Strategy(type="balanced_improvement",
                                         description="Fine-tune coverage and quality together, then stop.",
                                         actions=[*cov_actions[:1], *qual_actions[:2],
                                                  "Check names and types for consistency across the whole extraction."]),
    }


def _problem_patterns(round_codes: list[set[str]], feedback: list[set[str]]) -> ProblemPatterns:
    """The issues that recur: codes in two or more rounds and still in the current one, then
    feedback issues in two or more entries, with their categories, solutions and severities."""
    freq = Counter(c for codes in round_codes for c in codes)
    fb_freq = Counter(c for issues in feedback for c in issues)
    recurring = [c for c in sorted(freq) if freq[c] >= 2 and c in round_codes[-1]]
    recurring += [c for c in sorted(fb_freq) if fb_freq[c] >= 2]

    def severity(c: str) -> Severity:
        share = fb_freq[c] / len(feedback) if c.startswith("feedback:") else freq[c] / len(round_codes)
        return "high" if share >= 0.75 else "medium" if share >= 0.5 else "low"

    return ProblemPatterns(
        recurring_issues=recurring,
        pattern_types=sorted({"feedback" if c.startswith("feedback:") else _CATEGORY[c.split(":", 1)[0]]
                              for c in recurring}),
        suggested_solutions=[
            (f"Address the recurring feedback: {c.removeprefix('feedback:')}" if c.startswith("feedback:")
             else _SOLUTION[c.split(":", 1)[0]].format(arg=c.split(":", 1)[-1]))
            for c in recurring
        ],
        issue_frequency={**dict(sorted(freq.items())), **dict(sorted(fb_freq.items()))},
        severity_levels={c: severity(c) for c in recurring},
    )


def _priority(recurring: list[str], focus: IterationFocus) -> StrategyType:
    """The strategy to lead with: the recurring patterns first, else the phase's own."""
    if recurring:
        return "pattern_specific"
    if focus == "coverage_expansion":
        return "coverage_expansion"
    if focus == "quality_improvement":
        return "quality_focus"
    return "balanced_improvement"


def _next_steps(cont: bool, reason: str, priority: Strategy, focus: IterationFocus) -> list[str]:
    """What the agent should do next: another round led by ``priority``, or the final checks."""
    if not cont:
        return [f"Stop iterating: {reason}.", "Run query_quality_metrics for a final assessment.",
                "Run query_entity_disambiguation, then query_kg_storage."]
    return [f"Continue: {reason}.", *priority.actions[:3],
            {"coverage_expansion": "Focus this round on breadth: extract everything the text names.",
             "quality_improvement": "Focus this round on accuracy: verify names, spans and types.",
             "refinement": "Focus this round on consistency: one name and one type per entity."}[focus],
            "Run query_extraction_density on the new extraction."]


@tool(read_only=True, idempotent=True)
def query_iterative_feedback(params: IterativeFeedbackInput, *, context: ToolContext) -> IterativeFeedbackOutput:
    """Optional multi-round check: scores every round of the extraction history and the current extraction with the quality metrics, reports the trend, recent and overall improvement (percentage points), convergence, recurring problems with solutions, the strategy and focus for the next round by phase (coverage_expansion, quality_improvement, refinement), the effectiveness level, and whether to continue iterating (default limit 5 iterations).

    Definitions are in the module docstring.
    """
    schema = params.schema_
    rounds = list(params.extraction_history)
    if not rounds or rounds[-1] != params.extracted_kg:
        rounds.append(params.extracted_kg)
    scored = [score_and_codes(kg, schema, params.text) for kg in rounds]
    q = [score for score, _ in scored]
    n = len(rounds)
    improvements = [_r(100.0 * (b - a)) for a, b in zip(q, q[1:])]
    recent = improvements[-1] if improvements else 0.0
    average = _r(sum(improvements) / len(improvements)) if improvements else 0.0
    trend = trend_of(improvements)

    round_codes = [set(codes) for _, codes in scored]
    patterns = _problem_patterns(round_codes, _feedback_issues(params.feedback_history))
    recurring = patterns.recurring_issues
    focus = focus_of(n, params.max_iterations)
    strategies = _strategies(round_codes[-1], recurring, schema)
    chosen = _priority(recurring, focus)
    ordered = [strategies[chosen], *[s for t, s in strategies.items() if t != chosen]]
    cont, reason = should_continue(n, params.max_iterations, trend, recent)

    return IterativeFeedbackOutput(
        progress_analysis=ProgressAnalysis(
            trend=trend,
            recent_improvement=recent,
            overall_quality_change=_r(100.0 * (q[-1] - q[0])),
            extraction_volume_change=float(_volume(rounds[-1]) - _volume(rounds[0])),
            convergence_status=convergence_of(improvements),
        ),
        problem_patterns=patterns,
        optimization_strategy=OptimizationStrategy(strategies=ordered, priority_strategy=strategies[chosen],
                                                   iteration_focus=focus),
        iteration_effectiveness=IterationEffectiveness(
            effectiveness=effectiveness_of(n, average),
            average_improvement=average,
            improvement_trend=improvements,
            total_iterations=n,
        ),
        should_continue_iteration=cont,
        current_iteration=n,
        max_iterations=params.max_iterations,
        next_steps=_next_steps(cont, reason, strategies[chosen], focus),
    )
