"""The served catalog, the OpenAPI document and the helpers' models, without a database."""

from __future__ import annotations

import doctest
import importlib

import pytest
from openapi_spec_validator import validate

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.catalog import GRAPH_TOOLS, get_served, invoke, served_tools
from kgr.server.http_api import definitions
from kgr.server.openapi import openapi_document
from kgr.tools.context import ToolContext
from kgr.tools.registry import function_definitions, list_tools

from .conftest import KG, SCHEMA, TEXT


def test_catalog_is_the_six_then_the_helpers():
    names = [s.name for s in served_tools()]
    assert names[:6] == [s.name for s in list_tools()] and len(names) == 22
    assert names[6:] == ["graph_status", "search_entities", "entity_neighbourhood", "explain_edge", "list_snapshots",
                         "review_queue", "label_edges", "forget_document", "age_edges",
                         "get_context_slice", "verify_slice", "report_outcome",
                         "resolve_entities", "split_entity", "review_pairs", "label_pairs"]
    writers = {"label_edges", "forget_document", "age_edges"}
    assert all(h.read_only and h.idempotent and not h.destructive for h in GRAPH_TOOLS if h.name not in writers)
    flags = {h.name: (h.read_only, h.idempotent, h.destructive) for h in GRAPH_TOOLS if h.name in writers}
    assert flags == {"label_edges": (False, False, False),  # one version of labels
                     "forget_document": (False, False, True),  # deletes votes and chunks (versioned)
                     "age_edges": (False, True, False)}  # twice at one time changes nothing
    with pytest.raises(KgrNotFound, match="known tools: query_extraction_density"):
        get_served("drop_database")


def test_no_tool_takes_cypher():
    """No served tool has a parameter that could carry a query."""
    for s in served_tools():
        props = s.input_schema().get("properties", {})
        assert not {"cypher", "query_string", "statement"} & set(props), s.name


def test_invoke_validates_strictly_and_names_the_field():
    ctx = ToolContext()
    out = invoke("query_coverage_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG}, ctx)
    assert 0 < out["coverage_score"] <= 1
    with pytest.raises(KgrValidationError) as info:
        invoke("query_coverage_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": {"entities": {"P": "x"}}}, ctx)
    assert info.value.field == "extracted_kg.entities.P"
    with pytest.raises(KgrValidationError, match="valid string"):
        invoke("search_entities", {"query": 5}, ctx)
    with pytest.raises(KgrValidationError) as info:
        invoke("entity_neighbourhood", {"key": "Person:ada", "limit": 1000}, ctx)
    assert info.value.field == "limit"
    # JSON numbers: 3.0 is the integer 3, as JSON Schema says; "3" stays a string
    out = invoke("query_iterative_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG,
                                              "extraction_history": [], "max_iterations": 3.0}, ctx)
    assert out["max_iterations"] == 3
    with pytest.raises(KgrValidationError):
        invoke("query_iterative_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG,
                                            "extraction_history": [], "max_iterations": "3"}, ctx)


def test_function_definitions_come_from_the_registry():
    assert definitions("agent") == function_definitions()
    helper = {d["function"]["name"]: d for d in definitions("helpers")}
    assert helper["search_entities"]["function"]["parameters"] == get_served("search_entities").input_schema()


def test_openapi_document_is_valid_and_generated():
    doc = openapi_document(token_required=True)
    validate(doc)  # a valid OpenAPI 3.1 document
    comps = doc["components"]["schemas"]
    for s in served_tools():
        op = doc["paths"][f"/tools/{s.name}"]["post"]
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        in_schema = comps[ref.rsplit("/", 1)[1]]
        assert set(in_schema["properties"]) == set(s.input_schema().get("properties", {}))
        assert in_schema.get("required", []) == s.input_schema().get("required", [])
        assert op["requestBody"]["required"] is bool(s.input_schema().get("required"))
        assert {"200", "401", "404", "413", "422", "500", "503", "504"} <= set(op["responses"])
    assert doc["security"] == [{"bearerAuth": []}]
    # maps keyed by identifiers are closed in the document (pydantic leaves them open)
    assert comps["ExtractedKG"]["properties"]["entities"]["additionalProperties"] is False
    assert "security" not in openapi_document(token_required=False)


@pytest.mark.parametrize("name", ["kgr.server.security", "kgr.server.metrics", "kgr.server.locks"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
