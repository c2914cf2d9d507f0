"""The tool catalogue: every tool kgr serves, in one list, with one lookup and one invocation path.

The served tools are the six agent tools (defined in :mod:`kgr.tools`, where the ingestion loop calls
them as typed functions, and listed by its registry), then the tools defined here, each a plain
function over one :class:`~kgr.engine.Engine` call: the graph tools (:mod:`kgr.catalog.graph_tools`:
status, search, neighbourhood, explanations, snapshots, review, labels, forget, aging), the slice
tools (:mod:`kgr.catalog.slice_tools`) and the resolution tools (:mod:`kgr.catalog.resolve_tools`).
The server (MCP and HTTP alike) only transports them: it finds and runs them here, never in the store.

* :func:`served_tools` — the :class:`~kgr.tools.registry.ToolSpec` of every served tool;
* :func:`get_served` — one by name (:class:`~kgr.errors.KgrNotFound` naming the known ones);
* :func:`invoke` — run a served tool on a JSON payload through
  :func:`kgr.tools.registry.call_tool`, the one entry point the registry offers JSON callers (its
  :func:`~kgr.tools.registry.validate_input` validates strictly, naming the failing field, with
  JSON number semantics and a depth limit), for the six tools and the catalogue's own alike.

MCP annotations come from each spec's flags (:func:`kgr.tools.registry.mcp_annotations`). Schemas
are never written here: they are the specs' ``input_schema()``/``output_schema()``.
"""

from __future__ import annotations

import functools
from typing import Any

from kgr.catalog.graph_tools import GRAPH_TOOLS
from kgr.catalog.resolve_tools import RESOLVE_TOOLS
from kgr.catalog.slice_tools import SLICE_TOOLS
from kgr.errors import KgrNotFound
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec, call_tool, list_tools

__all__ = ["served_tools", "get_served", "invoke", "is_agent_tool", "GRAPH_TOOLS", "SLICE_TOOLS", "RESOLVE_TOOLS"]


@functools.cache
def _catalog() -> dict[str, ToolSpec]:
    specs = [*list_tools(), *GRAPH_TOOLS, *SLICE_TOOLS, *RESOLVE_TOOLS]
    out: dict[str, ToolSpec] = {}
    for s in specs:
        if s.name in out:  # pragma: no cover - a programming error, caught by the tests
            raise RuntimeError(f"two served tools are named {s.name}")
        out[s.name] = s
    return out


def served_tools() -> list[ToolSpec]:
    """Every served tool: the six agent tools in the appendix's order, then the graph tools, then the
    slice tools, then the resolution tools."""
    return list(_catalog().values())


def is_agent_tool(name: str) -> bool:
    """Whether ``name`` is one of the registry's six agent tools (not one of the catalogue's own)."""
    return name in {s.name for s in list_tools()}


def get_served(name: str) -> ToolSpec:
    """The served tool called ``name``.

    Raises
    ------
    KgrNotFound
        Naming the served tools.
    """
    try:
        return _catalog()[name]
    except KeyError:
        raise KgrNotFound(f"no tool named {name[:80]!r}; known tools: {', '.join(_catalog())}") from None


def invoke(name: str, payload: object, context: ToolContext) -> dict[str, Any]:
    """Validate ``payload``, run the served tool ``name`` and return its JSON-able output.

    Blocking (the store tools talk to Neo4j): async callers run it in a worker thread.

    Raises
    ------
    KgrValidationError
        The payload is invalid (``field`` names the failing field).
    KgrNotFound
        No such tool, or a graph tool's subject does not exist.
    KgrNeo4jUnavailable
        A store tool without a reachable database.
    """
    return call_tool(get_served(name), payload, context=context)
