"""Entity merge as a version (kgr.store.merge), against the real Neo4j."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import edge_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint, status
from kgr.store.group_commit import GroupWriter
from kgr.store.merge import merge_entities
from kgr.engine import promote_by_quorum
from kgr.store.provenance import ChunkMark, commit_chunks
from kgr.store.staging import MAX_INLINE_VOTES, stage, write_batch
from kgr.store.versions import create_snapshot, current_state, diff, full_hash, list_versions, promoted_edges, rollback

pytestmark = pytest.mark.neo4j

KEEP, DROP = "Person:ada", "Person:ada lovelace"


def T(s, o, src, r="KNOWS", st="Person", ot="Person", conf=1.0):
    return TripleAssertion(subject=s, subject_type=st, relation=r, object=o, object_type=ot, source=src,
                           confidence=conf)


def keys(graph, version=None):
    return sorted(e.key for e in promoted_edges(graph, version))


def check_hash(graph):
    """The incrementally maintained hash equals a full recomputation."""
    _, h = current_state(graph)
    assert h == full_hash(keys(graph))
    return h


def pending(graph):
    return {r["key"]: r for r in graph.read("pending_edges", {"statuses": None})}


def vote_nodes(graph, key):
    rows = graph.driver.execute_query(
        "MATCH (v:Vote) WHERE v.id STARTS WITH $key + '|' OPTIONAL MATCH (v)-[:FROM]->(c:Chunk) "
        "RETURN v.source AS source, v.id AS id, c.id AS chunk", key=key).records
    return {r["source"]: (r["id"], r["chunk"]) for r in rows}


def entity(graph, key):
    return graph.driver.execute_query("MATCH (e:Entity {key: $key}) RETURN properties(e) AS p", key=key).records[0]["p"]


def test_votes_are_united_by_source(graph):
    stage(graph, [T("Ada", "IBM", "s1", "WORKS_AT", ot="Organization", conf=0.5),
                  T("Ada", "IBM", "s2", "WORKS_AT", ot="Organization", conf=0.5),
                  T("Ada Lovelace", "IBM", "s2", "WORKS_AT", ot="Organization", conf=0.9),  # s2 voted on both
                  T("Ada Lovelace", "IBM", "s3", "WORKS_AT", ot="Organization", conf=0.5),
                  T("Ada Lovelace", "Bob", "s4")])  # an edge KEEP does not have
    old_works, old_knows = edge_key(DROP, "WORKS_AT", "Organization:ibm"), edge_key(DROP, "KNOWS", "Person:bob")
    new_works, new_knows = edge_key(KEEP, "WORKS_AT", "Organization:ibm"), edge_key(KEEP, "KNOWS", "Person:bob")
    res = merge_entities(graph, KEEP, "Person:Ada  Lovelace")  # keys are canonicalised
    assert (res.drop, res.pending_united, res.pending_moved, res.votes_added) == (DROP, 1, 1, 2)
    p = pending(graph)
    works = p[new_works]
    assert works["votes"] == 3 and works["sources"] == ["s1", "s2", "s3"]  # s2 once, KEEP's votes first
    # staging's noisy-or continued over the added vote (s3; s2 keeps KEEP's confidence 0.5)
    assert works["confidence"] == pytest.approx(1 - 0.5 * 0.5 * 0.5)
    assert (p[new_knows]["votes"], p[new_knows]["sources"], p[new_knows]["subject_key"]) == (1, ["s4"], KEEP)
    # the old edges stay on DROP as tombstones without votes, pointing at the new keys
    assert {k: (p[k]["status"], p[k]["votes"], p[k]["subject_key"]) for k in (old_works, old_knows)} == {
        old_works: ("merged", 0, DROP), old_knows: ("merged", 0, DROP)}
    tomb = graph.driver.execute_query("MATCH ()-[p:PENDING_REL {key: $k}]->() RETURN p.merged_into_key AS m",
                                      k=old_works).records[0]["m"]
    assert tomb == new_works
    assert status(graph).votes == 4  # distinct sources per edge: 3 + 1, nothing counted twice
    # DROP is kept and marked; KEEP has DROP's name and surface forms as aliases
    d = entity(graph, DROP)
    assert (d["merged_into"], d["merged_at_version"]) == (KEEP, res.version)
    assert entity(graph, KEEP)["aliases"] == res.aliases == ["Ada", "Ada Lovelace"]
    # one version of kind merge, with a decision on both sides of each moved edge
    assert list_versions(graph, 1)[0].kind == "merge" and res.version == current_state(graph)[0]
    for k, side in ((old_works, f"moved to {new_works}"), (new_works, f"received {old_works}")):
        dec = graph.read("decisions_for_edge", {"key": k})[0]["decisions"]
        assert [x["action"] for x in dec] == ["merge"] and json.loads(dec[0]["inputs"])["new_key"] == new_works
        assert side in dec[0]["reason"]  # each key reads the move from its own side
    # ... from one (:Decision) node per moved edge, about both keys
    nodes = graph.driver.execute_query("MATCH (d:Decision {action: 'merge'}) RETURN d.edge_key AS old, d.new_key AS new "
                                       "ORDER BY old").records
    assert sorted((r["old"], r["new"]) for r in nodes) == sorted([(old_works, new_works), (old_knows, new_knows)])


def test_votes_past_the_inline_limit(graph):
    n_keep, n_drop = 30, 40  # KEEP: chunk-0..29; DROP: chunk-20..59 (32 inline + 8 Vote nodes)
    graph.driver.execute_query("UNWIND range(0, 59) AS i CREATE (:Chunk {id: 'chunk-' + i, text: 't'})")
    stage(graph, [T("Ada", "Bob", f"chunk-{i}") for i in range(n_keep)])
    stage(graph, [T("Ada Lovelace", "Bob", f"chunk-{i}") for i in range(20, 20 + n_drop)], batch_size=7)
    old, new = edge_key(DROP, "KNOWS", "Person:bob"), edge_key(KEEP, "KNOWS", "Person:bob")
    assert len(vote_nodes(graph, old)) == n_drop - MAX_INLINE_VOTES
    res = merge_entities(graph, KEEP, DROP)
    assert res.votes_added == 30 and res.edges[0].votes_before == 30 and res.edges[0].votes_after == 60
    edge = pending(graph)[new]
    inline, nodes = edge["sources"], vote_nodes(graph, new)
    # exact: 60 distinct sources (chunk-20..29 voted on both edges and count once), each once
    assert edge["votes"] == 60 == len(inline) + len(nodes)
    assert sorted(inline + list(nodes)) == sorted(f"chunk-{i}" for i in range(60))
    assert inline == [f"chunk-{i}" for i in range(30)] + ["chunk-30", "chunk-31"]  # fills the inline list first
    assert all(vid == f"{new}|{src}" and chunk == src for src, (vid, chunk) in nodes.items())  # traceable
    assert vote_nodes(graph, old) == {} and pending(graph)[old]["votes"] == 0
    # the saved Browser provenance query sees every vote of the united edge
    prov = graph.driver.execute_query(
        (files("kgr.cypher") / "browser" / "04_edge_provenance.cypher").read_text(), key=new).records
    assert len(prov) == 60
    # re-staging every vote, under either name, adds nothing: the inline/overflow split is consistent
    fp = fingerprint(graph)
    again = stage(graph, [T(name, "Bob", f"chunk-{i}") for i in range(60) for name in ("Ada", "Ada Lovelace")],
                  batch_size=13, workers=2)
    assert (again.new_votes, again.new_edges, again.new_entities) == (0, 0, 0)
    assert fingerprint(graph) == fp


def test_promoted_edges_move_hash_and_rollback(graph):
    both = ("s1", "s2")
    stage(graph, [T(s, o, src) for s, o in (("Ada Lovelace", "x"), ("y", "Ada Lovelace"),
                                            ("Ada Lovelace", "Ada"), ("Ada", "z"), ("Ada Lovelace", "z"))
                  for src in both])
    stage(graph, [T("Ada", "x", "s3")])  # KEEP's own pending (not promoted) edge to x, 1 vote
    promote_by_quorum(graph, quorum=2)
    before_keys = keys(graph)
    assert len(before_keys) == 5
    snap = create_snapshot(graph, "before")
    check_hash(graph)

    res = merge_entities(graph, KEEP, DROP)
    k_ = lambda s, o: edge_key(s, "KNOWS", o)  # noqa: E731
    dx, yd, dk, kz, dz = (k_(DROP, "Person:x"), k_("Person:y", DROP), k_(DROP, KEEP), k_(KEEP, "Person:z"),
                          k_(DROP, "Person:z"))
    kx, yk = k_(KEEP, "Person:x"), k_("Person:y", KEEP)
    assert sorted(before_keys) == sorted([dx, yd, dk, kz, dz])
    # dx and yd re-created on KEEP, dz already promoted there (kz), dk a self-loop: all four retired
    assert keys(graph) == sorted([kx, yk, kz])
    assert (res.promoted_created, res.promoted_retired, res.self_loops) == (2, 4, 1)
    fate = {e.old_key: (e.outcome, e.promoted) for e in res.edges}
    assert fate == {dx: ("united", "moved"), yd: ("moved", "moved"), dk: ("self_loop", "retired"),
                    dz: ("united", "already_promoted")}
    assert res.hash == check_hash(graph)  # incremental == full recomputation
    p = pending(graph)
    assert (p[kx]["votes"], p[kx]["status"]) == (3, "promoted")  # s3 + s1, s2; promoted with the moved edge
    assert (p[dk]["status"], p[dk]["subject_key"], p[dk]["object_key"]) == ("rejected", DROP, KEEP)
    assert {e.key: e.votes for e in promoted_edges(graph)}[kx] == 3
    d = diff(graph, "before")
    assert sorted(e.key for e in d.removed) == sorted([dx, yd, dk, dz])
    assert sorted(e.key for e in d.added) == sorted([kx, yk])
    dec = graph.read("decisions_for_edge", {"key": dk})[0]
    assert dec["status"] == "rejected" and "self-loop" in dec["decisions"][-1]["reason"]

    # rollback to before the merge: exactly the promoted edge set (hash and list) of the snapshot
    rb = rollback(graph, "before")
    assert (rb.retired, rb.restored) == (2, 4)
    assert keys(graph) == before_keys and current_state(graph)[1] == snap.hash == rb.hash
    check_hash(graph)
    # ... but not the pending moves: the votes stay on KEEP (its retired edges held), tombstones stay
    p = pending(graph)
    assert (p[kx]["status"], p[kx]["votes"], p[dx]["status"]) == ("held", 3, "merged")
    assert entity(graph, DROP)["merged_into"] == KEEP

    # merging again moves the restored promoted edges back onto KEEP
    again = merge_entities(graph, KEEP, DROP)
    assert keys(graph) == sorted([kx, yk, kz]) and (again.promoted_created, again.pending_moved) == (2, 0)
    assert {e.outcome for e in again.edges} == {"promoted_only", "self_loop"}
    assert pending(graph)[kx]["status"] == "promoted"
    check_hash(graph)


def test_status_counts_live_entities_and_the_merged_away_apart(graph):
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada Lovelace", "Carl", "s2")])
    before = status(graph)
    assert (before.entities, before.merged_entities) == (4, 0)
    merge_entities(graph, KEEP, DROP)
    after = status(graph)  # the merged-away node stays (the merge's record) but is no entity of the graph
    assert (after.entities, after.merged_entities) == (3, 1)


def test_errors_leave_the_store_unchanged(graph):
    stage(graph, [T("Ada", "IBM", "s1", "WORKS_AT", ot="Organization"), T("Ada Lovelace", "Bob", "s1"),
                  T("Cy", "Bob", "s1")])
    state, fp = current_state(graph), fingerprint(graph)
    with pytest.raises(KgrValidationError, match="entity types differ"):
        merge_entities(graph, KEEP, "Organization:ibm")
    with pytest.raises(KgrNotFound, match=r"no entity with key 'Person:nobody' \(drop\)"):
        merge_entities(graph, KEEP, "Person:Nobody")
    with pytest.raises(KgrNotFound, match=r"no entity with key 'Person:nobody' \(keep\)"):
        merge_entities(graph, "Person:nobody", KEEP)
    with pytest.raises(KgrValidationError, match="into itself"):
        merge_entities(graph, KEEP, "Person:ADA")
    with pytest.raises(KgrValidationError, match="not TYPE:NAME"):
        merge_entities(graph, KEEP, "ada")
    assert current_state(graph) == state and fingerprint(graph) == fp  # no version, nothing written
    merge_entities(graph, KEEP, DROP)
    with pytest.raises(KgrValidationError, match="already merged into 'Person:ada'"):
        merge_entities(graph, "Person:cy", DROP)
    with pytest.raises(KgrValidationError, match="is merged into 'Person:ada': merge into that entity"):
        merge_entities(graph, DROP, "Person:cy")


def test_staging_the_dropped_name_lands_on_keep(graph):
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada Lovelace", "Bob", "s2")])
    graph.driver.execute_query("UNWIND ['c1', 'c2'] AS id CREATE (:Chunk {id: id, text: 't'})")
    commit_chunks(graph, [ChunkMark(chunk_id="c1", entity_keys=[DROP], extractor="test")])
    res = merge_entities(graph, KEEP, DROP)
    assert res.mentions_moved == 1
    new = edge_key(KEEP, "KNOWS", "Person:bob")
    drop_aliases = entity(graph, DROP)["aliases"]

    # stage(): one batch, then several lanes and batches
    rep = stage(graph, [T("ada  LOVELACE", "Bob", "s3"), T("Ada Lovelace", "Bob", "s3"), T("Ada Lovelace", "Bob", "s1")])
    assert (rep.new_votes, rep.repeated_votes, rep.new_edges, rep.new_entities) == (1, 2, 0, 0)
    rep = stage(graph, [T("ADA LOVELACE", "Bob", f"t{i}") for i in range(10)] + [T("Ada Lovelace", "Cy", "t0")],
                batch_size=2, workers=3)
    assert (rep.new_votes, rep.new_edges, rep.new_entities) == (11, 1, 1)  # Cy is new; the edge to Cy is on KEEP
    # in a caller's transaction (ingestion's path), and through the tool server's group commit
    graph.write_unit(lambda tx: write_batch(tx, [T("Ada Lovelace", "Bob", "u1")]))
    writer = GroupWriter(graph)
    try:
        assert writer.stage([T("Ada Lovelace", "Bob", "u2"), T("Ada", "Bob", "u2")]).new_votes == 1
    finally:
        writer.close()
    p = pending(graph)
    assert p[new]["votes"] == 2 + 1 + 10 + 2 and p[edge_key(KEEP, "KNOWS", "Person:cy")]["votes"] == 1
    on_drop = [r for r in p.values() if DROP in (r["subject_key"], r["object_key"]) and r["status"] != "merged"]
    assert on_drop == []
    assert entity(graph, DROP)["aliases"] == drop_aliases  # untouched; KEEP gets the surface forms
    assert "ADA LOVELACE" in entity(graph, KEEP)["aliases"]
    # a chunk naming DROP mentions KEEP
    commit_chunks(graph, [ChunkMark(chunk_id="c2", entity_keys=[DROP], extractor="test")])
    rec = graph.driver.execute_query("MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN c.id AS c, e.key AS e ORDER BY c")
    assert [(r["c"], r["e"]) for r in rec.records] == [("c1", KEEP), ("c2", KEEP)]


def test_chained_merges_redirect_in_one_hop(graph):
    stage(graph, [T("a", "x", "s1"), T("b", "x", "s2"), T("c", "x", "s3")])
    merge_entities(graph, "Person:b", "Person:a")
    res = merge_entities(graph, "Person:c", "Person:b")
    assert res.rerouted == 1 and entity(graph, "Person:a")["merged_into"] == "Person:c"
    stage(graph, [T("a", "x", "s4")])
    assert pending(graph)[edge_key("Person:c", "KNOWS", "Person:x")]["votes"] == 4


def test_cli_merge_json(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada Lovelace", "Bob", "s2"), T("Ada Lovelace", "Bob", "s1")])
    runner = CliRunner()
    res = runner.invoke(app, ["merge", KEEP, "Person:Ada Lovelace", "--json"])
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    new = edge_key(KEEP, "KNOWS", "Person:bob")
    assert (data["keep"], data["drop"], data["version"], data["pending_united"], data["votes_added"]) == (
        KEEP, DROP, 1, 1, 1)
    assert data["edges"] == [{"old_key": edge_key(DROP, "KNOWS", "Person:bob"), "new_key": new, "relation": "KNOWS",
                              "outcome": "united", "votes_before": 1, "votes_after": 2, "promoted": None}]
    assert data["hash"] == current_state(graph)[1]
    human = runner.invoke(app, ["merge", "Person:bob", KEEP])
    assert human.exit_code == 0 and "merged Person:ada into Person:bob" in human.stdout
    bad = runner.invoke(app, ["merge", "Person:bob", "Person:zed"])
    assert bad.exit_code == 1 and bad.stderr.strip() == "Error: no entity with key 'Person:zed' (drop)"
    # KEEP's edge to bob became a self-loop: rejected where it is; DROP now redirects to bob in one hop
    assert pending(graph)[new]["status"] == "rejected" and entity(graph, DROP)["merged_into"] == "Person:bob"


def test_promote_after_rolling_back_a_merge_keeps_each_fact_promoted_once(graph):
    """merge → rollback → new evidence → promote: the fact is promoted on KEEP and DROP's restored
    instance of it is retired in the same round, never both current (issue 13, item 8)."""
    stage(graph, [T("Ada Lovelace", "x", s) for s in ("s1", "s2")] + [T("Ada", "y", "s1")])
    promote_by_quorum(graph, quorum=2)
    create_snapshot(graph, "before")
    merge_entities(graph, KEEP, DROP)
    rollback(graph, "before")
    dx, kx = edge_key(DROP, "KNOWS", "Person:x"), edge_key(KEEP, "KNOWS", "Person:x")
    assert keys(graph) == [dx] and pending(graph)[kx]["status"] == "held"
    stage(graph, [T("Ada", "x", "s3")])  # new evidence for the held KEEP edge
    summary = promote_by_quorum(graph, quorum=2)
    assert keys(graph) == [kx]  # one current instance of the fact, on the entity that stays
    assert summary.promoted == 1 and summary.retired == 1
    check_hash(graph)
    # the retirement is explained on DROP's edge
    dec = graph.read("decisions_for_edge", {"key": dx})[0]
    assert "merged" in dec["decisions"][-1]["reason"]


def test_a_merged_away_key_names_the_entity_it_was_merged_into(graph):
    """Slicing or looking up the key of an entity that a merge dropped says where it went, instead of
    "no entity" with a guess."""
    from kgr.slices.anchors import resolve_anchors
    from kgr.store.inspect import entity_neighbourhood

    stage(graph, [T("Ada", "IBM", "s1", "WORKS_AT", ot="Organization"), T("Ada Lovelace", "Bob", "s2")])
    merge_entities(graph, KEEP, DROP)
    for lookup in (lambda: resolve_anchors(graph, [DROP], None), lambda: entity_neighbourhood(graph, DROP)):
        with pytest.raises(KgrNotFound, match=f"was merged into '{KEEP}'"):
            lookup()
    with pytest.raises(KgrNotFound, match="no entity with key 'Person:nobody'"):
        resolve_anchors(graph, ["Person:nobody"], None)
