"""The six agent tools of Agentic-KGR (appendix A.4) as plain functions over the model and the store.

Call them through the registry (strict validation, JSON in and out)::

    from kgr.tools import call_tool, function_definitions
    call_tool("query_coverage_feedback", {"text": ..., "schema": ..., "extracted_kg": ...})

or, from Python, as typed functions with their pydantic inputs (what the ingestion loop does)::

    from kgr.model.tools import ExtractionDensityInput
    from kgr.tools.density import query_extraction_density
    out = query_extraction_density(ExtractionDensityInput.of(text=..., schema=..., extracted_kg=kg),
                                   context=ToolContext())  # an ExtractionDensityOutput

``ToolInput.of`` validates as the registry does (a bad value raises ``KgrValidationError``). The
store tools need ``ToolContext(graph=...)``.
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
