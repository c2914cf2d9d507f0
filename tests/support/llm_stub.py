"""A scriptable, real-HTTP stand-in for an OpenAI-compatible chat completions server.

It runs starlette under uvicorn in a background thread on 127.0.0.1 with an ephemeral port and
answers ``POST /v1/chat/completions`` (and ``/chat/completions``) with whatever the test queued::

    with LLMStub() as stub:
        stub.enqueue(StubReply.error(429), StubReply.json({"entities": {}, "relations": {}}))
        litellm.completion(model="openai/stub-model", api_base=stub.base_url, api_key="x", messages=[...])
        stub.requests[-1].body["messages"]

Replies (:class:`StubReply`) are consumed in order; when the queue is empty the ``default`` reply
(a :class:`StubReply` or a function of the request body returning one) answers, and without a default
the stub answers HTTP 500 saying that no scripted reply is left. Every reply can carry a ``delay``
(seconds, awaited without blocking other requests) and the whole stub a fixed ``latency`` added to
every call (for benchmarks). ``requests`` logs every request received, in order (bodies parsed).

Also usable from scripts and shells::

    python -m tests.support.llm_stub --port 8765 --latency 0.2 --reply-file reply.json

Pytest: ``llm_stub_factory`` is a fixture returning a function that starts stubs (stopped at
teardown); ``llm_stub`` is one started stub. Import both into a ``conftest.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["StubReply", "RecordedRequest", "LLMStub", "llm_stub_factory", "llm_stub"]


@dataclass
class StubReply:
    """One scripted answer. Build with the class methods rather than by hand."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    raw_body: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> "StubReply":
        """Assistant content that is ``obj`` serialised as JSON."""
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> "StubReply":
        """Assistant content verbatim (e.g. malformed JSON)."""
        return cls(content=content, **kw)

    @classmethod
    def error(
        cls, status: int, message: str | None = None, *, retry_after: float | None = None, **kw: Any
    ) -> "StubReply":
        """An OpenAI-style error body with HTTP ``status`` (429 = rate limit, 5xx = server error)."""
        etype = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error"}.get(
            status, "server_error" if status >= 500 else "invalid_request_error"
        )
        headers = dict(kw.pop("headers", {}))
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        return cls(
            status=status,
            error_message=message or f"stub error {status}",
            error_type=etype,
            headers=headers,
            **kw,
        )

    @classmethod
    def tool_calls_reply(cls, calls: list[dict[str, Any]], content: str | None = None, **kw: Any) -> "StubReply":
        """An assistant message calling tools. Each call: ``{"name", "arguments" (dict or JSON str), "id"?}``."""
        return cls(content=content, tool_calls=calls, **kw)

    @classmethod
    def raw(cls, body: bytes | str, status: int = 200, **kw: Any) -> "StubReply":
        """A response body sent verbatim (e.g. not JSON at all)."""
        return cls(raw_body=body.encode() if isinstance(body, str) else body, status=status, **kw)

    @classmethod
    def sleep(cls, seconds: float, then: "StubReply | None" = None) -> "StubReply":
        """Wait ``seconds`` before answering ``then`` (default: an empty extraction)."""
        base = then or cls.json({"entities": {}, "relations": {}})
        return StubReply(**{**base.__dict__, "delay": base.delay + seconds})


