"""Write locks on shared staged edges, taken in the one order every writer takes them.

Neo4j reads at *read committed*: a statement sees what was committed when it reads, and takes a
write lock only when it writes. A writer that reads an edge's votes and then writes values computed
from them (forget, labels, aging) must therefore **lock the edge first and read it after**, in the
same transaction; otherwise a vote committed between its read and its write is overwritten (lost).

The lock order is the staging write path's (:mod:`kgr.store.group_commit` writes votes sorted so):

.. math:: \\text{order}(e) = (\\min(\\text{subject key}, \\text{object key}),\\ \\text{edge key})

Writers that take several edge locks in this one order never wait on each other in a cycle
(deadlocks that Neo4j would detect and the driver retry, at a cost of about a second each).
Versioned writers (forget, labels, merges, rounds, rollbacks, aging's retirements) take the version
lock on ``(:KgrState)`` before any edge lock; staging takes none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kgr.store.connection import Tx

__all__ = ["lock_order", "lock_staged_edges"]


def lock_order(row: Mapping[str, Any]) -> tuple[str, str]:
    """The sort key of an edge row ``{key, s_key, o_key}`` in the writers' lock order."""
    return (min(row["s_key"], row["o_key"]), row["key"])


def lock_staged_edges(tx: Tx, rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """Inside a write unit: write-lock the staged edges ``rows`` (``{key, s_key, o_key}``) in the
    lock order; the keys of those that exist. Read an edge after this to see its latest committed
    votes, which no other writer can change until the transaction ends."""
    ordered = sorted({r["key"]: {"key": r["key"], "s_key": r["s_key"], "o_key": r["o_key"]} for r in rows}.values(),
                     key=lock_order)
    if not ordered:
        return set()
    return {r["key"] for r in tx.run("lock_staged_edges", {"rows": ordered})}
