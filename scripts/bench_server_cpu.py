"""Benchmark: ``/health`` while heavy pure-tool calls run, with the pure tools in worker threads
(``kgr serve --cpu-workers 0``) or in worker processes (the default), alternating in one run.

    python scripts/bench_server_cpu.py [--calls 8] [--chars 600000] [--rounds 2] [--cpu-workers 2]

Each round starts one server per mode, sends ``--calls`` concurrent ``query_extraction_density``
calls on a text of ``--chars`` characters of initials (``"A. A. A. ..."``: the slowest linear case),
probes ``/health`` every 0.1 s meanwhile, and prints the probe's P50/P99/max and the calls' wall
time; the summary gives the medians per mode. Without ``NEO4J_URI`` the servers point at a closed
port (``/health`` then answers "degraded" at once: what is measured is the event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]


def start(cpu_workers: int) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.setdefault("NEO4J_URI", "bolt://127.0.0.1:9")
    env.pop("KGR_SERVER_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "kgr.cli.serve", "serve", "--port", "0", "--no-init",
                             "--log-level", "warning", "--cpu-workers", str(cpu_workers)],
                            env=env, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"MCP at (http://[^/\s]+)/mcp", line)
        if m:
            return proc, m.group(1)
    raise SystemExit(f"the server exited with code {proc.wait()}")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] if ordered else 0.0


async def measure(url: str, calls: int, chars: int) -> dict:
    schema = {"entity_schema": ["Person", "Organization"], "relation_schema": ["WORKED_AT"]}
    heavy = json.dumps({"text": ("A. " * (chars // 3 + 1))[:chars], "schema": schema, "extracted_kg": {}})
    small = json.dumps({"text": "Ada wrote.", "schema": schema, "extracted_kg": {}})
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:
        while True:  # the first call waits for the worker processes
            async with http.post(f"{url}/tools/query_extraction_density", data=small, headers=headers) as r:
                if r.status == 200:
                    break
        done, health = asyncio.Event(), []

        async def probe() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                async with http.get(f"{url}/health") as r:
                    await r.read()
                health.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.1)

        async def call() -> int:
            async with http.post(f"{url}/tools/query_extraction_density", data=heavy, headers=headers) as r:
                await r.read()
                return r.status

        task = asyncio.create_task(probe())
        t0 = time.perf_counter()
        statuses = await asyncio.gather(*(call() for _ in range(calls)))
        wall = time.perf_counter() - t0
        done.set()
        await task
    return {"wall_s": wall, "statuses": sorted(set(statuses)), "health_p50_ms": pct(health, 50),
            "health_p99_ms": pct(health, 99), "health_max_ms": max(health), "probes": len(health)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--chars", type=int, default=600_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu-workers", type=int, default=min(4, os.cpu_count() or 1))
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"threads": [], "processes": []}
    for _ in range(args.rounds):
        for mode, workers in (("threads", 0), ("processes", args.cpu_workers)):
            proc, url = start(workers)
            try:
                r = asyncio.run(measure(url, args.calls, args.chars))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            runs[mode].append(r)
            print(f"{mode:9s}: {args.calls} calls of {args.chars} characters in {r['wall_s']:.1f} s "
                  f"(statuses {r['statuses']}); /health P50 {r['health_p50_ms']:.0f} ms, "
                  f"P99 {r['health_p99_ms']:.0f} ms, max {r['health_max_ms']:.0f} ms ({r['probes']} probes)", flush=True)
    for mode, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "health_p50_ms", "health_p99_ms",
                                                               "health_max_ms")}
        print(f"median {mode:9s}: calls {med['wall_s']:.1f} s; /health P50 {med['health_p50_ms']:.0f} ms, "
              f"P99 {med['health_p99_ms']:.0f} ms, max {med['health_max_ms']:.0f} ms")


if __name__ == "__main__":
    main()
