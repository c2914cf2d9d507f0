"""Load on loopback: 50 concurrent clients × 20 storage calls with overlapping triples.

No request may be lost, no relationship duplicated, and every vote count must equal the number of
distinct sources that asserted the edge — checked in Neo4j against counts computed from the plan.
Sources are shared between neighbouring clients, so the same (edge, source) vote is also raced.
Run twice: with group commit (the default: concurrent calls share transactions) and without (each
call its own transactions, under the write scheduler).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict

import httpx
import pytest

from kgr.server.app import BackgroundServer
from kgr.server.security import ServerConfig

pytestmark = pytest.mark.neo4j

CLIENTS, CALLS, TRIPLES = 50, 20, 20
PEOPLE = [f"Person {i}" for i in range(30)]
ORGS = [f"Org {j}" for j in range(10)]
EDGES = [(p, o) for p in PEOPLE for o in ORGS]


def plan() -> list[list[tuple[str, list[tuple[str, str]]]]]:
    """Per client, per call: (source, 20 distinct (person, org) pairs)."""
    out = []
    for c in range(CLIENTS):
        calls = []
        for k in range(CALLS):
            rng = random.Random(c * 1000 + k)
            calls.append((f"src-{(c + k) % 40}", rng.sample(EDGES, TRIPLES)))
        out.append(calls)
    return out


def payload(source: str, pairs: list[tuple[str, str]]) -> dict:
    people = sorted({p for p, _ in pairs})
    orgs = sorted({o for _, o in pairs})
    return {"source": source, "extracted_kg": {
        "entities": {"Person": people, "Organization": orgs},
        "relations": {"WORKED_AT": [{"subject": p, "object": o} for p, o in pairs]}}}


@pytest.mark.parametrize("group_commit", [True, False], ids=["group-commit", "write-scheduler"])
def test_concurrent_storage_is_exact(group_commit, graph):
    with BackgroundServer(ServerConfig(port=0, group_commit=group_commit), graph=graph) as http_server:
        run_and_check(http_server, graph)


def run_and_check(http_server: BackgroundServer, graph) -> None:
    work = plan()
    expected: dict[tuple[str, str], set[str]] = defaultdict(set)
    for calls in work:
        for source, pairs in calls:
            for e in pairs:
                expected[e].add(source)
    distinct_votes = sum(len(s) for s in expected.values())

    async def client(calls, http: httpx.AsyncClient) -> list[tuple[int, dict, float]]:
        results = []
        for source, pairs in calls:
            t0 = time.perf_counter()
            r = await http.post("/tools/query_kg_storage", json=payload(source, pairs))
            results.append((r.status_code, r.json(), time.perf_counter() - t0))
        return results

    async def main():
        limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
        async with httpx.AsyncClient(base_url=http_server.url, timeout=120, limits=limits) as http:
            return await asyncio.gather(*(client(calls, http) for calls in work))

    t0 = time.perf_counter()
    results = [r for per_client in asyncio.run(main()) for r in per_client]
    wall = time.perf_counter() - t0

    # no request lost: every call answered 200 and fully successful
    assert len(results) == CLIENTS * CALLS
    assert all(status == 200 for status, _, _ in results), {s for s, _, _ in results}
    assert all(body["storage_status"]["overall_success"] for _, body, _ in results)
    # each distinct (edge, source) vote was stored by exactly one call
    stored = sum(body["storage_status"]["relations_storage"]["stored_count"] for _, body, _ in results)
    assert stored == distinct_votes

    rows = graph.driver.execute_query(
        "MATCH (s:Entity)-[r:PENDING_REL]->(o:Entity) RETURN s.name AS s, o.name AS o, r.key AS key, r.votes AS votes",
        database_=graph.database).records
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)) == len(expected)  # no duplicate relationship
    pairs = [(r["s"], r["o"]) for r in rows]
    assert len(pairs) == len(set(pairs))
    assert {(r["s"], r["o"]): r["votes"] for r in rows} == {e: len(s) for e, s in expected.items()}  # exact votes
    counts = graph.read("graph_counts")[0]
    assert counts["votes"] == distinct_votes and counts["entities"] == len(PEOPLE) + len(ORGS)

    lat = sorted(x for _, _, x in results)
    print(f"\n{len(results)} storage calls in {wall:.2f} s ({len(results) / wall:.0f}/s); "
          f"p50 {lat[len(lat) // 2] * 1000:.1f} ms, p95 {lat[int(len(lat) * 0.95)] * 1000:.1f} ms; "
          f"{len(expected)} edges, {distinct_votes} votes")
