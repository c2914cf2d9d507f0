"""The protocol guard and prompt, without a database or a model."""

from __future__ import annotations

from kgr.agent.protocol import ProtocolGuard, phase_of, system_prompt
from kgr.model.schema import KGSchema

DENSITY, DIS, STORE = "query_extraction_density", "query_entity_disambiguation", "query_kg_storage"


def density(needs_more: bool, level: str = "moderate") -> dict:
    return {"needs_more_extraction": needs_more, "density_assessment": {"assessment_level": level}}


def test_order_is_enforced():
    g = ProtocolGuard(max_reextractions=2)
    assert g.check(STORE).startswith("protocol: call query_extraction_density")
    assert g.check(DIS).startswith("protocol: call query_extraction_density")
    assert g.check("query_quality_metrics") is None  # feedback tools: any time
    assert g.record(DENSITY, density(True)) == "density"
    assert "needs_more_extraction" in g.check(DIS)
    assert g.record(DENSITY, density(True)) == "re-extraction"
    assert "re-extraction 2 of 2" in g.check(DIS)
    assert g.record(DENSITY, density(True)) == "re-extraction"
    assert g.check(DIS) is None  # re-extractions spent: go on with what there is
    assert g.check(STORE).startswith("protocol: call query_entity_disambiguation")
    assert g.record(DIS, {}) == "disambiguation"
    assert g.check(STORE) is None
    g.record(DENSITY, density(False, "adequate"))  # a new extraction needs a new disambiguation
    assert g.check(STORE) is not None
    g.record(DIS, {})
    assert g.record(STORE, {}) == "storage" and g.stored
    assert g.phases == ["density", "re-extraction", "re-extraction", "disambiguation", "re-extraction",
                        "disambiguation", "storage"]


def test_lax_guard_allows_anything():
    assert ProtocolGuard(strict=False).check(STORE) is None


def test_phase_names():
    assert [phase_of(DENSITY, 0), phase_of(DENSITY, 1), phase_of("query_coverage_feedback", 0), phase_of("x", 0)] == [
        "density", "re-extraction", "feedback", "unknown"]


def test_prompt_states_protocol_and_schema():
    schema = KGSchema.model_validate({"entity_types": {"Person": {"description": "a human"}, "Organization": {}},
                                      "relation_types": {"WORKED_AT": {"domain": ["Person"], "range": ["Organization"]}}})
    text = system_prompt(schema, max_reextractions=3)
    assert "1. Extract" in text and "at most 3 re-extractions" in text
    assert "- WORKED_AT (Person -> Organization)" in text and "- Person: a human" in text
    assert '"relation_schema": ["WORKED_AT"]' in text
    assert "open" in system_prompt(None, max_reextractions=1)
