"""What the catalogue's tools share: the strict input base, the engine of a call, the spec of a function.

A served tool beyond the six agent tools is a plain function ``fn(params, *, context) -> OutputModel``
that turns its validated input into one :class:`~kgr.engine.Engine` call on the session's graph
(:func:`engine_of`) and wraps the answer in its output model; :func:`spec_of` makes its
:class:`~kgr.tools.registry.ToolSpec`, from which the MCP ``inputSchema``/``outputSchema``, the
OpenAI function definitions and the OpenAPI document are generated, exactly as for the six tools.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from kgr.engine import Engine
from kgr.errors import KgrNeo4jUnavailable
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec

__all__ = ["StrictInput", "Output", "engine_of", "spec_of"]


class StrictInput(BaseModel):
    """Base of the served tools' inputs: strict, closed (the six tools' ``ToolInput`` convention)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)


class Output(BaseModel):
    """Base of the served tools' own outputs: closed."""

    model_config = ConfigDict(defer_build=True, extra="forbid")


def engine_of(context: ToolContext, name: str) -> Engine:
    """The :class:`~kgr.engine.Engine` of one call: the session's graph, schema and embedding function.

    An engine holds no state a served tool uses across calls, so one per call costs a few attribute
    assignments.

    Raises
    ------
    KgrNeo4jUnavailable
        The session has no graph (naming the tool ``name``).
    """
    if context.graph is None:
        raise KgrNeo4jUnavailable(f"{name} needs a Neo4j connection")
    return Engine(context.graph, context.schema, embed=context.embed)


def spec_of(func: Any, input_model: type[BaseModel], output_model: type[BaseModel], *, read_only: bool = True,
            idempotent: bool = True, destructive: bool = False) -> ToolSpec:
    """The :class:`~kgr.tools.registry.ToolSpec` of a served tool that needs the graph: its name is the
    function's, its description the docstring's first paragraph."""
    doc = " ".join((func.__doc__ or "").split("\n\n", 1)[0].split())
    return ToolSpec(name=func.__name__, description=doc, input_model=input_model, output_model=output_model,
                    func=func, read_only=read_only, destructive=destructive, idempotent=idempotent, needs_graph=True)
