"""The tool registry: definitions, annotations, and strict input validation for every tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgr.errors import KgrNeo4jUnavailable, KgrNotFound, KgrValidationError
from kgr.model import tools as models
from kgr.tools.registry import (
    call_tool,
    function_definition,
    function_definitions,
    get_tool,
    list_tools,
    mcp_annotations,
    tool,
    tool_names,
)

TOOLS = ["query_extraction_density", "query_coverage_feedback", "query_quality_metrics", "query_iterative_feedback",
         "query_entity_disambiguation", "query_kg_storage"]
PURE = TOOLS[:4]
KG = {"entities": {"Person": ["Ada"]}, "relations": {}}
SCHEMA = {"entity_schema": ["Person"], "relation_schema": ["KNOWS"]}

VALID: dict[str, dict[str, Any]] = {
    "query_extraction_density": {"text": "Ada.", "schema": SCHEMA, "extracted_kg": KG},
    "query_coverage_feedback": {"text": "Ada.", "schema": SCHEMA, "extracted_kg": KG},
    "query_quality_metrics": {"extracted_kg": KG, "schema": SCHEMA, "text": "Ada."},
    "query_iterative_feedback": {"extraction_history": [], "extracted_kg": KG, "text": "Ada.", "schema": SCHEMA},
    "query_entity_disambiguation": {"extracted_kg": KG},
    "query_kg_storage": {"extracted_kg": KG},
}


def test_the_six_tools_in_the_appendix_order() -> None:
    assert tool_names() == TOOLS
    assert [s.name for s in list_tools()] == TOOLS


def test_function_definitions_come_from_the_input_models() -> None:
    defs = function_definitions()
    assert [d["function"]["name"] for d in defs] == TOOLS
    for d in defs:
        assert d["type"] == "function"
        assert set(d["function"]) == {"name", "description", "parameters"}
        spec = get_tool(d["function"]["name"])
        assert d["function"]["parameters"] == spec.input_model.model_json_schema(mode="validation")
        assert len(d["function"]["description"]) > 80
        json.dumps(d)  # JSON-able
    params = function_definition("query_quality_metrics")["function"]["parameters"]
    assert params["required"] == ["extracted_kg", "schema", "text"]
    assert params["additionalProperties"] is False
    assert "density" in function_definition("query_extraction_density")["function"]["description"].lower()


def test_annotations() -> None:
    for name in PURE + ["query_entity_disambiguation"]:
        assert mcp_annotations(name) == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                                         "openWorldHint": False}
    assert mcp_annotations("query_kg_storage")["readOnlyHint"] is False
    assert mcp_annotations("query_kg_storage")["idempotentHint"] is True
    assert get_tool("query_kg_storage").needs_graph and not get_tool("query_coverage_feedback").needs_graph


def test_unknown_tool() -> None:
    with pytest.raises(KgrNotFound, match="no tool named 'query_nothing'.*query_extraction_density"):
        call_tool("query_nothing", {})


def test_tool_decorator_requires_models() -> None:
    with pytest.raises(TypeError, match="input annotation must be a pydantic model"):
        @tool(read_only=True, idempotent=True)
        def broken(params: dict, *, context: object) -> models.TextStats:  # pragma: no cover
            raise AssertionError


def test_doctests() -> None:
    """The registry's examples, among them JSON number semantics (``json_numbers``)."""
    import doctest

    from kgr.tools import registry

    result = doctest.testmod(registry, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 1


def test_valid_payloads_validate() -> None:
    from kgr.tools.registry import validate_input

    for name, payload in VALID.items():
        assert validate_input(name, payload) is not None


def test_store_tools_need_a_graph() -> None:
    with pytest.raises(KgrNeo4jUnavailable, match="needs a Neo4j connection"):
        call_tool("query_entity_disambiguation", VALID["query_entity_disambiguation"])
    with pytest.raises(KgrNeo4jUnavailable, match="needs a Neo4j connection"):
        call_tool("query_kg_storage", VALID["query_kg_storage"])


TEN_MB = "x" * (10 * 1024 * 1024)

# (tool, payload mutation, expected failing field in the error message)
MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    *[(t, {"extracted_kg": {"entities": ["Ada"]}}, "extracted_kg.entities") for t in TOOLS],
    *[(t, {"extracted_kg": {"entities": {"Person": "Ada"}}}, "extracted_kg.entities.Person") for t in TOOLS],
    *[(t, {"extracted_kg": {"entities": {"Person": [7]}}}, "extracted_kg.entities.Person.0") for t in TOOLS],
    *[(t, {"extracted_kg": {"entities": {"Bad Type": ["Ada"]}}}, "extracted_kg.entities.Bad Type") for t in TOOLS],
    *[(t, {"extracted_kg": {"relations": {"KNOWS": [{"subject": "Ada"}]}}}, "extracted_kg.relations.KNOWS.0.object")
      for t in TOOLS],
    *[(t, {"extracted_kg": {"entities": {}, "extra": 1}}, "extracted_kg.extra") for t in TOOLS],
    *[(t, {"surprise": True}, "surprise") for t in TOOLS],
    *[(t, {"text": TEN_MB}, "text") for t in PURE],
    *[(t, {"text": 42}, "text") for t in PURE],
    *[(t, {"schema": {"entity_schema": "Person"}}, "schema.entity_schema") for t in PURE],
    *[(t, {"schema": {"entity_schema": ["Not A Type"]}}, "schema.entity_schema.0") for t in PURE],
    *[(t, {"schema": {"entity_types": ["Person"]}}, "schema.entity_types") for t in PURE],
    ("query_extraction_density", {"domain": ""}, "domain"),
    ("query_extraction_density", {"domain": 3}, "domain"),
    ("query_coverage_feedback", {"priority_types": "Person"}, "priority_types"),
    ("query_coverage_feedback", {"priority_types": ["no spaces allowed"]}, "priority_types.0"),
    ("query_quality_metrics", {"evaluation_aspects": ["beauty"]}, "evaluation_aspects.0"),
    ("query_quality_metrics", {"evaluation_aspects": []}, "evaluation_aspects"),
    ("query_iterative_feedback", {"extraction_history": {"entities": {}}}, "extraction_history"),
    ("query_iterative_feedback", {"extraction_history": [{"entities": {"P": [1]}}]}, "extraction_history.0"),
    ("query_iterative_feedback", {"max_iterations": 0}, "max_iterations"),
    ("query_iterative_feedback", {"max_iterations": -3}, "max_iterations"),
    ("query_iterative_feedback", {"max_iterations": "5"}, "max_iterations"),
    ("query_iterative_feedback", {"max_iterations": 5.5}, "max_iterations"),
    ("query_iterative_feedback", {"feedback_history": [{"quality_score": 1.5}]}, "feedback_history"),
    ("query_entity_disambiguation", {"disambiguation_strategy": "vibes"}, "disambiguation_strategy"),
    ("query_entity_disambiguation", {"similarity_threshold": -0.1}, "similarity_threshold"),
    ("query_entity_disambiguation", {"similarity_threshold": 1.5}, "similarity_threshold"),
    ("query_entity_disambiguation", {"similarity_threshold": "0.8"}, "similarity_threshold"),
    ("query_entity_disambiguation", {"context": TEN_MB}, "context"),
    ("query_kg_storage", {"source": ""}, "source"),
    ("query_kg_storage", {"source": 12}, "source"),
]


