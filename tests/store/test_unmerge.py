"""Merges re-decided when their evidence is forgotten (kgr.store.unmerge via kgr.store.forget, and
Engine.forget's re-resolution): real Neo4j, staged triples of a small population of people."""

from __future__ import annotations

import functools
import time

import pytest

from kgr.model.canonical import entity_key
from kgr.store.admin import reset
from kgr.store.forget import forget
from kgr.store.merge import merge_entities, merge_in_tx
from kgr.engine import Engine, promote_by_quorum
from kgr.store.resolve import resolve
from kgr.store.versions import add_terms, close_version, list_versions, open_version, promoted_edges, rollback
from kgr.store.staging import stage
from tests.store.test_resolve import T, check_hash, votes_by_source
from tests.support.people import SCHEMA, people_records, person_triples

pytestmark = pytest.mark.neo4j

GREEN, GRENE = entity_key("Person", "jacob green"), entity_key("Person", "jacob grene")


def _background():
    return [t for r in people_records(10, 3, seed=3)[3:] for t in person_triples(r)]


#: "jacob green" (k1: lives in bondi, a pilot) and "jacob grene" (d1: a nurse in hobart) are close in
#: name only; m1 says jacob green is a nurse in hobart too: the shared neighbours behind their merge
#: (resolution merges them with m1 and keeps them apart without it).
MOTIVATED = [T("jacob green", "LIVES_IN", "bondi", "Place", "k1"), T("jacob green", "WORKS_AS", "pilot", "Occupation", "k1"),
             T("jacob grene", "WORKS_AS", "nurse", "Occupation", "d1"), T("jacob grene", "LIVES_IN", "hobart", "Place", "d1"),
             T("jacob green", "WORKS_AS", "nurse", "Occupation", "m1"), T("jacob green", "LIVES_IN", "hobart", "Place", "m1")]
#: a second, unremarkable document about jacob green (not what motivated the merge)
EXTRA = [T("jacob green", "LIVES_IN", "bondi", "Place", "k2")]


def _merged(graph) -> dict[str, str]:
    return {r["key"]: r["into"] for r in graph.driver.execute_query(
        "MATCH (e:Entity) WHERE e.merged_into IS NOT NULL RETURN e.key AS key, e.merged_into AS into").records}


def _aliases(graph, key: str) -> list[str]:
    return sorted(graph.driver.execute_query("MATCH (e:Entity {key: $k}) RETURN e.aliases AS a", k=key).records[0]["a"])


def _recorded_merge(graph, keep: str, drop: str) -> None:
    """Merge ``drop`` into ``keep`` as ``kgr resolve`` merges (sources recorded: an unmerge undoes it)."""
    def unit(tx):
        version, old = open_version(tx)
        _, created, retired = merge_in_tx(tx, keep, drop, version=version, now=time.time(), reason="test", record=True)
        close_version(tx, version, add_terms(old, added=created, removed=retired), kind="resolve", now=time.time())
    graph.write_unit(unit)


def _resolved(graph, triples) -> None:
    stage(graph, triples, schema=SCHEMA)
    resolve(graph, SCHEMA, apply_splits=False)


def test_forgetting_the_motivating_document_undoes_the_merge_as_a_fresh_resolution_would(graph):
    kg = Engine(graph, schema=SCHEMA)
    _resolved(graph, MOTIVATED + _background())
    assert _merged(graph).get(GRENE) == GREEN  # the merge m1 motivated
    promote_by_quorum(graph, quorum=1)
    rep = kg.forget(sources=["m1"], quorum=1)
    assert GRENE not in _merged(graph)  # undone, and the re-decision did not merge them again
    assert rep.merges_touched == [GRENE] and rep.unmerge_version == rep.version + 1
    assert GRENE in rep.unmerged and all(k.startswith("Person:") for k in rep.unmerged)  # the type's merges
    assert next(v.kind for v in list_versions(graph, 10) if v.version == rep.unmerge_version) == "unmerge"
    after = votes_by_source(graph)
    assert after["d1"] == {(GRENE, "WORKS_AS", "Occupation:nurse"), (GRENE, "LIVES_IN", "Place:hobart")}
    assert after["k1"] == {(GREEN, "LIVES_IN", "Place:bondi"), (GREEN, "WORKS_AS", "Occupation:pilot")}
    assert "m1" not in after and _aliases(graph, GREEN) == ["jacob green"]
    check_hash(graph)
    unmerged_state = _state(graph)
    # the graph is what staging and resolving the remaining evidence from scratch gives
    reset(graph)
    _resolved(graph, [t for t in MOTIVATED if t.source != "m1"] + _background())
    promote_by_quorum(graph, quorum=1)
    assert {k: v for k, v in unmerged_state.items() if k != "promoted"} == \
        {k: v for k, v in _state(graph).items() if k != "promoted"}
    assert unmerged_state["promoted"] == _state(graph)["promoted"]


