"""Where an ingestion job drafts its chunks (``IngestConfig.executor``).

``inprocess`` (the default) drafts on the job's own event loop. ``process`` and ``ray`` draft in
workers, :class:`~kgr.ingest.executors.process.ProcessDrafts` (local processes) or
:class:`~kgr.ingest.executors.ray_actors.RayDrafts` (Ray actors on a cluster), through the same
:class:`~kgr.ingest.executors.worker.DraftWorker`; the job's writer commits what they draft, so
writes, group commit and exactly-once are the in-process ones. ``concurrency`` is the job's total,
shared among the workers (``ceil(concurrency / workers)`` each).
"""

from __future__ import annotations

import math
import pickle

from kgr.errors import KgrValidationError
from kgr.extract.base import Extractor
from kgr.ingest.chunk_loop import RemoteDrafts
from kgr.ingest.config import IngestConfig
from kgr.ingest.executors.worker import WorkerSpec
from kgr.litellm_offline import openai_http_route
from kgr.model.schema import KGSchema
from kgr.store.connection import Graph

__all__ = ["open_remote"]


def open_remote(graph: Graph, schema: KGSchema, config: IngestConfig, known_before: float,
                extractor: Extractor | None = None) -> RemoteDrafts:
    """The workers of ``config.executor`` (``process`` or ``ray``), started and ready.

    Raises
    ------
    KgrValidationError
        ``graph`` was not opened from settings (the workers could not reach its database), or
        ``extractor`` cannot be pickled to the workers (give it through the config instead), or
        Ray is not installed.
    KgrNeo4jUnavailable, KgrRuntimeError
        A worker could not start.
    """
    if graph.settings is None or not graph.settings.uri:
        raise KgrValidationError("the process and ray executors need a Graph opened by kgr.connect or open_graph "
                                 "(their workers connect with its settings)", field="executor")
    if extractor is not None:
        try:
            pickle.dumps(extractor)
        except Exception as exc:  # noqa: BLE001 - any pickling failure
            raise KgrValidationError(f"the extractor cannot be sent to the workers ({exc}); name it in the config",
                                     field="executor") from exc
    settings = graph.settings
    llm = extractor if extractor is not None else config if config.extractor == "llm" else None
    openai_http = openai_http_route(getattr(llm, "model", None), getattr(llm, "api_base", None))

    def spec_for(workers: int) -> WorkerSpec:
        share = config.model_copy(update={"concurrency": math.ceil(config.concurrency / workers)})
        return WorkerSpec(settings=settings, schema=schema, config=share, known_before=known_before,
                          extractor=extractor, openai_http=openai_http)

    if config.executor == "process":
        from kgr.ingest.executors.process import ProcessDrafts, worker_count

        n = worker_count(config.workers)
        return ProcessDrafts(spec_for(n), n)
    if config.executor == "ray":
        from kgr.ingest.executors.ray_actors import RayDrafts

        return RayDrafts(spec_for, config.workers, config.ray_address)
    raise KgrValidationError(f"executor {config.executor!r} drafts in process", field="executor")
