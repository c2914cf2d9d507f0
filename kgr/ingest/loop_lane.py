"""One CPU-bound step per event-loop iteration, so that I/O waits behind one step, not many.

asyncio runs its ready callbacks in FIFO order, one batch per loop iteration. When several chunks'
LLM replies come back together, each chunk's next step (the agent tools, building its rows) lands in the same batch, and every
callback behind them waits for all of them: the reply of another request, a request about to leave,
a Neo4j answer. An LLM request's path crosses the loop a dozen times, and every crossing queued
behind whole batches of tool work (what that cost, in ``scripts/bench_ingest.py``:
``docs/benchmarks.md``).

Steps that first ``await lane.turn()`` are released **one per iteration** instead, in arrival
order: each iteration runs at most one of them beside the I/O callbacks that became ready, so a
callback waits for at most one step. The CPU work is not slowed (a waiting step is released in the
very next iteration; the loop never idles while steps wait), only interleaved.

Worked example: five chunks each have three tool steps of 1 ms ready at once. Without the lane one
iteration runs them all and an LLM reply that became readable meanwhile waits up to 15 ms; with it,
fifteen iterations run one step each, and the reply is handled after at most 1 ms.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["LoopLane"]


class LoopLane:
    """A FIFO of CPU steps released one per event-loop iteration.

    ``await lane.turn()`` returns in a later iteration of the running loop, never in the caller's
    own step (so a step cannot run back to back with the caller's preceding work). A waiter that is
    cancelled gives its turn to the next. The lane binds to the loop of its first waiter and rebinds
    to another loop when the first one has no live waiter (a drafter used on a new loop); waiting on
    two running loops at once is refused.
    """

    def __init__(self) -> None:
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pumping = False
        #: steps released so far (a test's and a profile's view)
        self.released = 0

    def __len__(self) -> int:
        """Steps waiting for their turn."""
        return len(self._waiters)

    async def turn(self) -> None:
        """Wait for this step's iteration."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            old = self._loop
            if old is not None and old.is_running() and any(not f.done() for f in self._waiters):
                raise RuntimeError("a LoopLane serves one event loop at a time")
            self._loop, self._waiters, self._pumping = loop, deque(), False
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append(fut)
        if not self._pumping:
            self._pumping = True
            loop.call_soon(self._release)
        await fut

    def _release(self) -> None:
        """Wake the first live waiter (its step runs in the next iteration); come back in the next
        iteration while others wait."""
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                self.released += 1
                break
        if self._waiters:
            assert self._loop is not None
            self._loop.call_soon(self._release)
        else:
            self._pumping = False
