"""The tool registry: one decorator declares a tool, its models and its side effects.

A tool is a plain function ``fn(params: InputModel, *, context: ToolContext) -> OutputModel``
decorated with :func:`tool`. The decorator reads the input and output models from the type hints,
the description from the docstring's first paragraph, and records three flags that become MCP
annotations (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``):

>>> from kgr.tools.registry import function_definition
>>> function_definition("query_coverage_feedback")["function"]["name"]
'query_coverage_feedback'

The decorated function stays the tool's typed Python entry point (:class:`ToolFunction`): the
ingestion loop calls ``query_extraction_density(ExtractionDensityInput.of(...), context=ctx)``, no
name look-up and no JSON. :func:`call_tool` is the one entry point for JSON callers (``kgr tool``,
the MCP and HTTP servers, the agent, whose LLM names the tool), for the six tools and the server's
helpers alike: it validates the payload with :func:`validate_input`, the one payload validator, runs
the tool and returns the output as JSON-able data. Function definitions for OpenAI-style function
calling are generated from the same input models, never written by hand.

**Validation** is strict (``"1"`` is no number, ``true`` no integer) and names the failing field
(:class:`~kgr.errors.KgrValidationError`). **JSON numbers**: JSON has one number type, and JSON
Schema counts ``100.0`` as an integer; the tools validate strictly in Python terms, where ``100.0``
is a float and no integer. :func:`validate_input` therefore turns every float with no fractional
part into an int first (:func:`json_numbers`; float fields accept ints), so a payload is accepted
exactly when it matches the published schema. A payload nesting arrays or objects deeper than
:data:`MAX_JSON_DEPTH` is refused with a validation error (HTTP 422), not a ``RecursionError``.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.tools import validate_strict
from kgr.tools.context import ToolContext

__all__ = [
    "ToolSpec",
    "ToolFunction",
    "tool",
    "get_tool",
    "list_tools",
    "tool_names",
    "run_tool",
    "function_definition",
    "function_definitions",
    "mcp_annotations",
    "validate_input",
    "json_numbers",
    "call_tool",
    "TOOL_MODULES",
    "MAX_JSON_DEPTH",
]

#: Modules whose import registers the six tools, in the appendix's order.
TOOL_MODULES = (
    "kgr.tools.density",
    "kgr.tools.coverage",
    "kgr.tools.quality",
    "kgr.tools.feedback",
    "kgr.tools.disambiguation",
    "kgr.tools.storage",
)

F = TypeVar("F", bound=Callable[..., BaseModel])
In = TypeVar("In", bound=BaseModel, contravariant=True)
Out = TypeVar("Out", bound=BaseModel, covariant=True)


class ToolFunction(Protocol[In, Out]):
    """A tool's typed Python entry point, the decorated function itself: ``fn(params, *, context)``
    from its input model to its output model, no JSON and no name look-up (the ingestion loop calls
    the tools so; the registry's names are for JSON callers)."""

    __name__: str

    def __call__(self, params: In, /, *, context: ToolContext) -> Out: ...


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool."""

    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    func: Callable[..., BaseModel]
    read_only: bool
    destructive: bool
    idempotent: bool
    needs_graph: bool

    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the input (the function's ``parameters``, MCP's ``inputSchema``)."""
        return self.input_model.model_json_schema(mode="validation")

    def output_schema(self) -> dict[str, Any]:
        """JSON Schema of the output (MCP's ``outputSchema``)."""
        return self.output_model.model_json_schema(mode="serialization")


_REGISTRY: dict[str, ToolSpec] = {}


def _first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "")
    para = text.split("\n\n", 1)[0]
    return " ".join(para.split())


def tool(*, read_only: bool, idempotent: bool, destructive: bool = False, needs_graph: bool = False,
         name: str | None = None) -> Callable[[F], F]:
    """Register the decorated function as an agent tool.

    Parameters
    ----------
    read_only:
        The tool changes nothing (MCP ``readOnlyHint``).
    idempotent:
        Calling it again with the same input has no further effect (MCP ``idempotentHint``).
    destructive:
        It may delete or overwrite data (MCP ``destructiveHint``); meaningful only when not read-only.
    needs_graph:
        It needs ``context.graph`` (a Neo4j connection).
    name:
        The tool name; defaults to the function name.

    Raises
    ------
    TypeError
        When the function's first parameter or return annotation is not a pydantic model.
    """

    def register(func: F) -> F:
        hints = typing.get_type_hints(func)
        params = list(inspect.signature(func).parameters)
        input_model = hints.get(params[0]) if params else None
        output_model = hints.get("return")
        for what, model in (("input", input_model), ("output", output_model)):
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise TypeError(f"tool {func.__name__}: the {what} annotation must be a pydantic model")
        spec = ToolSpec(
            name=name or func.__name__,
            description=_first_paragraph(func.__doc__),
            input_model=input_model,  # type: ignore[arg-type]
            output_model=output_model,  # type: ignore[arg-type]
            func=func,
            read_only=read_only,
            destructive=destructive and not read_only,
            idempotent=idempotent,
            needs_graph=needs_graph,
        )
        _REGISTRY[spec.name] = spec
        func.tool_spec = spec  # type: ignore[attr-defined]
        return func

    return register


