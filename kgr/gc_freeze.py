"""The cycle collector in long-lived kgr processes: freeze what the start made.

A process that imports litellm, pydantic's schemas and the Neo4j driver holds 50,000 (the tool
server) to 450,000 (an ingestion worker: litellm's provider tables) objects that live as long as
it does. Each full collection scans them all again, in time linear in their number
(``docs/benchmarks.md`` has the pauses), paid by whichever request or chunk happens to allocate at
that moment. :func:`freeze_startup_objects` moves them into the permanent generation (``gc.freeze``)
once the start is done; objects made later are collected as usual.
"""

from __future__ import annotations

import gc
import os

__all__ = ["freeze_startup_objects"]


def freeze_startup_objects() -> int:
    """Collect once, then freeze every object still alive; return how many are frozen.

    ``KGR_GC_FREEZE=0`` (or ``false``/``no``/``off``) skips it and returns 0. Call it where a process's
    start ends: ``kgr serve`` once it has started, an ingestion worker (process or Ray actor) once
    its drafter is built."""
    if os.environ.get("KGR_GC_FREEZE", "1").strip().lower() in ("0", "false", "no", "off"):
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
