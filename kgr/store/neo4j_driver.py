"""The Neo4j driver, imported without its pandas support.

When pandas is installed, ``import neo4j`` imports it (and pyarrow with it) so that pandas values
can be query parameters and results can become data frames (``neo4j._optional_deps``). kgr does
not use pandas (no module of it imports pandas, so no pandas value reaches a query) and reads
records, not data frames; with pandas installed that import is dead weight on every command: about
0.5 s of a CLI start-up of 1.3 s on this project's benchmark machine (``python -X importtime -m
kgr.cli stage``). numpy stays: the driver's numpy support packs the numpy integers and arrays that
resolution and the gauge may hand to a query.

Importing the driver through this module hides pandas for the duration of that one import (a
``None`` entry in :data:`sys.modules` makes ``import pandas`` raise :class:`ImportError`, which the
driver expects when pandas is absent) and removes the entry afterwards, so code that imports pandas
later gets it as usual. The driver then behaves as it does where pandas is not installed. Nothing
is hidden when the driver or pandas was imported before (by a user's program: its choice stands).
"""

from __future__ import annotations

import sys

__all__ = ["neo4j"]


def _import_without_pandas() -> None:
    if "neo4j" in sys.modules or "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import neo4j  # noqa: F401
    finally:
        del sys.modules["pandas"]


_import_without_pandas()

import neo4j  # noqa: E402  (imported above, without pandas)
