"""Races between writers of shared staged edges (issue 31, items 1-3), against the real Neo4j.

Each test runs real writers at once — the ingestion writer path (chunks committed with their marks,
alone and through a :class:`~kgr.store.group_commit.GroupWriter`), the tool server over HTTP,
forgets, labels, promotion rounds, aging — or runs one writer at every statement boundary of
another (:mod:`tests.support.interleave`), and then checks the store exactly:

- **forget × staging × promotion**: on every edge, ``votes`` = inline + overflow = the sources
  written minus the sources forgotten (per edge, not only the global set); the noisy-or confidence
  is that of exactly those votes; every surviving chunk is processed once; the hash is the promoted
  set's;
- **labels × rounds**: no edge is both labelled false and currently promoted;
- **rounds that conflict finish**: two ``promote_until_done`` at once both finish while labels
  commit every few milliseconds; writers wait for a held promotion lock, a dead holder's lease ends;
- **aging × staging**: a vote that commits while aging runs keeps its edge pending.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kgr.errors import KgrConflict
from kgr.promotion.policies import QuorumConfig, QuorumPolicy
from kgr.model.canonical import edge_key
from kgr.model.review import EdgeLabel
from kgr.model.triples import TripleAssertion
from kgr.store.admin import reset
from kgr.store.forget import forget
from kgr.store.group_commit import GroupWriter, StageUnit
from kgr.engine import promote_by_quorum
from kgr.store.provenance import ChunkMark, commit_chunks, upsert_chunks
from kgr.store.review import record_labels
from kgr.store.rounds import run_round
from kgr.store.staging import MAX_INLINE_VOTES, stage
from kgr.store.versions import current_state, full_hash, promoted_edges

pytestmark = pytest.mark.neo4j

PEOPLE = ["Ada", "Bob", "Cy", "Dee", "Eve", "Fay"]
#: The eight shared edges every writer votes on.
PAIRS = [("Ada", "Bob"), ("Bob", "Cy"), ("Cy", "Dee"), ("Dee", "Eve"), ("Eve", "Fay"), ("Ada", "Fay"),
         ("Bob", "Eve"), ("Cy", "Fay")]


def key_of(pair: tuple[str, str]) -> str:
    return edge_key(f"Person:{pair[0].lower()}", "KNOWS", f"Person:{pair[1].lower()}")


def conf_of(source: str, pair: tuple[str, str]) -> float:
    """A vote's confidence, fixed by its source and edge (0.05 .. 0.95)."""
    h = int.from_bytes(hashlib.sha256(f"{source}|{pair}".encode()).digest()[:4], "big")
    return 0.05 + 0.9 * (h % 1000) / 999


def vote(pair: tuple[str, str], source: str) -> TripleAssertion:
    return TripleAssertion(subject=pair[0], subject_type="Person", relation="KNOWS", object=pair[1],
                           object_type="Person", source=source, confidence=conf_of(source, pair))


class _Chunk:
    def __init__(self, doc: str, i: int):
        self.id, self.document_id, self.index, self.text = f"{doc}#{i}", doc, i, f"text {doc} {i}"
        self.sha256, self.start, self.end = self.id, 0, 10


def staged_votes(graph) -> dict[str, dict]:
    """Every staged edge: its ``votes`` property, confidence, inline sources and overflow sources."""
    rows = graph.driver.execute_query(
        "MATCH (:Entity)-[p:PENDING_REL]->(:Entity) WHERE p.status <> 'merged' "
        "OPTIONAL MATCH (v:Vote) WHERE v.id STARTS WITH p.key + '|' "
        "RETURN p.key AS key, p.votes AS votes, p.confidence AS confidence, p.sources AS inline, "
        "collect(v.source) AS overflow", database_=graph.database).records
    return {r["key"]: {"votes": r["votes"], "confidence": r["confidence"], "inline": list(r["inline"]),
                       "overflow": list(r["overflow"])} for r in rows}