@pytest.mark.parametrize(("name", "change", "field"), MALFORMED,
                         ids=[f"{n}-{f}" for n, _, f in MALFORMED])
def test_malformed_input_names_the_field(name: str, change: dict[str, Any], field: str) -> None:
    payload = {**VALID[name], **change}
    with pytest.raises(KgrValidationError) as info:
        call_tool(name, payload)
    assert info.value.field is not None and info.value.field.startswith(field), (info.value.field, field)
    assert str(info.value).startswith(field)
    assert info.value.details


@pytest.mark.parametrize("name", TOOLS)
def test_missing_required_fields_and_wrong_shapes(name: str) -> None:
    required = get_tool(name).input_model.model_json_schema()["required"]
    for field in required:
        payload = {k: v for k, v in VALID[name].items() if k != field}
        with pytest.raises(KgrValidationError, match=f"^{field}: Field required"):
            call_tool(name, payload)
    for bad in ([], "text", 3, None):
        with pytest.raises(KgrValidationError, match="must be a JSON object"):
            call_tool(name, bad)


def test_too_many_entities() -> None:
    big = {"entities": {"Person": [f"p{i}" for i in range(models.MAX_KG_ITEMS + 1)]}}
    with pytest.raises(KgrValidationError, match="^extracted_kg: Value error, at most 20000 entities"):
        call_tool("query_coverage_feedback", {**VALID["query_coverage_feedback"], "extracted_kg": big})