def test_rollback_of_the_unmerge_restores_the_merged_promoted_graph(graph):
    _resolved(graph, MOTIVATED + _background())
    promote_by_quorum(graph, quorum=1)
    rep = forget(graph, sources=["m1"], quorum=1)  # the store-level forget: unmerges, does not re-resolve
    assert GRENE in rep.unmerged and rep.unmerge_version == rep.version + 1
    merged = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph, rep.version)}
    now = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph)}
    assert (GREEN, "WORKS_AS", "Occupation:nurse") in merged and (GRENE, "WORKS_AS", "Occupation:nurse") not in merged
    assert (GRENE, "WORKS_AS", "Occupation:nurse") in now and (GREEN, "WORKS_AS", "Occupation:nurse") not in now
    assert (GREEN, "LIVES_IN", "Place:bondi") in now  # k1's facts stay
    h_unmerged = check_hash(graph)
    rb = rollback(graph, rep.version)
    assert {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph)} == merged
    assert rb.hash == check_hash(graph) == current_state_hash(graph, rep.version) != h_unmerged


def current_state_hash(graph, version: int) -> str:
    return next(v.hash for v in list_versions(graph, 50) if v.version == version)


def test_forgetting_another_document_leaves_the_merge(graph):
    kg = Engine(graph, schema=SCHEMA)
    _resolved(graph, MOTIVATED + EXTRA + _background())
    assert _merged(graph).get(GRENE) == GREEN
    before = _merged(graph)
    # a document about other people: the jacob merge is re-decided with its type's, and stays
    other = next(s for s in votes_by_source(graph) if s.startswith("r"))
    rep = kg.forget(sources=[other])
    assert GRENE not in rep.merges_touched and GRENE in rep.unmerged and _merged(graph).get(GRENE) == GREEN
    assert {k: v for k, v in _merged(graph).items() if k.startswith("Person:jacob")} == \
        {k: v for k, v in before.items() if k.startswith("Person:jacob")}
    # a document about jacob green that did not motivate the merge: re-decided, and merged again
    rep = kg.forget(sources=["k2"])
    assert GRENE in rep.merges_touched and GRENE in rep.unmerged and rep.remerge_versions
    assert _merged(graph).get(GRENE) == GREEN
    after = votes_by_source(graph)
    assert after["d1"] == {(GREEN, "WORKS_AS", "Occupation:nurse"), (GREEN, "LIVES_IN", "Place:hobart")}
    assert "k2" not in after and "jacob grene" in _aliases(graph, GREEN)
    check_hash(graph)


def test_a_hand_merge_is_not_undone_by_a_forget(graph):
    stage(graph, MOTIVATED + _background(), schema=SCHEMA)
    merge_entities(graph, GREEN, GRENE)  # kgr merge: a person's decision
    rep = Engine(graph, schema=SCHEMA).forget(sources=["m1"], quorum=1)
    assert rep.merges_touched == [] and rep.unmerge_version is None and rep.remerge_versions == []
    assert _merged(graph) == {GRENE: GREEN}
    assert votes_by_source(graph)["d1"] == {(GREEN, "WORKS_AS", "Occupation:nurse"), (GREEN, "LIVES_IN", "Place:hobart")}


def _state(graph) -> dict:
    from tests.ingest.test_reingest import _state as state

    return state(graph)


