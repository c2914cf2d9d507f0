"""Benchmark: concurrent ``query_kg_storage`` calls through the HTTP JSON API on loopback.

    NEO4J_URI=bolt://127.0.0.1:17687 python scripts/bench_server.py [--clients 50] [--calls 20] [--triples 20]

Starts ``kgr serve --transport http`` as a subprocess on a free loopback port (or uses ``--url`` of a
running server), then runs ``--clients`` concurrent clients, each making ``--calls`` storage calls
of ``--triples`` triples, and prints throughput and client-side latency percentiles (P50, P95, P99,
max) per call. Target: P50 ≤ 50 ms per call of 20 triples.

Workload: ``(:Person)-[:WORKED_AT]->(:Organization)`` triples drawn from a pool of ``--edges``
edges over ``--people`` × ``--orgs`` entities, so calls overlap; the vote source of client ``c``'s
call ``k`` is ``src-((c + k) mod 40)``, so neighbouring clients race on the same votes. After the
run the script checks the store: one PENDING_REL per edge, vote counts equal to the distinct
sources that asserted each edge, every call answered 200 (``--no-verify`` skips this).

Database: uses ``NEO4J_URI`` (or the managed Neo4j), which must hold kgr's constraints (the server
runs ``kgr init`` on connect, which is idempotent). Every entity the run creates is named
``bench-<run id> ...`` and every source starts with the same tag; at the end the script deletes
exactly those votes and entities (with their edges) and nothing else (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import httpx

from kgr.store.connection import connect

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, -(-len(ordered) * q // 100)) - 1] if ordered else 0.0


def build_plan(args: argparse.Namespace, tag: str) -> list[list[tuple[str, list[tuple[str, str]]]]]:
    rng = random.Random(args.seed)
    people = [f"{tag} Person {i}" for i in range(args.people)]
    orgs = [f"{tag} Org {j}" for j in range(args.orgs)]
    size = min(args.edges, len(people) * len(orgs))
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < size:
        chosen.add((rng.randrange(len(people)), rng.randrange(len(orgs))))
    pool = [(people[i], orgs[j]) for i, j in sorted(chosen)]
    plan = []
    for c in range(args.clients):
        calls = []
        for k in range(args.calls):
            r = random.Random(args.seed * 7919 + c * 1000 + k)
            calls.append((f"{tag}-src-{(c + k) % 40}", r.sample(pool, args.triples)))
        plan.append(calls)
    return plan


def payload(source: str, pairs: list[tuple[str, str]]) -> dict:
    return {"source": source, "extracted_kg": {
        "entities": {"Person": sorted({p for p, _ in pairs}), "Organization": sorted({o for _, o in pairs})},
        "relations": {"WORKED_AT": [{"subject": p, "object": o} for p, o in pairs]}}}


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    serve_args = ["serve", "--transport", "http", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning",
                  "--workers", str(args.workers), "--writers", str(args.writers)]
    if args.stage_lanes is None:
        cmd = [sys.executable, "-m", "kgr.cli.serve", *serve_args]
    else:  # diagnostic: the same server with another default for kgr.store.staging.stage(workers=...)
        code = ("import sys, kgr.store.staging as st; st.stage.__kwdefaults__['workers'] = int(sys.argv[1]); "
                "from kgr.cli.serve import app; app(sys.argv[2:], prog_name='kgr')")
        cmd = [sys.executable, "-c", code, str(args.stage_lanes), *serve_args]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("KGR_SERVER_TOKEN", None)
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with code {proc.returncode}")
            continue
        m = re.search(r"MCP at (http://[^/\s]+)/mcp", line)
        if m:
            return proc, m.group(1)
        sys.stderr.write(line)
    proc.kill()
    raise SystemExit("the server did not start within 120 s")


async def run_load(url: str, plan: list, warmup: int) -> tuple[list[tuple[int, float, int]], float]:
    limits = httpx.Limits(max_connections=len(plan) + 4, max_keepalive_connections=len(plan) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        tag_src = plan[0][0][0].rsplit("-src-", 1)[0]
        for i in range(warmup):  # warm the connection pools and query plans on separate entities
            warm = [(f"{tag_src} warm P{i}", f"{tag_src} warm O{j}") for j in range(20)]
            await http.post("/tools/query_kg_storage", json=payload(f"{tag_src}-warm", warm))

        async def client(calls: list) -> list[tuple[int, float, int]]:
            out = []
            for source, pairs in calls:
                t0 = time.perf_counter()
                r = await http.post("/tools/query_kg_storage", json=payload(source, pairs))
                ms = (time.perf_counter() - t0) * 1000
                stored = r.json()["storage_status"]["relations_storage"]["stored_count"] if r.status_code == 200 else 0
                out.append((r.status_code, ms, stored))
            return out

        t0 = time.perf_counter()
        per_client = await asyncio.gather(*(client(c) for c in plan))
        wall = time.perf_counter() - t0
    return [x for xs in per_client for x in xs], wall


def verify(graph, tag: str, plan: list, results: list[tuple[int, float, int]]) -> list[str]:
    expected: dict[tuple[str, str], set[str]] = defaultdict(set)
    for calls in plan:
        for source, pairs in calls:
            for e in pairs:
                expected[e].add(source)
    problems = []
    bad = [s for s, _, _ in results if s != 200]
    if bad:
        problems.append(f"{len(bad)} calls not answered 200: {sorted(set(bad))}")
    distinct = sum(len(s) for s in expected.values())
    stored = sum(n for _, _, n in results)
    if stored != distinct:
        problems.append(f"calls report {stored} new votes, the plan has {distinct} distinct (edge, source) votes")
    row = graph.read("server_bench_check", {"tag": tag})[0]
    edges = [e for e in row["edges"] if " warm " not in e["subject"]]
    keys = [e["key"] for e in edges]
    if len(keys) != len(set(keys)) or len(keys) != len(expected):
        problems.append(f"{len(keys)} PENDING_REL edges ({len(set(keys))} distinct keys), expected {len(expected)}")
    got = {(e["subject"], e["object"]): e["votes"] for e in edges}
    wrong = [e for e, s in expected.items() if got.get(e) != len(s)]
    if wrong:
        problems.append(f"{len(wrong)} edges with wrong vote counts")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--calls", type=int, default=20, help="storage calls per client")
    ap.add_argument("--triples", type=int, default=20, help="triples per call")
    ap.add_argument("--people", type=int, default=400)
    ap.add_argument("--orgs", type=int, default=100)
    ap.add_argument("--edges", type=int, default=4000, help="size of the pool the triples are drawn from")
    ap.add_argument("--workers", type=int, default=64, help="server worker threads (kgr serve --workers)")
    ap.add_argument("--writers", type=int, default=8, help="concurrent storage calls (kgr serve --writers)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed calls first")
    ap.add_argument("--stage-lanes", type=int, default=None,
                    help="diagnostic: run the server with this default for kgr.store.staging.stage(workers=...)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--url", help="use this running server instead of starting one")
    ap.add_argument("--keep", action="store_true", help="keep the run's entities and votes")
    ap.add_argument("--no-verify", dest="verify", action="store_false")
    args = ap.parse_args()

    tag = f"bench-{uuid.uuid4().hex[:8]}"
    plan = build_plan(args, tag)
    graph = connect()
    proc = None
    try:
        if args.url:
            url = args.url.rstrip("/")
        else:
            proc, url = start_server(args)
        results, wall = asyncio.run(run_load(url, plan, args.warmup))
        lat = [ms for _, ms, _ in results]
        n = len(results)
        print(f"{args.clients} clients x {args.calls} calls x {args.triples} triples over {url} "
              f"(server writers {args.writers}, staging lanes {args.stage_lanes or 'default'}; pool {args.edges} edges over {args.people}+{args.orgs} entities)")
        print(f"  {n} calls in {wall:.2f} s: {n / wall:.1f} calls/s, {n * args.triples / wall:.0f} triples/s")
        print(f"  latency per call: P50 {percentile(lat, 50):.1f} ms, P95 {percentile(lat, 95):.1f} ms, "
              f"P99 {percentile(lat, 99):.1f} ms, max {max(lat):.1f} ms  (target P50 <= 50 ms: "
              f"{'met' if percentile(lat, 50) <= 50 else 'NOT met'})")
        if args.verify:
            problems = verify(graph, tag, plan, results)
            print("  check: " + ("no request lost, no duplicate relationship, vote counts exact"
                                 if not problems else "; ".join(problems)))
            if problems:
                sys.exit(1)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.keep:
            graph.run_script("server_bench_cleanup", {"tag": tag})
        graph.close()


if __name__ == "__main__":
    main()
