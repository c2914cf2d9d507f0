"""How a failed tool call is told: an HTTP status, a stable error ``type``, a one-line message and
the failing field. The server's transports (MCP, the JSON API) and its worker processes
(:mod:`kgr.server.cpu`) all map exceptions here; this module imports nothing heavy, so the workers
start fast.

Error mapping (``type`` → HTTP status):

======================  ======  ===========================================================
``validation_error``    422     the input does not match the tool's model (``field`` says where)
``not_found``           404     no such tool, entity, edge
``conflict``            409     the call contradicts itself or the store's state (e.g. one edge
                                labelled true and false)
``bad_request``         400     any other :class:`~kgr.errors.KgrError` caused by the input
``unavailable``         503     Neo4j is unreachable (or kept failing transiently)
``timeout``             504     the call exceeded the request time limit
``internal_error``      500     anything else: a bug. The response carries an error id only;
                                the traceback goes to the server log under that id.
======================  ======  ===========================================================
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from kgr.errors import KgrConflict, KgrError, KgrNeo4jUnavailable, KgrNotFound, KgrValidationError

__all__ = ["ToolFailure", "failure_from_exception"]

log = logging.getLogger("kgr.server")


@dataclass(frozen=True)
class ToolFailure:
    """Why a call failed, ready to render."""

    status: int
    type: str
    message: str
    field: str | None = None
    details: tuple[dict[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.field is not None:
            err["field"] = self.field
        if self.details:
            err["details"] = list(self.details)
        return {"error": err}


def _details(exc: KgrValidationError) -> tuple[dict[str, Any], ...]:
    out = []
    for d in exc.details[:20]:
        out.append({"loc": ".".join(str(p) for p in d.get("loc", ())), "type": str(d.get("type", "")),
                    "msg": str(d.get("msg", ""))[:300]})
    return tuple(out)


def _first_line(exc: BaseException, limit: int = 500) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line[:limit]


def failure_from_exception(exc: BaseException, *, tool: str | None = None) -> ToolFailure:
    """Map an exception raised by a tool call to a :class:`ToolFailure` (see the module table)."""
    if isinstance(exc, KgrValidationError):
        return ToolFailure(422, "validation_error", _first_line(exc), exc.field or None, _details(exc))
    if isinstance(exc, KgrNotFound):
        return ToolFailure(404, "not_found", _first_line(exc))
    if isinstance(exc, KgrConflict):
        return ToolFailure(409, "conflict", _first_line(exc))
    if isinstance(exc, KgrNeo4jUnavailable):
        return ToolFailure(503, "unavailable", _first_line(exc))
    if isinstance(exc, KgrError):
        return ToolFailure(400, "bad_request", _first_line(exc))
    if isinstance(exc, TimeoutError):
        return ToolFailure(504, "timeout", "the tool call exceeded the server's time limit")
    error_id = uuid.uuid4().hex[:12]
    log.error("internal error %s in tool %s: %s", error_id, tool or "?", type(exc).__name__,
              exc_info=(type(exc), exc, exc.__traceback__))
    return ToolFailure(500, "internal_error", f"internal error (id {error_id}); the server log has the details")
