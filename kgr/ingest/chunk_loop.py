"""The chunk loop of an ingestion job: drafting on an event loop, and the group writer.

:class:`ChunkPipeline` drafts each chunk (:class:`~kgr.ingest.drafting.ChunkDrafter`: the extractor,
the agent tools, disambiguation) on an asyncio loop of its own, or hands it to the job's executor
(worker processes or Ray actors that draft it, :mod:`kgr.ingest.executors`), then gives the drafted
chunk to the writer(s), which commit groups of chunks through
:func:`kgr.store.provenance.commit_chunks` (a group that the database refuses is written again
chunk by chunk, so only the refused chunk fails). Writes are always the job's own: an executor's
workers only read. Semantics in :mod:`kgr.ingest.pipeline`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from dataclasses import dataclass, field
from typing import Protocol

from kgr.errors import KgrCypherBug, KgrDatabaseError
from kgr.ingest.chunking import Chunk
from kgr.ingest.config import IngestConfig, commit_linger
from kgr.ingest.drafting import ChunkDrafter, Drafted, close_llm_clients, failed_outcome
from kgr.ingest.report import ChunkOutcome
from kgr.model.schema import KGSchema
from kgr.store import provenance
from kgr.store.connection import Graph
from kgr.store.staging import StageReport

__all__ = ["ChunkPipeline", "RemoteDrafts"]


class RemoteDrafts(Protocol):
    """Drafting somewhere else (an executor's workers): the same result as
    :meth:`ChunkDrafter.draft`, as a future."""

    def submit(self, chunk: Chunk) -> cf.Future: ...  # of Drafted | ChunkOutcome

    @property
    def placement(self) -> list[str]: ...  # "node N pid P" per worker, as they started

    @property
    def restarts(self) -> int: ...  # workers that died and were replaced

    def forget_names(self) -> None: ...

    def close(self, *, wait: bool = True) -> None: ...


@dataclass
class _Work:
    """A drafted chunk waiting for the writer."""

    drafted: Drafted
    future: asyncio.Future = field(repr=False)


class ChunkPipeline:
    """Drafting for every chunk (here, or by ``remote``), and the writer(s), on one event loop."""

    def __init__(self, graph: Graph, schema: KGSchema, drafter: ChunkDrafter | None, config: IngestConfig,
                 paths: dict[str, str | None], *, remote: RemoteDrafts | None = None):
        if (drafter is None) == (remote is None):
            raise ValueError("give a drafter or a remote executor, not both")
        self.graph, self.schema, self.config, self.paths = graph, schema, config, paths
        self.drafter, self.remote = drafter, remote
        self.staged = StageReport()
        self.transactions = 0
        self.linger = commit_linger(config)
        self._lock = threading.Lock()
        self._write_pool = cf.ThreadPoolExecutor(max_workers=config.writers, thread_name_prefix="kgr-writer")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="kgr-ingest-loop", daemon=True)
        self._queue: asyncio.Queue[_Work] | None = None
        self._writers: list[asyncio.Task] = []

    # -- lifecycle (called from the ingesting thread) ----------------------------------------------
    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> "ChunkPipeline":
        self._thread.start()
        cf_future = asyncio.run_coroutine_threadsafe(self._setup(), self._loop)
        cf_future.result()
        return self

    async def _setup(self) -> None:
        self._queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._writers = [loop.create_task(self._write_forever(), name=f"kgr-writer-{i}")
                         for i in range(self.config.writers)]

    def submit(self, chunk: Chunk) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(self.process(chunk), self._loop)

    def forget_names(self) -> None:
        """Drop the disambiguation caches (a forget deleted entities); call with no chunk in flight."""
        if self.drafter is not None:
            self.drafter.forget_names()
        else:
            assert self.remote is not None
            self.remote.forget_names()

    def close(self, *, wait: bool = True) -> None:
        """Stop the pipeline. ``wait=False`` (the database went away) does not wait for database calls
        still retrying in the pools: the job stops within the retry bound instead of one more retry
        period per call in flight; those calls end on their own and their results are dropped."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=60)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=60)
        # before closing the loop: a finishing job still posts its result to it
        if self.drafter is not None:
            self.drafter.close(wait=wait)
        if self.remote is not None:
            self.remote.close(wait=wait)
        self._write_pool.shutdown(wait=wait, cancel_futures=True)
        if wait:
            self._loop.close()  # (abandoned: a late result may still be posted to the stopped loop)

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await close_llm_clients()
        await self._loop.shutdown_asyncgens()

    # -- one chunk ------------------------------------------------------------------------------
    async def process(self, chunk: Chunk) -> ChunkOutcome:
        """Draft the chunk (here or remotely), then wait for the writer to commit it."""
        assert self._queue is not None
        if self.drafter is not None:
            drafted = await self.drafter.draft(chunk)
        else:
            assert self.remote is not None
            drafted = await asyncio.wrap_future(self.remote.submit(chunk))
        if isinstance(drafted, ChunkOutcome):  # failed: not written, not marked
            fail = drafted.failure
            if fail is not None and fail.path is None and self.paths.get(chunk.document_id):
                drafted = drafted.model_copy(update={"failure": fail.model_copy(
                    update={"path": self.paths[chunk.document_id]})})
            return drafted
        work = _Work(drafted=drafted, future=asyncio.get_running_loop().create_future())
        await self._queue.put(work)
        return await work.future

    # -- the writer -----------------------------------------------------------------------------
    async def _write_forever(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            group = [await self._queue.get()]
            await self._gather(group)
            try:
                results = await loop.run_in_executor(self._write_pool, self._write_group, group)
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting chunk, never lost
                for w in group:
                    if not w.future.done():
                        w.future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for w, res in zip(group, results):
                if not w.future.done():
                    w.future.set_result(res)

    async def _gather(self, group: list[_Work]) -> None:
        """Add the drafted chunks ready now to ``group``, up to ``commit_chunks``; with a linger, wait
        that long at most for more (group commit: fewer, larger transactions)."""
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.linger
        while len(group) < self.config.commit_chunks:
            if not self._queue.empty():
                group.append(self._queue.get_nowait())
                continue
            wait = deadline - loop.time()
            if wait <= 0:
                return
            try:
                group.append(await asyncio.wait_for(self._queue.get(), wait))
            except asyncio.TimeoutError:
                return

    def _write_group(self, group: list[_Work]) -> list[ChunkOutcome]:
        """Commit ``group`` in one transaction; on a data error, chunk by chunk (runs in the writer thread)."""
        try:
            self._commit([w.drafted for w in group])
            return [w.drafted.outcome for w in group]
        except KgrCypherBug:
            raise
        except KgrDatabaseError as exc:
            if len(group) == 1:
                d = group[0].drafted
                failed = failed_outcome(d.chunk, exc, path=self.paths.get(d.chunk.document_id))
                return [d.outcome.model_copy(update={"failure": failed.failure})]
        return [self._write_group([w])[0] for w in group]

    def _commit(self, group: list[Drafted]) -> None:
        marks = [provenance.ChunkMark(chunk_id=w.chunk.id, entity_keys=sorted(set(w.keys)), extractor=w.extractor,
                                      rounds=w.outcome.rounds, quality=w.quality, proposals=list(w.proposals or []))
                 for w in group]
        rep = provenance.commit_chunks(self.graph, marks, assertions=[a for w in group for a in w.assertions],
                                       entities=[e for w in group for e in w.entities], schema=self.schema)
        with self._lock:
            self.staged = self.staged.merge(rep)
            self.transactions += 1


