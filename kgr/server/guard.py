"""Guards of the HTTP transport against slow and greedy clients: deadlines, a connection cap, quiet
disconnects.

uvicorn (h11) gives a connection no deadline before its first request is complete, and none for a
body: a client sending its headers one byte every few seconds, or a body shorter than its
``Content-Length``, held a connection (and a file descriptor) for ever, and 1,100 such clients
under ``ulimit -n 1024`` made the accept loop fail ("Too many open files"). Its
``limit_concurrency`` counts connections only once a request's headers are in, so it cannot stop
them. Here:

* **Header deadline** (:func:`guarded_protocol`, a subclass of uvicorn's ``H11Protocol``): a
  request's line and headers must be complete within ``header_timeout`` seconds of the
  connection's start, or of the first byte of a later request on a kept-alive connection
  (dribbling does not extend it); otherwise ``408`` and the connection is closed. Idle kept-alive
  connections are closed by uvicorn's ``timeout_keep_alive``; request heads are limited to
  ``h11_max_incomplete_event_size`` bytes.
* **Connection cap**: at most :func:`connection_budget`'s cap connections are open, the cap kept
  below the process's open-file limit with room for the accept batch (the listen ``backlog``), the
  Neo4j pool and the worker pipes. A connection beyond it takes the place of the one that has been
  waiting for a request the longest (a slow header, an idle keep-alive): so slow clients cannot
  lock out new ones. When every open connection has a request in flight, the new one is answered
  ``503`` and closed.
* **Body deadline** (:class:`BodyDeadlineMiddleware`, ASGI): a request's body must be complete
  within ``body_timeout`` seconds of its headers; otherwise ``408`` with ``Connection: close``, and
  the application sees the client as gone.
* **Quiet disconnects**: a client that goes away before its body is complete costs one line in
  the log at debug level and nothing above it (it used to cost a 40-line traceback from uvicorn and
  another from the MCP SDK: :class:`QuietDisconnectFilter`).

Rejections before the body (401, 413, 408) carry ``Connection: close``: the server closes the
connection instead of reading a body it refused.
"""

from __future__ import annotations

import logging
import resource
from typing import Any

import anyio
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from kgr.errors import KgrValidationError

__all__ = ["FD_RESERVE", "MAX_HEAD_BYTES", "connection_budget", "guarded_protocol", "BodyDeadlineMiddleware",
           "QuietDisconnectFilter", "install_quiet_disconnects"]

log = logging.getLogger("kgr.server")

#: File descriptors kept for everything but client connections: the Neo4j driver's pool (100), the
#: worker processes' pipes, the listening socket, the event loop, logs.
FD_RESERVE = 192
#: Largest request line plus headers, bytes (uvicorn's ``h11_max_incomplete_event_size``; 400 above).
MAX_HEAD_BYTES = 16 * 1024

def _raw_response(status: str, kind: str, message: str, extra: str = "") -> bytes:
    """A complete HTTP/1.1 error response that closes the connection (written before h11 has a request)."""
    body = ('{"error":{"type":"%s","message":"%s"}}' % (kind, message)).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n{extra}"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


_408 = _raw_response("408 Request Timeout", "timeout", "the request headers did not arrive in time")
_503 = _raw_response("503 Service Unavailable", "unavailable", "too many open connections; retry later",
                     "retry-after: 1\r\n")


