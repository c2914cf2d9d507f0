"""The promoted graph's structure kept on disk between processes (kgr.store.promoted_disk).

A settle in a new process reads the structure from disk when the promoted graph is the one saved
(same store, same content hash), never otherwise; a damaged or foreign file is a miss.
"""

from __future__ import annotations

import json
import time

import pytest

from kgr.engine import Engine
from kgr.model.promotion import EdgeDecision
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store import promoted_disk
from kgr.store.admin import init_store, reset
from kgr.store.promotion import apply_decisions, candidates
from kgr.store.rounds import PROMOTED_CACHE, read_context
from kgr.store.staging import stage

SCHEMA = KGSchema.model_validate({
    "entity_types": {"Person": {}, "Organization": {}},
    "relation_types": {"WORKS_AT": {"domain": ["Person"], "range": ["Organization"]},
                       "KNOWS": {"domain": ["Person"], "range": ["Person"]}},
})
IDENT = ("bolt://h:1", "neo4j", 1700000000.5, "ab" * 32)
COLS = (["k1", "k2"], ["Person:a", "Person:b"], ["KNOWS", "WORKS_AT"], ["Person:b", "Organization:o"])


def test_a_saved_state_loads_back_and_only_under_its_own_identity(tmp_path):
    promoted_disk.save(tmp_path, *IDENT, *COLS, version=3)
    assert promoted_disk.load(tmp_path, *IDENT) == tuple(COLS)
    uri, db, created, h = IDENT
    assert promoted_disk.load(tmp_path, uri, db, created + 1.0, h) is None  # a reset store
    assert promoted_disk.load(tmp_path, uri, db, created, "cd" * 32) is None  # other promoted edges
    assert promoted_disk.load(tmp_path, "bolt://h:2", db, created, h) is None  # another server
    assert promoted_disk.load(tmp_path, uri, "other", created, h) is None


def test_a_damaged_or_foreign_file_is_a_miss(tmp_path):
    promoted_disk.save(tmp_path, *IDENT, *COLS, version=3)
    (path,) = tmp_path.glob("*.json")
    path.write_text(path.read_text()[:-10], encoding="utf-8")  # cut short
    assert promoted_disk.load(tmp_path, *IDENT) is None
    body = {"format": 2, "uri": IDENT[0], "database": IDENT[1], "created_at": IDENT[2], "hash": IDENT[3],
            "version": 3, "key": ["k1"], "subject": [], "relation": [], "object": []}  # columns of unequal length
    path.write_text(json.dumps(body), encoding="utf-8")
    assert promoted_disk.load(tmp_path, *IDENT) is None
    whole = {**body, "subject": ["a"], "relation": ["R"], "object": ["b"]}
    path.write_text(json.dumps(whole), encoding="utf-8")
    assert promoted_disk.load(tmp_path, *IDENT) is not None  # the same file, whole
    for bad in ({"format": 1}, {"version": None}, {"version": "3"}):  # an older format, no version to start from
        path.write_text(json.dumps({**whole, **bad}), encoding="utf-8")
        assert promoted_disk.load(tmp_path, *IDENT) is None
        assert promoted_disk.load_earlier(tmp_path, *IDENT[:3], 10) is None
    path.write_text(json.dumps({**body, "hash": "ef" * 32, "subject": ["a"], "relation": ["R"], "object": ["b"]}),
                    encoding="utf-8")  # a file that claims another identity than its name's
    assert promoted_disk.load(tmp_path, *IDENT) is None


def test_older_states_of_a_database_are_pruned_and_a_write_failure_is_ignored(tmp_path):
    uri, db, created, _ = IDENT
    for i in range(promoted_disk.KEEP + 3):
        promoted_disk.save(tmp_path, uri, db, created + i, f"{i:064x}", *COLS, version=i)
    promoted_disk.save(tmp_path, "bolt://other:1", db, created, IDENT[3], *COLS, version=1)
    assert len(list(tmp_path.glob("*.json"))) == promoted_disk.KEEP + 1
    newest = promoted_disk.KEEP + 2
    assert promoted_disk.load(tmp_path, uri, db, created + newest, f"{newest:064x}") is not None
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    promoted_disk.save(blocker / "sub", *IDENT, *COLS, version=1)  # a directory that cannot exist: no exception
    assert not list(tmp_path.glob(".promoted-*"))


def test_the_earlier_state_is_the_newest_file_of_this_store_below_the_version(tmp_path):
    uri, db, created, _ = IDENT
    assert promoted_disk.load_earlier(tmp_path / "none", uri, db, created, 9) is None  # no directory
    for version, hash_ in ((4, "04"), (6, "06"), (8, "08")):  # saved in this order: the newest file last
        promoted_disk.save(tmp_path, uri, db, created, hash_ * 32, *COLS, version=version)
        time.sleep(0.01)
    promoted_disk.save(tmp_path, uri, db, created + 1.0, "09" * 32, *COLS, version=9)  # a reset store's
    found = promoted_disk.load_earlier(tmp_path, uri, db, created, 9)
    assert (found.version, found.hash, found.columns) == (8, "08" * 32, tuple(COLS))
    assert promoted_disk.load_earlier(tmp_path, uri, db, created, 7).version == 6  # never one at or after it
    assert promoted_disk.load_earlier(tmp_path, uri, db, created, 4) is None
    assert promoted_disk.load_earlier(tmp_path, "bolt://h:2", db, created, 9) is None  # another server


