"""``executor="process"``: chunks drafted by local worker processes (one pipe each).

Each worker is a fresh interpreter, ``python -m kgr.ingest.executors FD`` (``FD``: its end of a
socket pair), which receives its :class:`WorkerSpec` first: it never runs the job's ``__main__``
(unlike multiprocessing's spawn), so a script that calls :func:`kgr.ingest.pipeline.ingest` needs no
``if __name__ == "__main__"`` guard, and no thread of the job is forked.

The job sends each chunk to the worker with the fewest chunks outstanding; a worker drafts up to its
share of the concurrency at once and sends each drafted chunk back as soon as it is done. A worker
that dies (killed, out of memory) is replaced and its outstanding chunks are sent again to the
replacement: nothing was written for them (workers only read), so the graph is the one an
uninterrupted run gives. After ``max_restarts`` deaths of one worker slot its outstanding chunks are
reported failed (unmarked: a re-run retries them) and the slot stays empty.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import itertools
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

from kgr.errors import KgrRuntimeError, KgrValidationError
from kgr.gc_freeze import freeze_startup_objects
from kgr.ingest.chunking import Chunk
from kgr.ingest.drafting import failed_outcome
from kgr.ingest.executors.worker import DraftWorker, WorkerSpec, portable

__all__ = ["ProcessDrafts", "WorkerSlot", "available_mb", "serve", "serve_async", "worker_count"]

#: seconds a worker may take to start (import kgr and the extractor, open its Graph)
START_TIMEOUT = 120.0

#: MiB a worker process is counted for when sizing the pool: its peak RSS with the LLM extractor
#: (``scripts/bench_ingest.py``; ``docs/benchmarks.md``), rounded up
WORKER_MB = 350


def available_mb() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in MiB; ``None`` where there is no such file."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def worker_count(requested: int | None, *, default: int | None = None, memory_mb: float | None = None,
                 where: str = "this machine") -> int:
    """How many workers to start: ``requested``, else ``default`` (the machine's CPUs), at most as
    many as ``memory_mb`` (default: :func:`available_mb`) holds at :data:`WORKER_MB` each. A default
    is capped; a request beyond it is refused: a thousand interpreters would have the kernel kill
    processes, the database among them, instead of the job failing.

    Raises
    ------
    KgrValidationError
        ``requested`` workers need more memory than ``where`` has available.
    """
    avail = available_mb() if memory_mb is None else memory_mb
    most = None if not avail else max(1, int(avail // WORKER_MB))
    if requested is None:
        n = default or os.cpu_count() or 1
        return n if most is None else min(n, most)
    if most is not None and requested > most:
        raise KgrValidationError(
            f"{requested} workers need about {requested * WORKER_MB / 1024:.1f} GiB ({WORKER_MB} MiB each) "
            f"and {where} has {avail / 1024:.1f} GiB available: use at most {most}", field="workers")
    return requested


def serve(conn: Connection) -> None:
    """A worker process's main: draft the chunks the socket brings, answer each on it.

    Messages in: the :class:`WorkerSpec` first, then ``("draft", seq, chunk)``, ``("forget",)``,
    ``("stop",)``. Out: ``("ready", pid, frozen)`` or ``("init-error", exc)`` once, then ``("ok",
    seq, drafted)`` / ``("raise", seq, exc)`` per chunk and ``("forgot",)`` per forget. ``frozen``:
    the objects the worker's start left in the collector's permanent generation
    (:func:`~kgr.gc_freeze.freeze_startup_objects`). Everything runs on one event loop in the main
    thread: the socket is read when the loop sees it readable."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the job's to handle: it stops the workers
    asyncio.run(serve_async(conn))


async def serve_async(conn: Connection) -> None:
    """:func:`serve`'s protocol on the running event loop (a Ray actor's host calls it too:
    :mod:`kgr.ingest.executors.ray_actors`)."""
    loop = asyncio.get_running_loop()
    try:
        worker = DraftWorker(conn.recv())
    except BaseException as exc:  # noqa: BLE001 - reported to the job, which raises it
        conn.send(("init-error", portable(exc)))
        return
    frozen = freeze_startup_objects()  # litellm's ~450,000 objects out of every full collection
    done = asyncio.Event()
    tasks: set[asyncio.Task] = set()

    def send(msg: tuple) -> None:
        try:
            conn.send(msg)
        except OSError:  # the job is gone
            done.set()

    async def one(seq: int, chunk: Chunk) -> None:
        try:
            drafted = await worker.draft(chunk)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the job
            send(("raise", seq, portable(exc)))
            return
        send(("ok", seq, drafted))

    def readable() -> None:
        try:
            while not done.is_set() and conn.poll():
                msg = conn.recv()
                if msg[0] == "draft":
                    task = loop.create_task(one(msg[1], msg[2]))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif msg[0] == "forget":
                    worker.forget_names()
                    send(("forgot",))
                else:
                    done.set()
        except (EOFError, OSError):  # the job is gone
            done.set()

    send(("ready", os.getpid(), frozen))
    loop.add_reader(conn.fileno(), readable)
    try:
        await done.wait()
    finally:
        loop.remove_reader(conn.fileno())
        for t in list(tasks):
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await worker.aclose()


def answer(fut: cf.Future, value: object, *, ok: bool = True) -> None:
    """Settle a chunk's future with its result (``ok``) or exception, unless the job cancelled it: a
    job that stops (an error, the LLM refusing every request) cancels its chunks in flight, and
    their answers may still arrive."""
    if not fut.set_running_or_notify_cancel():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)  # type: ignore[arg-type]


