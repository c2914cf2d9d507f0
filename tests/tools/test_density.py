"""query_extraction_density on hand-made inputs; expected values are worked out here.

The base text has 100 sentences "The word word word word word word word word." (9 words + a
period): 1000 tokens, 900 words, no technical terms, no mentions ("The" is a function word).
complexity = (9/25 + 0 + 0)/3 = 0.12, text factor = 0.75 + 0.5·0.12 = 0.81.
With 2 entity and 1 relation types (general domain):
  expected_e = 30·(1 + 0.05·2)·0.81 = 26.73   min 13.365 → 13 entities   max 80.19 → 81 entities
  expected_r = 20·(1 + 0.05·1)·0.81 = 17.01   min 8.505  → 8 relations   max 51.03 → 52 relations
  adequacy threshold = 0.65 + 0.15·0.12 = 0.668
"""

from __future__ import annotations

import pytest

from kgr.tools.registry import call_tool

SCHEMA = {"entity_schema": ["Person", "Organization"], "relation_schema": ["WORKS_AT"]}
TEXT = " ".join("The " + " ".join(["word"] * 8) + "." for _ in range(100))

COMPLEXITY = (9 / 25) / 3
TEXT_FACTOR = 0.75 + 0.5 * COMPLEXITY
EXP_E = 30 * (1 + 0.05 * 2) * TEXT_FACTOR
EXP_R = 20 * (1 + 0.05 * 1) * TEXT_FACTOR
THRESHOLD = 0.65 + 0.15 * COMPLEXITY


def kg(n_entities: int, n_relations: int, *, etype: str = "Person", rtype: str = "WORKS_AT") -> dict:
    return {
        "entities": {etype: [f"E{i}" for i in range(n_entities)]} if n_entities else {},
        "relations": {rtype: [{"subject": f"E{i}", "object": f"F{i}"} for i in range(n_relations)]} if n_relations else {},
    }


def run(E: int, R: int, text: str = TEXT, schema: dict | None = None, **extra) -> dict:
    return call_tool("query_extraction_density",
                     {"text": text, "schema": schema or SCHEMA, "extracted_kg": kg(E, R), **extra})


def score(E: int, R: int) -> tuple[float, float, float, float]:
    e_ratio, r_ratio = E / EXP_E, R / EXP_R  # T = 1000, so rate per 1k = count
    balance = min(e_ratio, r_ratio) / max(e_ratio, r_ratio) if max(e_ratio, r_ratio) > 0 else 1.0
    return e_ratio, r_ratio, balance, 0.4 * min(e_ratio, 1) + 0.4 * min(r_ratio, 1) + 0.2 * balance


def test_text_stats_and_expected_densities() -> None:
    out = run(0, 0)
    assert out["text_stats"] == {"token_count": 1000, "sentence_count": 100, "word_count": 900, "character_count": len(TEXT)}
    exp = out["expected_density"]
    assert exp["expected_entities_per_1k"] == pytest.approx(26.73, abs=1e-4)
    assert exp["expected_relations_per_1k"] == pytest.approx(17.01, abs=1e-4)
    assert exp["min_entities_per_1k"] == pytest.approx(13.365, abs=1e-4)
    assert exp["max_entities_per_1k"] == pytest.approx(80.19, abs=1e-4)
    assert exp["min_relations_per_1k"] == pytest.approx(8.505, abs=1e-4)
    assert exp["max_relations_per_1k"] == pytest.approx(51.03, abs=1e-4)
    assert exp["schema_complexity"] == 3
    assert exp["entity_complexity_factor"] == pytest.approx(1.1 * 0.81, abs=1e-4)
    assert exp["relation_complexity_factor"] == pytest.approx(1.05 * 0.81, abs=1e-4)
    cf = out["complexity_features"]
    assert cf == {"entity_mentions": 0, "avg_sentence_length": 9.0, "technical_terms": 0, "schema_entity_types": 2,
                  "schema_relation_types": 1, "complexity_score": 0.12}


def test_current_density_counts_distinct_elements() -> None:
    payload = {"entities": {"Person": ["Ada", "ADA", "Bob"], "Organization": ["IBM", "I.B.M."]},
               "relations": {"WORKS_AT": [{"subject": "Ada", "object": "IBM"}, {"subject": "ada", "object": "I.B.M."}]}}
    out = call_tool("query_extraction_density", {"text": TEXT, "schema": SCHEMA, "extracted_kg": payload})
    cd = out["current_density"]
    # distinct by canonical name: Ada, Bob, IBM -> 3 entities; one relation
    assert cd["total_entities"] == 3 and cd["total_relations"] == 1 and cd["total_kg_elements"] == 4
    assert cd["entity_type_count"] == 2 and cd["relation_type_count"] == 1
    assert cd["entities_per_1k_tokens"] == 3.0 and cd["relations_per_1k_tokens"] == 1.0
    assert cd["kg_density_per_1k_tokens"] == 4.0 and cd["entity_relation_ratio"] == 3.0


