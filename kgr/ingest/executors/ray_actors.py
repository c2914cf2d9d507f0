"""``executor="ray"``: chunks drafted by workers that Ray places on the cluster (``kgr[ray]``).

Ray starts the workers, one :class:`DraftActor` each, spread over the cluster's nodes (``SPREAD``
scheduling). Chunks do not travel as Ray actor calls: each actor connects back to the job over a
socket of its own (``multiprocessing.connection``, authenticated with a key made for the job) and
serves the process executor's protocol on it (:func:`kgr.ingest.executors.process.serve_async`: drafts
up to its share of the concurrency at once on its own event loop, answers each chunk as it is
done). A Ray actor call per chunk cost more CPU in the actor and in the job than this channel, and
its requests held their LLM slot longer (``docs/benchmarks.md``, ingestion past one process). So Ray places and hosts the workers; the job's :class:`~kgr.ingest.executors.process.
ProcessDrafts` sends them chunks, and replaces a worker that dies (a new actor, which gets every
chunk the dead one held): drafting only reads the database, so a chunk drafted twice is written
once, by the job. After ``max_restarts`` deaths of one worker its chunks are reported failed
(unmarked: a re-run retries them).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from kgr.errors import KgrRuntimeError, KgrValidationError
from kgr.ingest.executors.process import START_TIMEOUT, ProcessDrafts, WorkerSlot, serve_async, worker_count

__all__ = ["RayDrafts", "DraftActor", "check_ray_address"]

#: seconds to wait for a TCP connection to the cluster's address before calling it unreachable
CONNECT_TIMEOUT = 5.0


class DraftActor:
    """The actor's class (made remote by :class:`RayDrafts`): a worker host."""

    def serve(self, address: tuple[str, int], authkey: bytes, token: str) -> None:
        """Connect to the job, introduce this worker (``token``, ``"node N pid P"``), then serve
        the process executor's protocol until the job says stop or goes away."""
        import ray

        conn = Client(tuple(address), authkey=authkey)
        conn.send((token, f"node {ray.get_runtime_context().get_node_id()[:12]} pid {os.getpid()}"))
        asyncio.run(serve_async(conn))


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise KgrValidationError("the ray executor needs Ray: pip install 'kgr[ray]'", field="executor") from exc
    return ray


