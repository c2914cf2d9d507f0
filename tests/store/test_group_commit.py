"""Group commit against the real Neo4j: shared transactions, exact per-request reports."""

from __future__ import annotations

import random
import threading

import neo4j
import pytest

from kgr.errors import KgrNeo4jUnavailable, KgrValidationError
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint, reset, status
from kgr.store.connection import Graph
from kgr.store.chunk_marks import ChunkMark
from kgr.store.group_commit import GroupWriter, StageUnit, write_units
from kgr.store.provenance import processed_chunk_ids, upsert_chunks
from kgr.store.staging import StageReport, stage

pytestmark = pytest.mark.neo4j


def T(s: str, o: str, src: str, rel: str = "WORKS_AT") -> TripleAssertion:
    return TripleAssertion(subject=s, subject_type="Person", relation=rel, object=o, object_type="Organization",
                           source=src, confidence=0.5)


def requests(n: int, seed: int = 3) -> list[list[TripleAssertion]]:
    """n requests of 1-12 triples over a small pool, so requests overlap on entities, edges and sources."""
    rng = random.Random(seed)
    return [[T(f"P{rng.randrange(30)}", f"Org{rng.randrange(8)}", f"src-{rng.randrange(12)}")
             for _ in range(rng.randint(1, 12))] for _ in range(n)]


def totals(reports: list[StageReport]) -> tuple[int, int, int, int]:
    return (sum(r.new_votes for r in reports), sum(r.repeated_votes for r in reports),
            sum(r.new_edges for r in reports), sum(r.new_entities for r in reports))


def test_concurrent_requests_share_transactions_and_reports_stay_exact(graph):
    reqs = requests(160)
    writer = GroupWriter(graph)
    reports: list[StageReport | None] = [None] * len(reqs)
    gate = threading.Barrier(16)

    def client(c: int) -> None:
        gate.wait()
        for i in range(c, len(reqs), 16):
            reports[i] = writer.stage(reqs[i])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    done = [r for r in reports if r is not None]
    assert len(done) == len(reqs)
    assert writer.requests == len(reqs) and writer.groups < len(reqs)  # requests were coalesced
    pairs = {(a.key, a.source) for req in reqs for a in req}
    new_votes, repeated, new_edges, new_entities = totals(done)
    assert new_votes == len(pairs)
    assert new_votes + repeated == sum(len(req) for req in reqs)
    assert new_edges == len({a.key for req in reqs for a in req})
    assert new_entities == len({(a.subject_type, a.subject) for req in reqs for a in req} |
                               {(a.object_type, a.object) for req in reqs for a in req})
    for row in graph.read("pending_edges", {"statuses": None}):  # votes = distinct sources, exactly
        assert row["votes"] == len({s for k, s in pairs if k == row["key"]})
    st = status(graph)
    assert st.votes == len(pairs) and sum(st.pending_by_status.values()) == new_edges

    # the same requests staged one by one, in order, give the same graph and the same totals
    fp = fingerprint(graph)
    reset(graph)
    one_by_one = [stage(graph, req) for req in reqs]
    assert totals(one_by_one) == (new_votes, repeated, new_edges, new_entities)
    assert fingerprint(graph) == fp


def test_attribution_follows_arrival_order_within_a_group(graph):
    writer = GroupWriter(graph)
    first = writer.stage([T("Ada", "IBM", "a"), T("Ada", "IBM", "b")])
    assert (first.new_votes, first.new_edges, first.new_entities) == (2, 1, 2)
    again = writer.stage([T("Ada", "IBM", "a"), T("Bob", "IBM", "a"), T("Bob", "IBM", "a")])
    assert (again.new_votes, again.repeated_votes, again.new_edges, again.new_entities) == (1, 2, 1, 1)
    writer.close()


def test_rejected_rows_are_reported_per_request(graph):
    schema = KGSchema.model_validate({"entity_types": {"Person": {}, "Organization": {}},
                                      "relation_types": {"WORKS_AT": {"domain": ["Person"], "range": ["Organization"]}}})
    writer = GroupWriter(graph)
    rep = writer.stage([T("Ada", "IBM", "a"), T("Ada", "IBM", "a", rel="OWNS"), T("Bob", "IBM", "a")], schema=schema)
    writer.close()
    assert [(r.index, "OWNS" in r.reason) for r in rep.rejected] == [(1, True)]
    assert rep.new_votes == 2 and rep.rows == 3
    assert status(graph).votes == 2


def test_a_database_failure_reaches_every_caller_and_the_writer_keeps_serving():
    down = Graph(neo4j.GraphDatabase.driver("bolt://127.0.0.1:1", connection_timeout=1, max_transaction_retry_time=0.5),
                 uri="bolt://127.0.0.1:1")
    writer = GroupWriter(down)
    try:
        for _ in range(2):  # the writer thread survives a failed group
            with pytest.raises(KgrNeo4jUnavailable):
                writer.stage([T("Ada", "IBM", "a")], timeout=60)
    finally:
        writer.close()
        down.close()


