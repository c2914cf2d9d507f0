"""Benchmark: concurrent ``query_kg_storage`` calls through the HTTP JSON API on loopback, alone and
beside a hostile mix.

    python scripts/bench_server.py [--clients 50] [--calls 20] [--triples 20] [--modes group-commit,write-scheduler]
                                   [--hostile/--no-hostile] [--rounds 1] [--slow-clients 200] [--punct-clients 4]

For each server mode (group commit, the default of ``kgr serve``; and the write scheduler,
``kgr serve --no-group-commit``) it starts ``kgr serve --transport http`` as a subprocess on a free
loopback port, runs ``--clients`` concurrent clients, each making ``--calls`` storage calls of
``--triples`` triples, then one client alone, and prints throughput, client-side latency
percentiles (P50, P95, P99) per call, CPU per call of the server and of the load generator, and
the throughput ratio of the two modes measured in this run. Target: P50 ≤ 50 ms per call of 20
triples with 50 clients.

Workload: ``(:Person)-[:WORKED_AT]->(:Organization)`` triples drawn from a pool of ``--edges``
edges over ``--people`` × ``--orgs`` entities, so calls overlap; the vote source of client ``c``'s
call ``k`` is ``src-((c + k) mod 40)``, so neighbouring clients race on the same votes. After the
run the script checks the store: one PENDING_REL per edge, vote counts equal to the distinct
sources that asserted each edge, every call answered 200 (``--no-verify`` skips this).

Hostile mix (``--hostile``, the default): on the same server, the loaded run is repeated
``--rounds`` times as two phases, the normal clients alone and the normal clients beside the
hostile clients of ``scripts/bench_hostile.py`` (slow header senders, pure-tool calls on punctuation
runs and a 900,000-character text, storage calls with 1,000-character names), alternating; each
phase reports the normal clients' P50/P99 and ``/health``'s, and the summary compares the medians.

Database: uses ``NEO4J_URI`` (or the managed Neo4j), which must hold kgr's constraints (the server
runs ``kgr init`` on connect, which is idempotent). Every entity the run creates is named
``bench-<run id> ...`` and every source starts with the same tag; at the end the script deletes
exactly those votes and entities (with their edges) and nothing else (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench_hostile import HostileStats, health_probe, hostile_mix
from kgr.connect import connect
from kgr.store.cypher import add_template_dir

ROOT = Path(__file__).resolve().parents[1]
add_template_dir(ROOT / "scripts" / "cypher")  # bench_server_check, bench_server_cleanup


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


def start_server(args: argparse.Namespace, group_commit: bool) -> tuple[subprocess.Popen, str]:
    serve_args = ["serve", "--transport", "http", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning",
                  "--workers", str(args.workers), "--writers", str(args.writers),
                  "--group-commit" if group_commit else "--no-group-commit"]
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
            # the server's log must be read all along: a full pipe would block its logging (and it)
            threading.Thread(target=_drain, args=(proc.stderr, SERVER_LOG), daemon=True).start()
            return proc, m.group(1)
        sys.stderr.write(line)
    proc.kill()
    raise SystemExit("the server did not start within 120 s")


#: The benchmark server's log: lines and tracebacks counted, the last lines kept.
SERVER_LOG: dict = {"lines": 0, "tracebacks": 0, "tail": collections.deque(maxlen=50)}


def _drain(stream, log: dict) -> None:  # noqa: ANN001
    for line in stream:
        log["lines"] += 1
        log["tracebacks"] += line.startswith("Traceback")
        log["tail"].append(line)


@dataclass
class Load:
    """One timed load: (status, ms, stored) per normal call, wall and CPU seconds, /health latencies
    (ms) and, in a hostile phase, what the hostile clients saw."""

    results: list[tuple[int, float, int]]
    wall: float
    server_cpu: float | None
    own_cpu: float
    health_ms: list[float]
    hostile: HostileStats | None


async def run_load(url: str, plan: list, warmup: int, server_pid: int | None = None,
                   hostile: argparse.Namespace | None = None, tag: str = "") -> Load:
    """Run the plan's clients concurrently (beside the hostile mix when ``hostile`` holds its
    settings), with a ``/health`` probe; the figures of the timed part.

    The client is aiohttp with request bodies encoded before the clock starts: on a 2-core machine
    the load generator shares the CPU with the server and Neo4j, so it should take as little as it can.
    """
    endpoint = url.rstrip("/") + "/tools/query_kg_storage"
    headers = {"content-type": "application/json"}
    bodies = [[(json.dumps(payload(source, pairs)).encode()) for source, pairs in calls] for calls in plan]
    connector = aiohttp.TCPConnector(limit=len(plan) + 4)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as http:
        tag_src = plan[0][0][0].rsplit("-src-", 1)[0]
        for i in range(warmup):  # warm the connection pools and query plans on separate entities
            warm = [(f"{tag_src} warm P{i}", f"{tag_src} warm O{j}") for j in range(20)]
            async with http.post(endpoint, data=json.dumps(payload(f"{tag_src}-warm", warm)), headers=headers) as r:
                await r.read()

        async def client(calls: list[bytes]) -> list[tuple[int, float, int]]:
            out = []
            for body in calls:
                t0 = time.perf_counter()
                async with http.post(endpoint, data=body, headers=headers) as r:
                    raw = await r.read()
                ms = (time.perf_counter() - t0) * 1000
                stored = json.loads(raw)["storage_status"]["relations_storage"]["stored_count"] if r.status == 200 else 0
                out.append((r.status, ms, stored))
            return out

        stop, health_ms = asyncio.Event(), []
        probe = asyncio.create_task(health_probe(url, stop, health_ms))
        mix = None
        if hostile is not None:
            mix = asyncio.create_task(hostile_mix(url, tag, stop, slow=hostile.slow_clients,
                                                  punct=hostile.punct_clients, oversize=hostile.oversize_clients))
            await asyncio.sleep(hostile.hostile_lead)  # the slow clients connect, the heavy calls start
        cpu0 = process_cpu_seconds(server_pid) if server_pid else None
        own0 = time.process_time()
        t0 = time.perf_counter()
        per_client = await asyncio.gather(*(client(c) for c in bodies))
        wall = time.perf_counter() - t0
        own = time.process_time() - own0
        cpu1 = process_cpu_seconds(server_pid) if server_pid else None
        stop.set()
        await probe
        stats = await mix if mix is not None else None
    server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return Load([x for xs in per_client for x in xs], wall, server_cpu, own, health_ms, stats)


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
    row = graph.read("bench_server_check", {"tag": tag})[0]
    edges = [e for e in row["edges"] if " warm " not in e["subject"] and " hostile " not in e["subject"]]
    keys = [e["key"] for e in edges]
    if len(keys) != len(set(keys)) or len(keys) != len(expected):
        problems.append(f"{len(keys)} PENDING_REL edges ({len(set(keys))} distinct keys), expected {len(expected)}")
    got = {(e["subject"], e["object"]): e["votes"] for e in edges}
    wrong = [e for e, s in expected.items() if got.get(e) != len(s)]
    if wrong:
        problems.append(f"{len(wrong)} edges with wrong vote counts")
    return problems


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and its reaped children (Linux ``/proc``), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _figures(load: Load, args: argparse.Namespace, clients: int, group_commit: bool, phase: str,
             problems: list[str]) -> dict:
    lat = [ms for _, ms, _ in load.results]
    n = len(load.results)
    out = {"mode": "group commit" if group_commit else "write scheduler", "phase": phase, "clients": clients,
           "calls": n, "calls_per_s": n / load.wall, "triples_per_s": n * args.triples / load.wall,
           "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "p99_ms": percentile(lat, 99),
           "health_p50_ms": percentile(load.health_ms, 50), "health_p99_ms": percentile(load.health_ms, 99),
           "health_max_ms": max(load.health_ms, default=0.0),
           "server_cpu_ms_per_call": None if load.server_cpu is None else 1000 * load.server_cpu / n,
           "client_cpu_ms_per_call": 1000 * load.own_cpu / n, "problems": problems}
    if load.hostile is not None:
        h = load.hostile
        out["hostile"] = {"counts": dict(sorted(h.counts.items())),
                          "punct_p50_ms": percentile(h.punct_ms, 50), "punct_max_ms": max(h.punct_ms, default=0.0),
                          "oversize_p50_ms": percentile(h.oversize_ms, 50)}
    return out


def run_mode(args: argparse.Namespace, graph, group_commit: bool, clients: int, phases: list[str]) -> list[dict]:
    """One server; for each phase ("normal", or "hostile": beside the hostile mix) one load and one
    check on entities of their own; the figures of each phase."""
    proc = None
    out = []
    try:
        if args.url:
            url = args.url.rstrip("/")
        else:
            proc, url = start_server(args, group_commit)
        for phase in phases:
            tag = f"bench-{uuid.uuid4().hex[:8]}"
            plan = build_plan(argparse.Namespace(**{**vars(args), "clients": clients}), tag)
            try:
                lines0, tb0 = SERVER_LOG["lines"], SERVER_LOG["tracebacks"]
                load = asyncio.run(run_load(url, plan, args.warmup, proc.pid if proc else None,
                                            args if phase == "hostile" else None, tag))
                problems = verify(graph, tag, plan, load.results) if args.verify else []
                out.append({**_figures(load, args, clients, group_commit, phase, problems),
                            "server_log_lines": SERVER_LOG["lines"] - lines0,
                            "server_tracebacks": SERVER_LOG["tracebacks"] - tb0})
            finally:
                if not args.keep:
                    graph.run_script("bench_server_cleanup", {"tag": tag})
        return out
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _print_run(r: dict, args: argparse.Namespace) -> None:
    cpu = ("" if r["server_cpu_ms_per_call"] is None
           else f"; CPU per call: server {r['server_cpu_ms_per_call']:.1f} ms, "
                f"load generator {r['client_cpu_ms_per_call']:.1f} ms")
    print(f"{r['mode']:15s} {r['phase']:7s} {r['clients']:3d} client(s) x {args.calls} calls x {args.triples} triples: "
          f"{r['calls_per_s']:6.1f} calls/s ({r['triples_per_s']:5.0f} triples/s), "
          f"P50 {r['p50_ms']:7.1f} ms, P95 {r['p95_ms']:7.1f} ms, P99 {r['p99_ms']:7.1f} ms{cpu}")
    print(f"    /health: P50 {r['health_p50_ms']:.1f} ms, P99 {r['health_p99_ms']:.1f} ms, "
          f"max {r['health_max_ms']:.1f} ms; server log: {r.get('server_log_lines', 0)} lines, "
          f"{r.get('server_tracebacks', 0)} tracebacks")
    if "hostile" in r:
        h = r["hostile"]
        print(f"    hostile mix: {h['counts']}; punctuation calls P50 {h['punct_p50_ms']:.0f} ms, "
              f"max {h['punct_max_ms']:.0f} ms; oversized-name calls P50 {h['oversize_p50_ms']:.0f} ms")
    print("    check: " + ("no request lost, no duplicate relationship, vote counts exact"
                           if not r["problems"] else "; ".join(r["problems"])))


def _hostile_summary(runs: list[dict], clients: int) -> dict:
    """Median P50/P99 of the normal clients alone and beside the hostile mix, per mode."""
    out = {}
    for mode in dict.fromkeys(r["mode"] for r in runs):
        by = {ph: [r for r in runs if r["mode"] == mode and r["clients"] == clients and r["phase"] == ph]
              for ph in ("normal", "hostile")}
        if by["normal"] and by["hostile"]:
            med = {ph: {k: statistics.median(r[k] for r in rs) for k in ("p50_ms", "p99_ms", "health_p99_ms")}
                   for ph, rs in by.items()}
            out[mode] = {**med, "p50_ratio": med["hostile"]["p50_ms"] / med["normal"]["p50_ms"],
                         "p99_ratio": med["hostile"]["p99_ms"] / med["normal"]["p99_ms"]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--calls", type=int, default=20, help="storage calls per client")
    ap.add_argument("--triples", type=int, default=20, help="triples per call")
    ap.add_argument("--people", type=int, default=400)
    ap.add_argument("--orgs", type=int, default=100)
    ap.add_argument("--edges", type=int, default=4000, help="size of the pool the triples are drawn from")
    ap.add_argument("--workers", type=int, default=64, help="server worker threads (kgr serve --workers)")
    ap.add_argument("--writers", type=int, default=8, help="concurrent storage calls without group commit (kgr serve --writers)")
    ap.add_argument("--modes", default="group-commit,write-scheduler",
                    help="comma-separated server modes to measure in this run: group-commit (the default of "
                         "kgr serve) and/or write-scheduler (kgr serve --no-group-commit)")
    ap.add_argument("--single-client", action=argparse.BooleanOptionalAction, default=True,
                    help="also measure one client alone in each mode (latency without queueing)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed calls first")
    ap.add_argument("--stage-lanes", type=int, default=None,
                    help="diagnostic: run the server with this default for kgr.store.staging.stage(workers=...)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--url", help="use this running server instead of starting one (one mode only)")
    ap.add_argument("--keep", action="store_true", help="keep the run's entities and votes")
    ap.add_argument("--no-verify", dest="verify", action="store_false")
    ap.add_argument("--hostile", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the loaded clients beside the hostile mix (scripts/bench_hostile.py)")
    ap.add_argument("--rounds", type=int, default=1, help="normal/hostile phase pairs (alternating; medians reported)")
    ap.add_argument("--slow-clients", type=int, default=200, help="hostile: slow header senders")
    ap.add_argument("--punct-clients", type=int, default=4, help="hostile: clients calling pure tools on punctuation runs")
    ap.add_argument("--oversize-clients", type=int, default=2, help="hostile: clients staging 1,000-character names")
    ap.add_argument("--hostile-lead", type=float, default=3.0, help="hostile: seconds the mix runs before the timed part")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in ("group-commit", "write-scheduler")]
    if unknown or not modes:
        ap.error(f"--modes: unknown mode(s) {unknown or modes}; use group-commit and/or write-scheduler")
    if args.url and len(modes) != 1:
        ap.error("--url measures the server you started: give exactly one --modes")

    graph = connect()
    runs = []
    try:
        for mode in modes:
            for clients in ([args.clients, 1] if args.single_client and args.clients != 1 else [args.clients]):
                phases = ["normal", "hostile"] * args.rounds if args.hostile and clients == args.clients else ["normal"]
                for r in run_mode(args, graph, mode == "group-commit", clients, phases):
                    runs.append(r)
                    if not args.json:
                        _print_run(r, args)
    finally:
        graph.close()
    loaded = {r["mode"]: r for r in runs if r["clients"] == args.clients and r["phase"] == "normal"}
    summary = {"runs": runs, "target_p50_ms": 50, "hostile": _hostile_summary(runs, args.clients)}
    if len(loaded) == 2:
        summary["throughput_ratio_group_over_scheduler"] = (loaded["group commit"]["calls_per_s"]
                                                            / loaded["write scheduler"]["calls_per_s"])
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        if "throughput_ratio_group_over_scheduler" in summary:
            print(f"group commit / write scheduler throughput with {args.clients} clients: "
                  f"{summary['throughput_ratio_group_over_scheduler']:.2f}x")
        for mode, h in summary["hostile"].items():
            print(f"{mode}, {args.clients} normal clients (medians of {args.rounds} round(s)): alone P50 "
                  f"{h['normal']['p50_ms']:.0f} ms / P99 {h['normal']['p99_ms']:.0f} ms; beside the hostile mix "
                  f"P50 {h['hostile']['p50_ms']:.0f} ms / P99 {h['hostile']['p99_ms']:.0f} ms "
                  f"(x{h['p50_ratio']:.2f} / x{h['p99_ratio']:.2f}); /health P99 {h['normal']['health_p99_ms']:.0f} "
                  f"-> {h['hostile']['health_p99_ms']:.0f} ms")
        for r in runs:
            if r["clients"] == args.clients and r["phase"] == "normal":
                print(f"target P50 <= 50 ms per call with {args.clients} clients, {r['mode']}: "
                      f"{'met' if r['p50_ms'] <= 50 else 'NOT met'} ({r['p50_ms']:.0f} ms)")
    if any(r["problems"] for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