@pytest.mark.parametrize(
    ("E", "R", "level", "needs_more", "meets"),
    [
        (0, 0, "insufficient", True, False),  # neither minimum (13, 8)
        (12, 7, "insufficient", True, False),  # one below each minimum
        (13, 7, "moderate", True, False),  # entity minimum met exactly, relations one short
        (12, 8, "moderate", True, False),  # relation minimum met exactly, entities one short
        (13, 8, "moderate", True, True),  # both minimums, but the score is below 0.668 (see below)
        (18, 9, "moderate", True, True),  # score 0.638 < 0.668
        (20, 10, "adequate", False, True),  # score 0.692 >= 0.668
        (27, 17, "adequate", False, True),  # entity ratio >= 1, relation ratio 17/17.01 < 1
        (27, 18, "excellent", False, True),  # both ratios >= 1
        (81, 52, "excellent", False, True),  # exactly at both maximum counts: not over
        (82, 17, "over_extraction", False, True),  # one entity over ceil(80.19) = 81
        (27, 53, "over_extraction", False, True),  # one relation over ceil(51.03) = 52
        (60, 9, "moderate", True, True),  # imbalance: ratios 2.245 and 0.529, balance 0.236 < 0.5
    ],
)
def test_levels_and_decision(E: int, R: int, level: str, needs_more: bool, meets: bool) -> None:
    out = run(E, R)
    a = out["density_assessment"]
    e_ratio, r_ratio, balance, overall = score(E, R)
    assert a["assessment_level"] == level
    assert out["needs_more_extraction"] is needs_more
    assert a["meets_minimum_thresholds"] is meets
    assert a["potential_over_extraction"] is (level == "over_extraction")
    assert a["is_adequate"] is (level in ("adequate", "excellent"))
    assert a["entity_density_ratio"] == pytest.approx(e_ratio, abs=1e-4)
    assert a["relation_density_ratio"] == pytest.approx(r_ratio, abs=1e-4)
    assert a["balance_score"] == pytest.approx(balance, abs=1e-4)
    assert a["overall_density_score"] == pytest.approx(overall, abs=1e-4)


def test_threshold_arithmetic_of_the_boundary_cases() -> None:
    # the hand values behind the parametrised cases above
    assert score(13, 8)[3] == pytest.approx(0.4 * (13 / 26.73) + 0.4 * (8 / 17.01) + 0.2 * ((8 / 17.01) / (13 / 26.73)))
    assert score(13, 8)[3] < THRESHOLD
    assert score(18, 9)[3] == pytest.approx(0.6381, abs=1e-4) and score(18, 9)[3] < THRESHOLD
    assert score(20, 10)[3] == pytest.approx(0.6916, abs=1e-4) and score(20, 10)[3] >= THRESHOLD
    assert score(60, 9)[2] == pytest.approx((9 / 17.01) / (60 / 26.73), abs=1e-6)
    assert score(60, 9)[2] < 0.5


def test_worked_example_from_the_module_docstring() -> None:
    plain = "The alpha Beta gamma, delta epsilon zeta, eta theta, iota kappa lambda mu, nu xi."
    tech = plain.replace("nu xi.", "nu h2o.")
    text = " ".join([tech] * 3 + [plain] * 7)
    payload = {"entities": {"Person": ["A1", "A2", "A3"], "Organization": ["B1", "B2", "B3"]},
               "relations": {"WORKS_AT": [{"subject": f"A{i}", "object": f"B{i}"} for i in (1, 2, 3)]}}
    out = call_tool("query_extraction_density", {"text": text, "schema": SCHEMA, "extracted_kg": payload})
    # 20 tokens per sentence (15 words, 4 commas, 1 period); "Beta" is each sentence's mention
    assert out["text_stats"]["token_count"] == 200 and out["text_stats"]["word_count"] == 150
    assert out["complexity_features"]["technical_terms"] == 3 and out["complexity_features"]["entity_mentions"] == 10
    complexity = (15 / 25 + (3 / 150) / 0.1 + (10 / 150) / 0.2) / 3
    factor = 0.75 + 0.5 * complexity
    exp_e, exp_r = 30 * 1.1 * factor, 20 * 1.05 * factor
    e_ratio, r_ratio = 30 / exp_e, 15 / exp_r
    overall = 0.4 * e_ratio + 0.4 * r_ratio + 0.2 * (r_ratio / e_ratio)
    assert out["complexity_features"]["complexity_score"] == pytest.approx(complexity, abs=1e-4)
    assert out["density_assessment"]["overall_density_score"] == pytest.approx(overall, abs=1e-4)
    assert overall == pytest.approx(0.8488, abs=1e-4)
    assert out["density_assessment"]["assessment_level"] == "adequate"
    assert out["needs_more_extraction"] is False


