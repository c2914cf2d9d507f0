"""The transport-independent core of the server: one tool call, with limits and error mapping.

:class:`ToolService` owns the Neo4j connection (:class:`GraphProvider`), the KG schema, the metrics
and a bounded pool of worker threads. :meth:`ToolService.call` runs one tool in a worker thread
(the tools and the Neo4j driver block; the event loop must not), under the per-request time
limit, and returns a :class:`CallOutcome`: the output data, or a :class:`ToolFailure` with the
HTTP status, a stable error ``type``, a one-line message and the failing field. MCP and the JSON
API both render outcomes; neither decides error semantics on its own.

Error mapping: :mod:`kgr.server.failures` (``type`` → HTTP status).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from kgr.catalog import get_served, invoke
from kgr.errors import KgrError, KgrNeo4jUnavailable, KgrNotFound
from kgr.model.schema import KGSchema, load_schema
from kgr.server.cpu import CallFailed, CpuPool
from kgr.server.failures import ToolFailure, failure_from_exception
from kgr.server.locks import WriteScheduler, entity_keys_of
from kgr.server.metrics import MetricsRecorder
from kgr.server.security import ServerConfig
from kgr.connect import Graph, Neo4jSettings, connect
from kgr.engine import Engine, GroupWriter
from kgr.extract.embedding import make_embedder
from kgr.tools.context import ToolContext
from kgr.tools.registry import json_numbers, validate_input

__all__ = ["ToolFailure", "CallOutcome", "GraphProvider", "ToolService", "failure_from_exception"]

log = logging.getLogger("kgr.server")

#: Seconds between two connection attempts after a failure (no stampede on a dead database).
RECONNECT_BACKOFF = 2.0


@dataclass(frozen=True)
class CallOutcome:
    """The result of one tool call: ``data`` on success, else ``failure``."""

    tool: str
    data: dict[str, Any] | None
    failure: ToolFailure | None
    ms: float
    body: bytes = b""

    @property
    def ok(self) -> bool:
        return self.failure is None


class GraphProvider:
    """The server's Neo4j connection, opened on first need and reopened after a failure.

    Parameters
    ----------
    graph:
        An already open :class:`Graph` to use (tests, embedding); the provider does not close it.
    settings:
        Where to connect otherwise (default: the ``NEO4J_*`` environment).
    start_managed:
        Let the first connection attempt start kgr's managed local Neo4j when ``NEO4J_URI`` is unset.
    init:
        Run ``kgr init`` (idempotent constraints and indexes) once per new connection.
    schema:
        Passed to ``init`` (relation types are validated as identifiers).
    """

    def __init__(self, graph: Graph | None = None, *, settings: Neo4jSettings | None = None,
                 start_managed: bool = True, init: bool = True, schema: KGSchema | None = None):
        self._graph = graph
        self._owned = graph is None
        self._settings = settings
        self._start_managed = start_managed
        self._init = init and graph is None
        self._schema = schema
        self._lock = threading.Lock()
        self._last_failure = 0.0
        self._last_error: KgrNeo4jUnavailable | None = None
        self._attempts = 0

    def peek(self) -> Graph | None:
        """The connection if open (no attempt to connect)."""
        return self._graph

    def get(self) -> Graph:
        """The connection, opening it if needed.

        Raises
        ------
        KgrNeo4jUnavailable
            Neo4j cannot be reached (attempts are spaced by :data:`RECONNECT_BACKOFF` seconds).
        """
        g = self._graph
        if g is not None:
            return g
        with self._lock:
            if self._graph is not None:
                return self._graph
            if self._last_error is not None and time.monotonic() - self._last_failure < RECONNECT_BACKOFF:
                raise KgrNeo4jUnavailable(str(self._last_error))
            try:
                graph = connect(self._settings, start_managed=self._start_managed and self._attempts == 0)
            except KgrError as exc:
                self._attempts += 1
                self._last_failure = time.monotonic()
                self._last_error = KgrNeo4jUnavailable(str(exc))
                raise KgrNeo4jUnavailable(str(exc)) from None
            self._attempts += 1
            if self._init:
                try:
                    Engine(graph, self._schema).create_indexes()
                except Exception:
                    graph.close()
                    raise
            self._graph = graph
            self._last_error = None
            return graph

    def close(self) -> None:
        with self._lock:
            if self._graph is not None and self._owned:
                self._graph.close()
            if self._owned:
                self._graph = None


class ToolService:
    """Runs served tools for the transports (see the module docstring)."""

    def __init__(self, config: ServerConfig, *, graph: Graph | None = None, schema: KGSchema | None = None,
                 settings: Neo4jSettings | None = None):
        self.config = config
        self.schema = schema if schema is not None else (load_schema(config.schema_path) if config.schema_path else None)
        self.graphs = GraphProvider(graph, settings=settings, init=config.init_store, schema=self.schema)
        self.metrics = MetricsRecorder()
        self._limiter: anyio.CapacityLimiter | None = None
        self._writers: WriteScheduler | None = None
        self._stager: GroupWriter | None = None
        self._stager_lock = threading.Lock()
        self.embed = make_embedder(config.embedding_model, config.embedding_api_base)
        #: The pure tools' worker processes (:mod:`kgr.server.cpu`); None: they run in worker threads.
        self.cpu = CpuPool(config.cpu_workers) if config.cpu_workers > 0 else None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """Worker threads for tool calls (created lazily: it belongs to the event loop that first uses it)."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.config.max_workers)
        return self._limiter

    @property
    def writers(self) -> WriteScheduler:
        """Admission of calls of tools that write to Neo4j (:mod:`kgr.server.locks`)."""
        if self._writers is None:
            self._writers = WriteScheduler(self.config.max_writers)
        return self._writers

    def _entity_keys(self, payload: object) -> list[str]:
        return entity_keys_of(json_numbers(payload), self.schema)

    def context_for(self, name: str) -> ToolContext:
        """The :class:`ToolContext` of one call (connecting when the tool needs the graph)."""
        spec = get_served(name)
        graph = self.graphs.get() if spec.needs_graph else self.graphs.peek()
        return ToolContext(graph=graph, schema=self.schema, stager=self._stager_for(graph) if spec.needs_graph else None,
                           embed=self.embed)

    def _stager_for(self, graph: Graph | None) -> GroupWriter | None:
        """The group-commit writer on ``graph`` (one per service), when group commit is on."""
        if graph is None or not self.config.group_commit:
            return None
        with self._stager_lock:
            if self._stager is None or self._stager.graph is not graph:
                self._stager = Engine(graph, self.schema).group_writer()
            return self._stager

    def call_sync(self, name: str, payload: object) -> dict[str, Any]:
        """Run a tool in the calling thread (raises on failure).

        An invalid input is a validation error even while Neo4j is unreachable: before the first
        connection of a store tool, the input is validated before connecting.
        """
        spec = get_served(name)
        if spec.needs_graph and self.graphs.peek() is None:
            validate_input(spec, payload)
        return invoke(name, payload, self.context_for(name))

    def _call_and_encode(self, name: str, payload: object) -> tuple[dict[str, Any], bytes]:
        data = self.call_sync(name, payload)
        try:
            body = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        except ValueError as exc:  # NaN or infinity in a tool's output: a tool bug
            raise RuntimeError(f"tool {name} returned a non-finite number") from exc
        return data, body

    async def _in_thread(self, spec: Any, name: str, payload: object) -> tuple[dict[str, Any], bytes]:
        """Run a tool in a worker thread, admitted by the write scheduler when it writes without group commit."""
        # with group commit the one writer thread orders all staging: no admission needed
        writes = spec.needs_graph and not spec.read_only and not self.config.group_commit
        admission: Any = contextlib.nullcontext()
        if writes:
            keys = await anyio.to_thread.run_sync(self._entity_keys, payload, limiter=self.limiter)
            admission = self.writers.admit(keys)
        async with admission:
            return await anyio.to_thread.run_sync(self._call_and_encode, name, payload,
                                                  limiter=self.limiter, abandon_on_cancel=True)

    async def call(self, name: str, payload: object, *, channel: str = "http") -> CallOutcome:
        """Run a tool under the time limit; never raises for tool errors.

        The pure tools run in the worker processes of :attr:`cpu` (:mod:`kgr.server.cpu`): a call
        still running at the time limit is stopped with its process. The others run in a worker
        thread. With group commit (the default) storage calls stage through one :class:`GroupWriter`,
        which writes concurrent calls together in shared transactions. Without it, calls of tools
        that write to Neo4j are first admitted by the :class:`WriteScheduler` (at most
        ``max_writers`` at once, never two on the same entity: overlapping calls queue in arrival
        order instead of deadlocking in Neo4j), inside the time limit. A thread call abandoned at
        the time limit keeps its worker thread until its unit of work ends; its admission is
        released at once.
        """
        started = time.perf_counter()
        self.metrics.begin()
        known = True
        try:
            try:
                spec = get_served(name)
            except KgrNotFound:
                known = False
                raise
            with anyio.fail_after(self.config.request_timeout):
                if self.cpu is not None and not spec.needs_graph:
                    body = await self.cpu.run(name, payload, self.schema)
                    data = json.loads(body) if channel == "mcp" else None
                else:
                    data, body = await self._in_thread(spec, name, payload)
            failure = None
        except CallFailed as exc:
            data, body, failure = None, b"", exc.failure
        except Exception as exc:  # noqa: BLE001 - every failure is mapped, bugs logged with an id
            data, body, failure = None, b"", failure_from_exception(exc, tool=name)
        ms = (time.perf_counter() - started) * 1000
        status = (str(failure.status) if failure else "200") if channel == "http" else (
            "mcp_error" if failure else "mcp_ok")
        self.metrics.end(name if known else None, status, ms, error=failure is not None)
        return CallOutcome(tool=name, data=data, failure=failure, ms=ms, body=body)

    async def aclose(self) -> None:
        if self.cpu is not None:
            await anyio.to_thread.run_sync(self.cpu.close)
        if self._stager is not None:
            await anyio.to_thread.run_sync(self._stager.close)
        self.graphs.close()