def _assert(s: str, r: str, o: str, src: str) -> TripleAssertion:
    ot = "Organization" if r == "WORKS_AT" else "Person"
    return TripleAssertion(subject=s, subject_type="Person", relation=r, object=o, object_type=ot, source=src,
                           confidence=0.9)


def _seed(graph, n: int) -> None:
    """``n`` promoted edges from another policy (pinned: no score), as one version."""
    stage(graph, [_assert(f"p{i}", "WORKS_AT", f"org{i % 7}", "seed") for i in range(n)], schema=SCHEMA)
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key,
                                         action="promote", reason="seed") for r in candidates(graph)])


def _server_structure(graph) -> set[tuple[str, str, str, str]]:
    """Every current promoted edge, by a scan of every relationship (no type named)."""
    rows = graph.driver.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.valid_from IS NOT NULL AND r.valid_to IS NULL "
        "RETURN r.key AS k, a.key AS s, type(r) AS t, b.key AS o").records
    return {(x["k"], x["s"], x["t"], x["o"]) for x in rows}


@pytest.mark.neo4j
def test_a_new_process_settles_on_the_saved_structure_and_never_on_another_stores(graph, tmp_path, monkeypatch):
    monkeypatch.setattr(graph, "cache_dir", tmp_path)
    init_store(graph, SCHEMA)
    _seed(graph, 40)
    PROMOTED_CACHE.clear()
    stage(graph, [_assert(f"p{i}", "KNOWS", f"p{i + 1}", f"d{i % 3}") for i in range(12)], schema=SCHEMA)
    Engine(graph, schema=SCHEMA).promote()  # reads the promoted graph from the server, saves it
    assert len(list(tmp_path.glob("*.json"))) == 1
    ctx, _ = read_context(graph, "calibrated", counts=False)
    saved = promoted_disk.load(tmp_path, graph.uri, graph.database, ctx.created_at, ctx.hash)
    assert saved is not None and set(zip(*saved)) == _server_structure(graph)

    # a new process (empty memory cache) with new evidence: the promoted graph is not read again
    PROMOTED_CACHE.clear()
    read_value = graph.read_value

    def no_promoted_read(template, *args, **kwargs):
        if template in ("round_promoted_read", "promoted_types_read"):
            raise AssertionError("the promoted graph was read from the server")
        return read_value(template, *args, **kwargs)

    monkeypatch.setattr(graph, "read_value", no_promoted_read)
    stage(graph, [_assert(f"p{i}", "KNOWS", f"p{i + 2}", f"e{i % 3}") for i in range(12)], schema=SCHEMA)
    summary = Engine(graph, schema=SCHEMA).promote()
    assert summary.candidates >= 12
    monkeypatch.setattr(graph, "read_value", read_value)

    # a reset store with other promoted edges: the old file is never used for it
    reset(graph)
    PROMOTED_CACHE.clear()
    init_store(graph, SCHEMA)
    _seed(graph, 25)
    PROMOTED_CACHE.clear()
    ctx, _ = read_context(graph, "calibrated", counts=False)
    edges, _, hit = PROMOTED_CACHE.structure(graph, ctx)
    assert not hit
    assert set(zip(edges.key, edges.subject, edges.relation, edges.object)) == _server_structure(graph)
    assert len(edges) == 25


