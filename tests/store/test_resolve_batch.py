"""Batched resolution writes on the real Neo4j: the splits of ``kgr resolve`` applied in waves
(:func:`kgr.store.split.move_sources_many`) and its merges in waves (:mod:`kgr.store.merge_wave`) leave
the same graph as the same operations applied one by one, and a rollback restores the promoted graph."""

from __future__ import annotations

import json

import pytest

from kgr.engine import promote_by_quorum
from kgr.model.canonical import entity_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint, reset
from kgr.store.merge import merge_in_tx
from kgr.store.resolve import apply, resolve
from kgr.store.split import Move, _waves, create_split_entity, move_sources
from kgr.store.staging import stage
from kgr.store.versions import (add_terms, close_version, current_state, full_hash, open_version, promoted_edges,
                                rollback)
from tests.support.people import SCHEMA, people_records, person_triples

pytestmark = pytest.mark.neo4j

NOW = 1_800_000_000.0


def _triples() -> list[TripleAssertion]:
    """People with typos (merges) and namesakes with different birth dates (splits; three people named
    "jacob green"), two of whom know each other (an edge that merges and splits both rewrite)."""
    recs = people_records(20, 3, seed=5)
    out = [t for r in recs for t in person_triples(r)]
    for i, (name, dob) in enumerate([("jacob green", "1950-03-01"), ("jacob green", "1962-07-11"),
                                     ("jacob green", "1999-04-04"),
                                     ("mia walsh", "1941-01-02"), ("mia walsh", "1977-05-06"),
                                     ("noah okafor", "1933-09-09"), ("noah okafor", "1988-12-12")]):
        for k in range(3):
            src = f"n{i}-{k}"
            out += [TripleAssertion(subject=name, subject_type="Person", relation="BORN_ON", object=dob,
                                    object_type="Date", source=src, confidence=0.8),
                    TripleAssertion(subject=name, subject_type="Person", relation="LIVES_IN", object="bondi",
                                    object_type="Place", source=src, confidence=0.7)]
    out.append(TripleAssertion(subject="jacob green", subject_type="Person", relation="KNOWS", object="mia walsh",
                               object_type="Person", source="n0-0", confidence=0.9))
    return out


def _stage(graph) -> None:
    reset(graph)
    stage(graph, _triples(), schema=SCHEMA, now=NOW)
    promote_by_quorum(graph, quorum=2)


def _dump(graph) -> dict:
    """Every entity (aliases, merge and split marks), every staged edge at it with all its properties
    and overflow votes, and the promoted edge instances: the rows the writes leave."""
    keys = sorted(r["key"] for r in graph.read("graph_fingerprint") if r["kind"] == "entity")
    edges = graph.write_unit(lambda tx: [e for k in keys for e in tx.run("merge_read_edges", {"drop": k},
                                                                          targets=False)])
    for e in edges:  # a staging transaction's random id is the only value two stagings do not share
        e["props"].pop("created_tx", None)
    rows = sorted(json.dumps(e, sort_keys=True, default=str) for e in edges)
    return {"fingerprint": fingerprint(graph), "edges": rows,
            "promoted": sorted(json.dumps(e.model_dump(), sort_keys=True, default=str) for e in promoted_edges(graph)),
            "hash": current_state(graph)[1]}


def _one_by_one(graph, merges, splits) -> None:
    """The plan applied as before the waves: each split, then each merge, alone, in one version."""
    def unit(tx):
        version, old_hash = open_version(tx)
        created, retired = [], []
        for sp in splits:
            if sp.new_entity:
                create_split_entity(tx, sp.entity, sp.into, version=version, now=NOW)
            m = move_sources(tx, sp.entity, sp.into, sp.sources, version=version, now=NOW,
                             reason=f"resolve: split {len(sp.sources)} sources of {sp.entity} to {sp.into}")
            created += m.created
            retired += m.retired
        for mg in merges:
            _, c, r = merge_in_tx(tx, mg.keep, mg.drop, version=version, now=NOW,
                                  reason=f"resolve: merged {mg.drop} into {mg.keep} (p = {mg.probability:.4f})")
            created += c
            retired += r
        close_version(tx, version, add_terms(old_hash, added=created, removed=retired), kind="resolve", now=NOW,
                      note="one by one", promoted=len(created), retired=len(retired))

    graph.write_unit(unit)


def test_batched_splits_and_merges_equal_them_one_by_one_and_roll_back(graph):
    _stage(graph)
    v0, h0 = current_state(graph)
    promoted0 = [e.model_dump() for e in promoted_edges(graph)]
    plan = resolve(graph, SCHEMA, dry_run=True)
    merges, splits = plan.merges, plan.splits
    assert len(splits) >= 3 and len(merges) >= 10
    # one entity split twice: its two moves must not share a wave (they read and write the same edges)
    assert len({s.entity for s in splits}) < len(splits)
    # the batch path really batches: some wave holds several moves
    moves = [Move(s.entity, s.into, tuple(s.sources), "") for s in splits]
    assert max(len(w) for w in _waves(moves, {})) >= 2

    apply(graph, merges, splits, now=NOW)
    batched = _dump(graph)
    assert batched["hash"] == full_hash(e.key for e in promoted_edges(graph))
    assert batched["hash"] != h0  # promoted edges moved
    rb = rollback(graph, v0)
    assert rb.hash == h0 == current_state(graph)[1]
    assert [e.model_dump() for e in promoted_edges(graph)] == promoted0

    _stage(graph)
    assert current_state(graph)[1] == h0
    _one_by_one(graph, merges, splits)
    single = _dump(graph)
    assert single["fingerprint"] == batched["fingerprint"]
    assert single["hash"] == batched["hash"]
    assert single["promoted"] == batched["promoted"]
    assert len(single["edges"]) == len(batched["edges"])
    for one, many in zip(single["edges"], batched["edges"]):
        assert one == many


def test_split_waves_keep_conflicting_moves_in_order():
    a, b, c = (entity_key("Person", n) for n in ("ann", "bob", "cat"))
    moves = [Move(a, "X#1", ("s1",), ""), Move(b, "Y#1", ("s2",), ""), Move(a, "X#2", ("s3",), ""),
             Move(c, "Z#1", ("s4",), "")]
    # b's entity has an edge to c: c's move may not join b's wave
    waves = _waves(moves, {b: {c}})
    assert [[m.sources for m in w] for w in waves] == [[("s1",), ("s2",)], [("s3",), ("s4",)]]
