"""Queries that test a staged edge's status at an entity already found keep their plan when the
database grows: a plan cached while the database was empty (or its index samples stale, right
after a reset) must not answer the status test with the status index.

Found by ``scripts/bench_resolve.py``: one `kgr resolve` in five after a reset spent 12-15 s in
``resolve_read_entities`` instead of 0.2 s; its cached plan (every estimate 0) read every PENDING_REL
of ``kgr_pending_status`` per entity and filtered on the entity. Real Neo4j: the plans are its own.
"""

from __future__ import annotations

import pytest

from kgr.model.triples import TripleAssertion
from kgr.store.cypher import render
from kgr.store.resolve import PAGE
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j

#: Templates whose status tests sit on a pattern anchored at an entity (or an edge) already found,
#: with parameters to plan them by.
ANCHORED = {
    "resolve_read_entities": {"type": "Person", "after": "", "page": PAGE},
    "promoted_below_quorum": {"keys": ["Person:a"], "quorum": 2},
    "unmerge_entities": {"rows": [{"keep": "Person:a", "drop": "Person:b", "aliases": []}], "version": 1},
    "unmerge_drop_emptied": {"rows": [{"key": "k", "s_key": "Person:a", "o_key": "Place:b"}]},
    "merge_promoted_edges": {"rows": [], "version": 1},
    "retire_edges": {"rows": [], "version": 1, "status": "held"},
    "restore_edges": {"rows": [], "version": 1, "target": 0},
}


def _operators(plan: dict) -> list[tuple[str, str]]:
    out = [(plan["operatorType"], str(plan.get("args", {}).get("Details", "")))]
    for child in plan.get("children", []):
        out += _operators(child)
    return out


def _status_index_reads(graph, template: str, params: dict) -> list[str]:  # noqa: ANN001 - a Graph
    with graph.driver.session(database=graph.database) as s:
        plan = s.run("EXPLAIN " + render(template), params).consume().plan
    return [f"{op} {details}" for op, details in _operators(plan)
            if "RelationshipIndex" in op and "PENDING_REL(status)" in details]


@pytest.mark.parametrize("template", sorted(ANCHORED))
def test_an_anchored_status_test_is_never_planned_on_the_status_index(graph, template):
    with graph.driver.session(database=graph.database) as s:
        s.run("CALL db.clearQueryCaches()").consume()
    # planned on the emptied database: every estimate is at its lowest, where an index scan looks free
    assert _status_index_reads(graph, template, ANCHORED[template]) == []


def _people(n: int) -> list[TripleAssertion]:
    return [TripleAssertion(subject=f"person {i:04d}", subject_type="Person", relation=rel, object=f"{kind} {i % 40}",
                            object_type=kind, source=f"r{i}")
            for i in range(n) for rel, kind in (("BORN_IN", "Place"), ("WORKS_AS", "Occupation"))]


def test_the_entity_read_planned_on_an_empty_database_reads_each_entity_s_edges_only(graph):
    query = render("resolve_read_entities")
    params = {"type": "Person", "after": "", "page": PAGE}
    with graph.driver.session(database=graph.database) as s:
        s.run("CALL db.clearQueryCaches()").consume()
        assert s.run(query, params).data() == []  # the plan is made and cached on the empty database
    stage(graph, _people(400))
    with graph.driver.session(database=graph.database) as s:
        res = s.run("CYPHER replan=skip PROFILE " + query, params)
        rows = res.data()
        profile = res.consume().profile

    def hits(p: dict) -> int:
        return int(p.get("dbHits", 0)) + sum(hits(c) for c in p.get("children", []))

    assert len(rows) == 400 and all(len(r["edges"]) == 2 for r in rows)
    # each entity's own two edges and their neighbours: tens of hits per entity; reading all 800 edges
    # per entity (the plan of before) is ~800 per entity
    assert hits(profile) < 60 * len(rows), hits(profile)


def _entity_key_sample(graph) -> dict:  # noqa: ANN001 - a Graph
    with graph.driver.session(database=graph.database) as s:
        data = s.run("CALL db.stats.retrieve('GRAPH COUNTS') YIELD data RETURN data").single()["data"]
    return next(i for i in data["indexes"] if i.get("labels") == ["Entity"] and i.get("properties") == ["key"])


def test_a_staging_call_leaves_the_planner_s_index_samples_current(graph):
    report = stage(graph, _people(300))
    sample = _entity_key_sample(graph)
    # the reset's deletions and the 300 people and their 80 places and occupations all counted in
    # the sample the next plans estimate from (without the resample: the emptied index's sample, or
    # one taken part-way through the staging, with hundreds of updates since)
    assert report.new_votes == 600
    assert sample["updatesSinceEstimation"] == 0
    assert sample["totalSize"] == 380


def test_a_refused_resample_does_not_fail_the_staging_it_follows(graph, monkeypatch, caplog):
    from kgr.errors import KgrDatabaseError
    from kgr.store import connection

    real = connection.Graph.run_script

    def refuse(self, template, params=None, **identifiers):  # noqa: ANN001, ANN202 - Graph.run_script's
        if template == "index_statistics_refresh":
            raise KgrDatabaseError("Neo.ClientError.Security.Forbidden: not allowed to resample indexes")
        return real(self, template, params, **identifiers)

    monkeypatch.setattr(connection.Graph, "run_script", refuse)
    with caplog.at_level("WARNING", logger="kgr.store.statistics"):
        report = stage(graph, _people(300))
    assert report.new_votes == 600  # the staging committed and reports as usual
    assert "index statistics not refreshed" in caplog.text
    with graph.driver.session(database=graph.database) as s:
        assert s.run("MATCH ()-[p:PENDING_REL]->() RETURN count(p) AS n").single()["n"] == 600
