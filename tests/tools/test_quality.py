"""query_quality_metrics on hand-made inputs; expected values are worked out here."""

from __future__ import annotations

import pytest

from kgr.tools.quality import quality_level
from kgr.tools.registry import call_tool

TEXT = ("Ada Lovelace worked with Charles Babbage in London. Babbage designed the Analytical Engine. "
        "Grace Hopper joined Acme Inc. in 1944.")


def run(entities: dict, relations: dict | None = None, *, text: str = TEXT, entity_schema: list[str] | None = None,
        relation_schema: list[str] | None = None, aspects: list[str] | None = None) -> dict:
    payload = {
        "extracted_kg": {"entities": entities,
                         "relations": {t: [{"subject": s, "object": o} for s, o in ps] for t, ps in (relations or {}).items()}},
        "schema": {"entity_schema": entity_schema if entity_schema is not None else list(entities),
                   "relation_schema": relation_schema if relation_schema is not None else list(relations or {})},
        "text": text,
    }
    if aspects is not None:
        payload["evaluation_aspects"] = aspects
    return call_tool("query_quality_metrics", payload)


def test_consistency_duplicates_and_naming_variants() -> None:
    out = run({"Organization": ["IBM", "I.B.M.", "Microsoft Corp.", "Microsoft"], "Person": ["Ada"]},
              aspects=["consistency"])
    c = out["evaluation_results"]["consistency"]
    # 5 entries; "I.B.M." repeats "IBM", "Microsoft" repeats "Microsoft Corp." -> 2 duplicates
    assert c["details"] == {"entity_naming_consistency": 0.6, "relation_consistency": 1.0, "duplicate_entities": 2,
                            "conflicting_relations": 0}
    assert c["score"] == pytest.approx((0.6 + 1.0) / 2)
    assert "2 duplicate entities" in c["issues"][0] and "'I.B.M.' (Organization) repeats 'IBM'" in c["issues"][0]
    # only consistency evaluated: the overall score is its score
    assert out["evaluation_aspects"] == ["consistency"] and out["overall_score"] == 0.8
    assert out["evaluation_results"]["accuracy"] is None and out["detailed_metrics"] == out["evaluation_results"]


def test_consistency_cross_type_names() -> None:
    c = run({"Person": ["Paris"], "Location": ["Paris", "Rome"]}, aspects=["consistency"])["evaluation_results"]["consistency"]
    assert c["details"]["entity_naming_consistency"] == round(1 - 1 / 3, 4)  # one extra type over 3 entries


def test_consistency_of_relations() -> None:
    out = run({"Person": ["Ada", "Bob"], "Org": ["Acme"]},
              {"WORKS_AT": [("Ada", "Acme"), ("Ada", "Acme"), ("Bob", "Nobody"), ("Ada", "Ada")],
               "KNOWS": [("Ada", "Bob"), ("Bob", "Ada")]}, aspects=["consistency"])
    d = out["evaluation_results"]["consistency"]["details"]
    # 6 entries; bad: the repeat, the dangling "Nobody", the self-loop, the reverse KNOWS -> 4
    assert d["relation_consistency"] == round(2 / 6, 4)
    assert d["conflicting_relations"] == 2  # one self-loop + one pair in both directions
    assert out["evaluation_results"]["consistency"]["score"] == pytest.approx((1.0 + 2 / 6) / 2, abs=1e-4)


def test_completeness_types_and_density() -> None:
    # 1000 tokens of "The word ... word." (complexity 0.12); 2 entity + 1 relation types:
    # required = floor(13.365) + floor(8.505) = 21 elements; 6 + 1 = 7 extracted -> factor 1/3
    text = " ".join("The " + " ".join(["word"] * 8) + "." for _ in range(100))
    out = run({"Person": ["A", "B", "C"], "Org": ["X", "Y", "Z"]}, {"WORKS_AT": [("A", "X")]}, text=text,
              entity_schema=["Person", "Org"], relation_schema=["WORKS_AT"], aspects=["completeness"])
    c = out["evaluation_results"]["completeness"]
    assert c["details"] == {"missing_entity_types": [], "missing_relation_types": [], "entity_type_coverage": 1.0,
                            "relation_type_coverage": 1.0, "extraction_density": 7.0}
    assert c["score"] == pytest.approx(0.7 * 1.0 + 0.3 * (7 / 21), abs=1e-4)
    assert "7 elements extracted where the text calls for at least 21" in c["issues"]

    partial = run({"Person": ["Ada Lovelace"]}, {}, entity_schema=["Person", "Location", "Date"],
                  relation_schema=["WORKS_WITH", "LOCATED_IN"], aspects=["completeness"])
    pc = partial["evaluation_results"]["completeness"]
    # short text: required floor(...)=0 -> factor 1; coverage 1/3 and 0/2
    assert pc["details"]["missing_entity_types"] == ["Location", "Date"]
    assert pc["details"]["missing_relation_types"] == ["WORKS_WITH", "LOCATED_IN"]
    assert pc["score"] == pytest.approx(0.7 * (0.6 * (1 / 3) + 0.4 * 0.0) + 0.3 * 1.0, abs=1e-4)


