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

:func:`freeze_at_exit` spares a command-line process the collections of its own exit: the
interpreter's finalisation collects all generations again while it tears the modules down (0.15–0.25 s
of a ``kgr resolve`` of 5,000 records: the imports' objects and what the command left). Frozen
objects are left to the operating system, as ``os._exit`` would, but the exit is otherwise the usual
one: later ``atexit`` handlers run, the standard streams are flushed by the interpreter after them,
the exit code is kept. What it gives up: the finaliser (``__del__``) of an object still in a
reference cycle at exit does not run; kgr closes its driver, files and pools before a command ends.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
from collections.abc import Iterator

__all__ = ["freeze_startup_objects", "cycle_collector_paused", "freeze_at_exit", "collector_off_to_exit"]


def _frozen_off() -> bool:
    return os.environ.get("KGR_GC_FREEZE", "1").strip().lower() in ("0", "false", "no", "off")


def freeze_startup_objects() -> int:
    """Collect once, then freeze every object still alive; return how many are frozen.

    ``KGR_GC_FREEZE=0`` (or ``false``/``no``/``off``) skips it and returns 0. Call it where a process's
    start ends: ``kgr serve`` once it has started, an ingestion worker (process or Ray actor) once
    its drafter is built."""
    if _frozen_off():
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


def _freeze_now() -> None:
    gc.disable()
    gc.freeze()


def freeze_at_exit() -> None:
    """Have the process exit without collecting: at exit (``atexit``), the collector switched off and
    every object frozen (module docstring). For a process that ends when its work does: the command
    line calls it when it runs a command. Registered once however often it is called; it runs before
    the ``atexit`` handlers registered earlier. ``KGR_GC_FREEZE=0`` (as for
    :func:`freeze_startup_objects`) leaves the exit as it was."""
    if _frozen_off():
        return
    atexit.unregister(_freeze_now)
    atexit.register(_freeze_now)


def collector_off_to_exit() -> None:
    """The cycle collector off for the rest of the process, which exits frozen (:func:`freeze_at_exit`):
    for a command-line process that makes many long-lived objects and ends (``kgr stage``,
    ``kgr resolve``). A pause restored at the command's end would not do: the first collection after
    it scans everything made since the start again (0.13–0.19 s after a resolution of 5,000 records).
    Cyclic garbage stays until the exit (~75,000 objects in that resolution); ``kgr resolve
    --llm-model`` switches the collector back on (an LLM client's calls). ``KGR_GC_FREEZE=0`` leaves
    the collector on."""
    if _frozen_off():
        return
    gc.disable()
    freeze_at_exit()
