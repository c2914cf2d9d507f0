"""100 concurrent storage calls over HTTP, a fifth of them hostile or malformed (issue 13, item 1).

Valid calls must be stored exactly — every vote once, no duplicate relationship — whatever the
invalid calls grouped with them do; every invalid call gets a client error (4xx) or a 200 that
reports its rows rejected, never a 5xx, and writes nothing of its own.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import httpx
import pytest

from kgr.server.app import BackgroundServer
from kgr.server.security import ServerConfig

pytestmark = pytest.mark.neo4j

CALLS = 100


def valid(i: int) -> dict:
    people = [f"Person {(i + k) % 12}" for k in range(3)]
    return {"source": f"src-{i % 17}", "extracted_kg": {
        "entities": {"Person": people, "Organization": [f"Org {i % 5}"]},
        "relations": {"WORKED_AT": [{"subject": p, "object": f"Org {i % 5}"} for p in people]}}}


def hostile(i: int) -> tuple[str, bytes]:
    """One of five kinds of bad call, each naming its own entities ("Bad ..."), as raw bytes."""
    kind = (i // 5) % 5
    tag = f"Bad {i}"
    bodies = [
        {"source": f"h{i}", "extracted_kg": {"entities": {"Person": [tag], "Organization": ["Org 0"]},
                                             "relations": {"PENDING_REL": [{"subject": tag, "object": "Org 0"}]}}},
        {"source": f"h{i}", "extracted_kg": {"entities": {"Snapshot": [tag]}, "relations": {}}},
        {"source": f"h{i}", "extracted_kg": {"entities": {"Person": [tag + "\x00"]}, "relations": {}}},
    ]
    if kind < 3:
        return "json", json.dumps(bodies[kind]).encode()
    if kind == 3:  # nested far past the depth limit inside an otherwise valid body
        return "json", (b'{"source": "h", "extracted_kg": {"entities": {"Person": ["' + tag.encode() + b'"]}, '
                        b'"relations": {}}, "x": ' + b"[" * 900 + b"]" * 900 + b"}")
    return "json", b'{"source": "h", "extracted_kg": {"entities": {"Person": ["' + tag.encode() + b'"'  # truncated


def test_invalid_calls_never_cost_a_valid_one_its_write(graph):
    bad_at = set(range(0, CALLS, 5))
    expected: dict[tuple[str, str], set[str]] = defaultdict(set)
    for i in range(CALLS):
        if i not in bad_at:
            body = valid(i)
            for r in body["extracted_kg"]["relations"]["WORKED_AT"]:
                expected[(r["subject"], r["object"])].add(body["source"])

    async def call(i: int, http: httpx.AsyncClient) -> tuple[int, int, dict | None]:
        if i in bad_at:
            _, raw = hostile(i)
            r = await http.post("/tools/query_kg_storage", content=raw, headers={"content-type": "application/json"})
        else:
            r = await http.post("/tools/query_kg_storage", json=valid(i))
        try:
            body = r.json()
        except ValueError:
            body = None
        return i, r.status_code, body

    async def main():
        limits = httpx.Limits(max_connections=CALLS)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as http:
            return await asyncio.gather(*(call(i, http) for i in range(CALLS)))

    with BackgroundServer(ServerConfig(port=0, group_commit=True), graph=graph) as server:
        results = asyncio.run(main())

    assert not [s for _, s, _ in results if s >= 500]  # no server error for a client's mistake
    for i, status, body in results:
        if i in bad_at:
            rejected = status in (400, 413, 422) or (
                status == 200 and not body["storage_status"]["overall_success"])
            assert rejected, (i, status, body)
        else:
            assert status == 200 and body["storage_status"]["overall_success"], (i, status, body)

    rows = graph.driver.execute_query(
        "MATCH (s:Entity)-[r:PENDING_REL]->(o:Entity) RETURN s.name AS s, o.name AS o, r.key AS key, "
        "r.votes AS votes, r.sources AS sources", database_=graph.database).records
    assert len({r["key"] for r in rows}) == len(rows)  # no duplicated relationship
    assert {(r["s"], r["o"]): sorted(r["sources"]) for r in rows} == {e: sorted(s) for e, s in expected.items()}
    # nothing invalid was written: the one valid row among the hostile calls (the Person of a call whose
    # relation is reserved) is stored on its own, without an edge; no Snapshot-typed or NUL-named entity
    bad = graph.driver.execute_query(
        "MATCH (e:Entity) WHERE toLower(e.name) STARTS WITH 'bad' RETURN e.name AS name, e.type AS type, "
        "COUNT { (e)--() } AS degree", database_=graph.database).records
    assert sorted((r["name"], r["type"], r["degree"]) for r in bad) == sorted(
        (f"Bad {i}", "Person", 0) for i in bad_at if (i // 5) % 5 == 0)
    assert graph.driver.execute_query("MATCH (s:Snapshot) RETURN count(s) AS n",
                                      database_=graph.database).records[0]["n"] == 0