def test_accuracy_against_the_text() -> None:
    out = run(
        {"Person": ["Ada Lovelace", "Charles Babbage", "Grace", "Alan Turing", "Acme Inc."],
         "Location": ["London", "Lond"], "Organization": ["Analytical Engine"]},
        {"WORKS_WITH": [("Ada Lovelace", "Charles Babbage")], "LOCATED_IN": [("Analytical Engine", "London")],
         "WORKS_AT": [("Ada Lovelace", "Acme Inc."), ("Alan Turing", "Acme Inc.")]},
        aspects=["accuracy"])
    a = out["evaluation_results"]["accuracy"]
    # penalties: Grace 0.5 (part of the mention "Grace Hopper"), Alan Turing 1 (not in the text),
    # Acme Inc. 1 (an organisation typed Person), Lond 0.5 (only inside "London") -> 3.0 over 8
    # relations: Ada/Charles same sentence; Engine (s.2) / London (s.1) adjacent; Ada (s.1) / Acme
    # (s.3) too far; Alan Turing absent -> 2 of 4 not in the text
    assert a["details"] == {"entities_not_in_text": 1, "relations_not_in_text": 2, "boundary_errors": 2,
                            "type_misclassifications": 1}
    assert a["score"] == pytest.approx(0.6 * (1 - 3.0 / 8) + 0.4 * (1 - 2 / 4), abs=1e-4)  # 0.575
    issues = "\n".join(a["issues"])
    assert "'Alan Turing'" in issues and "'Grace'" in issues and "'Lond'" in issues
    assert "'Acme Inc.' as Person, looks like organization" in issues


def test_schema_compliance() -> None:
    out = run({"Person": ["Ada", "Bob"], "Robot": ["R2"]},
              {"WORKS_AT": [("Ada", "Bob"), ("Ada", "Zed")], "BUILT": [("Bob", "R2")]},
              entity_schema=["Person"], relation_schema=["WORKS_AT"], aspects=["schema_compliance"])
    s = out["evaluation_results"]["schema_compliance"]
    assert s["details"] == {"valid_entity_types": 2, "invalid_entity_types": 1, "valid_relation_types": 2,
                            "invalid_relation_types": 1, "structure_violations": 1}  # "Zed" is no entity
    assert s["score"] == pytest.approx((2 + 2 - 1) / 6)
    assert "Entity types not in the schema: Robot" in s["issues"]


def test_schema_compliance_ambiguous_endpoint() -> None:
    out = run({"Person": ["Paris"], "Location": ["Paris"]}, {"LIVES_IN": [("Paris", "Paris")]},
              aspects=["schema_compliance"])
    d = out["evaluation_results"]["schema_compliance"]["details"]
    assert d["structure_violations"] == 1
    assert out["evaluation_results"]["schema_compliance"]["score"] == pytest.approx((2 + 1 - 1) / 3, abs=1e-4)


def test_perfect_extraction_is_excellent() -> None:
    out = run({"Person": ["Ada Lovelace", "Charles Babbage"]}, {"WORKS_WITH": [("Ada Lovelace", "Charles Babbage")]},
              text="Ada Lovelace worked with Charles Babbage.")
    assert out["evaluation_aspects"] == ["consistency", "completeness", "accuracy", "schema_compliance"]
    for aspect in out["evaluation_aspects"]:
        assert out["evaluation_results"][aspect]["score"] == 1.0, aspect
    assert out["overall_score"] == 1.0 and out["quality_level"] == "excellent"
    assert out["improvement_suggestions"] == ["No quality issues found: continue with query_entity_disambiguation."]


def test_overall_weights_and_renormalisation() -> None:
    ents = {"Organization": ["IBM", "I.B.M.", "Microsoft Corp.", "Microsoft"], "Robot": ["R2"]}
    out = run(ents, entity_schema=["Organization"], aspects=["schema_compliance", "consistency"])
    # consistency: 5 entries, 2 duplicates -> naming 0.6, no relations -> (0.6 + 1) / 2 = 0.8
    cons = (1 - 2 / 5 + 1.0) / 2
    # compliance: distinct by canonical name IBM, Microsoft Corp., Microsoft, R2 -> 3 valid of 4
    comp = 3 / 4
    assert out["evaluation_aspects"] == ["consistency", "schema_compliance"]
    assert out["evaluation_results"]["consistency"]["score"] == pytest.approx(cons)
    assert out["evaluation_results"]["schema_compliance"]["score"] == pytest.approx(comp)
    assert out["overall_score"] == pytest.approx((0.25 * cons + 0.15 * comp) / (0.25 + 0.15), abs=1e-4)  # 0.7813
    assert out["quality_level"] == "fair"


