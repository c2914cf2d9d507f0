"""The store's promotion lock: a round that keeps losing the race to other writers finishes.

A promotion round reads the store, decides (seconds, on a large graph) and then writes as one
version only if the store is still at the version it read (:mod:`kgr.store.rounds`). Every other
versioned writer that commits meanwhile — a label, forget, merge, rollback, aging retirement or
another round — makes it start over; under a steady stream of them it could start over forever.
So a round is run by :func:`retry_then_lock`:

1. **Backoff.** A conflicting round reads and decides again after a jittered exponential backoff:
   before retry :math:`i` (0-based) it sleeps :math:`U(0, \\min(c, b \\cdot 2^i))` seconds
   (:func:`~kgr.store.connection.backoff`: :math:`b` = 0.05 s, :math:`c` = 2 s), so rounds that
   collided do not collide again in step.
2. **The lock.** Past ``attempts`` conflicts, the round takes the promotion lock:
   ``(:KgrState)`` gets ``promotion_holder`` (a random token) and ``promotion_until`` (the database
   clock + the lease, in ms), written under the state node's write lock — the lock every version
   bump takes. From then on every other writer's version bump (:func:`~kgr.store.versions.open_version`,
   always the first statement of its transaction) sees the lock and raises :class:`PromotionLocked`
   (a :class:`~kgr.errors.KgrBusy`): its transaction rolls back having written nothing, and
   :meth:`~kgr.store.connection.Graph.write_unit` runs it again after a backoff, once the lock is
   gone. Another round that meets the lock counts a conflict (and, past its own bound, queues for
   the lock). A bump that committed before the lock was taken is seen by the holder's read, so the
   holder reads, decides and writes with no version moving under it: it **finishes**. It releases
   the lock at once.
3. **Lease.** A thread renews the lease every ``lease / 3`` seconds while the holder works; a
   holder that dies leaves the lock to run out after :data:`LEASE_SECONDS`. The lease is counted
   on the database's clock, so processes on other machines agree on it.

Staging takes no version and never waits for the lock: votes keep landing while a round holds it.
The holder's own writes pass (a context variable names the holder's token in its thread).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from kgr.errors import KgrBusy, KgrError
from kgr.store.connection import Graph, backoff

__all__ = ["PromotionLocked", "LEASE_SECONDS", "HELD_ATTEMPTS", "check", "acquire", "release", "holding",
           "retry_then_lock"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Seconds a promotion lock lasts unless its holder renews it (it does, every third of this).
LEASE_SECONDS = 30.0
#: Attempts a round makes while holding the lock before it gives up (each conflict then means a
#: writer ignored the lock, or the lease ran out under a holder stalled for that long).
HELD_ATTEMPTS = 5
#: Seconds a round waits at most for another round's lock before it gives up.
ACQUIRE_WAIT_SECONDS = 600.0

_HOLDER: contextvars.ContextVar[str | None] = contextvars.ContextVar("kgr_promotion_holder", default=None)


class PromotionLocked(KgrBusy):
    """A promotion round holds the store's promotion lock; this writer waits for it."""


def check(state: Mapping[str, Any]) -> None:
    """Inside a write unit, after the version bump: raise :class:`PromotionLocked` when another
    holder's lock (``state``: the ``lock_holder`` and ``lock_left_ms`` of ``state_bump_version``)
    has time left."""
    holder, left_ms = state.get("lock_holder"), state.get("lock_left_ms")
    if holder is None or left_ms is None or left_ms <= 0 or holder == _HOLDER.get():
        return
    raise PromotionLocked(f"a promotion round holds the store's promotion lock ({left_ms / 1000:.1f} s left "
                          "on its lease); try again when it finishes", retry_after=left_ms / 1000)


def acquire(graph: Graph, holder: str, *, lease: float = LEASE_SECONDS) -> tuple[bool, float]:
    """Take or extend the lock for ``holder``: whether it holds it now, and the seconds left on the lease."""
    row = graph.write("promotion_lock_acquire", {"holder": holder, "lease_ms": int(lease * 1000)})[0]
    return bool(row["acquired"]), max(0.0, float(row["left_ms"] or 0) / 1000)


def release(graph: Graph, holder: str) -> bool:
    """Release the lock if ``holder`` holds it; whether it did."""
    return graph.write("promotion_lock_release", {"holder": holder})[0]["released"] > 0


def _renew(graph: Graph, holder: str, lease: float, stop: threading.Event) -> None:
    while not stop.wait(lease / 3):
        try:
            acquire(graph, holder, lease=lease)
        except KgrError as exc:  # the holder's own writes will meet the same failure
            log.warning("could not renew the promotion lock: %s", exc)
            return


@contextlib.contextmanager
def holding(graph: Graph, *, lease: float = LEASE_SECONDS, wait: float = ACQUIRE_WAIT_SECONDS) -> Iterator[str]:
    """Hold the store's promotion lock for the ``with`` block (waiting up to ``wait`` seconds for
    another holder); yields the holder's token. Writes of this thread inside the block pass it.

    Raises
    ------
    PromotionLocked
        Another holder kept the lock for longer than ``wait``.
    """
    token = uuid.uuid4().hex
    deadline = time.monotonic() + wait
    attempt = 0
    while True:
        got, left = acquire(graph, token, lease=lease)
        if got:
            break
        if time.monotonic() >= deadline:
            raise PromotionLocked(f"another promotion round held the store's promotion lock for over {wait:g} s",
                                  retry_after=left)
        time.sleep(min(backoff(attempt), left) or 0.01)
        attempt += 1
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(graph, token, lease, stop), name="kgr-promotion-lock", daemon=True)
    renewer.start()
    mine = _HOLDER.set(token)
    try:
        yield token
    finally:
        _HOLDER.reset(mine)
        stop.set()
        renewer.join()
        release(graph, token)


def retry_then_lock(graph: Graph, attempt: Callable[[], T], *, conflict: type[Exception], attempts: int = 3,
                    held_attempts: int = HELD_ATTEMPTS) -> T:
    """Run ``attempt`` until it does not raise ``conflict``: ``attempts`` times with a jittered
    backoff between them, then holding the promotion lock (see the module docstring).

    Raises
    ------
    conflict
        The last conflict, if ``held_attempts`` attempts under the lock conflicted too.
    PromotionLocked
        Another round held the lock for longer than :data:`ACQUIRE_WAIT_SECONDS`.
    """
    for i in range(max(0, attempts)):
        try:
            return attempt()
        except conflict:
            time.sleep(backoff(i))
    last: Exception | None = None
    with holding(graph):
        for i in range(max(1, held_attempts)):
            try:
                return attempt()
            except conflict as exc:
                last = exc
                time.sleep(backoff(i))
    assert last is not None
    raise last