def check_ray_address(address: str | None) -> None:
    """Fail fast, and clearly, on a cluster address Ray would wait minutes for.

    ``address`` (else ``RAY_ADDRESS``) is ``host:port`` (the cluster's GCS, for a job on one of its
    nodes) or ``ray://host:port`` (Ray Client, for a job outside the cluster, which needs
    ``ray[client]``); ``None``, ``auto`` and ``local`` are left to Ray. An address nothing listens on
    makes ``ray.init`` retry for minutes while it logs warnings; a TCP connection with a
    :data:`CONNECT_TIMEOUT` bound says so at once.

    Raises
    ------
    KgrValidationError
        The address is not ``[ray://]host:port``, or it is a ``ray://`` address and Ray Client is
        not installed.
    KgrRuntimeError
        Nothing accepts a connection at the address.
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None or address.strip().lower() in ("auto", "local"):
        return
    target = address.strip()
    client = target.startswith("ray://")
    host, sep, port = target.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise KgrValidationError(f"Ray address {address!r} is not host:port or ray://host:port", field="ray_address")
    if client:
        try:
            import grpc  # noqa: F401 - what Ray Client needs beyond ray
        except ImportError as exc:
            raise KgrValidationError(f"the Ray Client address {address!r} needs Ray Client: "
                                     "pip install 'ray[client]'", field="ray_address") from exc
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise KgrRuntimeError(f"cannot reach the Ray cluster at {address} ({exc}); is it running, and does "
                              "this machine reach it?") from exc


class _ActorSlot(WorkerSlot):
    """A worker that is a Ray actor: started by Ray, reached over the socket it opens to the job."""

    owner: "RayDrafts"
    kind = "ingestion actor"
    where = ""  # "node N pid P", once connected

    def spawn(self) -> None:
        owner = self.owner
        self.ready.clear()
        self.proc = None
        token = os.urandom(16).hex()
        self.actor = owner.actor_class.remote()
        self.call = self.actor.serve.remote(owner.listener.address, owner.authkey, token)
        threading.Thread(target=self._attach, args=(token,), name=f"kgr-ray-worker-{self.index}", daemon=True).start()

    def _attach(self, token: str) -> None:
        """Wait for the actor's connection, send it the spec and every chunk this slot holds, then
        read its answers (the process slot's reader)."""
        arrived = self.owner.connection(token)
        if arrived is None:
            self.error = KgrRuntimeError(f"{self.kind} {self.index} did not connect in {START_TIMEOUT:.0f} s")
            with self.owner.lock:  # a replacement that never came: its chunks fail, as a process slot's do
                lost = self.abandon()
            self.fail(lost)
            self.ready.set()
            return
        conn, self.where = arrived
        with self.owner.lock:
            conn.send(self.owner.spec)
            self.conn = conn
            for seq, (chunk, _) in sorted(self.outstanding.items()):  # a replacement's: the dead one's
                self.send(("draft", seq, chunk))
        self._read(conn)


class RayDrafts(ProcessDrafts):
    """:class:`~kgr.ingest.chunk_loop.RemoteDrafts` over Ray actors.

    ``spec_for(workers)`` gives the workers' spec once their number is known (default: the cluster's
    CPUs). Connects to ``address`` (default: ``RAY_ADDRESS``, else a local Ray started for the job and
    stopped with it) unless Ray is already initialised in this process. The job listens for its
    actors on a free port of its node's address (``ray.util.get_node_ip_address()``, or
    ``KGR_RAY_JOB_HOST`` where the cluster reaches the job by another name), so the cluster's nodes
    must be able to connect to the job's machine, as they must to a Ray driver. The key travels to
    the actors as their task's argument, as the workers' spec does.
    """

    slot_class = _ActorSlot

    def __init__(self, spec_for: Any, workers: int | None, address: str | None):
        ray = self.ray = _ray()
        self._owns = False
        self._arrived: dict[str, tuple[Connection, str]] = {}
        self._arrival = threading.Condition()
        self.listener: Listener | None = None
        self.slots: list[WorkerSlot] = []
        self.lock, self.closing = threading.Lock(), False
        if not ray.is_initialized():
            check_ray_address(address)
            ray.init(address=address, include_dashboard=False, log_to_driver=True, configure_logging=False)
            self._owns = True
        try:
            resources = ray.cluster_resources()
            cpus = float(resources.get("CPU", 1))
            n = worker_count(workers, default=max(1, int(cpus)), memory_mb=float(resources.get("memory", 0)) / 2**20,
                             where="the Ray cluster")
            self.authkey = os.urandom(32)
            host = os.environ.get("KGR_RAY_JOB_HOST") or ray.util.get_node_ip_address()
            self.listener = Listener((host, 0), authkey=self.authkey)
            threading.Thread(target=self._accept, name="kgr-ray-listener", daemon=True).start()
            # a CPU each while the cluster has them (so SPREAD places them over the nodes), a share otherwise
            self.actor_class = ray.remote(DraftActor).options(
                max_restarts=0, max_task_retries=0, num_cpus=min(1.0, cpus / n), scheduling_strategy="SPREAD")
        except BaseException:
            self.close(wait=False)
            raise
        super().__init__(spec_for(n), n)

    def _accept(self) -> None:
        """The listener's thread: each arriving actor's connection, by its token."""
        assert self.listener is not None
        while True:
            try:
                conn = self.listener.accept()
            except OSError:  # closed: the job ends
                if self.closing:
                    return
                continue
            except Exception:  # noqa: BLE001 - a stranger without the job's key (AuthenticationError)
                continue
            try:
                token, where = conn.recv()
            except Exception:  # noqa: BLE001 - not one of the job's actors after all: dropped
                conn.close()
                continue
            with self._arrival:
                self._arrived[token] = (conn, where)
                self._arrival.notify_all()

    def connection(self, token: str) -> tuple[Connection, str] | None:
        """The connection of the actor started with ``token`` and its ``"node N pid P"`` (None: it
        did not connect in time, or the job is closing)."""
        with self._arrival:
            self._arrival.wait_for(lambda: token in self._arrived or self.closing, timeout=START_TIMEOUT)
            return self._arrived.pop(token, None)

    @property
    def placement(self) -> list[str]:
        return [s.where for s in self.slots]  # type: ignore[attr-defined]

    def close(self, *, wait: bool = True) -> None:
        self.stop_workers()
        with self._arrival:
            self._arrival.notify_all()
        calls = [s.call for s in self.slots if getattr(s, "call", None) is not None]
        if calls:
            try:
                self.ray.wait(calls, num_returns=len(calls), timeout=30 if wait else 2)
            except Exception:  # noqa: BLE001 - a worker already gone
                pass
        for s in self.slots:
            try:
                self.ray.kill(s.actor)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self.listener is not None:
            self.listener.close()
        if self._owns:
            self.ray.shutdown()
