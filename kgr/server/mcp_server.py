"""The MCP face of the server, on the official SDK's low-level :class:`mcp.server.Server`.

``tools/list`` lists every served tool with ``inputSchema`` and ``outputSchema`` taken from its
pydantic models (:meth:`~kgr.tools.registry.ToolSpec.input_schema`/``output_schema``) and the
annotations ``readOnlyHint``/``destructiveHint``/``idempotentHint`` from its registry flags.

``tools/call`` runs the tool through :meth:`kgr.server.service.ToolService.call` (worker thread,
time limit, error mapping) and answers with the output both as ``structuredContent`` and as one
JSON text block (for clients that read only text). A failure is a tool result with
``isError: true`` whose text is ``"<type>: <message>"`` (``validation_error: extracted_kg.entities:
...`` names the failing field); internal errors carry only an error id.

Written against the ``mcp`` 2.x SDK (``Server(name, on_list_tools=..., on_call_tool=...)``).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server

import kgr
from kgr.catalog import served_tools
from kgr.tools.registry import mcp_annotations as annotations
from kgr.server.service import ToolService

__all__ = ["build_mcp_server", "INSTRUCTIONS", "tool_listing"]

INSTRUCTIONS = """kgr builds a knowledge graph in Neo4j from text, with staged, voted relations.
Agentic-KGR protocol for each text: (1) extract {"entities": {Type: [names]}, "relations": {TYPE:
[{"subject", "object"}]}} yourself and call query_extraction_density; while needs_more_extraction is
true, re-extract following its recommendations (query_coverage_feedback, query_quality_metrics and
query_iterative_feedback help) and call it again; (2) call query_entity_disambiguation; (3) call
query_kg_storage with its final_kg and a source id for the text. Storage stages votes; it never
promotes facts directly. graph_status, search_entities, entity_neighbourhood, explain_edge and
list_snapshots are read-only views of the graph."""


def _annotations(spec: Any) -> types.ToolAnnotations:
    hints = annotations(spec)
    return types.ToolAnnotations(read_only_hint=hints["readOnlyHint"], destructive_hint=hints["destructiveHint"],
                                 idempotent_hint=hints["idempotentHint"], open_world_hint=hints["openWorldHint"])


def tool_listing() -> list[types.Tool]:
    """The MCP ``Tool`` objects of every served tool."""
    return [
        types.Tool(name=s.name, description=s.description, input_schema=s.input_schema(),
                   output_schema=s.output_schema(), annotations=_annotations(s))
        for s in served_tools()
    ]


def build_mcp_server(service: ToolService) -> Server:
    """An MCP server whose tools run through ``service``."""
    listing = tool_listing()
    schemas = {t.name: t.input_schema for t in listing}

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = await service.call(params.name, params.arguments or {}, channel="mcp")
        if outcome.failure is not None:
            f = outcome.failure
            text = f"{f.type}: {f.message}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        data = outcome.data or {}
        text = outcome.body.decode()
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)

    return Server(
        "kgr",
        version=kgr.__version__,
        title="kgr knowledge-graph tools",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
