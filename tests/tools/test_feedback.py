"""query_iterative_feedback on hand-made rounds; expected values are worked out here.

Text "Ada met Bob." (4 tokens: no minimum density), schema Person, City / MET. Per round, the
quality tool gives consistency 1, accuracy 1 and schema compliance 1 (everything extracted is in
the text and typed by the schema) and completeness 0.7·(0.6·e + 0.4·r) + 0.3, so

  round {}                        completeness 0.3   overall 0.25 + 0.3·0.3 + 0.3 + 0.15 = 0.79
  round Person [Ada, Bob]         completeness 0.51  overall 0.25 + 0.3·0.51 + 0.45       = 0.853
  round + MET(Ada, Bob)           completeness 0.79  overall 0.25 + 0.3·0.79 + 0.45       = 0.937
"""

from __future__ import annotations

import pytest

from kgr.tools.feedback import convergence_of, effectiveness_of, focus_of, should_continue, trend_of
from kgr.tools.registry import call_tool

TEXT = "Ada met Bob."
SCHEMA = {"entity_schema": ["Person", "City"], "relation_schema": ["MET"]}
R0: dict = {"entities": {}, "relations": {}}
R1 = {"entities": {"Person": ["Ada", "Bob"]}, "relations": {}}
R2 = {"entities": {"Person": ["Ada", "Bob"]}, "relations": {"MET": [{"subject": "Ada", "object": "Bob"}]}}
Q = {0: 0.79, 1: 0.853, 2: 0.937}


def run(history: list[dict], current: dict, **extra) -> dict:
    return call_tool("query_iterative_feedback", {"extraction_history": history, "extracted_kg": current,
                                                  "text": TEXT, "schema": SCHEMA, **extra})


def test_three_improving_rounds() -> None:
    out = run([R0, R1], R2)
    d1, d2 = 100 * (Q[1] - Q[0]), 100 * (Q[2] - Q[1])  # 6.3 and 8.4 points
    pa = out["progress_analysis"]
    assert pa["trend"] == "improving"  # mean 7.35 > 1
    assert pa["recent_improvement"] == pytest.approx(d2, abs=1e-3)
    assert pa["overall_quality_change"] == pytest.approx(100 * (Q[2] - Q[0]), abs=1e-3)  # 14.7
    assert pa["extraction_volume_change"] == 3.0  # 2 entities + 1 relation - nothing
    assert pa["convergence_status"] == "converging"
    eff = out["iteration_effectiveness"]
    assert eff["improvement_trend"] == pytest.approx([d1, d2], abs=1e-3)
    assert eff["average_improvement"] == pytest.approx((d1 + d2) / 2, abs=1e-3)  # 7.35
    assert eff["effectiveness"] == "medium" and eff["total_iterations"] == 3
    assert out["current_iteration"] == 3 and out["max_iterations"] == 5
    assert out["should_continue_iteration"] is True  # 8.4 > 1 point, 3 < 5
    assert out["optimization_strategy"]["iteration_focus"] == "quality_improvement"  # 3·3 = 9 <= 10
    # City is missing in all three rounds, and still now: recurring, severity 3/3 -> high
    pp = out["problem_patterns"]
    assert pp["recurring_issues"] == ["missing_entity_type:City"]
    assert pp["issue_frequency"]["missing_entity_type:City"] == 3
    assert pp["issue_frequency"]["missing_entity_type:Person"] == 1
    assert pp["issue_frequency"]["missing_relation_type:MET"] == 2
    assert pp["severity_levels"] == {"missing_entity_type:City": "high"}
    assert pp["pattern_types"] == ["coverage"]
    assert pp["suggested_solutions"] == ["Search the text specifically for City entities and extract every one it names."]
    assert out["optimization_strategy"]["priority_strategy"]["type"] == "pattern_specific"
    assert [s["type"] for s in out["optimization_strategy"]["strategies"]][0] == "pattern_specific"
    assert {s["type"] for s in out["optimization_strategy"]["strategies"]} == {
        "pattern_specific", "coverage_expansion", "quality_focus", "balanced_improvement"}
    assert out["next_steps"][0].startswith("Continue:")


def test_max_iterations_stops() -> None:
    out = run([R0, R1], R2, max_iterations=3)
    assert out["should_continue_iteration"] is False
    assert out["next_steps"][0] == "Stop iterating: the maximum of 3 iterations is reached."
    assert "query_entity_disambiguation" in out["next_steps"][-1]
    assert out["optimization_strategy"]["iteration_focus"] == "refinement"  # 3·3 > 2·3


def test_declining_stops() -> None:
    out = run([R2, R1], R0)
    assert out["progress_analysis"]["trend"] == "declining"  # -8.4 then -6.3
    assert out["progress_analysis"]["convergence_status"] == "diverging"
    assert out["iteration_effectiveness"]["effectiveness"] == "stagnant"
    assert out["should_continue_iteration"] is False
    assert out["next_steps"][0] == "Stop iterating: quality is declining."


def test_first_round() -> None:
    out = run([], R1)
    assert out["current_iteration"] == 1
    assert out["progress_analysis"] == {"trend": "stagnant", "recent_improvement": 0.0, "overall_quality_change": 0.0,
                                        "extraction_volume_change": 0.0, "convergence_status": "insufficient_data"}
    assert out["iteration_effectiveness"] == {"effectiveness": "insufficient_data", "average_improvement": 0.0,
                                              "improvement_trend": [], "total_iterations": 1}
    assert out["should_continue_iteration"] is True
    assert out["optimization_strategy"]["iteration_focus"] == "coverage_expansion"  # 3·1 <= 5
    assert out["problem_patterns"]["recurring_issues"] == []  # one round: nothing recurs yet
    assert out["optimization_strategy"]["priority_strategy"]["type"] == "coverage_expansion"


