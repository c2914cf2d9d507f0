"""query_coverage_feedback on hand-made inputs; expected values are worked out here."""

from __future__ import annotations

import pytest

from kgr.tools.coverage import coverage_band, schema_complexity_label
from kgr.tools.registry import call_tool

TEXT = "Ada Lovelace was born in 1815 in London. She worked with Charles Babbage at the Royal Society."


def run(entity_schema: list[str], relation_schema: list[str], entities: dict, relations: dict | None = None,
        text: str = TEXT, **extra) -> dict:
    rels = {t: [{"subject": s, "object": o} for s, o in ps] for t, ps in (relations or {}).items()}
    return call_tool("query_coverage_feedback", {
        "text": text, "schema": {"entity_schema": entity_schema, "relation_schema": relation_schema},
        "extracted_kg": {"entities": entities, "relations": rels}, **extra})


def test_partial_coverage_numbers() -> None:
    out = run(["Person", "Organization", "Location", "Date", "Product"], ["WORKS_WITH", "BORN_IN"],
              {"Person": ["Ada Lovelace", "Charles Babbage"], "Organization": ["Royal Society"]},
              {"WORKS_WITH": [("Ada Lovelace", "Charles Babbage")]})
    # entity types 2/5 = 0.4, relation types 1/2 = 0.5
    assert out["type_coverage"]["entity_coverage"] == {"covered_types": ["Person", "Organization"], "total_types": 5,
                                                       "coverage_ratio": 0.4}
    assert out["type_coverage"]["relation_coverage"] == {"covered_types": ["WORKS_WITH"], "total_types": 2,
                                                         "coverage_ratio": 0.5}
    assert out["type_coverage"]["overall_coverage"] == round(3 / 7, 4)  # 3 of 7 types
    assert out["coverage_score"] == pytest.approx(0.6 * 0.4 + 0.4 * 0.5)  # 0.44: poor
    assert out["missing_types"] == {"missing_entity_types": ["Location", "Date", "Product"],
                                    "missing_relation_types": ["BORN_IN"]}
    assert out["schema_info"] == {"entity_types": ["Person", "Organization", "Location", "Date", "Product"],
                                  "relation_types": ["WORKS_WITH", "BORN_IN"], "total_types": 7,
                                  "schema_complexity": "moderate"}
    recs = out["recommendations"]
    # text-guided: London ("in London"), 1815 and "born" are in the text; nothing suggests a Product
    assert any(r.startswith("Extract Location entities: likely present") and "London" in r for r in recs)
    assert any(r.startswith("Extract Date entities: likely present") and "1815" in r for r in recs)
    assert any(r.startswith("Extract BORN_IN relations: likely present") and "born" in r for r in recs)
    assert any(r.startswith("Check the text for Product") for r in recs)
    assert recs[-1] == "Coverage score 0.44: poor coverage, major extraction issues."


@pytest.mark.parametrize(
    ("covered_e", "total_e", "covered_r", "total_r", "score", "band"),
    [
        (5, 5, 2, 2, 1.0, "excellent"),
        (5, 5, 3, 4, 0.9, "excellent"),  # 0.6 + 0.4·0.75 = 0.9: the band's lower edge
        (4, 5, 2, 2, 0.88, "good"),  # 0.6·0.8 + 0.4
        (1, 2, 1, 1, 0.7, "good"),  # 0.3 + 0.4 = 0.7: lower edge of good
        (5, 6, 0, 1, 0.5, "moderate"),  # 0.6·5/6 = 0.5: lower edge of moderate
        (0, 1, 1, 1, 0.4, "poor"),
        (1, 2, 0, 1, 0.3, "poor"),  # 0.3: lower edge of poor
        (1, 3, 0, 1, 0.2, "very_poor"),
        (0, 3, 0, 2, 0.0, "very_poor"),
    ],
)
def test_score_and_bands(covered_e: int, total_e: int, covered_r: int, total_r: int, score: float, band: str) -> None:
    etypes = [f"E{i}" for i in range(total_e)]
    rtypes = [f"R{i}" for i in range(total_r)]
    ents = {t: ["Ada"] for t in etypes[:covered_e]}
    rels = {t: [("Ada", "Ada")] for t in rtypes[:covered_r]}
    out = run(etypes, rtypes, ents, rels)
    assert out["coverage_score"] == pytest.approx(score, abs=1e-4)
    assert coverage_band(out["coverage_score"]) == band
    label = {"excellent": "excellent coverage", "good": "good coverage", "moderate": "moderate coverage",
             "poor": "poor coverage", "very_poor": "very poor coverage"}[band]
    assert label in out["recommendations"][-1]


