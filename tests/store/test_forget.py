"""Forgetting documents and sources (issue 15, item 1), against the real Neo4j."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import edge_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint
from kgr.store.forget import forget
from kgr.engine import promote_by_quorum
from kgr.store.provenance import ChunkMark, commit_chunks, upsert_chunks
from kgr.store.staging import MAX_INLINE_VOTES, stage
from kgr.store.versions import create_snapshot, current_state, full_hash, promoted_edges, rollback

pytestmark = pytest.mark.neo4j


def T(s, o, src, conf=0.5):
    return TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                           source=src, confidence=conf)


class _Chunk:
    def __init__(self, doc: str, i: int):
        self.id, self.document_id, self.index, self.text = f"{doc}#{i}", doc, i, f"text {doc} {i}"
        self.sha256, self.start, self.end = self.id, 0, 10


def corpus(graph):
    """Three documents of two chunks each; chunk ids are the vote sources, as ingestion stages them."""
    chunks = [_Chunk(d, i) for d in ("d1", "d2", "d3") for i in range(2)]
    upsert_chunks(graph, chunks)
    votes = {  # edge → chunks voting for it
        ("Ada", "Bob"): ["d1#0", "d2#0", "d3#0"],   # three documents
        ("Ada", "Cy"): ["d1#0", "d1#1"],             # only d1 (two chunks)
        ("Bob", "Cy"): ["d1#1", "d2#1"],             # d1 and d2
        ("Dee", "Eve"): ["d1#0"],                    # only d1, never promoted
    }
    items = [T(s, o, c) for (s, o), cs in votes.items() for c in cs]
    stage(graph, items)
    commit_chunks(graph, [ChunkMark(chunk_id=c.id, extractor="test",
                                    entity_keys=sorted({k for a in items if a.source == c.id
                                                        for k in (a.subject_key, a.object_key)})) for c in chunks])
    promote_by_quorum(graph, quorum=2)
    return {p: edge_key(f"Person:{p[0].lower()}", "KNOWS", f"Person:{p[1].lower()}") for p in votes}


def pending(graph):
    return {r["key"]: r for r in graph.read("pending_edges", {"statuses": None})}


def test_forget_a_document_removes_its_votes_and_what_only_it_supported(graph):
    keys = corpus(graph)
    assert sorted(e.key for e in promoted_edges(graph)) == sorted(keys[p] for p in
                                                                  [("Ada", "Bob"), ("Ada", "Cy"), ("Bob", "Cy")])
    create_snapshot(graph, "before")
    snap_hash = current_state(graph)[1]
    rep = forget(graph, documents=["d1"])
    assert (rep.sources, rep.chunks_removed, rep.votes_removed) == (2, 2, 5)
    assert (rep.edges_changed, rep.edges_removed) == (2, 2)  # Ada-Bob, Bob-Cy keep votes; Ada-Cy, Dee-Eve lose all
    assert rep.retired_keys == sorted([keys[("Ada", "Cy")], keys[("Bob", "Cy")]])  # Bob-Cy: 1 vote < quorum 2
    p = pending(graph)
    assert keys[("Ada", "Cy")] not in p and keys[("Dee", "Eve")] not in p
    ab, bc = p[keys[("Ada", "Bob")]], p[keys[("Bob", "Cy")]]
    assert (ab["votes"], sorted(ab["sources"]), ab["confidence"]) == (2, ["d2#0", "d3#0"], pytest.approx(0.75))
    assert (bc["votes"], bc["sources"], bc["status"]) == (1, ["d2#1"], "held")
    assert [e.key for e in promoted_edges(graph)] == [keys[("Ada", "Bob")]]
    assert current_state(graph)[1] == full_hash([keys[("Ada", "Bob")]])
    # provenance and entities only d1 needed are gone; Dee and Eve had nothing else
    counts = graph.driver.execute_query(
        "MATCH (d:Document) WITH count(d) AS docs MATCH (c:Chunk) RETURN docs, count(c) AS chunks",
        database_=graph.database).records[0]
    assert (counts["docs"], counts["chunks"]) == (2, 4)
    assert rep.entities_removed == ["Person:dee", "Person:eve"]
    why = graph.read("decisions_for_edge", {"key": keys[("Bob", "Cy")]})[0]["decisions"][-1]
    assert why["action"] == "retract" and json.loads(why["inputs"])["forgotten_sources"] == ["d1#0", "d1#1"]
    # a rollback to before the forget restores the promoted edges that kept evidence (Bob-Cy: one
    # vote), never Ada-Cy, whose every source was forgotten (issue 32, item 5)
    res = rollback(graph, "before")
    assert res.unrestored == [keys[("Ada", "Cy")]]
    assert sorted(e.key for e in promoted_edges(graph)) == sorted(keys[p] for p in [("Ada", "Bob"), ("Bob", "Cy")])
    assert current_state(graph)[1] == full_hash([keys[("Ada", "Bob")], keys[("Bob", "Cy")]]) != snap_hash


def test_dry_run_changes_nothing_and_reports_the_same(graph):
    corpus(graph)
    before = fingerprint(graph)
    dry = forget(graph, documents=["d1"], dry_run=True)
    assert fingerprint(graph) == before and dry.dry_run and dry.version is None
    real = forget(graph, documents=["d1"])
    assert dry.model_dump(exclude={"dry_run", "version"}) == real.model_dump(exclude={"dry_run", "version"})


def test_forgetting_overflow_votes_refills_the_inline_list(graph):
    n = MAX_INLINE_VOTES + 5
    stage(graph, [T("Ada", "Bob", f"s{i:02d}", conf=0.1) for i in range(n)])
    key = edge_key("Person:ada", "KNOWS", "Person:bob")
    rep = forget(graph, sources=["s00", "s01", f"s{n - 1:02d}"])  # two inline, one overflow
    assert rep.votes_removed == 3
    e = pending(graph)[key]
    overflow = graph.driver.execute_query("MATCH (v:Vote) RETURN v.source AS s ORDER BY s",
                                          database_=graph.database).records
    assert e["votes"] == n - 3 == len(e["sources"]) + len(overflow)
    assert len(e["sources"]) == MAX_INLINE_VOTES  # two overflow votes moved inline
    assert not {"s00", "s01"} & set(e["sources"]) and f"s{n - 1:02d}" not in {r["s"] for r in overflow}
    assert e["confidence"] == pytest.approx(1 - 0.9 ** (n - 3))


def test_errors_change_nothing(graph):
    corpus(graph)
    before = fingerprint(graph)
    with pytest.raises(KgrNotFound, match="no document with id 'nope'"):
        forget(graph, documents=["d1", "nope"])
    with pytest.raises(KgrValidationError, match="at least one"):
        forget(graph)
    assert fingerprint(graph) == before


def test_unknown_sources_are_refused_like_unknown_documents(graph):
    """A source no vote (inline or overflow) and no chunk has was "forgotten" (``would forget 1
    source(s)``, exit 0): now it is named, as a document id that names none is, and nothing changes."""
    corpus(graph)
    stage(graph, [T("Ada", "Dee", f"o{i:02d}") for i in range(MAX_INLINE_VOTES + 2)])  # o(last): overflow only
    before = fingerprint(graph)
    for dry_run in (True, False):
        with pytest.raises(KgrNotFound, match=r"^no vote or chunk has source 'bogus-source' \(sources are as staged"):
            forget(graph, sources=["bogus-source"], dry_run=dry_run)
        with pytest.raises(KgrNotFound, match=r"source 'a-bogus' \(and 1 more\)"):
            forget(graph, sources=["d1#0", "z-bogus", "a-bogus"], dry_run=dry_run)
    assert fingerprint(graph) == before
    # each kind of known source is accepted: an inline vote, an overflow vote, a chunk without votes
    upsert_chunks(graph, [_Chunk("d4", 0)])
    last = f"o{MAX_INLINE_VOTES + 1:02d}"
    rep = forget(graph, sources=["o00", last, "d4#0"], dry_run=True)
    assert rep.votes_removed == 2 and rep.sources == 3


def test_cli_forget_dry_run_and_json(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    corpus(graph)
    before = fingerprint(graph)
    res = CliRunner().invoke(app, ["forget", "d2", "--dry-run"])
    assert res.exit_code == 0 and res.stdout.startswith("would forget 2 source(s) of 1 document(s)")
    assert fingerprint(graph) == before
    res = CliRunner().invoke(app, ["forget", "d2", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["chunks_removed"] == 2
    res = CliRunner().invoke(app, ["forget", "missing-doc"])
    assert res.exit_code != 0 and "no document with id 'missing-doc'" in res.stderr
    before = fingerprint(graph)
    for dry in (["--dry-run"], []):
        bogus = CliRunner().invoke(app, ["forget", "--sources", "bogus-source", *dry])
        assert bogus.exit_code == res.exit_code == 1, (bogus.stdout, bogus.stderr)
        assert bogus.stderr.startswith("Error: no vote or chunk has source 'bogus-source'") and bogus.stdout == ""
    assert fingerprint(graph) == before


def test_a_forget_racing_eight_writers_keeps_every_other_vote_and_none_of_its_own(graph):
    """Eight threads commit chunks (their votes with their marks, as the ingestion writer does) of
    nine documents onto shared edges while a ninth forgets document "gone" mid-way: afterwards no
    vote of "gone" is left (committed before the forget: removed; after: refused) and every vote of
    the other documents is there."""
    import threading

    docs = [f"doc{i}" for i in range(8)] + ["gone"]
    chunks = [_Chunk(d, i) for d in docs for i in range(24)]
    upsert_chunks(graph, chunks)
    pairs = [("Ada", "Bob"), ("Bob", "Cy"), ("Cy", "Dee"), ("Ada", "Dee")]

    def votes_of(c):
        return [T(s, o, c.id) for s, o in pairs[c.index % 2: c.index % 2 + 3]]

    lanes = [chunks[i::8] for i in range(8)]  # every lane holds chunks of "gone" too
    errors: list[BaseException] = []
    started = threading.Barrier(9)

    def writer(lane):
        started.wait()
        try:
            for k in range(0, len(lane), 3):
                group = lane[k:k + 3]
                commit_chunks(graph, [ChunkMark(chunk_id=c.id, extractor="test") for c in group],
                              assertions=[a for c in group for a in votes_of(c)])
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    def forgetter():
        started.wait()
        threading.Event().wait(0.05)
        try:
            forget(graph, documents=["gone"])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(lane,)) for lane in lanes] + [threading.Thread(target=forgetter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    overflow = [r["id"].split("|", 1) for r in graph.driver.execute_query(
        "MATCH (v:Vote) RETURN v.id AS id", database_=graph.database).records]
    votes = {(k, s) for k, e in pending(graph).items() for s in e["sources"]} | {(k, s) for k, s in overflow}
    for key, e in pending(graph).items():  # each edge's count is its votes, inline and overflow
        assert e["votes"] == sum(1 for k, _ in votes if k == key)
    staged = {s for _, s in votes}
    assert not {s for s in staged if s.startswith("gone#")}
    expected = {c.id for c in chunks if c.document_id != "gone"}
    assert staged == expected
    # and every surviving chunk is marked processed exactly once; the forgotten ones are gone
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.process_count AS n",
                                     database_=graph.database).records
    assert {r["id"]: r["n"] for r in rec} == {c: 1 for c in expected}