def assert_exact_votes(graph, expected: dict[str, set[str]], confidence: Callable[[str, str], float]) -> None:
    """Per edge: votes == len(inline) + overflow == the expected sources, confidence their noisy-or;
    an edge expected to have no vote does not exist; no vote node is orphaned."""
    have = staged_votes(graph)
    wanted = {k: s for k, s in expected.items() if s}
    assert sorted(have) == sorted(wanted), "staged edges differ from the edges with surviving votes"
    lost = {k: sorted(wanted[k] - set(e["inline"]) - set(e["overflow"])) for k, e in have.items()}
    assert not {k: v for k, v in lost.items() if v}, f"votes lost: {lost}"
    for k, e in have.items():
        assert len(e["inline"]) == len(set(e["inline"])) and not set(e["inline"]) & set(e["overflow"]), k
        assert set(e["inline"]) | set(e["overflow"]) == wanted[k], k
        assert e["votes"] == len(e["inline"]) + len(e["overflow"]) == len(wanted[k]), (k, e["votes"])
        assert not e["overflow"] or len(e["inline"]) == MAX_INLINE_VOTES, k  # overflow only follows a full list
        miss = 1.0
        for s in wanted[k]:
            miss *= 1.0 - confidence(s, k)
        assert e["confidence"] == pytest.approx(1.0 - miss, abs=1e-9), k
    strays = graph.driver.execute_query("MATCH (v:Vote) WHERE NOT EXISTS { MATCH ()-[p:PENDING_REL]->() "
                                        "WHERE v.id STARTS WITH p.key + '|' } RETURN count(v) AS n",
                                        database_=graph.database).records[0]["n"]
    assert strays == 0


def assert_hash_is_the_promoted_sets(graph) -> None:
    assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))


