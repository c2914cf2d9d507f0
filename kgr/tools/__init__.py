"""The six agent tools of Agentic-KGR (appendix A.4) as plain functions over the model and the store.

Call them through the registry (strict validation, JSON in and out)::

    from kgr.tools import call_tool, function_definitions
    call_tool("query_coverage_feedback", {"text": ..., "schema": ..., "extracted_kg": ...})

or directly with their pydantic inputs (``kgr.tools.density.query_extraction_density(params,
context=ToolContext())``). The store tools need ``ToolContext(graph=...)``.
"""

from kgr.tools.context import EmbedFn, ToolContext
from kgr.tools.registry import (
    ToolSpec,
    call_tool,
    function_definition,
    function_definitions,
    get_tool,
    list_tools,
    mcp_annotations,
    tool,
    tool_names,
    validate_input,
)

__all__ = [
    "EmbedFn",
    "ToolContext",
    "ToolSpec",
    "call_tool",
    "function_definition",
    "function_definitions",
    "get_tool",
    "list_tools",
    "mcp_annotations",
    "tool",
    "tool_names",
    "validate_input",
]
