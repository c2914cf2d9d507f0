"""The merges of ``kgr resolve`` folded per kept entity into one wave (:mod:`kgr.store.merge_wave`,
:mod:`kgr.store.merge_fold`) leave exactly the graph the same merges leave one by one
(:func:`kgr.store.merge.merge_in_tx`, in the order the wave applies them: the folded merges in the
order given, then the deferred ones), on the real Neo4j.

Compared: every node's and relationship's properties (entities with aliases and merge marks, every
PENDING_REL and promoted edge with its vote lists in order, every (:Vote) node with its FROM link,
MENTIONS, versions and the content hash), decisions without their random id and time.
"""

from __future__ import annotations

import json
import os
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgr.store.merge_wave as merge_wave
from kgr.engine import promote_by_quorum
from kgr.model.triples import TripleAssertion
from kgr.store.admin import reset
from kgr.store.merge import merge_entities, merge_in_tx
from kgr.store.merge_wave import merge_waves
from kgr.store.provenance import ChunkMark, commit_chunks
from kgr.store.staging import MAX_INLINE_VOTES, stage
from kgr.store.versions import (add_terms, close_version, create_snapshot, current_state, full_hash, open_version,
                                promoted_edges, rollback)

pytestmark = pytest.mark.neo4j

NOW = 1_800_000_000.0
CHUNKS = 100


def T(s: str, o: str, src: str, r: str = "KNOWS", conf: float = 0.9) -> TripleAssertion:
    return TripleAssertion(subject=s, subject_type="Person", relation=r, object=o, object_type="Person",
                           source=src, confidence=conf)


def P(name: str) -> str:
    return f"Person:{name}"


def _votes(s: str, o: str, sources) -> list[TripleAssertion]:
    """One vote per source (an int i: chunk ci), confidences 0.5-0.89 fixed by the vote."""
    return [T(s, o, f"c{i}" if isinstance(i, int) else i, conf=0.5 + zlib.crc32(f"{s}|{o}|{i}".encode()) % 40 / 100)
            for i in sources]


def _build(graph, triples: list[TripleAssertion], *, quorum: int, mentions: dict[str, list[str]],
           merged_before: list[tuple[str, str]] = ()) -> None:
    """A fresh graph: chunks c0..c99, the votes, a quorum round, MENTIONS; each ``merged_before`` pair
    merged and rolled back (DROP stays merged into KEEP, its promoted edges restored on it)."""
    reset(graph)
    graph.driver.execute_query("UNWIND range(0, $n - 1) AS i CREATE (:Chunk {id: 'c' + i, text: 't'})", n=CHUNKS)
    stage(graph, triples, now=NOW, batch_size=17)
    promote_by_quorum(graph, quorum=quorum, now=NOW)
    marks = [ChunkMark(chunk_id=c, entity_keys=keys, extractor="test") for c, keys in sorted(mentions.items())]
    if marks:
        commit_chunks(graph, marks, now=NOW)
    for i, (keep, drop) in enumerate(merged_before):
        create_snapshot(graph, f"before-{i}", now=NOW)
        merge_entities(graph, keep, drop, now=NOW)
        rollback(graph, f"before-{i}", now=NOW)


def _reason(keep: str, drop: str) -> str:
    return f"resolve: merged {drop} into {keep}"


def _version(graph, body) -> None:
    """``body(tx, version)`` -> (created, retired) inside one version, as ``kgr resolve`` closes it."""
    def unit(tx):
        version, old_hash = open_version(tx)
        created, retired = body(tx, version)
        close_version(tx, version, add_terms(old_hash, added=created, removed=retired), kind="resolve", now=NOW,
                      note="merges", promoted=len(created), retired=len(retired))
    graph.write_unit(unit)


def _waved(graph, pairs) -> None:
    _version(graph, lambda tx, v: merge_waves(tx, pairs, version=v, now=NOW,
                                              reasons={p: _reason(*p) for p in pairs}))


def _one_by_one(graph, pairs) -> None:
    def body(tx, version):
        created, retired = [], []
        for keep, drop in pairs:
            _, c, r = merge_in_tx(tx, keep, drop, version=version, now=NOW, reason=_reason(keep, drop))
            created += c
            retired += r
        return created, retired
    _version(graph, body)


