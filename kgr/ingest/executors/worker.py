"""What runs in an executor's worker (a local process or a Ray actor): a :class:`DraftWorker`.

A worker opens its own :class:`~kgr.store.connection.Graph` on the job's database (from the job's
:class:`~kgr.store.connection.Neo4jSettings`), builds the job's extractor, and drafts the chunks it
is given with a :class:`~kgr.ingest.drafting.ChunkDrafter` on the event loop of its host (the worker
process's main loop, or the Ray actor's loop: one thread, no hand-over between threads per chunk).
It only reads the database (disambiguation); the drafted chunks go back to the job, whose writer
commits each with its processed mark. So a worker killed at any moment loses nothing: its chunks are
drafted again (by its replacement) and written once.
"""

from __future__ import annotations

import os
import pickle
import traceback
from dataclasses import dataclass

from kgr.errors import KgrNeo4jUnavailable
from kgr.extract.base import Extractor
from kgr.ingest.chunking import Chunk
from kgr.ingest.config import IngestConfig, make_extractor
from kgr.ingest.drafting import ChunkDrafter, Drafted, close_llm_clients
from kgr.ingest.report import ChunkOutcome
from kgr.litellm_offline import set_openai_http_route, warm_up_litellm
from kgr.model.schema import KGSchema
from kgr.store.connection import Neo4jSettings, open_graph

__all__ = ["WorkerSpec", "DraftWorker", "portable"]


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, picklable. ``config.concurrency`` is the worker's own share.

    ``settings`` carries the database password when one is set: it travels to the workers as the
    job's arguments do (a socket to a local process, Ray's task arguments on a cluster).
    ``openai_http`` is :func:`~kgr.litellm_offline.openai_http_route` decided by the job, so for an
    ``openai/`` model with an ``api_base`` a Ray node's workers follow the job's environment, not the
    node's (for any other model the switch is left as the node has it)."""

    settings: Neo4jSettings
    schema: KGSchema
    config: IngestConfig
    known_before: float
    extractor: Extractor | None = None
    openai_http: bool | None = None


def portable(exc: BaseException) -> BaseException:
    """``exc`` as it can cross a process boundary: itself when it pickles and unpickles, a
    :class:`~kgr.errors.KgrNeo4jUnavailable` with the same message for that kind, else a
    ``RuntimeError`` carrying the worker's traceback (a bug in the worker stays a bug in the job)."""
    if isinstance(exc, KgrNeo4jUnavailable):
        return KgrNeo4jUnavailable(str(exc))
    try:
        return pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to round-trip: carry the text instead
        text = "".join(traceback.format_exception(exc))
        return RuntimeError(f"{type(exc).__name__} in ingestion worker {os.getpid()}: {exc}\n{text}")


class DraftWorker:
    """A drafter with its own Graph; :meth:`draft`, :meth:`forget_names` and :meth:`aclose` run on
    the host's event loop."""

    def __init__(self, spec: WorkerSpec):
        set_openai_http_route(spec.openai_http)
        if spec.config.extractor == "llm":  # its seconds of import belong to the start, not to the first chunks
            warm_up_litellm(spec.config.model, spec.config.api_base)
        self.graph = open_graph(spec.settings)
        extractor = spec.extractor if spec.extractor is not None else make_extractor(spec.config)
        self.drafter = ChunkDrafter(self.graph, spec.schema, extractor, spec.config, spec.known_before)

    async def draft(self, chunk: Chunk) -> Drafted | ChunkOutcome:
        """The chunk's :class:`~kgr.ingest.drafting.Drafted` or failed outcome."""
        return await self.drafter.draft(chunk)

    def forget_names(self) -> None:
        """Drop the disambiguation cache (a forget deleted entities)."""
        self.drafter.forget_names()

    async def aclose(self) -> None:
        await close_llm_clients()
        self.drafter.close(wait=True)
        self.graph.close()
