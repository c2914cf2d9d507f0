"""``executor="ray"``: chunks drafted by Ray actors, one :class:`DraftWorker` each (``kgr[ray]``).

The actors are spread over the cluster's nodes (``SPREAD`` scheduling); each drafts up to its share
of the concurrency at once on its own event loop, and its drafted chunks come back to the job as
Ray object references, which the job's writer commits. An actor that dies is restarted by Ray
(``max_restarts``) and the drafts it held are retried (``max_task_retries``): drafting only reads the
database, so a retried chunk is written once, by the job. Past the retries a chunk is reported
failed (unmarked: a re-run retries it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import os
import threading
from typing import Any

from kgr.errors import KgrRuntimeError, KgrValidationError
from kgr.gc_freeze import freeze_startup_objects
from kgr.ingest.chunking import Chunk
from kgr.ingest.drafting import failed_outcome
from kgr.ingest.executors.worker import DraftWorker, WorkerSpec, portable

__all__ = ["RayDrafts", "DraftActor"]

#: restarts of one actor, and retries of one draft, before the chunk is reported failed
MAX_RESTARTS = 3


class DraftActor:
    """The actor's class (made remote by :class:`RayDrafts`): a :class:`DraftWorker` behind async
    methods, all on the actor's event loop."""

    def __init__(self, spec: WorkerSpec):
        self.worker = DraftWorker(spec)
        freeze_startup_objects()  # litellm's ~450,000 objects out of every full collection

    def where(self) -> str:
        import ray

        return f"node {ray.get_runtime_context().get_node_id()[:12]} pid {os.getpid()}"

    async def draft(self, chunk: Chunk) -> tuple[str, Any]:
        """``("ok", drafted)`` or ``("raise", exc)`` (errors as values: Ray would wrap them)."""
        try:
            return "ok", await self.worker.draft(chunk)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the job
            return "raise", portable(exc)

    async def forget_names(self) -> None:
        self.worker.forget_names()


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise KgrValidationError("the ray executor needs Ray: pip install 'kgr[ray]'", field="executor") from exc
    return ray


class RayDrafts:
    """:class:`~kgr.ingest.chunk_loop.RemoteDrafts` over Ray actors.

    ``spec_for(workers)`` gives the workers' spec once their number is known (default: the cluster's
    CPUs). Connects to ``address`` (default: ``RAY_ADDRESS``, else a local Ray started for the job and
    stopped with it) unless Ray is already initialised in this process.
    """

    def __init__(self, spec_for: Any, workers: int | None, address: str | None):
        ray = self.ray = _ray()
        self._owns = False
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=True, configure_logging=False)
            self._owns = True
        try:
            cpus = float(ray.cluster_resources().get("CPU", 1))
            n = workers or max(1, int(cpus))
            # a CPU each while the cluster has them (so SPREAD places them over the nodes), a share otherwise
            actor = ray.remote(DraftActor).options(
                max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS, num_cpus=min(1.0, cpus / n),
                scheduling_strategy="SPREAD", max_concurrency=1000)
            spec = spec_for(n)
            self.actors = [actor.remote(spec) for _ in range(n)]
            self.placement = self._get([a.where.remote() for a in self.actors])
        except BaseException:
            self.close()
            raise
        self._load = [0] * n
        self._lock = threading.Lock()
        self._started = set(self.placement)

    @property
    def restarts(self) -> int:
        """Actors that Ray restarted (their pid changed); asked of the actors at the end of the run."""
        try:
            now = self.ray.get([a.where.remote() for a in self.actors], timeout=30)
        except Exception:  # noqa: BLE001 - an actor gone for good counts as restarted
            return len(self.actors)
        return sum(1 for w in now if w not in self._started)

    def _get(self, refs: list) -> list:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayActorError as exc:  # an actor's __init__ raised
            cause = getattr(exc, "cause", None) or exc
            raise KgrRuntimeError(f"an ingestion actor could not start: {str(cause).splitlines()[0][:300]}") from exc

    def submit(self, chunk: Chunk) -> cf.Future:
        with self._lock:
            i = min(range(len(self.actors)), key=lambda k: self._load[k])
            self._load[i] += 1
        ref = self.actors[i].draft.remote(chunk)
        out: cf.Future = cf.Future()

        def done(f: cf.Future) -> None:
            with self._lock:
                self._load[i] -= 1
            try:
                kind, value = f.result()
            except Exception as exc:  # noqa: BLE001 - the actor died more often than it is retried
                out.set_result(failed_outcome(chunk, KgrRuntimeError(
                    f"ingestion actor {i} failed: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}")))
                return
            if kind == "ok":
                out.set_result(value)
            else:
                out.set_exception(value)

        ref.future().add_done_callback(done)
        return out

    def forget_names(self) -> None:
        self.ray.get([a.forget_names.remote() for a in self.actors])

    def close(self, *, wait: bool = True) -> None:
        for a in getattr(self, "actors", []):
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self._owns:
            self.ray.shutdown()
