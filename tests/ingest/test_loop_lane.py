"""The loop lane: one CPU step per event-loop iteration, in order; I/O interleaves between steps."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kgr.ingest.loop_lane import LoopLane


def _steps_between_probes(lane: LoopLane | None, chunks: int = 5, steps: int = 3) -> tuple[list[int], list[str]]:
    """``chunks`` coroutines each run ``steps`` CPU steps (through ``lane``, or after a plain yield);
    a probe that yields once per iteration (like an I/O callback) records how many steps ran
    between two of its resumptions."""
    order: list[str] = []
    ran = 0

    async def chunk(c: int) -> None:
        nonlocal ran
        for s in range(steps):
            if lane is not None:
                await lane.turn()
            else:
                await asyncio.sleep(0)
            order.append(f"{c}.{s}")
            ran += 1

    async def main() -> list[int]:
        seen: list[int] = []
        tasks = [asyncio.create_task(chunk(c)) for c in range(chunks)]
        last = 0
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0)
            seen.append(ran - last)
            last = ran
        await asyncio.gather(*tasks)
        return seen

    return asyncio.run(main()), order


def test_the_lane_releases_one_step_per_iteration_in_arrival_order():
    seen, order = _steps_between_probes(LoopLane())
    assert max(seen) == 1 and sum(seen) == 15
    # first come first served: every chunk's first step before any second step
    assert order[:5] == ["0.0", "1.0", "2.0", "3.0", "4.0"] and order[5:10] == [f"{c}.1" for c in range(5)]


def test_without_the_lane_a_probe_waits_behind_every_ready_step():
    seen, _ = _steps_between_probes(None)
    assert max(seen) == 5  # the contrast the lane exists for: all five chunks' steps in one batch


def test_a_cancelled_waiter_gives_its_turn_away_and_the_lane_rebinds_to_a_new_loop():
    lane = LoopLane()

    async def main() -> list[str]:
        done: list[str] = []

        async def step(name: str) -> None:
            await lane.turn()
            done.append(name)

        a, b, c = (asyncio.create_task(step(n)) for n in "abc")
        await asyncio.sleep(0)  # all three wait
        assert len(lane) == 3
        b.cancel()
        await asyncio.gather(a, c)
        with pytest.raises(asyncio.CancelledError):
            await b
        return done

    assert asyncio.run(main()) == ["a", "c"]
    assert lane.released == 2 and len(lane) == 0
    assert asyncio.run(main()) == ["a", "c"]  # a second asyncio.run: a new loop
    assert lane.released == 4


def test_a_lane_refuses_to_serve_two_running_loops_at_once():
    lane = LoopLane()
    waiting, finish = threading.Event(), threading.Event()

    async def hold() -> None:
        task = asyncio.create_task(lane.turn())
        await asyncio.sleep(0)  # the task waits for its turn, which this loop cannot give while blocked
        waiting.set()
        finish.wait(10)  # blocks this loop: its waiter stays live
        await task

    t = threading.Thread(target=lambda: asyncio.run(hold()))
    t.start()
    assert waiting.wait(5)
    try:
        with pytest.raises(RuntimeError, match="one event loop at a time"):
            asyncio.run(lane.turn())
    finally:
        finish.set()
        t.join(5)
    assert not t.is_alive() and lane.released == 1
