"""Progress of a long job on stderr: a live line on a terminal, periodic log lines elsewhere.

:class:`IngestProgress` is ``kgr ingest``'s ``on_progress`` (:func:`kgr.ingest.pipeline.ingest`'s
events). It knows the corpus before the job starts (the files under the paths and their sizes on
disk, listed once), so it shows totals and an estimated time left:

- **chunks**: done (processed, skipped or failed) out of the total, which is exact once the job has
  cut every document (its ``read_all`` event) and estimated before (shown with ``≈``): the chunks
  of the documents cut so far, plus the text loaded but not yet cut at their chunks per character,
  the whole scaled by ``bytes of all files / bytes of the files loaded`` while files are left to load
  (the job loads documents ahead of cutting them, so "every file loaded" is not "every chunk known");
- **rate** = chunks done / seconds since the job started; **ETA** = (total − done) / rate;
- files read of the total, triples staged, failures, LLM calls and cost when there are any, and the
  phase once the chunks are done (``promoting``).

On a terminal the line is redrawn in place (rich, transient); off a terminal (a log, a pipe) one line
is written every ``KGR_PROGRESS_SECONDS`` seconds (default 10; ``0`` turns the lines off) while the
job runs, by a daemon thread, so a long promotion at the end is visible too, and one when it ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["IngestProgress", "corpus_size", "progress_interval", "spinner"]

DEFAULT_SECONDS = 10.0


def progress_interval() -> float:
    """Seconds between log lines off a terminal (``KGR_PROGRESS_SECONDS``; 0: none)."""
    raw = os.environ.get("KGR_PROGRESS_SECONDS", "")
    try:
        value = float(raw) if raw else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS
    return value if value >= 0 else DEFAULT_SECONDS


def corpus_size(paths: Sequence[str | Path]) -> tuple[int, int]:
    """``(files, bytes)`` of the files a job will read under ``paths`` (missing paths count nothing:
    the job reports them)."""
    from kgr.ingest.loaders import iter_files

    files = size = 0
    for p in paths:
        try:
            for f in iter_files(p):
                files += 1
                try:
                    size += f.stat().st_size
                except OSError:
                    pass
        except Exception:  # noqa: BLE001 - the job itself reports a path it cannot list
            continue
    return files, size


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class IngestProgress:
    """``on_progress`` for :func:`kgr.ingest.pipeline.ingest` (see the module docstring); use as a
    context manager around the job."""

    def __init__(self, console: Any, *, files: int, size: int, every: float | None = None,
                 label: str = "kgr ingest", clock: Any = time.monotonic):
        self.console, self.files_total, self.bytes_total, self.label = console, files, size, label
        self.every = progress_interval() if every is None else every
        self.clock = clock
        self.counts: dict[str, float] = {}
        self.phase = "reading"
        self.started = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None

    # -- the numbers ----------------------------------------------------------------------------
    def total(self) -> tuple[int | None, bool]:
        """``(chunks in total, exact?)``: exact once every chunk is known, else the estimate (module
        docstring)."""
        c = self.counts
        read, files, size = int(c.get("chunks_read", 0)), int(c.get("files", 0)), c.get("file_bytes", 0)
        if c.get("read_all"):
            return read, True
        est = float(read)
        known, text_known = c.get("chunks_known", 0), c.get("text_known", 0)
        if known and text_known > 0:  # the loaded text not cut yet, at the cut documents' chunks per character
            est = max(est, known + max(0.0, c.get("text_loaded", 0) - text_known) * known / text_known)
        if files < self.files_total:
            if size <= 0 or self.bytes_total <= 0:
                return None, False
            est *= self.bytes_total / size
        return max(read, round(est)), False

    def line(self) -> str:
        """The progress line: ``120/≈290 chunks (41 %), 12/46 files, ... ETA 0:00:41``."""
        with self._lock:
            c = dict(self.counts)
            total, exact = self.total()
        done = int(c.get("chunks", 0))
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = done / elapsed
        parts = []
        if total:
            parts.append(f"{done}/{'' if exact else '≈'}{total} chunks ({min(100, 100 * done // total)} %)")
        else:
            parts.append(f"{done} chunks")
        parts.append(f"{int(c.get('files', 0))}/{self.files_total} files")
        parts.append(f"{int(c.get('triples', 0))} triples")
        for key, name in (("failed", "failed"), ("llm_calls", "LLM calls")):
            if c.get(key):
                parts.append(f"{int(c[key])} {name}")
        if c.get("cost_usd"):
            parts.append(f"${c['cost_usd']:.4f}")
        parts.append(f"{rate:.1f} chunks/s, elapsed {_clock(elapsed)}")
        if self.phase != "reading":
            parts.append(self.phase)
        elif total and rate > 0 and done < total:
            parts.append(f"ETA {_clock((total - done) / rate)}")
        return f"{self.label}: " + ", ".join(parts)

    def interrupted(self) -> str:
        """What a job stopped by Ctrl-C says: the chunks done (processed, or found done) and how to go on.

        >>> p = IngestProgress(None, files=2, size=10)
        >>> p("chunks_read", 5); p("files", 2); p("chunks", 3); p("failed", 1)
        >>> p.interrupted()
        'Interrupted: 2 chunks done (kept in the graph); re-run the same command to resume'

        (No total: a JSONL file's chunks are known only as far as it was read.)
        """
        with self._lock:
            done = int(self.counts.get("chunks", 0) - self.counts.get("failed", 0))
        return f"Interrupted: {done} chunk{'' if done == 1 else 's'} done (kept in the graph); " \
               "re-run the same command to resume"

    # -- the callback ---------------------------------------------------------------------------
    def __call__(self, event: str, n: float) -> None:
        with self._lock:
            self.counts[event] = self.counts.get(event, 0) + n
        if self._bar is not None:
            self._bar.update(self._task, description=self.line())

    def set_phase(self, phase: str) -> None:
        """Say what the job does once its chunks are done (e.g. ``promoting, round 3``)."""
        self.phase = phase
        if self._bar is not None:
            self._bar.update(self._task, description=self.line())

    # -- display --------------------------------------------------------------------------------
    def __enter__(self) -> "IngestProgress":
        if self.console.is_terminal:
            from rich.progress import Progress, SpinnerColumn, TextColumn

            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=self.console,
                                 transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.line(), total=None)
        elif self.every > 0:
            self._thread = threading.Thread(target=self._log, name="kgr-progress", daemon=True)
            self._thread.start()
        return self

    def _log(self) -> None:
        while not self._stop.wait(self.every):
            if self.counts:  # nothing to say before the job's first event
                self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """End the display (idempotent): the live line goes, the log thread ends."""
        self._stop.set()
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None
            if self.counts:
                self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)  # where it ended


def spinner(console: Any) -> Any:
    """A transient spinner with the task's description and the time elapsed, on ``console`` (stderr)
    when it is a terminal, else nothing drawn: a :class:`rich.progress.Progress` to use as a context
    manager. rich's progress module is imported here, by the commands that show one (~50 ms)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                    console=console, transient=True, disable=not console.is_terminal)