def _load() -> None:
    for mod in TOOL_MODULES:
        importlib.import_module(mod)


def list_tools() -> list[ToolSpec]:
    """Every registered tool, in the appendix's order."""
    _load()
    order = {m.rsplit(".", 1)[-1]: i for i, m in enumerate(TOOL_MODULES)}
    return sorted(_REGISTRY.values(), key=lambda s: (order.get(s.func.__module__.rsplit(".", 1)[-1], 99), s.name))


def tool_names() -> list[str]:
    """Names of the registered tools."""
    return [s.name for s in list_tools()]


def get_tool(name: str) -> ToolSpec:
    """The tool called ``name``.

    Raises
    ------
    KgrNotFound
        Naming the known tools.
    """
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KgrNotFound(f"no tool named {name[:80]!r}; known tools: {', '.join(tool_names())}") from None


def function_definition(name: str) -> dict[str, Any]:
    """The OpenAI-style function definition of a tool:
    ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
    spec = get_tool(name)
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.input_schema()},
    }


def function_definitions() -> list[dict[str, Any]]:
    """The function definitions of every tool."""
    return [function_definition(s.name) for s in list_tools()]


def _spec(which: str | ToolSpec) -> ToolSpec:
    return which if isinstance(which, ToolSpec) else get_tool(which)


def mcp_annotations(which: str | ToolSpec) -> dict[str, bool]:
    """The MCP tool annotations of a tool, by name or spec (``readOnlyHint``, ``destructiveHint``,
    ``idempotentHint``, ``openWorldHint``)."""
    spec = _spec(which)
    return {
        "readOnlyHint": spec.read_only,
        "destructiveHint": spec.destructive,
        "idempotentHint": spec.idempotent,
        "openWorldHint": False,
    }


#: Deepest nesting of arrays and objects a payload may have (no tool input needs more than a few).
MAX_JSON_DEPTH = 64


def json_numbers(value: Any, _depth: int = 0) -> Any:
    """``value`` with integral floats as ints (JSON number semantics; see the module docstring).

    >>> json_numbers({"a": [100.0, 0.5, True], "b": -2.0})
    {'a': [100, 0.5, True], 'b': -2}

    Raises
    ------
    KgrValidationError
        The value nests arrays or objects deeper than :data:`MAX_JSON_DEPTH` (a clear 422, not a
        ``RecursionError``).
    """
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, (dict, list)) and _depth >= MAX_JSON_DEPTH:
        raise KgrValidationError(f"the input nests arrays or objects deeper than {MAX_JSON_DEPTH} levels",
                                 field="input")
    if isinstance(value, dict):
        return {k: json_numbers(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [json_numbers(v, _depth + 1) for v in value]
    return value


def validate_input(which: str | ToolSpec, payload: object) -> BaseModel:
    """Validate a JSON payload against a tool's input model (by name or spec): the one validator.

    JSON numbers first (:func:`json_numbers`), then strict pydantic validation.

    Raises
    ------
    KgrValidationError
        Naming the first failing field (``extracted_kg.entities.Person.0``), with the pydantic error
        list in ``details``; or the payload is not an object, or nests deeper than
        :data:`MAX_JSON_DEPTH`.
    KgrNotFound
        For an unknown tool name.
    """
    spec = _spec(which)
    payload = json_numbers(payload)
    if not isinstance(payload, dict):
        raise KgrValidationError(f"{spec.name} input must be a JSON object, got {type(payload).__name__}", field="$")
    return validate_strict(spec.input_model, payload)


def run_tool(which: str | ToolSpec, payload: object, *, context: ToolContext | None = None) -> BaseModel:
    """Validate ``payload`` (:func:`validate_input`), run the tool (by name or spec) and return its typed
    output model (Python callers that know the tool call its function instead; JSON callers use
    :func:`call_tool`).

    Raises the same errors as :func:`call_tool`.
    """
    spec = _spec(which)
    params = validate_input(spec, payload)
    return spec.func(params, context=context or ToolContext())


def call_tool(which: str | ToolSpec, payload: object, *, context: ToolContext | None = None) -> dict[str, Any]:
    """Validate ``payload``, run the tool (by name or spec) and return its output as JSON-able data.

    Blocking (the store tools talk to Neo4j): async callers run it in a worker thread.

    Raises
    ------
    KgrValidationError
        The payload is not a valid input (the message and ``field`` name the failing field).
    KgrNotFound
        No tool has that name.
    KgrNeo4jUnavailable
        A store tool was called without a reachable database.
    """
    return run_tool(which, payload, context=context).model_dump(mode="json", by_alias=True)