def run_threads(*targets: Callable[[], None], background: Callable[[], None] | None = None,
                stop: threading.Event | None = None) -> list[BaseException]:
    """Start ``targets`` (and ``background``) together, join the targets, then set ``stop`` and join
    ``background``; the exceptions they raised."""
    errors: list[BaseException] = []
    gate = threading.Barrier(len(targets) + (background is not None))

    def wrap(fn: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            gate.wait()
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - returned to the test
                errors.append(exc)
        return threading.Thread(target=run)

    threads = [wrap(t) for t in targets]
    behind = [wrap(background)] if background is not None else []
    for t in [*threads, *behind]:
        t.start()
    for t in threads:
        t.join(300)
    if stop is not None:
        stop.set()
    for t in behind:
        t.join(300)
    return errors


# -- item 1: forget × staging × promotion ---------------------------------------------------------

DOCS = [f"doc{i:02d}" for i in range(24)]
CHUNKS_PER_DOC = 6


@settings(max_examples=2, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(forgotten=st.lists(st.sampled_from(DOCS), min_size=4, max_size=4, unique=True),
       votes=st.lists(st.sets(st.sampled_from(range(len(PAIRS))), min_size=3, max_size=7),
                      min_size=len(DOCS) * CHUNKS_PER_DOC, max_size=len(DOCS) * CHUNKS_PER_DOC),
       seed=st.integers(0, 2**16))
def test_forget_racing_the_ingestion_writer_and_rounds_keeps_every_other_vote_per_edge(graph, forgotten, votes, seed):
    """Eight threads commit the chunks of 24 documents (6 chunks each, each chunk voting on 3-7 of
    8 shared edges, so every edge overflows its inline list) through the ingestion writer path —
    half with ``commit_chunks``, half through a two-lane :class:`GroupWriter` — while one thread
    forgets 4 documents one by one and another runs promotion rounds. Afterwards every edge holds
    exactly the votes of the chunks of the documents not forgotten."""
    reset(graph)
    rng = random.Random(seed)
    chunks = [_Chunk(d, i) for d in DOCS for i in range(CHUNKS_PER_DOC)]
    upsert_chunks(graph, chunks)
    edges_of = {c.id: [PAIRS[j] for j in sorted(v)] for c, v in zip(chunks, votes)}
    order = chunks[:]
    rng.shuffle(order)
    lanes = [order[i::8] for i in range(8)]
    writer = GroupWriter(graph, max_votes=None, max_units=4, lanes=2)
    done = threading.Event()
    written = threading.Event()

    def commit(lane: list[_Chunk], grouped: bool) -> Callable[[], None]:
        def run() -> None:
            for k in range(0, len(lane), 2):
                group = lane[k:k + 2]
                marks = [ChunkMark(chunk_id=c.id, extractor="test",
                                   entity_keys=sorted({f"Person:{n.lower()}" for p in edges_of[c.id] for n in p}))
                         for c in group]
                assertions = [vote(p, c.id) for c in group for p in edges_of[c.id]]
                if grouped:
                    writer.submit(StageUnit(valid=assertions, marks=marks)).result(120)
                else:
                    commit_chunks(graph, marks, assertions=assertions)
                if k == 2:
                    written.set()
        return run

    def forgetter() -> None:
        written.wait(60)
        for doc in forgotten:
            time.sleep(rng.uniform(0.0, 0.05))
            forget(graph, documents=[doc])

    def rounds() -> None:
        while not done.is_set():
            try:
                promote_by_quorum(graph, quorum=2)
            except KgrConflict:  # a round that lost every race (item 3, tested below)
                pass

    try:
        errors = run_threads(*(commit(lane, grouped=i % 2 == 1) for i, lane in enumerate(lanes)), forgetter,
                             background=rounds, stop=done)
    finally:
        writer.close()
    assert not errors, errors
    gone = {c.id for c in chunks if c.document_id in forgotten}
    expected: dict[str, set[str]] = defaultdict(set)
    for c in chunks:
        if c.id not in gone:
            for p in edges_of[c.id]:
                expected[key_of(p)].add(c.id)
    pair_of = {key_of(p): p for p in PAIRS}
    assert_exact_votes(graph, expected, lambda s, k: conf_of(s, pair_of[k]))
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.process_count AS n",
                                     database_=graph.database).records
    assert {r["id"]: r["n"] for r in rec} == {c.id: 1 for c in chunks if c.id not in gone}
    assert not graph.driver.execute_query("MATCH (d:Document) WHERE d.id IN $ids RETURN d",
                                          {"ids": forgotten}, database_=graph.database).records
    assert_hash_is_the_promoted_sets(graph)


def test_forget_over_http_racing_storage_calls_keeps_every_other_vote_per_edge(graph):
    """Over the tool server: 12 clients × 6 ``query_kg_storage`` calls (each its own source, voting
    on 4-8 of 10 shared edges, grouped into shared transactions by the server's writer) while 6
    ``forget_document`` calls forget 6 sources stored before the race. Afterwards every edge holds
    exactly the race's votes: none of the forgotten sources', all of the others'."""
    from kgr.server.app import BackgroundServer
    from kgr.server.security import ServerConfig

    rng = random.Random(31)
    orgs = [f"Org {i}" for i in range(10)]  # edge i: Person Ada WORKED_AT Org i ... on 10 shared edges
    people = ["Ada Byron", "Bo Chen"]
    edges = [(people[i % 2], orgs[i]) for i in range(10)]

    def body(source: str, picks: list[int]) -> dict:
        rels = [{"subject": edges[j][0], "object": edges[j][1]} for j in picks]
        return {"source": source, "extracted_kg": {"entities": {"Person": people, "Organization": orgs},
                                                   "relations": {"WORKED_AT": rels}}}

    calls = [(f"client{c}-{i}", sorted(rng.sample(range(10), rng.randint(4, 8)))) for c in range(12) for i in range(6)]
    doomed = [(f"doomed-{d}", sorted(rng.sample(range(10), 6))) for d in range(6)]

    async def main(url: str) -> list[tuple[str, int]]:
        import asyncio

        async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=40)) as http:
            for source, picks in doomed:  # stored before the race, forgotten during it
                r = await http.post("/tools/query_kg_storage", json=body(source, picks))
                assert r.status_code == 200, r.text

            async def client(c: int) -> list[tuple[str, int]]:
                out = []
                for source, picks in calls[c * 6:(c + 1) * 6]:
                    r = await http.post("/tools/query_kg_storage", json=body(source, picks))
                    out.append((source, r.status_code))
                return out

            async def forgetter() -> list[tuple[str, int]]:
                out = []
                for source, _ in doomed:
                    await asyncio.sleep(0.02)
                    r = await http.post("/tools/forget_document", json={"sources": [source]})
                    out.append((source, r.status_code))
                return out

            parts = await asyncio.gather(*(client(c) for c in range(12)), forgetter())
            return [x for p in parts for x in p]

    import asyncio

    with BackgroundServer(ServerConfig(port=0, group_commit=True), graph=graph) as server:
        statuses = asyncio.run(main(server.url))
    assert [s for s in statuses if s[1] != 200] == []
    expected: dict[str, set[str]] = defaultdict(set)
    for source, picks in calls:
        for j in picks:
            expected[edge_key(f"Person:{edges[j][0].lower()}", "WORKED_AT", f"Organization:{edges[j][1].lower()}")].add(source)
    assert_exact_votes(graph, expected, lambda s, k: 1.0)


