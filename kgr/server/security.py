"""Server configuration and the security envelope: bind policy, bearer token, body size limit.

Rules
-----
- **Loopback by default.** The HTTP transport binds ``127.0.0.1`` unless told otherwise. A host
  is loopback when it is ``localhost`` or an IP address in 127.0.0.0/8 or ``::1``; anything else
  (``0.0.0.0``, ``::``, a LAN address, any other host name) is non-loopback.
- **A token is required off loopback.** :meth:`ServerConfig.check` refuses a non-loopback bind
  unless a bearer token is configured, and refuses tokens shorter than :data:`MIN_TOKEN_CHARS`.
  The token is read from an environment variable (``--token-env``, default ``KGR_SERVER_TOKEN``),
  never from the command line (where ``ps`` would show it). When a token is configured, every
  HTTP request (MCP and JSON API alike, ``/health`` included) must carry
  ``Authorization: Bearer <token>``; it is compared with :func:`hmac.compare_digest`.
- **The token is never logged.** It is held in a :class:`Secret` whose ``repr`` is
  ``Secret('***')``, and :class:`RedactingFilter` replaces it in every record of the server's and
  uvicorn's loggers as a second line of defence.
- **Bodies are bounded.** :class:`BodyLimitMiddleware` answers 413 for a declared
  ``Content-Length`` above the limit; streamed bodies are counted where they are read.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Literal

from starlette.types import ASGIApp, Receive, Scope, Send

from kgr.errors import KgrValidationError

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_TOKEN_ENV",
    "MIN_TOKEN_CHARS",
    "Secret",
    "ServerConfig",
    "is_loopback",
    "BearerAuthMiddleware",
    "BodyLimitMiddleware",
    "RedactingFilter",
    "install_redaction",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_TOKEN_ENV = "KGR_SERVER_TOKEN"
#: Shortest bearer token accepted.
MIN_TOKEN_CHARS = 16


class Secret:
    """A string that does not show itself in ``repr``/``str`` (and so not in logs or tracebacks)."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.8.0.1", "0.0.0.0", "::", "10.0.0.5", "example.org")]
    [True, True, True, True, False, False, False, False]
    """
    h = host.strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


@dataclass
class ServerConfig:
    """Everything ``kgr serve`` is told.

    Attributes
    ----------
    transport:
        ``stdio`` (MCP over stdin/stdout) or ``http`` (MCP streamable HTTP at ``/mcp`` plus the
        JSON API).
    host, port:
        Where the HTTP transport listens (port 0 picks a free one).
    token:
        The bearer token, if any (see :meth:`from_env`).
    token_env:
        The environment variable the token came from (for messages).
    request_timeout:
        Seconds one tool call may take before the request is answered 504 (HTTP) or with an error
        result (MCP). The unit of work already sent to Neo4j may still complete; the store tools
        are idempotent, so a retry is safe.
    max_body_bytes:
        Largest request body accepted (413 above it).
    max_workers:
        Tool calls running at once (worker threads); more wait their turn.
    max_writers:
        Without group commit: of those, calls of tools that write to Neo4j (``query_kg_storage``)
        running at once; calls touching the same entities never run together (:mod:`kgr.server.locks`).
    group_commit:
        Stage concurrent storage calls together, in shared transactions written by one writer
        thread (:mod:`kgr.store.group_commit`); each call still gets its own exact report. On by
        default; off, each call writes its own transactions under the write scheduler.
    schema_path:
        Optional KG schema file for the tools (alias table, closed vocabulary).
    init_store:
        Create kgr's constraints and indexes on connect (idempotent), so concurrent storage calls
        are exact from the first request.
    embedding_model, embedding_api_base:
        A litellm embedding model (and its server) for semantic disambiguation and slice anchors by
        meaning (``get_context_slice`` with a query); default ``KGR_EMBEDDING_MODEL`` /
        ``KGR_EMBEDDING_API_BASE``, key from ``KGR_EMBEDDING_API_KEY``; none: fulltext only.
    cpu_workers:
        Worker processes for the pure tools (:mod:`kgr.server.cpu`); a call still running at the
        request time limit is stopped with its process. 0: they run in worker threads (a call past
        the limit then runs to its end). Default: the CPU count, at most 4.
    header_timeout:
        Seconds a client has to send a request's line and headers, from the connection's start (or,
        on a kept-alive connection, from the first byte of the next request): 408 and close after it.
    body_timeout:
        Seconds a client has to send a request's body once its headers are in: 408 after it.
    max_connections:
        Open HTTP connections at most; lowered at start to stay below the process's file limit
        (:mod:`kgr.server.guard`). A connection beyond it takes the place of the one idle the
        longest (waiting for its request), or is answered 503 when none is idle.
    """

    transport: Literal["stdio", "http"] = "http"
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: Secret | None = None
    token_env: str = DEFAULT_TOKEN_ENV
    request_timeout: float = 60.0
    max_body_bytes: int = 8 * 1024 * 1024
    max_workers: int = 64
    max_writers: int = 8
    group_commit: bool = True
    schema_path: str | None = None
    init_store: bool = True
    embedding_model: str | None = None
    embedding_api_base: str | None = None
    cpu_workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000

    @classmethod
    def from_env(cls, *, token_env: str = DEFAULT_TOKEN_ENV, **kwargs: object) -> "ServerConfig":
        """A config whose token is the value of ``$token_env`` (unset or empty: no token)."""
        raw = os.environ.get(token_env, "")
        token = Secret(raw.strip()) if raw.strip() else None
        return cls(token=token, token_env=token_env, **kwargs)  # type: ignore[arg-type]

    def check(self) -> "ServerConfig":
        """Refuse unsafe or invalid settings with a one-line reason.

        Raises
        ------
        KgrValidationError
            A non-loopback bind without a token, a short token, or out-of-range limits.
        """
        if self.transport not in ("stdio", "http"):
            raise KgrValidationError(f"transport must be stdio or http, got {self.transport!r}", field="transport")
        if self.token is not None and len(self.token.reveal()) < MIN_TOKEN_CHARS:
            raise KgrValidationError(
                f"the bearer token in ${self.token_env} is shorter than {MIN_TOKEN_CHARS} characters; "
                "use a random one, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
                field="token")
        if self.transport == "http":
            if not (0 <= self.port <= 65535):
                raise KgrValidationError(f"port must be 0-65535, got {self.port}", field="port")
            if not is_loopback(self.host) and self.token is None:
                raise KgrValidationError(
                    f"refusing to listen on {self.host}, which is not a loopback address, without a bearer token: "
                    f"set ${self.token_env} to a secret of at least {MIN_TOKEN_CHARS} characters "
                    "(clients then send 'Authorization: Bearer <token>'), or bind 127.0.0.1",
                    field="host")
        if self.request_timeout <= 0:
            raise KgrValidationError("request timeout must be positive", field="request_timeout")
        if self.max_body_bytes < 1024:
            raise KgrValidationError("max body size must be at least 1024 bytes", field="max_body_bytes")
        if self.max_workers < 1:
            raise KgrValidationError("max workers must be at least 1", field="max_workers")
        if self.max_writers < 1:
            raise KgrValidationError("max writers must be at least 1", field="max_writers")
        if self.cpu_workers < 0:
            raise KgrValidationError("cpu workers must be 0 (threads) or more", field="cpu_workers")
        for name in ("header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise KgrValidationError(f"{name.replace('_', ' ')} must be positive", field=name)
        if self.max_connections < 16:
            raise KgrValidationError("max connections must be at least 16", field="max_connections")
        return self

    def __repr__(self) -> str:
        return (f"ServerConfig(transport={self.transport!r}, host={self.host!r}, port={self.port}, "
                f"token={'set' if self.token else 'none'}, token_env={self.token_env!r})")


def _json_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> tuple[dict, bytes]:
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    hdrs = {"content-type": "application/json", "content-length": str(len(body)), **(headers or {})}
    return {"type": "http.response.start", "status": status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in hdrs.items()]}, body


async def _send_error(send: Send, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
    start, body = _json_error(status, kind, message, headers)
    await send(start)
    await send({"type": "http.response.body", "body": body})


class BearerAuthMiddleware:
    """Require ``Authorization: Bearer <token>`` on every HTTP request (401 otherwise).

    The comparison is constant-time over the UTF-8 bytes (:func:`hmac.compare_digest`); the
    response never says which part was wrong, and nothing about the presented value is logged.
    """

    def __init__(self, app: ASGIApp, token: Secret):
        self.app = app
        self._expected = token.reveal().encode()

    def _authorised(self, scope: Scope) -> bool:
        presented = b""
        for k, v in scope.get("headers", []):
            if k == b"authorization":
                presented = v
                break
        scheme, _, value = presented.partition(b" ")
        ok_scheme = hmac.compare_digest(scheme.lower(), b"bearer")
        ok_value = hmac.compare_digest(value.strip(), self._expected)
        return ok_scheme and ok_value

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        # decided on the headers alone; "close" so that a refused body is never read
        await _send_error(send, 401, "unauthorized", "missing or invalid bearer token",
                          {"www-authenticate": 'Bearer realm="kgr"', "connection": "close"})


class BodyLimitMiddleware:
    """Answer 413 for a declared ``Content-Length`` above ``limit`` bytes, before any reading.

    Bodies without a length (chunked) are bounded where they are read: the JSON API counts the
    bytes it reads (:func:`kgr.server.http_api.read_body`) and the MCP transport has its own limit.
    """

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for k, v in scope.get("headers", []):
                if k == b"content-length":
                    try:
                        declared = int(v)
                    except ValueError:
                        await _send_error(send, 400, "bad_request", "invalid Content-Length header",
                                          {"connection": "close"})
                        return
                    if declared > self.limit:
                        await _send_error(send, 413, "payload_too_large",
                                          f"request body of {declared} bytes exceeds the limit of {self.limit} bytes",
                                          {"connection": "close"})
                        return
        await self.app(scope, receive, send)


class RedactingFilter(logging.Filter):
    """Replace the token in log records (message, arguments) with ``***``."""

    def __init__(self, secret: Secret):
        super().__init__()
        self._value = secret.reveal()

    def filter(self, record: logging.LogRecord) -> bool:
        if self._value:
            msg = record.getMessage()
            if self._value in msg:
                record.msg = msg.replace(self._value, "***")
                record.args = None
        return True


def install_redaction(secret: Secret | None, loggers: tuple[str, ...] = ("kgr", "uvicorn", "uvicorn.error",
                                                                      "uvicorn.access", "mcp")) -> None:
    """Attach a :class:`RedactingFilter` for ``secret`` to the given loggers and their handlers."""
    if secret is None or not secret:
        return
    f = RedactingFilter(secret)
    for name in loggers:
        lg = logging.getLogger(name)
        lg.addFilter(f)
        for h in lg.handlers:
            h.addFilter(f)
    for h in logging.getLogger().handlers:
        h.addFilter(f)