def test_empty_text_needs_nothing() -> None:
    out = run(0, 0, text="")
    assert out["text_stats"]["token_count"] == 0
    assert out["needs_more_extraction"] is False
    assert out["density_assessment"]["assessment_level"] == "insufficient"
    assert out["recommendations"][0].startswith("The text is empty")
    over = run(2, 0, text="")
    assert over["density_assessment"]["assessment_level"] == "over_extraction"
    assert over["needs_more_extraction"] is False


def test_short_text_counts_not_rates() -> None:
    # 5 tokens: every minimum count floors to 0; max entity count = ceil(3·30·1.05·f·5/1000) is 1
    text = "Ada met Bob today."
    out = call_tool("query_extraction_density", {
        "text": text, "schema": {"entity_schema": ["Person"], "relation_schema": []},
        "extracted_kg": {"entities": {"Person": ["Ada"]}, "relations": {}}})
    assert out["density_assessment"]["meets_minimum_thresholds"] is True
    assert out["density_assessment"]["potential_over_extraction"] is False


def test_schema_without_relation_types_expects_no_relations() -> None:
    out = run(27, 0, schema={"entity_schema": ["Person", "Organization"], "relation_schema": []})
    exp = out["expected_density"]
    assert exp["expected_relations_per_1k"] == 0.0 and exp["relation_complexity_factor"] == 0.0
    a = out["density_assessment"]
    assert a["relation_density_ratio"] == 1.0 and a["balance_score"] == 1.0
    assert a["assessment_level"] == "excellent"  # 27/26.73 >= 1 and nothing expected of relations


def test_domain_benchmarks() -> None:
    medical = run(0, 0, domain="Medical")["expected_density"]
    assert medical["expected_entities_per_1k"] == pytest.approx(40 * 1.1 * 0.81, abs=1e-4)
    unknown = run(27, 18, domain="astrology")
    assert unknown["expected_density"]["expected_entities_per_1k"] == pytest.approx(26.73, abs=1e-4)
    assert any("Unknown domain 'astrology'" in r for r in unknown["recommendations"])


def test_recommendations_name_what_to_extract_next() -> None:
    text = ("Ada Lovelace worked with Charles Babbage in London. She wrote the first algorithm in 1843. "
            "Babbage designed the Analytical Engine at Cambridge University.")
    schema = {"entity_schema": ["Person", "Organization", "Date"], "relation_schema": ["WORKS_WITH"]}
    out = call_tool("query_extraction_density", {"text": text, "schema": schema,
                                                 "extracted_kg": {"entities": {"Person": ["Ada Lovelace"]}}})
    recs = "\n".join(out["recommendations"])
    assert out["needs_more_extraction"] is True
    assert "Extract Organization entities" in recs and "Cambridge University" in recs
    assert "Extract Date entities" in recs and "1843" in recs
    assert "'Charles Babbage'" in recs  # an unextracted mention
    assert "Extract WORKS_WITH relations" in recs


def test_adequate_recommends_the_next_tool_and_flags_unknown_types() -> None:
    out = run(27, 18)
    assert out["recommendations"][-1].startswith("Density is excellent")
    odd = call_tool("query_extraction_density", {"text": TEXT, "schema": SCHEMA,
                                                 "extracted_kg": {"entities": {"Gadget": ["X1"]}}})
    assert any("Not in the schema: entity types Gadget" in r for r in odd["recommendations"])


def test_over_extraction_names_unsupported_entities() -> None:
    out = run(82, 17)
    assert any("exceeds the maximum" in r and "'E0'" in r for r in out["recommendations"])


def test_unicode_names() -> None:
    text = "Zoë Ünal besuchte 北京 mit José Núñez."
    out = call_tool("query_extraction_density", {
        "text": text, "schema": {"entity_schema": ["Person", "Location"], "relation_schema": ["VISITED"]},
        "extracted_kg": {"entities": {"Person": ["Zoë Ünal", "José Núñez"], "Location": ["北京"]},
                         "relations": {"VISITED": [{"subject": "Zoë Ünal", "object": "北京"}]}}})
    assert out["current_density"]["total_entities"] == 3
    assert out["text_stats"]["word_count"] == 8  # Zoë Ünal besuchte 北 京 mit José Núñez
