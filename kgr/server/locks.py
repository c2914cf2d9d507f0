"""Scheduling concurrent storage calls: no Neo4j deadlocks between them, first come first served.

Two storage calls that touch the same entities both write-lock those nodes in Neo4j while they
MERGE their edges. Each transaction takes its locks row by row, so two of them can take the same
two nodes in opposite orders: Neo4j detects the deadlock, aborts one, and the driver retries it
after a back-off of a second or more — under load, tail latencies of tens of seconds and calls
that run out of time.

:class:`WriteScheduler` prevents that among the server's own calls. A writing call declares the
entity keys it will touch and waits until (a) none of them is held by a running call, (b) no call
that arrived earlier and is still waiting wants any of them, and (c) fewer than ``max_writers``
calls are running. Then it holds all its keys until it finishes. Calls on disjoint entities run
in parallel; overlapping calls run one after the other, in arrival order (condition (b) keeps a
stream of small calls from starving a big one). Deadlock-free: a call takes all its keys at once.

The key set is computed from the input the way the store computes it
(``entity_key(type, schema.resolve_name(type, name))``, :func:`entity_keys_of`). A key missed here
costs at most a deadlock that Neo4j resolves; correctness always stays with the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio

from kgr.errors import KgrValidationError
from kgr.model.canonical import entity_key
from kgr.model.schema import KGSchema

__all__ = ["WriteScheduler", "entity_keys_of"]


def entity_keys_of(payload: Any, schema: KGSchema | None) -> list[str]:
    """Sorted entity keys a storage payload touches (empty when it has no ``extracted_kg.entities``).

    >>> entity_keys_of({"extracted_kg": {"entities": {"Person": ["Ada", "ada"], "Org": ["I.B.M."]}}}, None)
    ['Org:ibm', 'Person:ada']
    """
    kg = payload.get("extracted_kg") if isinstance(payload, dict) else None
    entities = kg.get("entities") if isinstance(kg, dict) else None
    if not isinstance(entities, dict):
        return []
    keys: set[str] = set()
    for etype, names in entities.items():
        if not isinstance(etype, str) or not isinstance(names, list):
            continue
        for name in names:
            if not isinstance(name, str):
                continue
            try:
                resolved = schema.resolve_name(etype, name) if schema is not None else name
                keys.add(entity_key(etype, resolved))
            except KgrValidationError:  # the tool reports such names; they lock nothing
                continue
    return sorted(keys)


class _Waiter:
    __slots__ = ("keys", "event", "granted")

    def __init__(self, keys: frozenset[str]):
        self.keys = keys
        self.event = anyio.Event()
        self.granted = False


class WriteScheduler:
    """Admits writing calls (see the module docstring). Belongs to one event loop."""

    def __init__(self, max_writers: int):
        if max_writers < 1:
            raise ValueError("max_writers must be at least 1")
        self.max_writers = max_writers
        self._held: set[str] = set()
        self._running = 0
        self._queue: list[_Waiter] = []

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def _dispatch(self) -> None:
        wanted: set[str] = set()  # keys of earlier calls still waiting
        for w in list(self._queue):
            if self._running >= self.max_writers:
                return
            if w.keys.isdisjoint(self._held) and w.keys.isdisjoint(wanted):
                self._queue.remove(w)
                self._held |= w.keys
                self._running += 1
                w.granted = True
                w.event.set()
            else:
                wanted |= w.keys

    def _release(self, w: _Waiter) -> None:
        self._held -= w.keys
        self._running -= 1
        self._dispatch()

    @contextlib.asynccontextmanager
    async def admit(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Wait for admission with ``keys``, run the body, release (also on cancellation)."""
        w = _Waiter(frozenset(keys))
        self._queue.append(w)
        self._dispatch()
        try:
            if not w.granted:
                await w.event.wait()
        except BaseException:
            if w.granted:
                self._release(w)
            else:
                self._queue.remove(w)
                self._dispatch()
            raise
        try:
            yield
        finally:
            self._release(w)