@pytest.mark.parametrize("step", range(12))
def test_a_commit_at_any_point_of_a_forget_keeps_its_votes(graph, monkeypatch, step):
    """Every interleaving at a statement boundary: another document's chunk is committed (the
    ingestion writer path) onto two shared edges just before the forget's ``step``-th statement.
    Edge E holds 36 votes of document "base" (32 inline, 4 overflow) and one overflow vote of the
    forgotten document d1; edge F holds votes of d1 and d2. Whatever the point, the commit's votes
    survive and d1's are gone, per edge."""
    from tests.support.interleave import Interleave

    e, f = ("Ada", "Bob"), ("Bob", "Cy")
    chunks = [_Chunk("base", i) for i in range(36)] + [_Chunk("d1", 0), _Chunk("d2", 0), _Chunk("d3", 0)]
    upsert_chunks(graph, chunks)
    stage(graph, [vote(e, f"base#{i}") for i in range(36)])
    commit_chunks(graph, [ChunkMark(chunk_id="d1#0", extractor="test")], assertions=[vote(e, "d1#0"), vote(f, "d1#0")])
    commit_chunks(graph, [ChunkMark(chunk_id="d2#0", extractor="test")], assertions=[vote(f, "d2#0")])

    def other() -> None:
        commit_chunks(graph, [ChunkMark(chunk_id="d3#0", extractor="test")], assertions=[vote(e, "d3#0"), vote(f, "d3#0")])

    between = Interleave(monkeypatch, step, other)
    forget(graph, documents=["d1"])
    if not between.finish():  # the forget ran fewer statements: the commit comes after it
        other()
    monkeypatch.undo()
    expected = {key_of(e): {f"base#{i}" for i in range(36)} | {"d3#0"}, key_of(f): {"d2#0", "d3#0"}}
    assert_exact_votes(graph, expected, lambda s_, k: conf_of(s_, e if k == key_of(e) else f))


# -- item 2: labels × rounds ------------------------------------------------------------------------

def false_and_promoted(graph) -> list[str]:
    """Keys of edges labelled false that have a current promoted instance."""
    return [r["key"] for r in graph.driver.execute_query(
        "MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity) WHERE p.label = false "
        "AND EXISTS { MATCH (s)-[q]->(o) WHERE q.key = p.key AND q.valid_from IS NOT NULL AND q.valid_to IS NULL } "
        "RETURN p.key AS key", database_=graph.database).records]


def test_labels_racing_rounds_never_leave_a_false_edge_promoted(graph):
    """Quorum rounds in a loop promote waves of 60 new edges while a reviewer labels pending edges
    false, five at a time, in two threads: afterwards no edge is both labelled false and currently promoted, and
    every edge labelled false has status rejected."""
    waves = 10
    stop = threading.Event()
    rng = random.Random(7)
    labelled: list[str] = []

    def stager() -> None:
        for w in range(waves):
            pairs = [(f"P{w}-{i}", f"Q{w}-{i}") for i in range(60)]
            stage(graph, [vote(p, s) for p in pairs for s in ("a", "b")])
            time.sleep(0.1)
        time.sleep(0.5)
        stop.set()

    def rounds() -> None:
        policy = QuorumPolicy(QuorumConfig(quorum=2))
        while not stop.is_set():
            try:
                run_round(graph, policy, attempts=20)
            except KgrConflict:  # a round that lost every race (item 3, tested below)
                pass

    def reviewer() -> None:
        while not stop.is_set():
            pending = [r["key"] for r in graph.driver.execute_query(
                "MATCH ()-[p:PENDING_REL {status: 'pending'}]->() WHERE p.label IS NULL RETURN p.key AS key",
                database_=graph.database).records]
            if not pending:
                time.sleep(0.01)
                continue
            keys = rng.sample(pending, min(5, len(pending)))
            record_labels(graph, [EdgeLabel(key=k, label=False, reviewer="rev") for k in keys])
            labelled.extend(keys)
            time.sleep(rng.uniform(0.1, 0.4))  # a reviewer's pace: rounds get to commit in between

    errors = run_threads(stager, rounds, reviewer, reviewer)
    assert not errors, errors
    assert len(labelled) >= 20  # the reviewer kept labelling during the rounds
    assert false_and_promoted(graph) == []
    statuses = {r["key"]: r["status"] for r in graph.driver.execute_query(
        "MATCH ()-[p:PENDING_REL]->() WHERE p.label = false RETURN p.key AS key, p.status AS status",
        database_=graph.database).records}
    assert set(statuses) == set(labelled) and set(statuses.values()) == {"rejected"}
    assert_hash_is_the_promoted_sets(graph)


