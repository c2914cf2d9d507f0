"""The write scheduler: disjoint calls in parallel, overlapping calls in arrival order, no leaks."""

from __future__ import annotations

import anyio
import pytest

from kgr.server.locks import WriteScheduler, entity_keys_of
from kgr.model.schema import KGSchema


def test_entity_keys_follow_the_store():
    schema = KGSchema.model_validate({"entity_types": {"Organization": {"aliases": {"IBM": ["International Business Machines"]}}}})
    payload = {"extracted_kg": {"entities": {"Organization": ["International Business Machines", "I.B.M.", "?!"]}}}
    assert entity_keys_of(payload, schema) == ["Organization:ibm"]
    assert entity_keys_of({"extracted_kg": []}, None) == [] and entity_keys_of([1], None) == []


def test_overlapping_calls_queue_in_order_and_disjoint_ones_overlap():
    log: list[str] = []

    async def call(s: WriteScheduler, name: str, keys: list[str], delay: float, start: float) -> None:
        await anyio.sleep(start)
        async with s.admit(keys):
            log.append(f"+{name}")
            await anyio.sleep(delay)
            log.append(f"-{name}")

    async def main() -> None:
        s = WriteScheduler(max_writers=8)
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, s, "a", ["x", "y"], 0.2, 0)
            tg.start_soon(call, s, "b", ["y"], 0.05, 0.02)     # overlaps a: waits
            tg.start_soon(call, s, "c", ["z"], 0.05, 0.04)     # disjoint: runs at once
            tg.start_soon(call, s, "d", ["y", "z"], 0.05, 0.06)  # after b (arrival order), after c
        assert (s.running, s.waiting) == (0, 0) and not s._held

    anyio.run(main)
    assert log.index("+c") < log.index("-a")
    assert log.index("-a") < log.index("+b") < log.index("-b") < log.index("+d")


def test_writer_limit_and_cancellation_release():
    async def main() -> None:
        s = WriteScheduler(max_writers=1)
        started = anyio.Event()

        async def hog() -> None:
            async with s.admit(["k1"]):
                started.set()
                await anyio.sleep(0.3)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hog)
            await started.wait()
            with anyio.move_on_after(0.05):  # waits for the single slot, then times out
                async with s.admit(["other"]):
                    pytest.fail("admitted beyond max_writers")
            assert s.waiting == 0
        async with s.admit(["k1", "other"]):  # everything was released
            assert s.running == 1
        assert (s.running, s.waiting) == (0, 0)

    anyio.run(main)
