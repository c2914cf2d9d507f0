"""Records of issued slices (what outcome feedback given with a slice id alone reads), written
behind the answer.

A record is the slice's id, policy, graph hash and edges ``(key, s_key, o_key)``
(``cypher/slice_record.cypher.j2``). Writing it is a commit, the slowest step left in a
slice whose hops and quotes come from memory (``docs/benchmarks.md``, context slices). So by
default :func:`record_slice` queues the record with the Graph's :class:`SliceRecorder`, whose
thread writes what is queued in batches (one transaction per batch), and the slice is answered
without waiting. What that means for a reader of records (:func:`slice_edges`):

- **the same process** (the tool server, an :class:`~kgr.engine.Engine`): a read first waits for
  this process's queued records, so feedback always finds a slice issued here;
- **another process**: the issuing process writes its queue before its Graph closes (``kgr slice``
  exits after that), and a reader that does not find a record looks again for up to ``wait``
  seconds (feedback waits 0.5 s), far longer than a record stays queued (a batch is written as
  soon as the previous one commits);
- **a record the database refuses** after the driver's retries (``KGR_NEO4J_RETRY_SECONDS``) is
  logged with its slice ids and dropped; the slice itself stands (it was cut and signed already).

``KGR_SLICE_RECORD=sync`` writes each record before the slice is returned (one commit per slice).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence

from kgr.errors import KgrValidationError
from kgr.store.connection import Graph

__all__ = ["SliceRecorder", "record_slice", "slice_edges", "flush_slice_records", "record_mode"]

log = logging.getLogger(__name__)

#: Records written per transaction, at most.
BATCH = 256
#: Records queued at most; past that, record_slice waits for the writer (backpressure).
MAX_QUEUED = 10_000
#: Seconds a writer thread stays without work before it ends (the next record starts another).
IDLE_SECONDS = 2.0
#: Seconds Graph.close waits for the queued records.
CLOSE_SECONDS = 30.0


def record_mode() -> str:
    """``behind`` (default) or ``sync``, from ``KGR_SLICE_RECORD``."""
    mode = os.environ.get("KGR_SLICE_RECORD", "behind").strip().lower() or "behind"
    if mode not in ("behind", "sync"):
        raise KgrValidationError(f"KGR_SLICE_RECORD must be 'behind' or 'sync', not {mode[:40]!r}",
                                 field="KGR_SLICE_RECORD")
    return mode


class SliceRecorder:
    """The queue of one Graph's slice records and the thread that writes it (see the module docstring)."""

    def __init__(self, graph: Graph):
        self._graph = weakref.ref(graph)
        self._cond = threading.Condition()
        self._queue: list[dict] = []
        self._writing = 0  # records taken by the writer and not written yet
        self._submitted = 0  # records queued so far, and of them written or dropped (in order):
        self._done = 0  # a flush waits for those queued before it, not for a queue that keeps filling
        self._thread: threading.Thread | None = None
        self.written = 0
        self.dropped = 0

    def submit(self, record: dict) -> None:
        """Queue one record (waits while :data:`MAX_QUEUED` are queued)."""
        with self._cond:
            self._cond.wait_for(lambda: len(self._queue) < MAX_QUEUED)
            self._queue.append(record)
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kgr-slice-records", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + self._writing

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record queued before this call is written (or dropped); False on timeout."""
        with self._cond:
            target = self._submitted
            return self._cond.wait_for(lambda: self._done >= target, timeout)

    def _close(self) -> None:
        if not self.flush(CLOSE_SECONDS):
            log.warning("%d slice record(s) were not written before the connection closed; feedback given with "
                        "those slice ids will not find them", self.pending())

    def _run(self) -> None:
        try:
            self._write_queued()
        finally:  # however it ends, the next record starts a writer again
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread = None
                self._cond.notify_all()

    def _write_queued(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._queue, IDLE_SECONDS):
                    self._thread = None  # under the lock: a record queued from now on starts a new writer
                    return
                batch, self._queue = self._queue[:BATCH], self._queue[BATCH:]
                self._writing = len(batch)
                self._cond.notify_all()
            try:
                graph = self._graph()
                if graph is None:
                    raise RuntimeError("the connection was garbage-collected")
                graph.write("slice_record", {"slices": batch})
                self.written += len(batch)
            except Exception as exc:  # noqa: BLE001 - a lost record costs feedback by id only; say which
                self.dropped += len(batch)
                log.warning("%d slice record(s) were not written (%s): %s", len(batch), exc,
                            ", ".join(r["id"] for r in batch[:5]) + (" …" if len(batch) > 5 else ""))
            finally:
                with self._cond:
                    self._done += len(batch)
                    self._writing = 0
                    self._cond.notify_all()


_RECORDERS: "weakref.WeakKeyDictionary[Graph, SliceRecorder]" = weakref.WeakKeyDictionary()
_RECORDERS_LOCK = threading.Lock()


@atexit.register
def _flush_at_exit() -> None:
    """A process that ends without closing its Graph still writes its queued records (the writer
    threads are daemons: they would be stopped mid-queue)."""
    with _RECORDERS_LOCK:
        recorders = list(_RECORDERS.values())
    for rec in recorders:
        rec._close()


def _recorder(graph: Graph, create: bool = True) -> SliceRecorder | None:
    with _RECORDERS_LOCK:
        rec = _RECORDERS.get(graph)
        if rec is None and create:
            rec = _RECORDERS[graph] = SliceRecorder(graph)
            graph.before_close(rec._close)
        return rec


def record_slice(graph: Graph, slice_id: str, policy_id: str, graph_hash: str,
                 edges: Sequence[tuple[str, str, str]], *, now: float | None = None) -> None:
    """Record an issued slice's edges ``(key, s_key, o_key)`` under its id (idempotent): queued
    behind the answer, or written now with ``KGR_SLICE_RECORD=sync`` or on a closed Graph (which
    raises the driver's error)."""
    record = {"id": slice_id, "policy_id": policy_id, "graph_hash": graph_hash,
              "edges": [{"key": k, "s_key": s, "o_key": o} for k, s, o in edges],
              "now": time.time() if now is None else now}
    if record_mode() == "sync" or getattr(graph, "closed", False):
        graph.write("slice_record", {"slices": [record]})
    else:
        _recorder(graph).submit(record)  # type: ignore[union-attr]


def flush_slice_records(graph: Graph, timeout: float | None = None) -> bool:
    """Wait for this process's queued records on ``graph`` (True when none is left)."""
    rec = _recorder(graph, create=False)
    return True if rec is None else rec.flush(timeout)


def slice_edges(graph: Graph, slice_id: str, *, wait: float = 0.0) -> list[tuple[str, str, str]] | None:
    """The edges ``(key, s_key, o_key)`` of an issued slice; None when no slice has that id. This
    process's queued records are written first; a record not found is looked for again for up to
    ``wait`` seconds (one issued by another process may still be on its way)."""
    flush_slice_records(graph, CLOSE_SECONDS)
    deadline = time.monotonic() + wait
    while True:
        rows = graph.read("slice_read_record", {"id": slice_id})
        if rows:
            return list(zip(rows[0]["keys"], rows[0]["s_keys"], rows[0]["o_keys"]))
        if time.monotonic() >= deadline:
            return None
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
