"""The hostile mix of ``scripts/bench_server.py``: what runs beside the normal clients in its hostile phase.

* **Slow clients** (``--slow-clients``): each opens a connection and sends a request head one byte
  every 2 s; when the server closes it (408 at its header deadline, or to make room), it reconnects.
* **Punctuation runs** (``--punct-clients``): each calls the pure tools in a loop on 20,000-character
  runs of ``.``, ``!?``, digits, initials, newlines, and one 900,000-character text of initials (the
  slowest linear case: seconds of CPU per call).
* **Oversized names** (``--oversize-clients``): each stages, in a loop, names of 1,000 characters,
  ASCII and U+FDFA (whose canonical form is 18 times longer).
* A ``/health`` probe every 0.25 s (in both phases, for comparison).

Every entity it stores is named ``"<tag> hostile ..."`` and every vote source starts with the tag,
so the benchmark's checks leave them out and its cleanup removes them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

__all__ = ["HostileStats", "hostile_mix", "health_probe"]

PUNCT_TEXTS: list[tuple[str, str]] = [
    ("query_extraction_density", "." * 20_000),
    ("query_coverage_feedback", "!?" * 10_000 + "x"),
    ("query_coverage_feedback", "1" * 20_000 + " percent"),
    ("query_quality_metrics", "A." * 10_000 + " Inc"),
    ("query_extraction_density", "\n" * 20_000 + "x"),
    ("query_extraction_density", "A. " * 300_000),
]
SCHEMA = {"entity_schema": ["Person", "Organization"], "relation_schema": ["WORKED_AT"]}


@dataclass
class HostileStats:
    """What the hostile mix saw (counts by kind and status, latencies of its tool calls)."""

    counts: Counter = field(default_factory=Counter)
    punct_ms: list[float] = field(default_factory=list)
    oversize_ms: list[float] = field(default_factory=list)


async def _slow_client(host: str, port: int, delay: float, stats: HostileStats) -> None:
    head = b"POST /tools/query_extraction_density HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 8000
    await asyncio.sleep(delay)
    while True:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            stats.counts["slow_connect_failed"] += 1
            await asyncio.sleep(1.0)
            continue
        stats.counts["slow_connections"] += 1
        try:
            for i in range(len(head)):
                writer.write(head[i:i + 1])
                await writer.drain()
                try:
                    got = await asyncio.wait_for(reader.read(4096), timeout=2.0)
                except asyncio.TimeoutError:
                    continue
                stats.counts["slow_answered_408" if got.startswith(b"HTTP/1.1 408") else
                             "slow_answered_503" if got.startswith(b"HTTP/1.1 503") else "slow_closed"] += 1
                break
        except (ConnectionError, OSError):
            stats.counts["slow_closed"] += 1
        finally:
            writer.close()
        await asyncio.sleep(0.5)


async def _punct_client(http: aiohttp.ClientSession, url: str, offset: int, stats: HostileStats) -> None:
    bodies = [(name, json.dumps({"text": text, "schema": SCHEMA, "extracted_kg": {}}).encode())
              for name, text in PUNCT_TEXTS]
    i = offset
    while True:
        name, body = bodies[i % len(bodies)]
        i += 1
        t0 = time.perf_counter()
        try:
            async with http.post(f"{url}/tools/{name}", data=body, headers={"content-type": "application/json"}) as r:
                await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            stats.counts[f"punct_{type(exc).__name__}"] += 1
            continue
        stats.punct_ms.append((time.perf_counter() - t0) * 1000)
        stats.counts[f"punct_{r.status}"] += 1


async def _oversize_client(http: aiohttp.ClientSession, url: str, tag: str, k: int, stats: HostileStats) -> None:
    prefix = f"{tag} hostile "
    n = 0
    while True:
        n += 1
        names = [prefix + f"{k}-{n} " + "x" * 990, prefix + f"{k}-{n} " + "\ufdfa" * 990]
        body = json.dumps({"source": f"{tag}-hostile-{k}", "extracted_kg": {
            "entities": {"Person": [names[0]], "Organization": [names[1]]},
            "relations": {"WORKED_AT": [{"subject": names[0], "object": names[1]}]}}}).encode()
        t0 = time.perf_counter()
        try:
            async with http.post(f"{url}/tools/query_kg_storage", data=body,
                                 headers={"content-type": "application/json"}) as r:
                await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            stats.counts[f"oversize_{type(exc).__name__}"] += 1
            continue
        stats.oversize_ms.append((time.perf_counter() - t0) * 1000)
        stats.counts[f"oversize_{r.status}"] += 1


async def hostile_mix(url: str, tag: str, stop: asyncio.Event, *, slow: int, punct: int, oversize: int) -> HostileStats:
    """Run the hostile clients against ``url`` until ``stop`` is set; what they saw."""
    stats = HostileStats()
    host, port = url.removeprefix("http://").rsplit(":", 1)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=punct + oversize + 2),
                                     timeout=timeout) as http:
        tasks = [asyncio.create_task(_slow_client(host, int(port), i / max(slow, 1), stats)) for i in range(slow)]
        tasks += [asyncio.create_task(_punct_client(http, url, i, stats)) for i in range(punct)]
        tasks += [asyncio.create_task(_oversize_client(http, url, tag, k, stats)) for k in range(oversize)]
        await stop.wait()
        for t in tasks:
            t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for res in results:
        if isinstance(res, Exception) and not isinstance(res, asyncio.CancelledError):
            stats.counts[f"client_error_{type(res).__name__}"] += 1
    return stats


async def health_probe(url: str, stop: asyncio.Event, out: list[float]) -> None:
    """``GET /health`` every 0.25 s until ``stop``; latencies (ms) appended to ``out`` (a failure counts as 30 s)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                async with http.get(f"{url}/health") as r:
                    await r.read()
                    ok = r.status == 200
            except (aiohttp.ClientError, asyncio.TimeoutError):
                ok = False
            out.append((time.perf_counter() - t0) * 1000 if ok else 30_000.0)
            try:
                await asyncio.wait_for(stop.wait(), timeout=0.25)
            except asyncio.TimeoutError:
                pass
