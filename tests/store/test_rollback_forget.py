"""Rollback and forget agree (issue 32, item 5), against the real Neo4j: a rollback never restores a
fact whose every vote source was forgotten after the version it restores, and `kgr status`'s
promoted count always equals the staged edges marked promoted."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.model.canonical import edge_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import status
from kgr.store.forget import forget
from kgr.store.merge import merge_entities
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage
from kgr.store.versions import create_snapshot, current_state, full_hash, promoted_edges, rollback

pytestmark = pytest.mark.neo4j


def T(s, o, src):
    return TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                           source=src, confidence=0.6)


def K(s, o):
    return edge_key(f"Person:{s.lower()}", "KNOWS", f"Person:{o.lower()}")


def agree(graph) -> tuple[int, int]:
    st = status(graph)
    return st.promoted, st.pending_by_status.get("promoted", 0) + st.promoted_on_merged


def test_rollback_leaves_out_the_facts_whose_sources_were_all_forgotten(graph, neo4j_settings, monkeypatch):
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada", "Bob", "s2"),   # only s1 and s2: forgotten below
                  T("Bob", "Cy", "s1"), T("Bob", "Cy", "s3"),     # keeps s3
                  T("Cy", "Dee", "s4"), T("Cy", "Dee", "s5")])    # untouched
    promote_by_quorum(graph, quorum=2)
    create_snapshot(graph, "before")
    forget(graph, sources=["s1", "s2"])
    assert sorted(e.key for e in promoted_edges(graph)) == [K("Cy", "Dee")]

    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    res = CliRunner().invoke(app, ["snapshot", "rollback", "before"])
    assert res.exit_code == 0, res.stderr
    assert f"not restored, every source forgotten since: {K('Ada', 'Bob')}" in res.stdout
    assert sorted(e.key for e in promoted_edges(graph)) == sorted([K("Bob", "Cy"), K("Cy", "Dee")])
    assert current_state(graph)[1] == full_hash([K("Bob", "Cy"), K("Cy", "Dee")])
    assert agree(graph) == (2, 2)
    st = json.loads(CliRunner().invoke(app, ["status", "--json"]).stdout)
    assert st["promoted"] == st["pending_by_status"]["promoted"] == 2
    why = graph.driver.execute_query("MATCH (d:Decision {edge_key: $k, action: 'unrestored'}) RETURN d.reason AS r",
                                     k=K("Ada", "Bob")).records
    assert len(why) == 1 and "every vote source was forgotten in version 2" in why[0]["r"]
    # a slice never shows the fact again
    s = CliRunner().invoke(app, ["slice", "--anchor", "Person:ada", "--json"])
    assert s.exit_code == 0, s.stderr
    assert [e["key"] for e in json.loads(s.stdout)["edges"]] == []


def test_a_fact_staged_again_after_the_forget_is_restored(graph):
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada", "Bob", "s2")])
    promote_by_quorum(graph, quorum=2)
    create_snapshot(graph, "before")
    forget(graph, sources=["s1", "s2"])
    stage(graph, [T("Ada", "Bob", "s9")])  # new evidence, after the forget
    res = rollback(graph, "before")
    assert res.unrestored == [] and res.restored == 1
    assert [e.key for e in promoted_edges(graph)] == [K("Ada", "Bob")] and agree(graph) == (1, 1)


def test_status_and_the_pending_side_agree_through_random_histories(graph):
    """Random histories (seeded) of staging, quorum rounds, snapshots, forgets and rollbacks: after
    every step the promoted edges are exactly the staged edges marked promoted, and the hash is
    theirs. (On the code before the fix, the first rollback across a forget broke it.)"""
    rng = random.Random(32)
    people = ["Ada", "Bob", "Cy", "Dee"]
    sources = [f"s{i}" for i in range(5)]
    snaps: list[str] = []

    def check(step: int, op: str) -> None:
        promoted, marked = agree(graph)
        assert promoted == marked, (step, op)
        assert current_state(graph)[1] == full_hash({e.key for e in promoted_edges(graph)}), (step, op)

    for step in range(12):
        stage(graph, [T(*rng.sample(people, 2), rng.choice(sources)) for _ in range(5)])
        promote_by_quorum(graph, quorum=2)
        check(step, "promote")
        if rng.random() < 0.6:
            snaps.append(f"snap{step}")
            create_snapshot(graph, snaps[-1])
        if rng.random() < 0.6:
            live = {x for r in graph.read("pending_edges", {"statuses": None}) for x in r["sources"]}
            picked = [x for x in rng.sample(sources, 3) if x in live]  # a source forgotten before names nothing
            if picked:
                forget(graph, sources=picked)
            check(step, "forget")
        if snaps and rng.random() < 0.6:
            rollback(graph, rng.choice(snaps))
            check(step, "rollback")


def test_merge_then_rollback_keeps_the_counts_apart_as_documented(graph):
    """A rollback across a merge restores the dropped entity's promoted edge while its staged edge
    stays the merge's tombstone (README: a rollback restores promoted edges only): status counts
    that edge apart, so promoted = staged edges marked promoted + promoted_on_merged."""
    stage(graph, [T("Ada", "Bob", "s1"), T("Ada", "Bob", "s2"), T("Cy", "Dee", "s1"), T("Cy", "Dee", "s2")])
    promote_by_quorum(graph, quorum=2)
    create_snapshot(graph, "before")
    stage(graph, [T("Ada Lovelace", "Cy", "s3")])
    merge_entities(graph, "Person:ada lovelace", "Person:ada")
    st = status(graph)
    assert (st.promoted, st.pending_by_status.get("promoted"), st.promoted_on_merged) == (2, 2, 0)
    rollback(graph, "before")
    st = status(graph)
    assert (st.promoted, st.pending_by_status.get("promoted"), st.promoted_on_merged) == (2, 1, 1)