def test_a_forget_and_its_unmerge_commit_together_or_not_at_all(graph, monkeypatch):
    import kgr.store.unmerge as unmerge_module
    from kgr.store.unmerge import resolution_due

    _resolved(graph, MOTIVATED + _background())
    promote_by_quorum(graph, quorum=1)
    before, head = _state(graph), list_versions(graph, 1)[0].version

    def crash(*args, **kwargs):
        raise RuntimeError("the process died inside the unmerge")

    monkeypatch.setattr(unmerge_module, "move_sources_many", crash)
    with pytest.raises(RuntimeError, match="died inside the unmerge"):
        forget(graph, sources=["m1"], quorum=1)
    # nothing of the forget landed: m1's votes, the merge and the version number are as they were
    assert _state(graph) == before and _merged(graph).get(GRENE) == GREEN
    assert list_versions(graph, 1)[0].version == head and "m1" in votes_by_source(graph)
    assert resolution_due(graph) == []
    monkeypatch.undo()
    rep = forget(graph, sources=["m1"], quorum=1)  # the store-level forget: unmerges, leaves the type due
    assert GRENE in rep.unmerged and resolution_due(graph) == ["Person"]
    res = resolve(graph, SCHEMA, etype="Person", apply_splits=False)
    assert resolution_due(graph) == [] and res.version is not None  # the other merges are made again


def test_a_resolution_an_interrupted_forget_left_due_is_made_by_the_next_one(graph):
    from kgr.store.unmerge import resolution_due

    _resolved(graph, MOTIVATED + EXTRA + _background())
    merged = _merged(graph)
    assert merged.get(GRENE) == GREEN
    forget(graph, sources=["k2"], quorum=1)  # the process stops here: unmerged, not yet re-resolved
    assert resolution_due(graph) == ["Person"] and not _merged(graph)
    other = next(s for s in votes_by_source(graph) if s.startswith("r"))
    rep = Engine(graph, schema=SCHEMA).forget(sources=[other])  # a later forget pays the debt too
    assert resolution_due(graph) == [] and rep.remerge_versions
    assert _merged(graph).get(GRENE) == GREEN


def test_a_promoted_edge_the_unmerge_leaves_below_quorum_is_retired_as_a_forget_retires_one(graph):
    """jacob green WORKS_AS nurse is promoted on two votes, m1's and d1's (d1's came with the merge of
    jacob grene). Forgetting k2 touches jacob green, so every Person merge is undone: d1's vote goes
    back to jacob grene and the edge keeps one vote, which a fresh staging would not promote under
    quorum 2. The unmerge retires it (held, a retract decision) like a forget below quorum would;
    the content hash follows."""
    reset(graph)
    _resolved(graph, MOTIVATED + EXTRA + _background())
    assert _merged(graph).get(GRENE) == GREEN
    promote_by_quorum(graph, quorum=2)
    nurse = {e.key: e for e in promoted_edges(graph)
             if (e.subject_key, e.relation, e.object_key) == (GREEN, "WORKS_AS", entity_key("Occupation", "nurse"))}
    assert len(nurse) == 1
    key = next(iter(nurse))
    rep = forget(graph, sources=["k2"], quorum=2)
    assert rep.unmerge_version == rep.version + 1 and GRENE in rep.unmerged
    assert key not in {e.key for e in promoted_edges(graph)}
    row = graph.driver.execute_query(
        "MATCH (:Entity {key: $s})-[p:PENDING_REL {key: $k}]->() RETURN p.status AS st, p.votes AS v, p.sources AS src",
        s=GREEN, k=key).records[0]
    assert (row["st"], row["v"], row["src"]) == ("held", 1, ["m1"])
    decided = graph.driver.execute_query(
        "MATCH (d:Decision {edge_key: $k, version: $v}) RETURN d.action AS a, d.reason AS r", k=key,
        v=rep.unmerge_version).records
    assert [d["a"] for d in decided if d["a"] == "retract"] == ["retract"]
    assert any("quorum 2" in d["r"] for d in decided)
    check_hash(graph)
    # with quorum 1 the same history keeps it: the rule is the forget's own quorum
    reset(graph)
    _resolved(graph, MOTIVATED + EXTRA + _background())
    promote_by_quorum(graph, quorum=2)
    forget(graph, sources=["k2"], quorum=1)
    assert key in {e.key for e in promoted_edges(graph)}


