"""Python's cyclic garbage collector paused while units are built and a type is planned.

Building units and planning a type keep some 10^5 container objects alive until they end (units,
tables, links, evidence). Each time such survivors pass a quarter of the process's long-lived
objects, Python runs a full collection that scans every object of the process again, the caller's
entity views included: on 5,000 person records five full collections took a quarter of the planning
CPU. Neither step makes reference cycles, so their garbage is freed by reference counting all the
same; the collector runs as usual again once they return. A plan with a tie-break (an LLM called
out of planning, whose client may well make cycles) is not paused.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["cycle_collector_paused"]


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (or the decorated function), then restored as
    it was. Process-wide: another thread's cycles are not collected meanwhile, and a collector that
    was disabled on entry stays disabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