@pytest.mark.parametrize("step", range(8))
def test_a_round_at_any_point_of_a_label_call_never_leaves_a_false_edge_promoted(graph, monkeypatch, step):
    """Every interleaving at a statement boundary: a quorum round (which would promote all six
    pending edges) runs just before the ``step``-th statement of a call labelling the six false.
    Whatever the point, none of the six is promoted afterwards and each is rejected; a round that
    committed first is undone by the label (its promotions retired in the label's version)."""
    from tests.support.interleave import Interleave

    pairs = [(f"A{i}", f"B{i}") for i in range(6)]
    stage(graph, [vote(p, s) for p in pairs for s in ("a", "b")])
    between = Interleave(monkeypatch, step, lambda: promote_by_quorum(graph, quorum=2))
    record_labels(graph, [EdgeLabel(key=key_of(p), label=False, reviewer="rev") for p in pairs])
    if not between.finish():
        promote_by_quorum(graph, quorum=2)
    monkeypatch.undo()
    assert false_and_promoted(graph) == []
    statuses = [r["status"] for r in graph.driver.execute_query(
        "MATCH ()-[p:PENDING_REL]->() RETURN p.status AS status", database_=graph.database).records]
    assert statuses == ["rejected"] * 6
    assert_hash_is_the_promoted_sets(graph)


# -- item 3: rounds that conflict finish ------------------------------------------------------------

def label_versions_between(graph, start: float, end: float) -> int:
    return graph.driver.execute_query("MATCH (v:Version {kind: 'label'}) WHERE $a <= v.at <= $b RETURN count(v) AS n",
                                      {"a": start, "b": end}, database_=graph.database).records[0]["n"]


class Labeller:
    """Commits labels continuously until stopped: false on a pending edge, true on a promoted one,
    one edge per call (every call is a version, so every round in flight conflicts)."""

    def __init__(self, graph, seed: int):
        self.graph, self.rng, self.stop, self.calls = graph, random.Random(seed), threading.Event(), 0
        self.thread = threading.Thread(target=self._run, name="labeller")
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                rows = self.graph.driver.execute_query(
                    "MATCH ()-[p:PENDING_REL]->() WHERE p.label IS NULL AND p.status IN ['pending', 'promoted'] "
                    "RETURN p.key AS key, p.status AS status LIMIT 200", database_=self.graph.database).records
                if rows:
                    r = self.rng.choice(rows)
                    record_labels(self.graph, [EdgeLabel(key=r["key"], label=r["status"] == "promoted", reviewer="rev")])
                    self.calls += 1
                time.sleep(self.rng.uniform(0.0, 0.03))
        except BaseException as exc:  # noqa: BLE001 - re-raised by join()
            self.error = exc

    def __enter__(self) -> "Labeller":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(120)
        if self.error is not None:
            raise self.error