class WorkerSlot:
    """One worker and the chunks it holds; replaced when it dies. ``spawn`` starts a local process
    (a Ray actor in :class:`~kgr.ingest.executors.ray_actors.RayDrafts`'s subclass)."""

    kind = "ingestion worker process"  # in messages

    def __init__(self, owner: "ProcessDrafts", index: int):
        self.owner, self.index = owner, index
        self.outstanding: dict[int, tuple[Chunk, cf.Future]] = {}
        self.deaths = 0
        self.pid: int | None = None
        self.frozen = 0
        self.conn: Connection | None = None
        self.proc: subprocess.Popen | None = None
        self.ready = threading.Event()
        self.forgot = threading.Event()
        self.error: BaseException | None = None
        self.dead = False

    def spawn(self) -> None:
        mine, theirs = mp.Pipe(duplex=True)
        self.ready.clear()
        fd = theirs.fileno()
        self.proc = subprocess.Popen([sys.executable, "-m", "kgr.ingest.executors", str(fd)], pass_fds=[fd],
                                     stdin=subprocess.DEVNULL)
        theirs.close()  # so that the worker's death ends our recv with EOFError
        mine.send(self.owner.spec)
        self.conn = mine
        threading.Thread(target=self._read, args=(mine,), name=f"kgr-worker-reader-{self.index}", daemon=True).start()

    def send(self, msg: tuple) -> None:
        """Under the owner's lock."""
        assert self.conn is not None
        try:
            self.conn.send(msg)
        except OSError:  # dying: the reader replaces it and sends the outstanding chunks again
            pass

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                self._died(conn)
                return
            kind = msg[0]
            if kind == "ready":
                self.pid, self.frozen = msg[1], msg[2]
                self.ready.set()
            elif kind == "init-error":
                self.error = msg[1]
                self.ready.set()
            elif kind == "forgot":
                self.forgot.set()
            else:
                with self.owner.lock:
                    entry = self.outstanding.pop(msg[1], None)
                if entry is not None:
                    answer(entry[1], msg[2], ok=kind == "ok")

    def _died(self, conn: Connection) -> None:
        conn.close()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        with self.owner.lock:
            if self.owner.closing:
                self.ready.set()
                return
            self.deaths += 1
            lost: dict[int, tuple[Chunk, cf.Future]] = {}
            if self.error is not None or self.deaths > self.owner.max_restarts:
                lost = self.abandon()
            else:
                self.spawn()
                for seq, (chunk, _) in sorted(self.outstanding.items()):
                    self.send(("draft", seq, chunk))
        self.fail(lost)

    def abandon(self) -> dict[int, tuple[Chunk, cf.Future]]:
        """Under the owner's lock: the slot stays empty from now on; the chunks it held."""
        self.dead = True
        lost, self.outstanding = self.outstanding, {}
        return lost

    def fail(self, lost: dict[int, tuple[Chunk, cf.Future]]) -> None:
        """Answer the chunks an abandoned slot held: its start's error when a replacement could not
        start (the database went away, ...), else each chunk's failed outcome."""
        why = KgrRuntimeError(f"{self.kind} {self.index} died {self.deaths} times")
        for chunk, fut in lost.values():
            if self.error is not None:
                answer(fut, self.error, ok=False)
            else:
                answer(fut, failed_outcome(chunk, why))


