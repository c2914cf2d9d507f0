"""The tools the server serves: the registry's six agent tools, then the read-only helpers.

One list, one lookup and one invocation path for MCP and HTTP alike:

* :func:`served_tools` — the :class:`~kgr.tools.registry.ToolSpec` of every served tool;
* :func:`get_served` — one by name (:class:`~kgr.errors.KgrNotFound` naming the known ones);
* :func:`invoke` — validate a JSON payload strictly against the tool's input model (a
  :class:`~kgr.errors.KgrValidationError` names the failing field), run the tool, return its output
  as JSON-able data. The six tools go through :func:`kgr.tools.registry.call_tool`, the one entry
  point the registry offers JSON callers; the helpers through the same steps here.
* :func:`annotations` — the MCP hints from each spec's flags.

**JSON numbers.** JSON has one number type, and JSON Schema counts ``100.0`` as an integer; the
tools validate strictly in Python terms, where ``100.0`` is a float and no integer. :func:`invoke`
therefore turns every float with no fractional part into an int before validation (float fields
accept ints), so a payload is accepted exactly when it matches the published schema. Nothing else
is coerced: ``"1"`` is still no number and ``true`` no integer.

Schemas are never written here: they are the specs' ``input_schema()``/``output_schema()``.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import ValidationError

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.server.helpers import HELPERS
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec, call_tool, list_tools

__all__ = ["served_tools", "get_served", "invoke", "annotations", "is_agent_tool", "validate_payload",
           "json_numbers"]


@functools.cache
def _catalog() -> dict[str, ToolSpec]:
    specs = [*list_tools(), *HELPERS]
    out: dict[str, ToolSpec] = {}
    for s in specs:
        if s.name in out:  # pragma: no cover - a programming error, caught by the tests
            raise RuntimeError(f"two served tools are named {s.name}")
        out[s.name] = s
    return out


def served_tools() -> list[ToolSpec]:
    """Every served tool: the six agent tools in the appendix's order, then the helpers."""
    return list(_catalog().values())


def is_agent_tool(name: str) -> bool:
    """Whether ``name`` is one of the registry's six agent tools (not a helper)."""
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


def validate_payload(spec: ToolSpec, payload: object) -> Any:
    """Validate ``payload`` strictly against ``spec``'s input model (as the registry does)."""
    if not isinstance(payload, dict):
        raise KgrValidationError(f"{spec.name} input must be a JSON object, got {type(payload).__name__}", field="$")
    try:
        return spec.input_model.model_validate(payload, strict=True)
    except ValidationError as exc:
        raise KgrValidationError.from_pydantic(exc) from None


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


def invoke(name: str, payload: object, context: ToolContext) -> dict[str, Any]:
    """Validate ``payload``, run the served tool ``name`` and return its JSON-able output.

    Blocking (the store tools talk to Neo4j): async callers run it in a worker thread.

    Raises
    ------
    KgrValidationError
        The payload is invalid (``field`` names the failing field).
    KgrNotFound
        No such tool, or a helper's subject does not exist.
    KgrNeo4jUnavailable
        A store tool without a reachable database.
    """
    spec = get_served(name)
    payload = json_numbers(payload)
    if is_agent_tool(name):
        return call_tool(name, payload, context=context)
    params = validate_payload(spec, payload)
    result = spec.func(params, context=context)
    return result.model_dump(mode="json", by_alias=True)


def annotations(spec: ToolSpec) -> dict[str, bool]:
    """MCP tool annotations from the spec's flags (``readOnlyHint``, ``destructiveHint``,
    ``idempotentHint``, ``openWorldHint``)."""
    return {
        "readOnlyHint": spec.read_only,
        "destructiveHint": spec.destructive,
        "idempotentHint": spec.idempotent,
        "openWorldHint": False,
    }