def test_a_promoted_edge_that_moves_whole_to_a_dropped_entity_below_quorum_is_retired(graph):
    """ann lee WORKS_AS pilot is promoted on two votes, one from each of two recorded merges (ann le's
    d1, an lee's d2), none of its own. Forgetting k1 (ann lee's only other vote) undoes both merges:
    the first drop to move takes its vote back (the edge keeps the other at ann lee), then the second
    takes the edge's last vote, so the promoted edge moves whole to it with one vote. It is retired
    there, as it would be at ann lee."""
    recorded_merge = functools.partial(_recorded_merge, graph)
    reset(graph)
    ann, ann_le, an_lee = (entity_key("Person", n) for n in ("ann lee", "ann le", "an lee"))
    stage(graph, [T("ann lee", "LIVES_IN", "bondi", "Place", "k1"), T("ann le", "WORKS_AS", "pilot", "Occupation", "d1"),
                  T("an lee", "WORKS_AS", "pilot", "Occupation", "d2")], schema=SCHEMA)
    recorded_merge(ann, ann_le)
    recorded_merge(ann, an_lee)
    promote_by_quorum(graph, quorum=2)
    assert [(e.subject_key, e.votes) for e in promoted_edges(graph)] == [(ann, 2)]
    rep = forget(graph, sources=["k1"], quorum=2)
    assert sorted(rep.unmerged) == sorted([ann_le, an_lee])
    assert promoted_edges(graph) == []
    rows = graph.driver.execute_query(
        "MATCH (s:Entity)-[p:PENDING_REL {type: 'WORKS_AS'}]->() RETURN s.key AS s, p.status AS st, p.sources AS src "
        "ORDER BY s").records
    # the drop that took the last vote received the promoted edge, now retired (held); the other's is pending
    assert [(r["s"], r["src"]) for r in rows] == [(an_lee, ["d2"]), (ann_le, ["d1"])]
    assert sorted(r["st"] for r in rows) == ["held", "pending"]
    check_hash(graph)


def test_a_vote_staged_under_a_merged_away_name_goes_back_to_that_name_on_unmerge(graph):
    """After ann le is merged into ann lee, d3 names "Ann Le": staging follows the merge and the vote
    lands on ann lee (which gains the alias), but d3 and the alias are recorded as ann le's, so when a
    forget undoes the merge both go back to ann le — where a fresh staging of the remaining sources
    puts them."""
    reset(graph)
    ann, ann_le = entity_key("Person", "ann lee"), entity_key("Person", "ann le")
    stage(graph, [T("ann lee", "LIVES_IN", "bondi", "Place", "k1"), T("ann lee", "LIVES_IN", "kiama", "Place", "k2"),
                  T("ann le", "WORKS_AS", "pilot", "Occupation", "d1")], schema=SCHEMA)
    _recorded_merge(graph, ann, ann_le)
    stage(graph, [T("Ann Le", "WORKS_AS", "nurse", "Occupation", "d3")], schema=SCHEMA)  # a new surface form
    assert votes_by_source(graph)["d3"] == {(ann, "WORKS_AS", entity_key("Occupation", "nurse"))}
    assert sorted(graph.driver.execute_query("MATCH (e:Entity {key: $k}) RETURN e.merged_sources AS m",
                                             k=ann_le).records[0]["m"]) == ["d1", "d3"]
    forget(graph, sources=["k2"])  # touches ann lee: the merge is undone
    assert ann_le not in _merged(graph)
    got = votes_by_source(graph)
    assert got["d3"] == {(ann_le, "WORKS_AS", entity_key("Occupation", "nurse"))}
    assert got["d1"] == {(ann_le, "WORKS_AS", entity_key("Occupation", "pilot"))}
    assert got["k1"] == {(ann, "LIVES_IN", entity_key("Place", "bondi"))}
    # the surface form d3 used is ann le's alias again, not ann lee's (as a fresh staging has it)
    assert "Ann Le" in _aliases(graph, ann_le) and "Ann Le" not in _aliases(graph, ann)
    check_hash(graph)