def test_one_failing_request_fails_alone_and_every_other_one_is_stored_exactly(graph, monkeypatch):
    """Issue 13, item 1: a request that failed inside a group transaction failed all 84 innocent
    requests grouped with it. Here requests naming the subject "POISON" fail inside the transaction
    (a stand-in for any statement error); 100 concurrent requests, every tenth poisoned."""
    import kgr.store.group_commit as gc

    real = gc.write_group

    def poisoned(tx, group):  # noqa: ANN001
        if any(a.subject == "POISON" for r in group for a in r.valid):
            tx.run("graph_counts")  # some work inside the transaction first
            raise ValueError("a statement failed")
        return real(tx, group)

    monkeypatch.setattr(gc, "write_group", poisoned)
    reqs = requests(100, seed=5)
    for i in range(0, 100, 10):
        reqs[i] = reqs[i] + [T("POISON", "Org1", f"src-p{i}")]
    writer = GroupWriter(graph)
    results: list[object] = [None] * len(reqs)
    gate = threading.Barrier(20)

    def client(c: int) -> None:
        gate.wait()
        for i in range(c, len(reqs), 20):
            try:
                results[i] = writer.stage(reqs[i])
            except ValueError as exc:
                results[i] = exc

    threads = [threading.Thread(target=client, args=(c,)) for c in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    failed = [i for i, r in enumerate(results) if isinstance(r, ValueError)]
    assert failed == list(range(0, 100, 10))  # exactly the poisoned ones
    assert writer.isolations > 0  # some groups mixed poisoned and innocent requests
    good = [r for i, r in enumerate(reqs) if i not in failed]
    pairs = {(a.key, a.source) for req in good for a in req}
    assert status(graph).votes == len(pairs)  # every valid call stored exactly, nothing of the others
    for row in graph.read("pending_edges", {"statuses": None}):
        assert row["votes"] == len({s for k, s in pairs if k == row["key"]})


class _Chunk:
    def __init__(self, doc: str, i: int):
        self.id, self.document_id, self.index, self.text = f"{doc}#{i}", doc, i, f"text {doc} {i}"
        self.sha256, self.start, self.end = self.id, 0, 10


def test_one_write_path_for_chunks_and_requests_in_one_transaction(graph):
    """Issue 14: the pipeline's chunk units (votes + processed mark) and the server's request units
    go through the same transaction body. A group mixing both: each unit's report is exact, in
    arrival order; the chunks are marked with their MENTIONS; a unit whose chunk is gone (deleted
    by a forget) stages nothing of its votes and marks nothing."""
    upsert_chunks(graph, [_Chunk("d1", 0), _Chunk("d1", 1)])
    keys = lambda *names: [f"Person:{n.lower()}" for n in names]  # noqa: E731
    units = [
        StageUnit(valid=[T("Ada", "IBM", "d1#0"), T("Bob", "IBM", "d1#0")],
                  marks=[ChunkMark(chunk_id="d1#0", entity_keys=keys("Ada", "Bob"), extractor="t")]),
        StageUnit(valid=[T("Ada", "IBM", "req"), T("Ada", "IBM", "d1#0")]),  # a storage call
        StageUnit(valid=[T("Cy", "IBM", "gone#0")],
                  marks=[ChunkMark(chunk_id="gone#0", entity_keys=keys("Cy"), extractor="t")]),
        StageUnit(valid=[T("Ada", "IBM", "d1#1"), T("Ada", "IBM", "d1#1")],
                  marks=[ChunkMark(chunk_id="d1#1", entity_keys=keys("Ada"), extractor="t")]),
    ]
    reps = write_units(graph, units)
    assert [(r.new_votes, r.repeated_votes, r.new_edges, r.new_entities) for r in reps] == [
        (2, 0, 2, 3),   # Ada, Bob, IBM: first asked here
        (1, 1, 0, 0),   # (Ada-IBM, d1#0) was the first unit's
        (0, 0, 0, 0),   # its chunk is gone: nothing of it
        (1, 1, 0, 0),   # the same source twice is one vote
    ]
    assert processed_chunk_ids(graph, ["d1#0", "d1#1", "gone#0"]) == {"d1#0", "d1#1"}
    votes = {r["key"]: r["votes"] for r in graph.read("pending_edges", {"statuses": None})}
    assert sorted(votes.values()) == [1, 3]
    assert status(graph).entities == 3  # Cy never landed
    mentions = graph.driver.execute_query(
        "MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN c.id AS c, collect(e.key) AS e ORDER BY c").records
    assert [(r["c"], sorted(r["e"])) for r in mentions] == [("d1#0", keys("Ada", "Bob")), ("d1#1", keys("Ada"))]


def test_linger_and_max_units_shape_the_groups(graph):
    """With a linger, units submitted one after the other fill groups of ``max_units``; every
    future gets its own report; the last, partial group goes when the linger runs out."""
    writer = GroupWriter(graph, linger=0.5, max_units=4)
    futures = [writer.submit(StageUnit(valid=[T(f"P{i}", "IBM", "s")])) for i in range(10)]
    reps = [f.result(timeout=60) for f in futures]
    writer.close()
    assert writer.groups == 3 and writer.requests == 10  # 4 + 4 + 2
    assert [r.new_votes for r in reps] == [1] * 10
    assert [r.new_entities for r in reps] == [2] + [1] * 9  # IBM goes to the first unit
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(StageUnit(valid=[T("Late", "IBM", "s")]))


def test_writer_options_are_checked(graph):
    for kwargs in ({"max_votes": 0}, {"max_units": 0}, {"lanes": 0}, {"linger": -1}):
        with pytest.raises(KgrValidationError):
            GroupWriter(graph, **kwargs)
