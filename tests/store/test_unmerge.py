"""Merges re-decided when their evidence is forgotten (kgr.store.unmerge via kgr.store.forget, and
Engine.forget's re-resolution): real Neo4j, staged triples of a small population of people."""

from __future__ import annotations

import pytest

from kgr.model.canonical import entity_key
from kgr.store.admin import reset
from kgr.store.forget import forget
from kgr.store.resolve import resolve
from kgr.store.staging import stage
from tests.store.test_resolve import T, check_hash, votes_by_source
from tests.support.people import SCHEMA, people_records, person_triples

pytestmark = pytest.mark.neo4j

GREEN, GRENE = entity_key("Person", "jacob green"), entity_key("Person", "jacob grene")


def _background():
    return [t for r in people_records(10, 3, seed=3)[3:] for t in person_triples(r)]


def _motivated():
    """"jacob green" (k1: lives in bondi) and "jacob grene" (d1: a nurse) share nothing but a name
    close to each other; m1 says jacob green is a nurse too: the shared neighbour behind the merge."""
    return [T("jacob green", "LIVES_IN", "bondi", "Place", "k1"),
            T("jacob green", "BORN_ON", "1950-03-01", "Date", "k1"),
            T("jacob grene", "WORKS_AS", "nurse", "Occupation", "d1"),
            T("jacob grene", "BORN_ON", "1950-03-01", "Date", "d1"),
            T("jacob green", "WORKS_AS", "nurse", "Occupation", "m1"),
            T("jacob green", "LIVES_IN", "bondi", "Place", "m1")]


VARIANTS = {
    "A": [T("jacob green", "LIVES_IN", "bondi", "Place", "k1"), T("jacob grene", "WORKS_AS", "nurse", "Occupation", "d1"),
          T("jacob green", "WORKS_AS", "nurse", "Occupation", "m1")],
    "B": [T("jacob green", "LIVES_IN", "bondi", "Place", "k1"), T("jacob green", "BORN_ON", "1950-03-01", "Date", "k1"),
          T("jacob grene", "WORKS_AS", "nurse", "Occupation", "d1"),
          T("jacob green", "WORKS_AS", "nurse", "Occupation", "m1")],
    "C": [T("jacob green", "LIVES_IN", "bondi", "Place", "k1"), T("jacob green", "WORKS_AS", "pilot", "Occupation", "k1"),
          T("jacob grene", "WORKS_AS", "nurse", "Occupation", "d1"), T("jacob grene", "LIVES_IN", "hobart", "Place", "d1"),
          T("jacob green", "WORKS_AS", "nurse", "Occupation", "m1"), T("jacob green", "LIVES_IN", "hobart", "Place", "m1")],
}


@pytest.mark.parametrize("v", sorted(VARIANTS))
def test_explore(graph, v):
    stage(graph, VARIANTS[v] + _background(), schema=SCHEMA)
    rep = resolve(graph, SCHEMA, apply_splits=False)
    a = [(m.keep, m.drop) for m in rep.merges if "jacob" in m.keep]
    reset(graph)
    stage(graph, [t for t in VARIANTS[v] if t.source != "m1"] + _background(), schema=SCHEMA)
    rep = resolve(graph, SCHEMA, apply_splits=False)
    print("VARIANT", v, a, "fresh without m1", [(m.keep, m.drop) for m in rep.merges if "jacob" in m.keep])