def test_current_repeated_at_the_end_of_history_counts_once() -> None:
    assert run([R0, R1], R1)["current_iteration"] == 2
    assert run([R0, R1, R1], R1)["current_iteration"] == 3  # only the final repeat is merged


def test_no_improvement_stops_after_two_rounds() -> None:
    out = run([R1], R1 | {"relations": {}})  # equal content, but a separate dict: merged as the same round
    assert out["current_iteration"] == 1
    out = run([R1, R1], R1)
    assert out["iteration_effectiveness"]["improvement_trend"] == [0.0]
    assert out["progress_analysis"]["convergence_status"] == "converged"
    assert out["iteration_effectiveness"]["effectiveness"] == "stagnant"
    assert out["should_continue_iteration"] is False  # recent improvement 0 <= 1 point


def test_feedback_history_issues_recur() -> None:
    out = run([R0], R1, feedback_history=["Missing dates", {"iteration": 1, "issues": ["missing   DATES", "typo"]}])
    pp = out["problem_patterns"]
    assert "feedback:missing dates" in pp["recurring_issues"]
    assert pp["issue_frequency"]["feedback:missing dates"] == 2 and pp["issue_frequency"]["feedback:typo"] == 1
    assert pp["severity_levels"]["feedback:missing dates"] == "high"
    assert "feedback" in pp["pattern_types"]


def test_phase_focus_strategy_without_recurring_issues() -> None:
    full_schema = {"entity_schema": ["Person"], "relation_schema": ["MET"]}
    kg2 = R2
    out = call_tool("query_iterative_feedback", {"extraction_history": [R1], "extracted_kg": kg2, "text": TEXT,
                                                 "schema": full_schema, "max_iterations": 6})
    # round 1 misses MET, round 2 has no issue: nothing recurs; 3·2 = 6 <= 6 -> coverage_expansion
    assert out["problem_patterns"]["recurring_issues"] == []
    assert out["optimization_strategy"]["iteration_focus"] == "coverage_expansion"
    assert out["optimization_strategy"]["priority_strategy"]["type"] == "coverage_expansion"


@pytest.mark.parametrize(("improvements", "trend"), [
    ([], "stagnant"), ([1.0], "stagnant"), ([1.01], "improving"), ([-1.0], "stagnant"), ([-1.01], "declining"),
    ([10.0, 0.0, 0.0, 0.0], "stagnant"), ([-9.0, 2.0, 2.0], "declining"), ([0.0, 1.0, 2.1], "improving"),
])
def test_trend(improvements: list[float], trend: str) -> None:
    assert trend_of(improvements) == trend


@pytest.mark.parametrize(("improvements", "status"), [
    ([], "insufficient_data"), ([0.5], "converged"), ([5.0, 0.99], "converging"), ([0.5, -0.99], "converged"), ([5.0, -5.0], "oscillating"),
    ([-5.0, 5.0], "oscillating"), ([0.5, -2.0], "diverging"), ([3.0, 2.0], "converging"), ([3.0], "converging"),
])
def test_convergence(improvements: list[float], status: str) -> None:
    assert convergence_of(improvements) == status


@pytest.mark.parametrize(("rounds", "avg", "level"), [
    (1, 99.0, "insufficient_data"), (2, 10.01, "high"), (2, 10.0, "medium"), (2, 5.0, "medium"),
    (2, 4.99, "low"), (2, 0.01, "low"), (2, 0.0, "stagnant"), (2, -3.0, "stagnant"),
])
def test_effectiveness(rounds: int, avg: float, level: str) -> None:
    assert effectiveness_of(rounds, avg) == level


@pytest.mark.parametrize(("i", "m", "focus"), [
    (1, 3, "coverage_expansion"), (2, 3, "quality_improvement"), (3, 3, "refinement"),
    (2, 6, "coverage_expansion"), (3, 6, "quality_improvement"), (4, 6, "quality_improvement"), (5, 6, "refinement"),
    (7, 5, "refinement"),
])
def test_focus(i: int, m: int, focus: str) -> None:
    assert focus_of(i, m) == focus


@pytest.mark.parametrize(("i", "m", "trend", "recent", "cont"), [
    (5, 5, "improving", 50.0, False), (1, 5, "stagnant", 0.0, True), (2, 5, "improving", 1.01, True),
    (2, 5, "stagnant", 1.0, False), (3, 5, "declining", 2.0, False), (4, 5, "improving", 0.5, False),
])
def test_should_continue(i: int, m: int, trend: str, recent: float, cont: bool) -> None:
    assert should_continue(i, m, trend, recent)[0] is cont  # type: ignore[arg-type]


def test_unicode_rounds() -> None:
    text = "Zoë Ünal traf 李白."
    kg = {"entities": {"Person": ["Zoë Ünal", "李白"]}, "relations": {"MET": [{"subject": "Zoë Ünal", "object": "李白"}]}}
    out = call_tool("query_iterative_feedback", {"extraction_history": [{"entities": {"Person": ["Zoë Ünal"]}}],
                                                 "extracted_kg": kg, "text": text,
                                                 "schema": {"entity_schema": ["Person"], "relation_schema": ["MET"]}})
    assert out["progress_analysis"]["trend"] == "improving"
    assert out["iteration_effectiveness"]["total_iterations"] == 2
