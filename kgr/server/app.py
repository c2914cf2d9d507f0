"""Assembling and running the server: MCP over stdio, or one HTTP app with MCP and the JSON API.

The HTTP app (:func:`build_app`) serves, on one port:

* ``/mcp`` — MCP streamable HTTP (the SDK's session manager, started by the app's lifespan);
* ``/tools``, ``/tools/{name}``, ``/health``, ``/metrics``, ``/openapi.json`` — the JSON API
  (:mod:`kgr.server.http_api`).

Middleware, outermost first: the bearer token check (when a token is configured; on the headers
alone, before any body is read), the body deadline (:mod:`kgr.server.guard`), the Host check
(loopback binds only: a ``Host`` other than ``localhost``/``127.0.0.1``/``[::1]`` is refused, so a
web page cannot reach the server through DNS rebinding), then the body size limit. Below the app,
uvicorn runs :func:`kgr.server.guard.guarded_protocol`: a deadline for request heads and a
connection cap below the open-file limit.

:func:`run_http` binds the socket itself (port 0 picks a free port), reports the address through
``on_ready`` and runs uvicorn until interrupted; :class:`BackgroundServer` does the same in a
thread (tests, benchmarks, embedding); :func:`run_stdio` serves MCP on stdin/stdout.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kgr.gc_freeze import freeze_startup_objects
from kgr.model.schema import KGSchema
from kgr.server.guard import (MAX_HEAD_BYTES, BodyDeadlineMiddleware, connection_budget, guarded_protocol,
                              install_quiet_disconnects)
from kgr.server.http_api import api_routes, error_response, http_exception_handler
from kgr.server.mcp_server import build_mcp_server
from kgr.server.security import BearerAuthMiddleware, BodyLimitMiddleware, ServerConfig, install_redaction, is_loopback
from kgr.server.service import ToolService
from kgr.connect import Graph, Neo4jSettings

__all__ = ["build_app", "run_http", "run_stdio", "BackgroundServer", "HostCheckMiddleware", "bind_socket"]

log = logging.getLogger("kgr.server")

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


class HostCheckMiddleware:
    """Refuse requests whose ``Host`` header is not a loopback name (DNS-rebinding protection)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    @staticmethod
    def _host_ok(scope: Scope) -> bool:
        host = b""
        for k, v in scope.get("headers", []):
            if k == b"host":
                host = v
                break
        name = host.decode("latin-1").strip().lower()
        if name.startswith("["):
            name = name[: name.find("]") + 1] if "]" in name else name
        else:
            name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
        return name in _LOOPBACK_HOSTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._host_ok(scope):
            resp = error_response(400, "bad_request", "Host header must name a loopback address on this server",
                                  headers={"connection": "close"})
            await resp(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_app(service: ToolService) -> ASGIApp:
    """The HTTP app (see the module docstring) over ``service``."""
    config = service.config
    loopback = is_loopback(config.host)
    mcp_server = build_mcp_server(service)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    ) if loopback else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(app=mcp_server, security_settings=security,
                                           max_request_body_size=config.max_body_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            if service.cpu is not None:  # the worker processes, before the first call needs them
                service.cpu.start_soon()
            async with manager.run():
                yield
        finally:
            await service.aclose()

    routes: list[Any] = [Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
                         *api_routes(service, token_required=config.token is not None)]
    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan,
                             exception_handlers={HTTPException: http_exception_handler})
    app = BodyLimitMiddleware(app, config.max_body_bytes)
    if loopback:
        app = HostCheckMiddleware(app)
    app = BodyDeadlineMiddleware(app, config.body_timeout)
    install_quiet_disconnects()
    if config.token is not None:
        app = BearerAuthMiddleware(app, config.token)
    return app


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it a keep-alive response (headers, then body) waits ~40 ms for a delayed ACK (Nagle)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    return f"http://{shown}:{port}"


def _uvicorn_server(app: ASGIApp, log_level: str, config: ServerConfig) -> Any:
    """uvicorn on ``app`` with the guards of :mod:`kgr.server.guard` (head deadline, connection cap)."""
    import uvicorn

    cap, backlog = connection_budget(config.max_connections)
    cfg = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=5,
                         backlog=backlog, timeout_keep_alive=30, server_header=False, date_header=False,
                         http=guarded_protocol(cap, config.header_timeout),
                         h11_max_incomplete_event_size=MAX_HEAD_BYTES)
    return uvicorn.Server(cfg)


def run_http(config: ServerConfig, *, graph: Graph | None = None, schema: KGSchema | None = None,
             settings: Neo4jSettings | None = None, log_level: str = "info",
             on_ready: Callable[[str], None] | None = None) -> None:
    """Serve MCP (``/mcp``) and the JSON API over HTTP until interrupted.

    Raises
    ------
    KgrValidationError
        The configuration is unsafe (non-loopback without a token) or invalid; nothing was bound.
    OSError
        The address cannot be bound.
    """
    config.check()
    install_redaction(config.token)
    service = ToolService(config, graph=graph, schema=schema, settings=settings)
    try:
        service.graphs.get()
    except Exception as exc:  # noqa: BLE001 - the pure tools still work; store tools retry on demand
        log.warning("Neo4j not reachable at startup (%s); store tools will retry on demand", type(exc).__name__)
    server = _uvicorn_server(build_app(service), log_level, config)
    sock = bind_socket(config.host, config.port)
    freeze_startup_objects()
    url = _url(sock, config.host)
    if on_ready is not None:
        on_ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if service.cpu is not None:  # closed by the app's shutdown already, unless it never started
            service.cpu.close()
        service.graphs.close()


def run_stdio(config: ServerConfig, *, graph: Graph | None = None, schema: KGSchema | None = None,
              settings: Neo4jSettings | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin (logs go to stderr)."""
    from mcp.server.stdio import stdio_server

    config.check()
    service = ToolService(config, graph=graph, schema=schema, settings=settings)
    try:
        service.graphs.get()
    except Exception as exc:  # noqa: BLE001 - as in run_http
        log.warning("Neo4j not reachable at startup (%s); store tools will retry on demand", type(exc).__name__)
    mcp_server = build_mcp_server(service)
    freeze_startup_objects()

    async def main() -> None:
        async with stdio_server() as (read, write):
            await mcp_server.run(read, write, mcp_server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        if service.cpu is not None:
            service.cpu.close()
        service.graphs.close()


class BackgroundServer:
    """The HTTP server in a daemon thread (tests, benchmarks, embedding in another program).

    >>> with BackgroundServer(ServerConfig(port=0), graph=g) as srv:   # doctest: +SKIP
    ...     httpx.get(srv.url + "/health").json()
    """

    def __init__(self, config: ServerConfig, *, graph: Graph | None = None, schema: KGSchema | None = None,
                 settings: Neo4jSettings | None = None, log_level: str = "warning"):
        config.check()
        install_redaction(config.token)
        self.config = config
        self.service = ToolService(config, graph=graph, schema=schema, settings=settings)
        self._server = _uvicorn_server(build_app(self.service), log_level, config)
        self._sock = bind_socket(config.host, config.port)
        self.url = _url(self._sock, config.host)
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 20.0) -> "BackgroundServer":
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="kgr-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the kgr server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()
        self.service.graphs.close()

    def __enter__(self) -> "BackgroundServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