class ProcessDrafts:
    """:class:`~kgr.ingest.chunk_loop.RemoteDrafts` over ``workers`` local processes.

    (:class:`~kgr.ingest.executors.ray_actors.RayDrafts` is this class with Ray actors in place of
    the processes: ``slot_class`` says how a worker starts.)

    Raises
    ------
    KgrRuntimeError, KgrNeo4jUnavailable
        A worker could not start (the error it raised, e.g. the database does not answer it).
    """

    slot_class: type[WorkerSlot] = WorkerSlot

    def __init__(self, spec: WorkerSpec, workers: int, *, max_restarts: int = 3):
        self.spec, self.max_restarts = spec, max_restarts
        self.lock = threading.Lock()
        self.closing = False
        self._seq = itertools.count()
        self.slots = [self.slot_class(self, i) for i in range(workers)]
        self.pids: list[int | None] = []
        try:
            for s in self.slots:
                s.spawn()
            for s in self.slots:
                if not s.ready.wait(START_TIMEOUT):
                    raise KgrRuntimeError(f"ingestion worker process {s.index} did not start in {START_TIMEOUT:.0f} s")
                if s.error is not None:
                    raise s.error
            self.pids = [s.pid for s in self.slots]
        except BaseException:
            self.close(wait=False)
            raise

    @property
    def placement(self) -> list[str]:
        host = socket.gethostname()
        return [f"node {host} pid {pid}" for pid in self.pids]

    @property
    def restarts(self) -> int:
        return sum(s.deaths for s in self.slots)

    def submit(self, chunk: Chunk) -> cf.Future:
        fut: cf.Future = cf.Future()
        with self.lock:
            live = [s for s in self.slots if not s.dead]
            if not live:
                fut.set_result(failed_outcome(chunk, KgrRuntimeError("every ingestion worker process died")))
                return fut
            slot = min(live, key=lambda s: len(s.outstanding))
            seq = next(self._seq)
            slot.outstanding[seq] = (chunk, fut)
            slot.send(("draft", seq, chunk))
        return fut

    def forget_names(self) -> None:
        with self.lock:
            live = [s for s in self.slots if not s.dead]
            for s in live:
                s.forgot.clear()
                s.send(("forget",))
        for s in live:
            s.forgot.wait(60)

    def stop_workers(self) -> None:
        """Mark the executor closing and tell every live worker to stop."""
        with self.lock:
            self.closing = True
            for s in self.slots:
                if s.conn is not None and not s.dead:
                    s.send(("stop",))

    def close(self, *, wait: bool = True) -> None:
        self.stop_workers()
        for s in self.slots:
            if s.proc is None:
                continue
            try:
                s.proc.wait(timeout=30 if wait else 2)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait(timeout=10)
