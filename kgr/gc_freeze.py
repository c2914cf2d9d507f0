"""The cycle collector in kgr processes: freeze what the start made, pause it through bulk work.

A process that imports litellm, pydantic's schemas and the Neo4j driver holds 50,000 (the tool
server) to 450,000 (an ingestion worker: litellm's provider tables) objects that live as long as
it does. Each full collection scans them all again, in time linear in their number
(``docs/benchmarks.md`` has the pauses), paid by whichever request or chunk happens to allocate at
that moment. :func:`freeze_startup_objects` moves them into the permanent generation (``gc.freeze``)
once the start is done; objects made later are collected as usual.

:func:`cycle_collector_paused` switches the collector off for a block that makes many long-lived
objects and next to no cycles: a command's imports, a staging call, building resolution units and
planning a type. There each full collection rescans the survivors (and the caller's objects) again:
about 170 collections over 15,000 staged assertions, five full ones (a quarter of the CPU) while
5,000 person records were planned, ~0.07 s of a command's start-up. Garbage without cycles is still
freed by reference counting; what has cycles waits for the collector, running again after the block.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

__all__ = ["freeze_startup_objects", "cycle_collector_paused"]


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


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (or the decorated function), then restored
    as it was (module docstring). Process-wide: another thread's cycles are not collected meanwhile,
    and a collector that was disabled on entry stays disabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