def test_full_weighting() -> None:
    # Empty extraction of a 2-type schema on a short text: consistency 1, accuracy 1, compliance 1,
    # completeness 0.7·0 + 0.3·1 (nothing required on 7 tokens) = 0.3
    out = run({}, {}, text="Ada met Bob in Paris.", entity_schema=["Person"], relation_schema=["MET"])
    assert out["evaluation_results"]["completeness"]["score"] == pytest.approx(0.3)
    overall = 0.30 * 0.3 + 0.30 * 1.0 + 0.25 * 1.0 + 0.15 * 1.0  # 0.79
    assert out["overall_score"] == pytest.approx(overall)
    assert out["quality_level"] == "fair"
    assert out["improvement_suggestions"][0].startswith("Completeness: extract the missing types Person, MET")


@pytest.mark.parametrize(("score", "level"), [(1.0, "excellent"), (0.9, "excellent"), (0.8999, "good"), (0.8, "good"),
                                               (0.7999, "fair"), (0.7, "fair"), (0.6999, "poor"), (0.6, "poor"),
                                               (0.5999, "very_poor"), (0.0, "very_poor")])
def test_quality_levels(score: float, level: str) -> None:
    assert quality_level(score) == level


def test_suggestions_ordered_by_weighted_deficit() -> None:
    out = run({"Person": ["Alan Turing", "Alan Turing Jr"], "Robot": ["R2"]}, {"KNOWS": [("Alan Turing", "Nobody")]},
              entity_schema=["Person", "Date"], relation_schema=["KNOWS"])
    deficits = {a: w * (1 - out["evaluation_results"][a]["score"])
                for a, w in {"completeness": 0.30, "accuracy": 0.30, "consistency": 0.25,
                             "schema_compliance": 0.15}.items()}
    expected_order = [a for a, _ in sorted(deficits.items(), key=lambda kv: -kv[1]) if deficits[a] > 0]
    prefixes = {"completeness": "Completeness:", "accuracy": "Accuracy:", "consistency": "Consistency:",
                "schema_compliance": "Schema compliance:"}
    assert [s.split(" ")[0] for s in out["improvement_suggestions"]] == [prefixes[a].split(" ")[0] for a in expected_order]


def test_unicode_and_cjk() -> None:
    out = run({"Person": ["Zoë Ünal", "李白"], "Location": ["北京"]}, {"VISITED": [("李白", "北京")]},
              text="Zoë Ünal traf 李白. 李白 lebte in 北京.", aspects=["accuracy"])
    assert out["evaluation_results"]["accuracy"]["details"] == {"entities_not_in_text": 0, "relations_not_in_text": 0,
                                                                "boundary_errors": 0, "type_misclassifications": 0}
    assert out["overall_score"] == 1.0


def test_remembered_scores_follow_the_content(monkeypatch) -> None:
    """The feedback tool reuses a recent full evaluation only for the same text, schema and
    extraction; a partial evaluation is not remembered; the two result blocks share nothing."""
    import kgr.tools._score_memo as memo
    import kgr.tools.feedback as feedback
    import kgr.tools.quality as quality
    from kgr.model.kg import ExtractedKG
    from kgr.model.tools import ToolSchema

    monkeypatch.setattr(memo, "_SCORES", type(memo._SCORES)())
    schema = ToolSchema(entity_schema=["Person", "Place"], relation_schema=["BORN_IN"])
    good = ExtractedKG.model_validate({"entities": {"Person": ["Ada Lovelace"], "Place": ["London"]},
                                       "relations": {"BORN_IN": [{"subject": "Ada Lovelace", "object": "London"}]}})
    text = "Ada Lovelace was born in London."
    partial = quality.evaluate(good, schema, text, ["accuracy"])
    assert len(memo._SCORES) == 0 and partial.output.evaluation_aspects == ["accuracy"]
    full = quality.evaluate(good, schema, text)
    assert feedback.score_and_codes(good, schema, text) == (full.output.overall_score, tuple(full.codes))
    calls = []
    monkeypatch.setattr(feedback, "evaluate", lambda *a, **k: calls.append(a) or full)  # what feedback imports
    feedback.score_and_codes(good.model_copy(deep=True), ToolSchema(**schema.model_dump()), str(text))
    assert calls == []  # equal content, other objects: remembered
    for other in ((good, schema, "Ada Lovelace lived in London."),
                  (ExtractedKG.model_validate({"entities": {"Person": ["Ada Lovelace"]}}), schema, text),
                  (good, ToolSchema(entity_schema=["Person", "Place"], relation_schema=[]), text)):
        feedback.score_and_codes(*other)
    assert len(calls) == 3  # any other text, extraction or schema is evaluated afresh
    out = full.output
    assert out.detailed_metrics == out.evaluation_results
    assert out.detailed_metrics.completeness.details is not out.evaluation_results.completeness.details
    assert (out.detailed_metrics.completeness.details.missing_entity_types
            is not out.evaluation_results.completeness.details.missing_entity_types)