def test_entity_names_without_letters_are_accepted_but_harmless() -> None:
    out = call_tool("query_quality_metrics", {**VALID["query_quality_metrics"],
                                              "extracted_kg": {"entities": {"Person": ["!!!", "Ada"]}}})
    assert out["evaluation_results"]["accuracy"]["details"]["entities_not_in_text"] == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, width=32) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
keys = st.sampled_from(["text", "schema", "extracted_kg", "domain", "priority_types", "evaluation_aspects",
                        "extraction_history", "feedback_history", "max_iterations", "entities", "relations"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(PURE), payload=st.dictionaries(keys, json_values, max_size=5))
def test_fuzzed_payloads_never_crash(name: str, payload: dict[str, Any]) -> None:
    try:
        out = call_tool(name, {**VALID[name], **payload})
    except KgrValidationError as exc:
        assert exc.field
    else:
        get_tool(name).output_model.model_validate(out)


names_st = st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]), min_size=1, max_size=12)
types_st = st.sampled_from(["Person", "Org", "Place", "Date", "Thing"])
kgs = st.builds(
    lambda ents, rels: {"entities": ents,
                        "relations": {t: [{"subject": s, "object": o} for s, o in ps] for t, ps in rels.items()}},
    st.dictionaries(types_st, st.lists(names_st, max_size=4), max_size=3),
    st.dictionaries(st.sampled_from(["KNOWS", "IN"]), st.lists(st.tuples(names_st, names_st), max_size=3), max_size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kg=kgs, history=st.lists(kgs, max_size=3), text=st.text(max_size=200))
def test_valid_random_inputs_give_valid_outputs(kg: dict, history: list[dict], text: str) -> None:
    schema = {"entity_schema": ["Person", "Org", "Place"], "relation_schema": ["KNOWS"]}
    base = {"text": text, "schema": schema, "extracted_kg": kg}
    payloads = {
        "query_extraction_density": base,
        "query_coverage_feedback": {**base, "priority_types": ["Person", "KNOWS"]},
        "query_quality_metrics": base,
        "query_iterative_feedback": {**base, "extraction_history": history},
    }
    for name, payload in payloads.items():
        out = call_tool(name, payload)
        get_tool(name).output_model.model_validate(out)
        json.dumps(out)


@pytest.mark.parametrize(("name", "change", "field"), MALFORMED[::3], ids=[f"{n}-{f}" for n, _, f in MALFORMED[::3]])
def test_typed_inputs_are_refused_as_json_ones_are(name: str, change: dict[str, Any], field: str) -> None:
    """``ToolInput.of`` (what the ingestion loop builds) refuses what ``call_tool`` refuses, naming the
    same field, with kgr's error rather than pydantic's."""
    payload = {**VALID[name], **change}
    with pytest.raises(KgrValidationError) as typed:
        get_tool(name).input_model.of(**payload)
    with pytest.raises(KgrValidationError) as json_:
        call_tool(name, payload)
    assert (typed.value.field, str(typed.value)) == (json_.value.field, str(json_.value))


@pytest.mark.parametrize("name", PURE)
def test_a_typed_call_answers_as_the_json_call(name: str) -> None:
    """The tool function called with an input built from models (the extraction as an ExtractedKG
    instance, taken as it is) gives the output ``call_tool`` gives for the same payload."""
    from kgr.model.kg import ExtractedKG
    from kgr.tools.context import ToolContext

    kg = ExtractedKG.model_validate({"entities": {"Person": ["Ada", "Charles Babbage"]},
                                     "relations": {"KNOWS": [{"subject": "Ada", "object": "Charles Babbage"}]}})
    payload = {**VALID[name], "text": "Ada knew Charles Babbage in London.", "extracted_kg": kg.model_dump()}
    params = get_tool(name).input_model.of(**{**payload, "extracted_kg": kg})
    assert params.extracted_kg is kg
    typed = get_tool(name).func(params, context=ToolContext())
    assert type(typed) is get_tool(name).output_model
    assert typed.model_dump(mode="json", by_alias=True) == call_tool(name, payload)
