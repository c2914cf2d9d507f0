"""``kgr init``: the constraints and indexes it creates, and that a second run changes nothing (real Neo4j)."""

from __future__ import annotations

import time

import pytest

from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint, init_store, schema_objects
from kgr.store.staging import stage
from kgr.store.versions import current_state

pytestmark = pytest.mark.neo4j

#: (kind, type, label, properties) that `kgr init` must create.
REQUIRED = {
    ("constraint", "UNIQUENESS", "Entity", ("key",)),
    ("constraint", "UNIQUENESS", "Chunk", ("id",)),
    ("constraint", "UNIQUENESS", "Document", ("id",)),
    ("constraint", "UNIQUENESS", "Vote", ("id",)),
    # the review queue of `kgr resolve` MERGEs ~1,000 candidates by id: a label scan per row without it
    ("constraint", "UNIQUENESS", "MatchCandidate", ("id",)),
    ("constraint", "UNIQUENESS", "MatchLabel", ("id",)),
    ("index", "FULLTEXT", "Entity", ("name", "aliases")),
}


def shape(objects):
    return {(o.kind, o.type, label, tuple(o.properties)) for o in objects for label in o.labels}


def wait_online(graph, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        objs = schema_objects(graph)
        if all(o.state == "ONLINE" for o in objs if o.kind == "index") or time.monotonic() > deadline:
            return objs
        time.sleep(0.2)


def test_init_creates_constraints_and_fulltext_index_once(graph):
    # start without two of them, as a store made by an older kgr would be
    graph.driver.execute_query("DROP CONSTRAINT kgr_vote_id IF EXISTS")
    graph.driver.execute_query("DROP INDEX entity_names IF EXISTS")
    graph.driver.execute_query("DROP CONSTRAINT kgr_match_candidate_id IF EXISTS")
    missing = shape(schema_objects(graph))
    assert ("constraint", "UNIQUENESS", "MatchCandidate", ("id",)) not in missing
    assert ("constraint", "UNIQUENESS", "Vote", ("id",)) not in missing
    assert ("index", "FULLTEXT", "Entity", ("name", "aliases")) not in missing

    init_store(graph)
    first = wait_online(graph)
    assert REQUIRED <= shape(first)
    fulltext = [o for o in first if o.type == "FULLTEXT"]
    assert [(o.name, o.labels, o.properties, o.state) for o in fulltext] == [
        ("entity_names", ["Entity"], ["name", "aliases"], "ONLINE")]
    # each uniqueness constraint is backed by its own index
    assert {o.name for o in first if o.kind == "constraint"} <= {o.owning_constraint for o in first if o.kind == "index"}

    # a second init is a no-op: same objects (same index ids: nothing dropped and recreated), same data
    stage(graph, [TripleAssertion(subject="Ada", subject_type="Person", relation="KNOWS", object="Bob",
                                  object_type="Person", source="s1")])
    fp, state = fingerprint(graph), current_state(graph)
    init_store(graph)
    assert schema_objects(graph) == first
    assert fingerprint(graph) == fp and current_state(graph) == state