def _order(graph, pairs) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The wave's order, by its rule read off the graph: the pairs whose DROP has no edge to another
    entity of the wave (except its KEEP), as given, then the others (deferred), as given."""
    members = {k for p in pairs for k in p}
    late = []
    for keep, drop in pairs:
        near = {r["x"] for r in graph.driver.execute_query(
            "MATCH (:Entity {key: $d})-[:PENDING_REL]-(x:Entity) RETURN x.key AS x", d=drop).records}
        if near & (members - {keep, drop}):
            late.append((keep, drop))
    return [p for p in pairs if p not in late] + late, late


#: Values two builds of one graph do not share: a staging transaction's random ids, the store's creation
#: time, a promotion round's timing, the random id of the decision a promoted edge names.
_UNSTABLE = {"created_tx", "touched_tx", "created_at", "decide_ms", "decision"}


def _digest(graph) -> dict:
    """Everything in the graph, as sorted JSON lines (decisions without their random id and time)."""
    def clean(labels, props):
        drop = _UNSTABLE | ({"id", "at"} if "Decision" in labels else set())
        return {k: v for k, v in props.items() if k not in drop}

    q = graph.driver.execute_query
    nodes = sorted(json.dumps([sorted(r["labels"]), clean(r["labels"], r["props"])], sort_keys=True)
                   for r in q("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props").records)
    rels = sorted(json.dumps([r["a"], r["t"], clean([], r["props"]), r["b"]], sort_keys=True)
                  for r in q("MATCH (a)-[r]->(b) RETURN coalesce(a.key, a.id, a.name) AS a, type(r) AS t, "
                             "properties(r) AS props, coalesce(b.key, b.id, b.name) AS b").records)
    return {"nodes": nodes, "rels": rels, "hash": current_state(graph)[1],
            "full_hash": full_hash(e.key for e in promoted_edges(graph))}


def _assert_same(a: dict, b: dict) -> None:
    assert a["hash"] == b["hash"] == a["full_hash"] == b["full_hash"]
    for part in ("nodes", "rels"):
        only_a = sorted(set(a[part]) - set(b[part]))
        only_b = sorted(set(b[part]) - set(a[part]))
        assert (only_a, only_b) == ([], []), (part, "\n".join(["wave:", *only_a, "one by one:", *only_b]))
        assert a[part] == b[part], part  # duplicates too


def _both(graph, build, pairs) -> tuple[dict, int]:
    """The digest after the wave and after the merges one by one (each on a fresh graph); how many deferred."""
    build()
    order, late = _order(graph, pairs)
    _waved(graph, pairs)
    waved = _digest(graph)
    build()
    _one_by_one(graph, order)
    _assert_same(waved, _digest(graph))
    return waved, len(late)


def _cluster_graph() -> tuple[list[TripleAssertion], dict[str, list[str]]]:
    """Two clusters: KEEP k with drops d1, d2, d3 and KEEP m with drops n1, n2. Shared targets (x, z on
    several drops, voted on both sides), an edge past the inline limit on KEEP and on two drops (Vote
    nodes re-keyed, deleted, spilled), incoming edges, edges between a drop and its KEEP both ways, a
    loop on a drop, promoted edges on drops and KEEP (quorum 2), MENTIONS of several drops by one chunk."""
    assert MAX_INLINE_VOTES == 32
    t = []
    t += _votes("k", "x", ["s1", "s2"]) + _votes("d1", "x", ["s2", "s3"]) + _votes("d2", "x", ["s3", "s4", "s5"])
    t += _votes("d3", "x", range(0, 40))                    # 32 inline + 8 nodes onto k's 2 + d1's + d2's
    t += _votes("k", "y", range(0, 30)) + _votes("d1", "y", range(20, 60)) + _votes("d2", "y", range(50, 90))
    t += _votes("d1", "z", ["s6", "s7"]) + _votes("d2", "z", ["s7", "s8"])   # promoted on both, not on k
    t += _votes("y", "d2", ["s9"]) + _votes("y", "k", ["s9", "s10"]) + _votes("y", "d1", ["s10", "s11"])
    t += _votes("d1", "k", ["s12", "s13"]) + _votes("k", "d3", ["s14"]) + _votes("d2", "d2", ["s15", "s16"])
    t += _votes("d3", "w", ["s17"]) + _votes("d2", "w", ["s18", "s19"])
    t += _votes("n1", "x", ["s20", "s21"]) + _votes("n2", "x", range(60, 100)) + _votes("m", "x", ["s22"])
    t += _votes("n1", "y", ["s23"]) + _votes("n2", "m", ["s24", "s25"]) + _votes("m", "w", ["s26", "s27"])
    t += _votes("n2", "w", ["s27", "s28"])
    t += [T("d1", "acme", "s29", r="WORKS_AT"), T("d2", "acme", "s29", r="WORKS_AT"),
          T("d2", "acme", "s30", r="WORKS_AT")]
    mentions = {"c1": [P("d1"), P("d2")], "c2": [P("d2"), P("k")], "c3": [P("n1")], "c4": [P("d3"), P("d1")],
                "c5": [P("n2"), P("n1"), P("m")]}
    return t, mentions


CLUSTERS = [(P("k"), P("d1")), (P("k"), P("d2")), (P("m"), P("n1")), (P("k"), P("d3")), (P("m"), P("n2"))]


def test_clusters_folded_in_one_wave_equal_the_merges_one_by_one(graph, monkeypatch):
    triples, mentions = _cluster_graph()
    singles = []
    real = merge_wave.merge_in_tx
    monkeypatch.setattr(merge_wave, "merge_in_tx", lambda tx, k, d, **kw: singles.append((k, d)) or real(tx, k, d, **kw))
    # d3 was merged into k once and rolled back: merged into k already, its promoted edges back on it
    digest, late = _both(graph, lambda: _build(graph, triples, quorum=2, mentions=mentions,
                                               merged_before=[(P("k"), P("d3"))]), CLUSTERS)
    assert late == 0 and singles == []  # all five in the wave
    text = "\n".join(digest["nodes"] + digest["rels"])
    for outcome in ("already_promoted", "promoted_only", "self_loop", "united", "moved"):  # every kind was met
        assert f'\\"{outcome}\\"' in text, outcome


def test_an_edge_between_two_drops_of_one_keep_defers_both(graph, monkeypatch):
    triples, mentions = _cluster_graph()
    triples += _votes("d1", "d2", ["s40", "s41"]) + _votes("d3", "n1", ["s42"])
    singles = []
    real = merge_wave.merge_in_tx
    monkeypatch.setattr(merge_wave, "merge_in_tx", lambda tx, k, d, **kw: singles.append((k, d)) or real(tx, k, d, **kw))
    _, late = _both(graph, lambda: _build(graph, triples, quorum=2, mentions=mentions), CLUSTERS)
    assert late == 4 and sorted(singles) == sorted([(P("k"), P("d1")), (P("k"), P("d2")), (P("k"), P("d3")),
                                                    (P("m"), P("n1"))])


def test_a_merge_chain_within_the_pairs_is_merged_one_by_one(graph):
    triples = _votes("a", "x", ["s1", "s2"]) + _votes("b", "x", ["s2", "s3"]) + _votes("c", "x", ["s4"])
    _both(graph, lambda: _build(graph, triples, quorum=2, mentions={}), [(P("b"), P("c")), (P("a"), P("b"))])


NAMES = ["k", "d1", "d2", "d3", "m", "n1", "n2", "x", "y", "z", "w"]
#: Edges drawn at random, biased away from the drops (an edge between two clusters' entities defers both).
ENDS = [*NAMES, "k", "m", "x", "y", "z", "w"]


@st.composite
def _cases(draw):
    """A random graph over NAMES (k and m keep, d* and n* drop; up to 40 votes an edge, past the inline
    limit), a random merge order, a quorum (none, some or most edges promoted), chunks mentioning
    entities, and drops merged once before (and rolled back)."""
    edges = draw(st.lists(st.tuples(st.sampled_from(ENDS), st.sampled_from(ENDS), st.sampled_from(["KNOWS", "LIKES"]),
                                    st.integers(0, 60), st.integers(1, 40)), min_size=3, max_size=14))
    triples = [T(s, o, f"c{(start + i) % CHUNKS}", r=r, conf=0.5 + ((start + i) % 5) / 10)
               for s, o, r, start, n in edges for i in range(n)]
    triples += [T(n, "hub", f"h-{n}", r="LISTED_IN") for n in NAMES]  # every entity exists
    pairs = draw(st.permutations([(P("k"), P("d1")), (P("k"), P("d2")), (P("k"), P("d3")),
                                  (P("m"), P("n1")), (P("m"), P("n2"))]))
    quorum = draw(st.sampled_from([2, 3, 100]))
    mentions = draw(st.dictionaries(st.sampled_from([f"c{i}" for i in range(6)]),
                                    st.lists(st.sampled_from([P(n) for n in NAMES]), min_size=1, max_size=3, unique=True),
                                    max_size=4))
    before = draw(st.sampled_from([[], [(P("k"), P("d2"))], [(P("m"), P("n1")), (P("k"), P("d3"))]]))
    return triples, pairs, quorum, mentions, before


@settings(max_examples=int(os.environ.get("KGR_FOLD_EXAMPLES", "6")), deadline=None,  # 120 pass: a few minutes
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_cases())
def test_random_clusters_folded_equal_the_merges_one_by_one(graph, case):
    triples, pairs, quorum, mentions, before = case
    _both(graph, lambda: _build(graph, triples, quorum=quorum, mentions=mentions, merged_before=before), pairs)
