"""Real MCP client sessions (the official SDK's client) over stdio and streamable HTTP."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from kgr.catalog import served_tools
from kgr.server.mcp_server import build_mcp_server
from kgr.server.security import ServerConfig
from kgr.server.service import ToolService
from kgr.store.connection import Neo4jSettings
from kgr.tools.registry import get_tool, mcp_annotations, tool_names

from .conftest import KG, TEXT, SCHEMA, six_calls, subprocess_env

SIX = tool_names()


async def _exercise(client: Client, graph) -> dict[str, Any]:
    """List tools, call each of the six and one helper; return the outputs by tool."""
    listed = (await client.list_tools()).tools
    by_name = {t.name: t for t in listed}
    assert list(by_name) == [s.name for s in served_tools()]
    assert set(SIX) <= set(by_name) and len(SIX) == 6
    for name in SIX:
        spec, tool = get_tool(name), by_name[name]
        assert tool.input_schema == spec.input_schema()  # from the pydantic model, not hand-written
        assert tool.output_schema == spec.output_schema()
        hints = mcp_annotations(name)
        assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint,
                tool.annotations.idempotent_hint) == (hints["readOnlyHint"], hints["destructiveHint"],
                                                      hints["idempotentHint"])
    assert by_name["query_kg_storage"].annotations.read_only_hint is False
    assert by_name["search_entities"].annotations.read_only_hint is True

    outputs: dict[str, Any] = {}
    for name, args in six_calls("mcp-doc"):
        result = await client.call_tool(name, args)
        assert not result.is_error, (name, result.content)
        # schema-valid: the structured content parses as the tool's output model
        outputs[name] = get_tool(name).output_model.model_validate(result.structured_content)
    hits = await client.call_tool("search_entities", {"query": "turing"})
    assert not hits.is_error and hits.structured_content["results"][0]["key"] == "Person:alan turing"

    bad = await client.call_tool("query_extraction_density", {"text": TEXT, "schema": SCHEMA,
                                                              "extracted_kg": {"entities": {"bad type": ["x"]}}})
    assert bad.is_error and "validation_error: extracted_kg.entities" in bad.content[0].text
    return outputs


def _check_graph(outputs: dict[str, Any], graph) -> None:
    storage = outputs["query_kg_storage"]
    assert storage.storage_status.overall_success and storage.storage_status.relations_storage.stored_count == 3
    assert outputs["query_entity_disambiguation"].summary.disambiguated_entities == 5
    assert outputs["query_extraction_density"].needs_more_extraction is False
    rows = graph.read("pending_edges", {"statuses": None})
    assert sorted((r["subject"], r["relation"], r["object"], r["votes"]) for r in rows) == [
        ("Alan Turing", "WORKED_AT", "Bletchley Park", 1), ("Gordon Welchman", "WORKED_AT", "Bletchley Park", 1),
        ("Max Newman", "WORKED_AT", "Bletchley Park", 1)]


@pytest.mark.neo4j
def test_stdio_session(graph, neo4j_settings: Neo4jSettings):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kgr.cli.serve", "serve", "--transport", "stdio", "--log-level", "warning"],
        env=subprocess_env(neo4j_settings),
    )

    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                return await _exercise(client, graph)

    _check_graph(anyio.run(main), graph)


@pytest.mark.neo4j
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_streamable_http_session(http_server, graph, mode):
    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with Client(http_server.url + "/mcp", mode=mode) as client:
                return await _exercise(client, graph)

    _check_graph(anyio.run(main), graph)


def test_listing_matches_models_in_process():
    """Without a database: the in-process listing carries every served tool's schemas and hints."""
    service = ToolService(ServerConfig(transport="stdio"), settings=Neo4jSettings(uri="bolt://127.0.0.1:9"))
    server = build_mcp_server(service)

    async def main() -> None:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == [s.name for s in served_tools()]
            for t, s in zip(tools, served_tools()):
                assert t.input_schema == s.input_schema() and t.output_schema == s.output_schema()
                assert t.annotations.read_only_hint is s.read_only
            res = await client.call_tool("query_coverage_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG})
            assert not res.is_error and res.structured_content["coverage_score"] > 0
            down = await client.call_tool("graph_status", {})
            assert down.is_error and down.content[0].text.startswith("unavailable:")
            # an invalid input is reported as such, database or not
            bad = await client.call_tool("query_kg_storage", {"extracted_kg": {}, "oops": 1})
            assert bad.is_error and bad.content[0].text.startswith("validation_error: oops")

    anyio.run(main)
