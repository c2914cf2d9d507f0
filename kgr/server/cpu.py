"""CPU-bound tool calls in worker processes, so that no call can hold the server.

The pure tools (no Neo4j: ``query_extraction_density``, ``query_coverage_feedback``,
``query_quality_metrics``, ``query_iterative_feedback``) compute on texts of up to a million
characters: in linear time, but seconds of pure Python at that size. In a worker thread such a call
shares the server's GIL with the event loop, so concurrent heavy calls delay every other request
(``/health`` took seconds behind 8 of them), and a call past its time limit runs on to its end (a
thread cannot be stopped). ``scripts/bench_server_cpu.py`` measures both ways in one run; the
figures are in ``docs/server.md``.

:class:`CpuPool` runs them in ``workers`` processes instead (pebble's ``ProcessPool``, started from
a fork server, so a worker never inherits the server's threads or locks):

* the server's process never runs them: its event loop, ``/health`` and the store tools keep the
  GIL; the workers run at niceness +:data:`WORKER_NICENESS`, so on busy CPUs they yield to the
  server's process and to Neo4j;
* **a call that passes its deadline is stopped** by ending its worker process, which the pool
  replaces: the CPU it would still have used is never spent. The deadline covers the wait for a
  worker too (:meth:`CpuPool.run` is called under the server's request time limit);
* at most ``workers`` run at once; the others wait their turn inside their deadline.

Costs: about 1 ms more per call (the input and output cross a pipe, pickled), and the text
analysis cache (:func:`kgr.tools._text.analyze_text`) is per process. Workers ignore SIGINT: the
server stops them (``Ctrl-C`` on ``kgr serve`` would otherwise print one traceback per worker).
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import signal
import threading
import traceback
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from kgr.server.failures import ToolFailure, failure_from_exception

if TYPE_CHECKING:
    from kgr.model.schema import KGSchema

__all__ = ["CpuPool", "CallFailed", "run_pure_tool"]

log = logging.getLogger("kgr.server")

_CONTEXT = multiprocessing.get_context("forkserver")
# the fork server imports the tools once; each worker forked from it starts with them loaded
_CONTEXT.set_forkserver_preload(["kgr.server.cpu", "kgr.tools.registry", "kgr.tools.density", "kgr.tools.coverage",
                                 "kgr.tools.quality", "kgr.tools.feedback"])


@dataclass(frozen=True)
class _Crash:
    """A bug in a tool, reported from a worker: the server logs it under an error id."""

    kind: str
    trace: str


#: Scheduling niceness added to the worker processes: their CPU-bound work yields to the server's own
#: process (the event loop, the store tools) and to Neo4j when the CPUs are busy.
WORKER_NICENESS = 10


def _worker_init() -> None:
    """Run once in each new worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(WORKER_NICENESS)


def _ready() -> bool:
    return True


def run_pure_tool(name: str, payload: object, schema: "KGSchema | None") -> bytes | ToolFailure | _Crash:
    """Run the pure tool ``name`` (in a worker process): its JSON output, or why it failed."""
    from kgr.errors import KgrError
    from kgr.tools.context import ToolContext
    from kgr.tools.registry import call_tool

    try:
        data = call_tool(name, payload, context=ToolContext(schema=schema))
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except KgrError as exc:
        return failure_from_exception(exc, tool=name)
    except Exception as exc:  # noqa: BLE001 - a bug: its traceback goes to the server's log
        return _Crash(type(exc).__name__, "".join(traceback.format_exception(exc)))


class CpuPool:
    """``workers`` processes running the pure tools (see the module docstring).

    The processes start on first use (or :meth:`start`); :meth:`close` ends them.
    """

    def __init__(self, workers: int):
        self.workers = workers
        self._pool: Any = None
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None

    def start_soon(self) -> None:
        """Start the processes in the background (the first call waits for them if need be)."""
        threading.Thread(target=self._start_quietly, name="kgr-cpu-pool", daemon=True).start()

    def _start_quietly(self) -> None:
        try:
            self.start()
        except Exception as exc:  # noqa: BLE001 - the first call retries and reports it
            log.warning("the pure tools' worker processes did not start (%s); the first call retries",
                        type(exc).__name__)

    def start(self) -> None:
        """Start the processes now (blocking; the first start of the fork server imports the tools)."""
        from pebble import ProcessPool

        with self._lock:
            if self._pool is None:
                pool = ProcessPool(max_workers=self.workers, initializer=_worker_init, context=_CONTEXT)
                for f in [pool.schedule(_ready) for _ in range(self.workers)]:
                    f.result()
                self._pool = pool

    async def run(self, name: str, payload: object, schema: "KGSchema | None") -> bytes:
        """The JSON output of the pure tool ``name`` on ``payload``, computed in a worker process.

        Cancelling the caller (the server's time limit, a client gone) ends the worker process if the
        call is running, or drops it if it is still waiting.

        Raises
        ------
        CallFailed
            The tool failed; ``failure`` says how (a tool's error as the server maps it, or a bug,
            logged here under an error id).
        """
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.workers)
        if self._pool is None:
            await anyio.to_thread.run_sync(self.start)
        async with self._limiter:
            future = self._pool.schedule(run_pure_tool, args=(name, payload, schema))
            try:
                result = await asyncio.wrap_future(future)
            except Exception as exc:  # noqa: BLE001 - pebble's ProcessExpired (a crash, OOM kill) and the like
                raise CallFailed(_internal(name, f"{type(exc).__name__}: {exc}", "")) from None
        if isinstance(result, bytes):
            return result
        if isinstance(result, _Crash):
            raise CallFailed(_internal(name, result.kind, result.trace))
        raise CallFailed(result)

    def close(self) -> None:
        """End the worker processes (running calls are stopped)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=10)


class CallFailed(Exception):
    """A pure tool call failed in its worker; ``failure`` is ready to render."""

    def __init__(self, failure: ToolFailure):
        super().__init__(failure.message)
        self.failure = failure


def _internal(tool: str, kind: str, trace: str) -> ToolFailure:
    error_id = uuid.uuid4().hex[:12]
    log.error("internal error %s in tool %s (worker process): %s%s", error_id, tool, kind,
              f"\n{trace.rstrip()}" if trace else "")
    return ToolFailure(500, "internal_error", f"internal error (id {error_id}); the server log has the details")