@dataclass
class RecordedRequest:
    """A request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def prompt(self) -> str:
        """All message contents joined by newlines (for substring assertions)."""
        parts = []
        for m in self.messages:
            c = m.get("content")
            if isinstance(c, list):  # content parts
                parts.extend(p.get("text", "") for p in c if isinstance(p, dict))
            elif c:
                parts.append(str(c))
        return "\n".join(parts)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class LLMStub:
    """The stub server (see the module docstring).

    Parameters
    ----------
    latency:
        Seconds added to every chat completion (e.g. 0.2 for benchmarks).
    default:
        Answer when the queue is empty: a :class:`StubReply`, or a function of the request body
        returning one. None: HTTP 500 "no scripted reply left".
    host, port:
        Where to listen; port 0 picks a free one.
    keep_requests:
        How many of the latest requests :attr:`requests` keeps; None: all (tests). The command
        line keeps none: a benchmark's stub serves tens of thousands of requests, and kept bodies
        would grow its memory and its collector's pauses, which every request in flight waits out.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        default: StubReply | Callable[[dict[str, Any]], StubReply] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_requests: int | None = None,
    ):
        self.latency = latency
        self.default = default
        self.host = host
        self._port = port
        self._queue: deque[StubReply] = deque()
        self._lock = threading.Lock()
        self._requests: deque[RecordedRequest] = deque(maxlen=keep_requests)
        #: requests served so far (kept or not)
        self.served = 0
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._inflight = 0
        self.max_inflight = 0
        #: ``POST /v1/embeddings``: text -> vector for the texts a test scripts; any other text gets
        #: a deterministic hashed vector of ``embedding_dims`` dimensions
        self.embeddings: dict[str, list[float]] = {}
        self.embedding_dims = 8
        #: replies queued for the embeddings endpoint only (errors, say); consumed before vectors
        self.embedding_errors: deque[StubReply] = deque()

    # -- scripting -------------------------------------------------------------------------------
    def enqueue(self, *replies: StubReply) -> "LLMStub":
        """Queue replies, answered in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reply_json(self, obj: Any, **kw: Any) -> "LLMStub":
        return self.enqueue(StubReply.json(obj, **kw))

    def reply_text(self, content: str, **kw: Any) -> "LLMStub":
        return self.enqueue(StubReply.text(content, **kw))

    def reply_error(self, status: int, message: str | None = None, **kw: Any) -> "LLMStub":
        return self.enqueue(StubReply.error(status, message, **kw))

    def reply_tool_calls(self, calls: list[dict[str, Any]], **kw: Any) -> "LLMStub":
        return self.enqueue(StubReply.tool_calls_reply(calls, **kw))

    def reply_delayed(self, seconds: float, then: StubReply | None = None) -> "LLMStub":
        return self.enqueue(StubReply.sleep(seconds, then))

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Chat-completion requests received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        reqs = self.requests
        if not reqs:
            raise AssertionError("the LLM stub received no request")
        return reqs[-1]

    def reset(self) -> None:
        """Forget queued replies and logged requests."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.max_inflight = 0

    # -- addresses -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._sock is None:
            raise RuntimeError("the LLM stub is not running")
        return self._sock.getsockname()[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the ``api_base`` / ``base_url`` for OpenAI-compatible clients."""
        return f"{self.url}/v1"

    # -- the app ---------------------------------------------------------------------------------
    def _next_reply(self, body: dict[str, Any]) -> StubReply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if callable(self.default):
            return self.default(body)
        if self.default is not None:
            return self.default
        return StubReply.error(500, "llm stub: no scripted reply left")

    def _completion_body(self, reply: StubReply, body: dict[str, Any]) -> dict[str, Any]:
        n = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            calls = []
            for i, call in enumerate(reply.tool_calls):
                args = call.get("arguments", {})
                args = args if isinstance(args, str) else json.dumps(args)
                calls.append(
                    {
                        "id": call.get("id") or f"call_{n}_{i}",
                        "type": "function",
                        "function": {"name": call["name"], "arguments": args},
                    }
                )
            message["tool_calls"] = calls
        prompt_text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if isinstance(m, dict))
        usage = reply.usage or {
            "prompt_tokens": _estimate_tokens(prompt_text),
            "completion_tokens": _estimate_tokens(reply.content or json.dumps(reply.tool_calls or "")),
        }
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        return {
            "id": f"chatcmpl-stub-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
                    "logprobs": None,
                }
            ],
            "usage": usage,
            "system_fingerprint": "kgr-llm-stub",
        }

    async def _parse(self, request: Request) -> Any:
        """The request's body, parsed when it is JSON (else ``{"_raw": text}``)."""
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        return body

    def _log(self, request: Request, body: Any) -> None:
        self.served += 1
        if self._requests.maxlen == 0:
            return
        self._requests.append(RecordedRequest(request.method, request.url.path, dict(request.headers), body,
                                              time.monotonic()))

    async def _chat(self, request: Request) -> Response:
        body = await self._parse(request)
        with self._lock:
            self._log(request, body)
            self._inflight += 1
            self.max_inflight = max(self.max_inflight, self._inflight)
        try:
            if not isinstance(body, dict) or "messages" not in body:
                return JSONResponse(
                    {"error": {"message": "request body needs 'messages'", "type": "invalid_request_error"}},
                    status_code=400,
                )
            if body.get("stream"):
                return JSONResponse(
                    {"error": {"message": "the llm stub does not stream", "type": "invalid_request_error"}},
                    status_code=400,
                )
            reply = self._next_reply(body)
            wait = self.latency + reply.delay
            if wait > 0:
                try:
                    await asyncio.sleep(wait)
                except asyncio.CancelledError:  # the stub is shutting down mid-delay
                    return Response(status_code=499)
            if reply.raw_body is not None:
                return Response(
                    reply.raw_body, status_code=reply.status, headers=reply.headers, media_type="application/json"
                )
            if reply.status >= 400:
                error = {"message": reply.error_message, "type": reply.error_type, "code": reply.status, "param": None}
                return JSONResponse(
                    {"error": error},
                    status_code=reply.status,
                    headers=reply.headers,
                )
            return JSONResponse(self._completion_body(reply, body), status_code=reply.status, headers=reply.headers)
        finally:
            with self._lock:
                self._inflight -= 1

    def _vector(self, text: str) -> list[float]:
        if text in self.embeddings:
            return list(self.embeddings[text])
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(self.embedding_dims)]

    async def _embeddings(self, request: Request) -> Response:
        body = await self._parse(request)
        with self._lock:
            self._log(request, body)
            error = self.embedding_errors.popleft() if self.embedding_errors else None
        if error is not None:
            return JSONResponse({"error": {"message": error.error_message, "type": error.error_type,
                                           "code": error.status, "param": None}}, status_code=error.status,
                                headers=error.headers)
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": {"message": "input must be a string or a list of strings",
                                           "type": "invalid_request_error"}}, status_code=400)
        data = [{"object": "embedding", "index": i, "embedding": self._vector(t)} for i, t in enumerate(texts)]
        tokens = sum(_estimate_tokens(t) for t in texts)
        return JSONResponse({"object": "list", "data": data, "model": body.get("model", "stub-embed"),
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "stub-model", "object": "model", "owned_by": "kgr"}]})

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/models", self._models, methods=["GET"]),
            ]
        )

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> "LLMStub":
        """Start serving in a daemon thread; return once the port accepts connections."""
        if self._server is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted connections
        sock.bind((self.host, self._port))
        sock.listen(1024)
        self._sock = sock
        config = uvicorn.Config(
            self._app(),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            backlog=1024,
            limit_concurrency=None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="kgr-llm-stub", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the LLM stub did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop the server (pending delayed replies are abandoned)."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = None
        self._sock = None

    def __enter__(self) -> "LLMStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- pytest --------------------------------------------------------------------------------------
try:
    import pytest
except ImportError:  # pragma: no cover - scripts without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def llm_stub_factory() -> Iterator[Callable[..., LLMStub]]:
        """A function ``make(**LLMStub kwargs) -> started LLMStub``; every stub is stopped at teardown."""
        stubs: list[LLMStub] = []

        def make(**kwargs: Any) -> LLMStub:
            stub = LLMStub(**kwargs).start()
            stubs.append(stub)
            return stub

        yield make
        for s in stubs:
            s.stop()

    @pytest.fixture
    def llm_stub(llm_stub_factory: Callable[..., LLMStub]) -> LLMStub:
        """One started stub with no default reply."""
        return llm_stub_factory()


# -- command line --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the kgr LLM stub (OpenAI chat completions API).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every call")
    parser.add_argument("--reply-file", help="JSON file whose content every call returns as the assistant message")
    parser.add_argument("--keep-requests", type=int, default=0,
                        help="latest requests kept in memory (default 0: none; a long benchmark would grow)")
    args = parser.parse_args(argv)
    content = '{"entities": {}, "relations": {}}'
    if args.reply_file:
        with open(args.reply_file, encoding="utf-8") as fh:
            content = fh.read()
    stub = LLMStub(latency=args.latency, default=StubReply.text(content), host=args.host, port=args.port,
                   keep_requests=args.keep_requests).start()
    print(f"LLM stub listening on {stub.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
