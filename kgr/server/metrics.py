"""Request metrics of a running server: counts, errors and latency percentiles per tool.

Latencies are wall-clock milliseconds of a tool call as the server sees it (validation, the tool,
serialisation; not the network). Each tool keeps its last :data:`WINDOW` latencies, so memory is
bounded and the percentiles describe recent traffic. Percentiles use the nearest-rank method.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["WINDOW", "ToolMetrics", "ServerMetrics", "MetricsRecorder", "percentile"]

#: Latencies kept per tool.
WINDOW = 2048


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0-100) of ``values``; 0.0 when empty.

    >>> percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50), percentile([5.0, 1.0, 3.0, 2.0, 4.0], 95)
    (3.0, 5.0)
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


class ToolMetrics(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    calls: int = Field(description="calls answered (any outcome)")
    errors: int = Field(description="calls answered with an error")
    p50_ms: float
    p95_ms: float
    max_ms: float


class ServerMetrics(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    uptime_seconds: float
    requests_total: int = Field(description="HTTP JSON API and MCP tool calls answered")
    in_flight: int = Field(description="tool calls running now")
    responses_by_status: dict[str, int] = Field(description="HTTP status code (or 'mcp_ok'/'mcp_error') -> count")
    tools: dict[str, ToolMetrics]


class MetricsRecorder:
    """Thread-safe accumulation of :class:`ServerMetrics`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._statuses: Counter[str] = Counter()
        self._calls: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._lat: dict[str, deque[float]] = {}
        self._in_flight = 0
        self._total = 0

    def begin(self) -> None:
        with self._lock:
            self._in_flight += 1

    def end(self, tool: str | None, status: str, ms: float | None, *, error: bool) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._record(tool, status, ms, error=error)

    def record(self, tool: str | None, status: str, ms: float | None = None, *, error: bool = False) -> None:
        """Count a response that did not go through :meth:`begin` (e.g. a rejected request)."""
        with self._lock:
            self._record(tool, status, ms, error=error)

    def _record(self, tool: str | None, status: str, ms: float | None, *, error: bool) -> None:
        self._total += 1
        self._statuses[status] += 1
        if tool is not None:
            self._calls[tool] += 1
            if error:
                self._errors[tool] += 1
            if ms is not None:
                self._lat.setdefault(tool, deque(maxlen=WINDOW)).append(ms)

    def snapshot(self) -> ServerMetrics:
        with self._lock:
            tools = {}
            for name, n in sorted(self._calls.items()):
                lat = list(self._lat.get(name, ()))
                tools[name] = ToolMetrics(calls=n, errors=self._errors[name], p50_ms=round(percentile(lat, 50), 3),
                                          p95_ms=round(percentile(lat, 95), 3), max_ms=round(max(lat, default=0.0), 3))
            return ServerMetrics(uptime_seconds=round(time.monotonic() - self._started, 3), requests_total=self._total,
                                 in_flight=self._in_flight, responses_by_status=dict(sorted(self._statuses.items())),
                                 tools=tools)
