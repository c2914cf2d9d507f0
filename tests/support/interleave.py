"""Deterministic interleavings: run a competing operation at a chosen statement boundary of another.

``Interleave(monkeypatch, step, other)`` counts the Cypher statements the calling thread runs
(through :meth:`Graph.read`, :meth:`Graph.write` and :meth:`Tx.run`) and, just before the
``step``-th (0-based), starts ``other`` in a thread and waits up to ``wait`` seconds for it: a
competitor that does not need the locks the operation holds finishes in between; one that does
waits for them and finishes after the operation commits (:meth:`finish` joins it then). Running a
test for every ``step`` tries every interleaving of the competitor at a statement boundary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from kgr.store.connection import Graph, Tx

__all__ = ["Interleave"]


class Interleave:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, step: int, other: Callable[[], Any], *, wait: float = 0.5):
        self.step, self.other, self.wait = step, other, wait
        self.seen: list[str] = []
        self.owner = threading.get_ident()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.ran_at: str | None = None
        for cls, name in ((Graph, "read"), (Graph, "write"), (Tx, "run")):
            monkeypatch.setattr(cls, name, self._wrap(getattr(cls, name)))

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(obj: Any, template: str, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == self.owner:
                if len(self.seen) == self.step and self.thread is None:
                    self._start(template)
                self.seen.append(template)
            return fn(obj, template, *args, **kwargs)
        return run

    def _start(self, before: str) -> None:
        self.ran_at = f"before statement {self.step} ({before})"

        def go() -> None:
            try:
                self.other()
            except BaseException as exc:  # noqa: BLE001 - re-raised by finish()
                self.error = exc

        self.thread = threading.Thread(target=go, name="interleaved")
        self.thread.start()
        self.thread.join(self.wait)

    def finish(self) -> bool:
        """Join the competitor (if it ran) and re-raise its error; whether it ran."""
        if self.thread is None:
            return False
        self.thread.join(120)
        assert not self.thread.is_alive(), "the interleaved operation did not finish"
        if self.error is not None:
            raise self.error
        return True