def test_band_function_edges() -> None:
    assert [coverage_band(s) for s in (1.0, 0.9, 0.89999, 0.7, 0.69999, 0.5, 0.49999, 0.3, 0.29999, 0.0)] == [
        "excellent", "excellent", "excellent", "good", "good", "moderate", "moderate", "poor", "poor", "very_poor"]
    # 0.89999 rounds to 0.9 at 4 decimals (scores are reported to 4 decimals)
    assert coverage_band(0.8999) == "good" and coverage_band(0.6999) == "moderate" and coverage_band(0.2999) == "very_poor"
    assert [schema_complexity_label(n) for n in (0, 5, 6, 15, 16)] == ["simple", "simple", "moderate", "moderate",
                                                                       "complex"]


def test_priority_types() -> None:
    out = run(["Person", "Date"], ["WORKS_WITH"], {"Person": ["Ada Lovelace"]},
              {"WORKS_WITH": [("Ada Lovelace", "Charles Babbage")]},
              priority_types=["Date", "WORKS_WITH", "Planet", "Date"])
    pa = out["priority_analysis"]
    assert pa == {"has_priority": True, "priority_types": ["Date", "WORKS_WITH", "Planet"],
                  "covered_priority": ["WORKS_WITH"], "missing_priority": ["Date", "Planet"],
                  "priority_coverage_ratio": round(1 / 3, 4)}
    recs = out["recommendations"]
    assert recs[0].startswith("Priority: extract Date entities first") and "1815" in recs[0]
    assert recs[1].startswith("Priority type Planet is not in the schema")


def test_no_priority_and_complete_coverage() -> None:
    out = run(["Person"], [], {"Person": ["Ada Lovelace"]})
    assert out["priority_analysis"] == {"has_priority": False, "priority_types": [], "covered_priority": [],
                                        "missing_priority": [], "priority_coverage_ratio": 1.0}
    # no relation types: relation ratio 1.0 (nothing can be missing); score 0.6 + 0.4
    assert out["type_coverage"]["relation_coverage"]["coverage_ratio"] == 1.0
    assert out["coverage_score"] == 1.0
    assert out["recommendations"] == ["Coverage is complete (1.00, excellent coverage, minimal gaps): every schema "
                                      "type is covered."]


def test_empty_schema_and_empty_extraction() -> None:
    out = run([], [], {}, text="")
    assert out["coverage_score"] == 1.0 and out["type_coverage"]["overall_coverage"] == 1.0
    assert out["schema_info"]["total_types"] == 0 and out["schema_info"]["schema_complexity"] == "simple"
    none = run(["Person"], ["KNOWS"], {}, text="")
    assert none["coverage_score"] == 0.0
    assert none["missing_types"] == {"missing_entity_types": ["Person"], "missing_relation_types": ["KNOWS"]}


def test_unknown_types_are_not_coverage() -> None:
    out = run(["Person"], ["KNOWS"], {"Robot": ["R2"], "Person": []}, {"BUILT": [("Ada", "R2")]})
    assert out["type_coverage"]["entity_coverage"]["covered_types"] == []  # an empty list covers nothing
    assert out["coverage_score"] == 0.0
    assert any(r.startswith("Types outside the schema: BUILT, Robot") for r in out["recommendations"])


def test_unicode_types_and_names() -> None:
    out = run(["Person", "Stadt"], [], {"Person": ["Zoë Ünal", "李白"]}, text="Zoë Ünal traf 李白 in München.")
    assert out["type_coverage"]["entity_coverage"]["covered_types"] == ["Person"]
    assert out["coverage_score"] == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
