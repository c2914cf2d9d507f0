"""The OpenAPI 3.1 document of the JSON API, generated from the same pydantic models as the tools.

Every served tool gets its own operation ``POST /tools/<name>`` whose request body is the tool's
input model (validation mode) and whose 200 response is its output model (serialization mode);
all errors share :class:`ErrorResponse`. ``GET /tools``, ``GET /health`` and ``GET /metrics`` are
described by :class:`FunctionDefinition`, :class:`Health` and
:class:`~kgr.server.metrics.ServerMetrics`. The component schemas come from
:func:`pydantic.json_schema.models_json_schema` with references rewritten to
``#/components/schemas/...``; nothing is written by hand except the document's skeleton.

One normalisation is applied (:func:`_close_pattern_maps`): pydantic renders ``dict[Identifier, X]``
as ``patternProperties`` without ``additionalProperties: false``, which lets a JSON Schema accept
keys the model rejects (``{"entities": {"not an identifier": ...}}``). The document closes such maps,
so that it states exactly what the server accepts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

import kgr
from kgr.catalog import served_tools
from kgr.server.metrics import ServerMetrics

__all__ = ["ErrorBody", "ErrorResponse", "FunctionSpec", "FunctionDefinition", "Health", "openapi_document",
           "ERROR_STATUSES"]


class ErrorBody(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    type: Literal["validation_error", "not_found", "bad_request", "unavailable", "timeout", "internal_error",
                  "unauthorized", "payload_too_large", "unsupported_media_type", "method_not_allowed"]
    message: str = Field(description="one line saying what went wrong")
    field: str | None = Field(None, description="dotted path of the failing input field (validation errors)")
    details: list[dict[str, str]] | None = Field(None, description="every failing field: loc, type, msg")


class ErrorResponse(BaseModel):
    """Every error the API returns: ``{"error": {"type", "message", "field"?, "details"?}}``."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    error: ErrorBody


class FunctionSpec(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str
    description: str
    parameters: dict[str, Any] = Field(description="JSON Schema of the arguments (the tool's input model)")


class FunctionDefinition(BaseModel):
    """An OpenAI-style function definition (``tools=[...]`` of a chat completion request)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    type: Literal["function"]
    function: FunctionSpec


class Health(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    status: Literal["ok", "degraded"] = Field(description="degraded: Neo4j is down; the pure tools still work")
    version: str
    neo4j: Literal["up", "down"]
    tools: int


#: Error statuses every tool operation may answer.
ERROR_STATUSES: dict[int, str] = {
    400: "Malformed request (invalid JSON, bad header) or an input the tool rejects",
    404: "No such tool, or the entity/edge named in the input does not exist",
    408: "The request body did not arrive within the server's body deadline (the connection is closed)",
    413: "Request body too large",
    415: "Content-Type is not application/json",
    422: "The input does not match the tool's schema; `error.field` names the failing field",
    500: "Internal error (an id to find it in the server log; no details)",
    503: "Neo4j is unavailable, or the server has as many connections open as it allows",
    504: "The call exceeded the server's time limit",
}


def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (v.replace("#/$defs/", "#/components/schemas/") if k == "$ref" and isinstance(v, str)
                    else _rewrite_refs(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def _close_pattern_maps(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _close_pattern_maps(v) for k, v in node.items()}
        if "patternProperties" in out and "additionalProperties" not in out and "properties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_close_pattern_maps(v) for v in node]
    return node


def _json(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": ref}}}


def openapi_document(*, token_required: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API (see the module docstring).

    ``token_required`` declares the bearer scheme as required on every operation.
    """
    specs = served_tools()
    models: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = []
    for s in specs:
        models.append((s.input_model, "validation"))
        models.append((s.output_model, "serialization"))
    models += [(ErrorResponse, "serialization"), (FunctionDefinition, "serialization"), (Health, "serialization"),
               (ServerMetrics, "serialization")]
    keys, defs = models_json_schema(models, ref_template="#/components/schemas/{model}")
    components = _close_pattern_maps(_rewrite_refs(defs.get("$defs", {})))

    def ref(model: type[BaseModel], mode: str) -> str:
        return keys[(model, mode)]["$ref"]  # type: ignore[index]

    err = ref(ErrorResponse, "serialization")
    common = {str(code): {"description": text, "content": _json(err)} for code, text in ERROR_STATUSES.items()}
    auth = {"401": {"description": "Missing or invalid bearer token", "content": _json(err)}} if token_required else {}

    paths: dict[str, Any] = {
        "/health": {"get": {
            "operationId": "health", "summary": "Liveness and Neo4j reachability",
            "responses": {"200": {"description": "Server status", "content": _json(ref(Health, "serialization"))},
                          **auth},
        }},
        "/metrics": {"get": {
            "operationId": "metrics", "summary": "Request counts and latency percentiles per tool",
            "responses": {"200": {"description": "Server metrics",
                                  "content": _json(ref(ServerMetrics, "serialization"))}, **auth},
        }},
        "/tools": {"get": {
            "operationId": "list_tools",
            "summary": "OpenAI-style function definitions of the served tools",
            "parameters": [{"name": "only", "in": "query", "required": False,
                            "description": "agent: the six agent tools only; helpers: the read-only helpers only",
                            "schema": {"type": "string", "enum": ["agent", "helpers"]}}],
            "responses": {
                "200": {"description": "Function definitions",
                        "content": {"application/json": {"schema": {
                            "type": "array", "items": {"$ref": ref(FunctionDefinition, "serialization")}}}}},
                "422": {"description": "Unknown value of `only`", "content": _json(err)},
                **auth},
        }},
    }
    for s in specs:
        in_schema = s.input_model.model_json_schema(mode="validation")
        body_required = bool(in_schema.get("required"))
        hints = ", ".join(f"{k}={v}" for k, v in (("read-only", s.read_only), ("idempotent", s.idempotent),
                                                   ("destructive", s.destructive)))
        paths[f"/tools/{s.name}"] = {"post": {
            "operationId": s.name,
            "summary": s.description.split(". ")[0][:120],
            "description": f"{s.description}\n\n({hints})",
            "requestBody": {"required": body_required, "content": _json(ref(s.input_model, "validation"))},
            "responses": {"200": {"description": "The tool's output",
                                  "content": _json(ref(s.output_model, "serialization"))},
                          **common, **auth},
        }}

    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "kgr tool server",
            "version": kgr.__version__,
            "description": ("The six Agentic-KGR tools and read-only graph helpers of kgr, as a JSON API. "
                            "The same tools are served over MCP at /mcp (streamable HTTP)."),
        },
        "paths": paths,
        "components": {"schemas": components},
    }
    if token_required:
        doc["components"]["securitySchemes"] = {"bearerAuth": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearerAuth": []}]
    return doc