@pytest.mark.neo4j
def test_the_typed_read_finds_every_promoted_edge_and_no_staged_or_own_one(graph, tmp_path):
    # promoted edges of two types, one of them PART_OF (also one of kgr's own types, which joins
    # chunks to documents); staged edges and a document with its chunk; then a retired edge
    from kgr.store.promoted_cache import read_promoted

    assert read_promoted(graph, structure=True) is None  # nothing but PENDING_REL (or nothing) yet
    wide = KGSchema.model_validate({
        "entity_types": {**{t: {} for t in SCHEMA.entity_types}, "Widget": {}, "Machine": {}},
        "relation_types": {**SCHEMA.model_dump()["relation_types"],
                           "PART_OF": {"domain": ["Widget"], "range": ["Machine"]}},
    })
    init_store(graph, wide)
    parts = [TripleAssertion(subject=f"w{i}", subject_type="Widget", relation="PART_OF", object=f"m{i % 3}",
                             object_type="Machine", source="seed") for i in range(9)]
    stage(graph, parts + [_assert(f"p{i}", "WORKS_AT", f"org{i % 7}", "seed") for i in range(6)], schema=wide)
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key,
                                         action="promote", reason="seed") for r in candidates(graph)])
    stage(graph, [_assert(f"q{i}", "KNOWS", f"q{i + 1}", "late") for i in range(5)], schema=wide)  # staged only
    graph.driver.execute_query("CREATE (:Document {id: 'doc'})<-[:PART_OF]-(:Chunk {id: 'doc#0', text: 'x'})")
    expected = _server_structure(graph)
    assert len(expected) == 15 and {t for _, _, t, _ in expected} == {"PART_OF", "WORKS_AT"}
    for structure in (True, False):
        cols = read_promoted(graph, structure=structure)
        assert len(cols) == (4 if structure else 6)
        assert set(zip(*cols[:4])) == expected
    retired = next(iter(expected))
    graph.driver.execute_query("MATCH ()-[r {key: $k}]->() WHERE r.valid_from IS NOT NULL SET r.valid_to = 999999",
                               k=retired[0])
    assert set(zip(*read_promoted(graph, structure=True))) == expected - {retired}
    ctx, _ = read_context(graph, "calibrated", counts=False)
    PROMOTED_CACHE.clear()
    edges, _, hit = PROMOTED_CACHE.structure(graph, ctx)  # graph.cache_dir unset: from the server
    assert not hit and set(zip(edges.key, edges.subject, edges.relation, edges.object)) == expected - {retired}


@pytest.mark.neo4j
def test_the_first_process_after_a_change_reads_only_the_changes_since_its_earlier_copy(graph, tmp_path,
                                                                                           monkeypatch):
    from kgr.store.versions import rollback

    monkeypatch.setattr(graph, "cache_dir", tmp_path)
    init_store(graph, SCHEMA)
    _seed(graph, 30)
    PROMOTED_CACHE.clear()
    ctx0, _ = read_context(graph, "calibrated", counts=False)
    PROMOTED_CACHE.structure(graph, ctx0)  # the earlier copy, saved at ctx0.version
    assert promoted_disk.load(tmp_path, graph.uri, graph.database, ctx0.created_at, ctx0.hash) is not None

    # then the promoted graph changes: new edges promoted, some retired, one retired and promoted
    # again as a new instance (a rollback), a version that changes nothing
    stage(graph, [_assert(f"p{i}", "KNOWS", f"p{i + 1}", "late") for i in range(8)], schema=SCHEMA)
    late = [r for r in candidates(graph)]
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key,
                                         action="promote", reason="t") for r in late])
    ctx1, _ = read_context(graph, "calibrated", counts=False)
    gone = sorted(_server_structure(graph))[:5]
    apply_decisions(graph, [EdgeDecision(key=k, subject_key=s, object_key=o, action="retire", reason="t")
                            for k, s, _, o in gone])
    rollback(graph, ctx1.version, reason="t")  # brings the five back
    again = sorted(_server_structure(graph))[-3:]
    apply_decisions(graph, [EdgeDecision(key=k, subject_key=s, object_key=o, action="retire", reason="t")
                            for k, s, _, o in again])
    expected = _server_structure(graph)
    assert len(expected) == 30 + 8 - 3

    read_value = graph.read_value
    asked: list[str] = []

    def counted(template, *args, **kwargs):
        asked.append(template)
        return read_value(template, *args, **kwargs)

    monkeypatch.setattr(graph, "read_value", counted)
    PROMOTED_CACHE.clear()  # a new process
    ctx2, _ = read_context(graph, "calibrated", counts=False)
    edges, _, hit = PROMOTED_CACHE.structure(graph, ctx2)
    assert not hit and "promoted_delta_read" in asked and "round_promoted_read" not in asked
    assert set(zip(edges.key, edges.subject, edges.relation, edges.object)) == expected
    assert len(edges) == len(expected)  # no key twice
    saved = promoted_disk.load(tmp_path, graph.uri, graph.database, ctx2.created_at, ctx2.hash)
    assert saved is not None and set(zip(*saved)) == expected  # the new state saved for the next process

    # an earlier copy that claims a later version than the one it was saved at (the scan then misses
    # the changes between them), or an earlier one (the scan finds edges the copy already holds): the
    # result would be wrong, and the whole graph is read instead
    for claimed in (ctx2.version - 1, 0):
        for path in tmp_path.glob("*.json"):
            body = json.loads(path.read_text(encoding="utf-8"))
            if body["hash"] == ctx2.hash:
                path.unlink()
            else:
                path.write_text(json.dumps({**body, "version": claimed}), encoding="utf-8")
        asked.clear()
        PROMOTED_CACHE.clear()
        edges, _, hit = PROMOTED_CACHE.structure(graph, ctx2)
        assert not hit and "promoted_delta_read" in asked and "round_promoted_read" in asked
        assert set(zip(edges.key, edges.subject, edges.relation, edges.object)) == expected
