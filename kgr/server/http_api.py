"""The plain JSON API: ``GET /tools``, ``POST /tools/{name}``, ``GET /health``, ``GET /metrics``,
``GET /openapi.json``.

Conventions
-----------
- Requests and responses are ``application/json`` (UTF-8). A tool call's body is the tool's input
  object; an empty body (zero bytes) counts as ``{}``. A body that is not JSON, or uses ``NaN``/``Infinity``,
  is a 400; a non-JSON ``Content-Type`` with a body is a 415.
- A 200 response is the tool's output object, exactly as its output model serialises it.
- Every error is ``{"error": {"type", "message", "field"?, "details"?}}`` with the status of the
  table in :mod:`kgr.server.failures` (plus 401, 408, 405, 413, 415 here); never a stack trace.
- ``GET /tools`` returns a JSON array of OpenAI-style function definitions
  (``[{"type": "function", "function": {"name", "description", "parameters"}}]``), ready to pass
  as ``tools=`` to a chat completion request; ``?only=agent`` keeps the six agent tools.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import kgr
from kgr.errors import KgrNeo4jUnavailable, KgrValidationError
from kgr.model.jsontext import loads_strict
from kgr.catalog import is_agent_tool, served_tools
from kgr.server.openapi import openapi_document
from kgr.server.service import ToolFailure, ToolService
from kgr.tools.registry import function_definition

__all__ = ["api_routes", "json_response", "error_response", "read_body", "definitions", "http_exception_handler"]

log = logging.getLogger("kgr.server.access")


def json_response(data: Any, status: int = 200, *, body: bytes | None = None,
                  headers: dict[str, str] | None = None) -> Response:
    raw = body if body is not None else json.dumps(data, ensure_ascii=False, allow_nan=False,
                                                   separators=(",", ":")).encode()
    return Response(raw, status_code=status, media_type="application/json", headers=headers)


def error_response(status: int, kind: str, message: str, field: str | None = None,
                   headers: dict[str, str] | None = None) -> Response:
    return json_response(ToolFailure(status, kind, message, field).as_json(), status, headers=headers)


class _BodyError(Exception):
    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, reading at most ``limit`` bytes (413 beyond, whatever the headers said)."""
    chunks: list[bytes] = []
    seen = 0
    async for part in request.stream():
        seen += len(part)
        if seen > limit:
            raise _BodyError(413, "payload_too_large", f"request body exceeds the limit of {limit} bytes")
        chunks.append(part)
    return b"".join(chunks)


#: Bodies up to this size are parsed on the event loop; larger ones in a worker thread.
_PARSE_INLINE_BYTES = 64 * 1024


def _parse_json(raw: bytes) -> Any:
    """The body as strict JSON (:func:`kgr.model.jsontext.loads_strict`: duplicate keys and NaN
    refused, as in every JSON kgr reads from users); 400 otherwise. Nesting past 64 is the tools'
    validator's 422 (:data:`kgr.tools.registry.MAX_JSON_DEPTH`), past what the parser can follow a 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BodyError(400, "bad_request", f"request body is not UTF-8 (byte {exc.start})") from None
    try:
        return loads_strict(text, max_depth=None)
    except KgrValidationError as exc:
        raise _BodyError(400, "bad_request", f"invalid JSON: {str(exc)[:200]}") from None


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    mt = content_type.split(";", 1)[0].strip().lower()
    return mt == "application/json" or (mt.startswith("application/") and mt.endswith("+json"))


def definitions(only: str | None = None) -> list[dict[str, Any]]:
    """OpenAI-style function definitions of the served tools (``only``: ``agent`` or ``helpers``)."""
    out = []
    for s in served_tools():
        agent = is_agent_tool(s.name)
        if (only == "agent" and not agent) or (only == "helpers" and agent):
            continue
        out.append(function_definition(s.name) if agent else {
            "type": "function",
            "function": {"name": s.name, "description": s.description, "parameters": s.input_schema()},
        })
    return out


def api_routes(service: ToolService, *, token_required: bool) -> list[Route]:
    """The JSON API's routes over ``service``."""
    doc_bytes: list[bytes] = []

    def access(request: Request, status: int, started: float) -> None:
        log.info("%s %s %d %.1fms", request.method, request.url.path[:200], status,
                 (time.perf_counter() - started) * 1000)

    async def call_tool(request: Request) -> Response:
        started = time.perf_counter()
        name = request.path_params["name"]
        try:
            raw = await read_body(request, service.config.max_body_bytes)
            if raw and not _is_json(request.headers.get("content-type")):
                raise _BodyError(415, "unsupported_media_type", "send the tool input as application/json")
            # a large body is parsed in a worker thread: 8 MB of JSON would hold the event loop ~0.1 s
            payload: Any = ({} if not raw else _parse_json(raw) if len(raw) <= _PARSE_INLINE_BYTES
                            else await anyio.to_thread.run_sync(_parse_json, raw))
        except _BodyError as exc:
            service.metrics.record(None, str(exc.status), error=True)
            access(request, exc.status, started)
            return error_response(exc.status, exc.kind, exc.message)
        outcome = await service.call(name, payload)
        if outcome.failure is not None:
            f = outcome.failure
            access(request, f.status, started)
            return json_response(f.as_json(), f.status)
        access(request, 200, started)
        return json_response(None, 200, body=outcome.body)

    async def list_tools(request: Request) -> Response:
        only = request.query_params.get("only")
        if only not in (None, "agent", "helpers"):
            service.metrics.record(None, "422", error=True)
            return error_response(422, "validation_error", "only must be 'agent' or 'helpers'", field="only")
        service.metrics.record(None, "200")
        return json_response(definitions(only))

    async def health(request: Request) -> Response:
        def probe() -> bool:
            try:
                service.graphs.get().ping()
                return True
            except KgrNeo4jUnavailable:
                return False

        try:
            with anyio.fail_after(5):
                up = await anyio.to_thread.run_sync(probe, abandon_on_cancel=True)
        except TimeoutError:
            up = False
        service.metrics.record(None, "200")
        return json_response({"status": "ok" if up else "degraded", "version": kgr.__version__,
                              "neo4j": "up" if up else "down", "tools": len(served_tools())})

    async def metrics(request: Request) -> Response:
        service.metrics.record(None, "200")
        return json_response(service.metrics.snapshot().model_dump(mode="json"))

    async def openapi(request: Request) -> Response:
        if not doc_bytes:
            doc_bytes.append(json.dumps(openapi_document(token_required=token_required)).encode())
        return json_response(None, body=doc_bytes[0])

    return [
        Route("/tools", list_tools, methods=["GET"]),
        Route("/tools/{name}", call_tool, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """404/405 and other routing errors as JSON error bodies."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "bad_request" if status < 500 else "internal_error")
    message = {404: f"no route {request.url.path[:200]}", 405: f"method {request.method} not allowed here"}.get(
        status, "request failed")
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) and exc.headers else None
    return error_response(status, kind, message, headers=headers)