def connection_budget(max_connections: int) -> tuple[int, int]:
    """``(cap, backlog)``: open connections at most and the listen backlog, for this process's
    open-file limit ``n`` (``RLIMIT_NOFILE``, soft).

    .. math:: \\text{backlog} = \\min(2048, \\max(16, \\lfloor n/16 \\rfloor)), \\quad
              \\text{cap} = \\min(\\text{max\\_connections},\\; n - 2\\,\\text{backlog} - \\text{FD\\_RESERVE})

    The event loop accepts up to ``backlog`` sockets before their connections start (and before it
    closes those beyond the cap), and closing ones hold their descriptor one loop turn longer: hence
    twice the backlog.

    Raises
    ------
    KgrValidationError
        The file limit leaves room for fewer than 16 connections.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = soft if soft != resource.RLIM_INFINITY else 1 << 20
    backlog = min(2048, max(16, n // 16))
    cap = min(max_connections, n - 2 * backlog - FD_RESERVE)
    if cap < 16:
        raise KgrValidationError(f"the open-file limit of {n} leaves room for only {cap} connections; raise it "
                                 f"(ulimit -n {2 * backlog + FD_RESERVE + 64} or more)", field="max_connections")
    return cap, backlog


def guarded_protocol(cap: int, header_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the header deadline and the connection cap (module docstring)."""

    class GuardedH11Protocol(H11Protocol):
        _head_timer: Any = None
        _waiting_since = 0.0

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._waiting_since = self.loop.time()
            self._head_timer = self.loop.call_later(header_timeout, self._head_late)
            if len(self.connections) > cap:
                idle = [c for c in self.connections if c is not self and isinstance(c, GuardedH11Protocol)
                        and c._waiting() and not c.transport.is_closing()]
                if idle:
                    min(idle, key=lambda c: c._waiting_since)._drop(None)
                else:
                    self._drop(_503)

        def _waiting(self) -> bool:
            """No request in flight: the connection is waiting for (the rest of) a request's head."""
            return self.cycle is None or self.cycle.response_complete

        def _drop(self, answer: bytes | None) -> None:
            if answer is not None:
                self.transport.write(answer)
            self.transport.close()

        def _head_late(self) -> None:
            self._head_timer = None
            if self._waiting() and not self.transport.is_closing():
                log.debug("closed a connection whose request head took over %s s", header_timeout)
                self._drop(_408)

        def data_received(self, data: bytes) -> None:
            if self._head_timer is None and self._waiting():  # a later request starts on a kept-alive connection
                self._head_timer = self.loop.call_later(header_timeout, self._head_late)
            super().data_received(data)
            if self._head_timer is not None and not self._waiting():  # its head is in
                self._head_timer.cancel()
                self._head_timer = None

        def on_response_complete(self) -> None:
            self._waiting_since = self.loop.time()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol


class BodyDeadlineMiddleware:
    """Answer 408 (and close) when a request's body is not complete ``timeout`` seconds after its
    headers; log a client that leaves mid-body in one debug line instead of a traceback.

    Only the body is timed: once its last part is in, ``receive`` is passed through untouched (a
    streaming response waits on it for the client to leave).
    """

    def __init__(self, app: ASGIApp, timeout: float):
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.timeout
        state = {"complete": False, "late": False, "started": False}

        async def timed_receive() -> Message:
            if state["complete"]:
                return await receive()
            if state["late"]:
                return {"type": "http.disconnect"}
            with anyio.move_on_after(deadline - anyio.current_time()):
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    state["complete"] = True
                return message
            state["late"] = True
            log.debug("%s %s: the request body did not arrive within %s s (408)", scope["method"],
                      scope["path"][:200], self.timeout)
            if not state["started"]:
                state["started"] = True
                await _send_408(send, self.timeout)
            return {"type": "http.disconnect"}

        async def guarded_send(message: Message) -> None:
            if state["late"]:
                return  # the 408 was the answer
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except ClientDisconnect:
            if not state["late"]:
                log.debug("%s %s: the client left before sending its whole body", scope["method"], scope["path"][:200])


async def _send_408(send: Send, timeout: float) -> None:
    body = (b'{"error":{"type":"timeout","message":"the request body did not arrive within %d s"}}'
            % max(1, round(timeout)))
    await send({"type": "http.response.start", "status": 408,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _carries_disconnect(record: logging.LogRecord) -> str | None:
    """``"traceback"`` when ``record`` logs a ClientDisconnect traceback, ``"argument"`` when one of
    its arguments is (or wraps) one, else None."""
    if record.exc_info and isinstance(record.exc_info[1], ClientDisconnect):
        return "traceback"
    args = record.args if isinstance(record.args, tuple) else ()
    for a in args:
        if isinstance(a, ClientDisconnect) or (isinstance(a, Exception) and any(
                isinstance(x, ClientDisconnect) for x in a.args)):
            return "argument"
    return None


class QuietDisconnectFilter(logging.Filter):
    """The MCP SDK's records of a client that left mid-body (``Error handling POST request`` with a
    :class:`~starlette.requests.ClientDisconnect` traceback, then ``transport yielded exception``)
    become one debug line, or nothing when debug is off."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = _carries_disconnect(record)
        if kind is None:
            return True
        if kind == "argument" or not log.isEnabledFor(logging.DEBUG):
            return False  # the traceback record is the one line
        record.msg, record.args = "%s: the client left before sending its whole request", (record.name,)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def install_quiet_disconnects(loggers: tuple[str, ...] = ("mcp.server.streamable_http",
                                                          "mcp.shared.jsonrpc_dispatcher")) -> None:
    """Attach one :class:`QuietDisconnectFilter` to each of ``loggers`` (idempotent)."""
    for name in loggers:
        lg = logging.getLogger(name)
        if not any(isinstance(f, QuietDisconnectFilter) for f in lg.filters):
            lg.addFilter(QuietDisconnectFilter())
