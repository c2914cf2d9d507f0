"""The chunk loop of an ingestion job: drafting on an event loop, and the group writer.

:class:`ChunkPipeline` drafts each chunk (:class:`~kgr.ingest.drafting.ChunkDrafter`: the extractor,
the agent tools, disambiguation) on an asyncio loop of its own, or hands it to the job's executor
(worker processes or Ray actors that draft it, :mod:`kgr.ingest.executors`), then gives the drafted
chunk to the staging write path (:class:`kgr.store.group_commit.GroupWriter`, one unit per chunk
with its processed mark), which commits groups of chunks in shared transactions (a group that the
database refuses is written again chunk by chunk, so only the refused chunk fails). Writes are always the job's own: an executor's
workers only read. Semantics in :mod:`kgr.ingest.pipeline`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from typing import Protocol

from kgr.errors import KgrCypherBug, KgrDatabaseError
from kgr.ingest.chunking import Chunk
from kgr.ingest.config import IngestConfig, commit_linger
from kgr.ingest.drafting import ChunkDrafter, Drafted, close_llm_clients, failed_outcome
from kgr.ingest.report import ChunkOutcome
from kgr.model.schema import KGSchema
from kgr.store.chunk_marks import ChunkMark
from kgr.store.connection import Graph
from kgr.store.group_commit import GroupWriter, StageUnit
from kgr.store.stage_rows import StageReport

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


class ChunkPipeline:
    """Drafting for every chunk (here, or by ``remote``), and the writer(s), on one event loop."""

    def __init__(self, graph: Graph, schema: KGSchema, drafter: ChunkDrafter | None, config: IngestConfig,
                 paths: dict[str, str | None], *, remote: RemoteDrafts | None = None):
        if (drafter is None) == (remote is None):
            raise ValueError("give a drafter or a remote executor, not both")
        self.graph, self.schema, self.config, self.paths = graph, schema, config, paths
        self.drafter, self.remote = drafter, remote
        self.staged = StageReport()
        self.writer = GroupWriter(graph, max_votes=None, max_units=config.commit_chunks,
                                  linger=commit_linger(config), lanes=config.writers)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="kgr-ingest-loop", daemon=True)

    # -- lifecycle (called from the ingesting thread) ----------------------------------------------
    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def transactions(self) -> int:
        """Write transactions that committed chunks so far."""
        return self.writer.groups

    def start(self) -> "ChunkPipeline":
        self._thread.start()
        return self

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
        self.writer.close(cancel=True, wait=wait)
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
        return await self._write(drafted)

    # -- the write --------------------------------------------------------------------------------
    async def _write(self, d: Drafted) -> ChunkOutcome:
        """Commit a drafted chunk (its votes with its processed mark); a chunk the database refuses
        is reported failed, not marked (a re-run retries it)."""
        mark = ChunkMark(chunk_id=d.chunk.id, entity_keys=sorted(set(d.keys)), extractor=d.extractor,
                         rounds=d.outcome.rounds, quality=d.quality, proposals=list(d.proposals or []))
        unit = StageUnit(valid=list(d.assertions), entities=list(d.entities), schema=self.schema, marks=[mark])
        try:
            rep = await asyncio.wrap_future(self.writer.submit(unit))
        except KgrCypherBug:
            raise
        except KgrDatabaseError as exc:
            failed = failed_outcome(d.chunk, exc, path=self.paths.get(d.chunk.document_id))
            return d.outcome.model_copy(update={"failure": failed.failure})
        self.staged = self.staged.merge(rep)
        return d.outcome
