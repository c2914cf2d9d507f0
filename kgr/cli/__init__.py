"""The ``kgr`` command line (:mod:`kgr.cli.main`)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def imports_uncollected() -> Iterator[None]:
    """Python's cyclic collector paused while a command's modules are imported, then restored as it
    was. Imports make tens of thousands of long-lived objects and next to no garbage, yet set off
    collections that scan them all again and again (~0.07 s of a command's start-up)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