def test_two_promote_until_done_at_once_both_finish_while_labels_commit(graph, neo4j_settings):
    """Two engines (two connections, as two ``kgr promote --until-done --policy quorum`` processes
    have) run promotion rounds until done, started together on 300 staged edges, while a reviewer commits a
    label every few milliseconds: both finish without an error, every edge is decided (one promoted
    instance at most, none labelled false and promoted), labels kept committing throughout, and
    the hash is the promoted set's."""
    from kgr.engine import Engine

    stage(graph, [vote((f"S{i}", f"O{i}"), s) for i in range(300) for s in ("a", "b")])
    engines = [Engine.connect(neo4j_settings) for _ in range(2)]
    results: list[list] = []
    try:
        with Labeller(graph, seed=3) as labeller:
            while labeller.calls < 3:  # labels are committing before the rounds start
                time.sleep(0.01)
            started = time.time()
            errors = run_threads(*(lambda kg=kg: results.append(kg.promote_until_done(policy="quorum"))
                                   for kg in engines))
            ended = time.time()
    finally:
        for kg in engines:
            kg.close()
    assert not errors, errors
    assert len(results) == 2 and sum(r.promoted for rounds in results for r in rounds) >= 1
    # the reviewer was not held off: labels committed while the rounds ran (how many depends on how long
    # the rounds take on the machine: 0.25 s on a quick run gave one)
    assert label_versions_between(graph, started, ended) >= 1
    instances = graph.driver.execute_query("MATCH (:Entity)-[r]->(:Entity) WHERE r.valid_from IS NOT NULL "
                                           "RETURN r.key AS key, count(*) AS n", database_=graph.database).records
    assert max(r["n"] for r in instances) == 1
    undecided = graph.driver.execute_query("MATCH ()-[p:PENDING_REL {status: 'pending'}]->() RETURN count(p) AS n",
                                           database_=graph.database).records[0]["n"]
    assert undecided == 0
    assert false_and_promoted(graph) == []
    assert_hash_is_the_promoted_sets(graph)


def test_versioned_writers_wait_for_the_promotion_lock_and_a_dead_holders_lease_runs_out(graph):
    """While a round holds the promotion lock, the holder's own writes pass and every other
    versioned writer waits (a label here) until it is released; a lock whose holder died (never
    released) stops holding anyone back when its lease runs out on the database's clock."""
    from kgr.store import promotion_lock

    stage(graph, [vote(p, s) for p in (("A", "B"), ("C", "D")) for s in ("a", "b")])
    label = lambda p: record_labels(graph, [EdgeLabel(key=key_of(p), label=True, reviewer="rev")])  # noqa: E731
    done: list[float] = []
    with promotion_lock.holding(graph):
        assert label(("A", "B")).version == 1  # the holder's own write
        waiter = threading.Thread(target=lambda: done.append((label(("C", "D")), time.monotonic())[1]))
        waiter.start()
        time.sleep(0.6)
        assert not done  # held off
        released = time.monotonic()
    waiter.join(30)
    assert done and done[0] >= released
    got, left = promotion_lock.acquire(graph, "a-process-that-dies", lease=1.0)
    assert got and 0 < left <= 1.0
    t0 = time.monotonic()
    assert label(("A", "B")).version == 3
    assert time.monotonic() - t0 >= 0.5  # waited for the lease, then went ahead
    assert promotion_lock.acquire(graph, "next", lease=1.0)[0]  # an expired lock is free to take
    assert promotion_lock.release(graph, "next") and not promotion_lock.release(graph, "next")


# -- aging × staging (the audit of the other read-then-write paths) ----------------------------------

def test_aging_never_expires_an_edge_whose_new_vote_commits_while_it_runs(graph):
    """Twenty edges staged 40 days ago (TTL 30) are aged while a staging transaction holds a new
    vote on one of them, uncommitted (the vote's write lock held): aging reaches that edge, waits
    for the lock, and the vote commits. Afterwards that edge is pending with its two votes (aging
    decided on what it read after the lock), the nineteen others are expired."""
    from kgr.store.aging import AgingConfig, age
    from kgr.store.staging import write_batch

    t0 = 1_700_000_000.0
    now = t0 + 40 * 86400
    pairs = [(f"E{i}", f"F{i}") for i in range(20)]
    stage(graph, [vote(p, "old") for p in pairs], now=t0)
    voting, fresh = threading.Event(), pairs[7]

    def vote_in_flight(tx) -> None:
        write_batch(tx, [vote(fresh, "new")], now=now)
        voting.set()
        time.sleep(1.5)  # aging runs meanwhile and waits for this edge's lock

    def voter() -> None:
        graph.write_unit(vote_in_flight)

    def ager() -> None:
        voting.wait(30)
        age(graph, AgingConfig(ttl_days=30.0), now=now)

    errors = run_threads(voter, ager)
    assert not errors, errors
    rows = {r["key"]: (r["status"], r["votes"]) for r in graph.driver.execute_query(
        "MATCH ()-[p:PENDING_REL]->() RETURN p.key AS key, p.status AS status, p.votes AS votes",
        database_=graph.database).records}
    assert rows.pop(key_of(fresh)) == ("pending", 2)
    assert set(rows.values()) == {("expired", 1)} and len(rows) == 19
