"""Per-vote fields travel with their votes (issue 31: forget, merge), whatever fields a writer adds."""

from __future__ import annotations

import pytest

from kgr.model.canonical import edge_key
from kgr.model.triples import TripleAssertion
from kgr.store.forget import forget
import kgr.store.merge as merge
from kgr.store import split
from kgr.store.merge import merge_entities
from kgr.store.staging import MAX_INLINE_VOTES, stage
from kgr.store.vote_lists import inline_votes, overflow_votes, per_vote_lists, to_lists


def test_inline_votes_are_records_of_every_parallel_list():
    props = {"sources": ["a", "b"], "source_confidence": [0.5, 0.7], "source_at": [1.0, 2.0],
             "source_span": ["0:5", "6:9"], "source_other": ["too", "short", "list"], "votes": 2}
    assert per_vote_lists(props) == ["sources", "source_confidence", "source_at", "source_span"]
    votes = inline_votes(props)
    assert votes == [{"source": "a", "confidence": 0.5, "at": 1.0, "span": "0:5"},
                     {"source": "b", "confidence": 0.7, "at": 2.0, "span": "6:9"}]
    assert to_lists(votes, per_vote_lists(props)) == {k: props[k] for k in per_vote_lists(props)}
    # a vote without a field gets the list's blank (Neo4j lists hold no nulls)
    assert to_lists([*votes, {"source": "c", "confidence": 0.1, "at": 3.0}], ["sources", "source_span"]) == \
        {"sources": ["a", "b", "c"], "source_span": ["0:5", "6:9", ""]}


def test_overflow_votes_are_ordered_by_time_then_source_and_keep_their_node_id():
    nodes = [{"id": "k|b", "source": "b", "at": 2.0, "span": "1:2", "created_tx": "t"},
             {"id": "k|a", "source": "a", "at": 2.0}, {"id": "k|c", "source": "c", "at": 1.0}]
    assert [(v["source"], v["vote_id"]) for v in overflow_votes(nodes)] == [("c", "k|c"), ("a", "k|a"), ("b", "k|b")]
    assert overflow_votes(nodes)[2] == {"source": "b", "at": 2.0, "span": "1:2", "vote_id": "k|b"}


def T(s, o, src):
    return TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                           source=src, confidence=0.5)


def _add_spans(graph) -> None:
    """A per-vote field a later writer adds: inline ``source_span`` parallel to ``sources``, ``span`` on Vote nodes."""
    graph.driver.execute_query("MATCH ()-[p:PENDING_REL]->() SET p.source_span = [s IN p.sources | 'span-' + s]",
                               database_=graph.database)
    graph.driver.execute_query("MATCH (v:Vote) SET v.span = 'span-' + v.source", database_=graph.database)


def _spans(graph, key: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    r = graph.driver.execute_query(
        "MATCH ()-[p:PENDING_REL {key: $k}]->() OPTIONAL MATCH (v:Vote) WHERE v.id STARTS WITH $k + '|' "
        "RETURN p.sources AS s, p.source_span AS span, collect([v.source, v.span]) AS over",
        {"k": key}, database_=graph.database).records[0]
    return list(zip(r["s"], r["span"])), sorted(tuple(x) for x in r["over"] if x[0] is not None)


@pytest.mark.neo4j
def test_forget_and_merge_carry_an_added_per_vote_field_with_each_vote(graph):
    n = MAX_INLINE_VOTES + 3
    stage(graph, [T("Ada", "Bob", f"s{i}") for i in range(n)])  # 32 inline, 3 overflow
    stage(graph, [T("Ada", "Bobby", f"s{i}") for i in range(2, 4)] + [T("Ada", "Bobby", "x")])
    _add_spans(graph)
    key = edge_key("Person:ada", "KNOWS", "Person:bob")
    forget(graph, sources=["s0", "s1"])  # two inline votes go: two overflow votes move inline, with their spans
    inline, over = _spans(graph, key)
    assert len(inline) == MAX_INLINE_VOTES and all(span == f"span-{s}" for s, span in inline)
    assert over == [(f"s{n - 1}", f"span-s{n - 1}")]
    merge_entities(graph, "Person:bob", "Person:bobby")  # x joins the full edge: a new overflow vote with its span
    inline, over = _spans(graph, key)
    assert all(span == f"span-{s}" for s, span in inline) and len(inline) == MAX_INLINE_VOTES
    assert over == [(f"s{n - 1}", f"span-s{n - 1}"), ("x", "span-x")]


def _edge(key, s, o, votes, overflow=()):
    props = {"sources": [v[0] for v in votes], "source_confidence": [v[1] for v in votes],
             "source_at": [v[2] for v in votes], "source_span": [v[3] for v in votes], "status": "pending"}
    return {"key": key, "relation": "KNOWS", "s_key": s, "o_key": o, "props": props,
            "overflow": [{"id": f"{key}|{v[0]}", "source": v[0], "confidence": v[1], "at": v[2], "span": v[3]}
                         for v in overflow]}


def test_merge_and_split_rows_move_each_vote_with_its_span():
    old = _edge("A|KNOWS|C", "A", "C", [("s1", 0.9, 1.0, "0:5"), ("s2", 0.8, 2.0, "6:9")],
                overflow=[("s3", 0.7, 3.0, "10:12")])
    old.update(new_s="B", new_o="C")
    target = _edge("B|KNOWS|C", "B", "C", [("s9", 0.5, 0.5, "1:2")])
    row = merge._unite(old, target, "B|KNOWS|C", "B", "A", 7, "test")
    assert row["props"]["sources"] == ["s9", "s1", "s2", "s3"]  # the overflow vote came inline (room left)
    assert row["props"]["source_span"] == ["1:2", "0:5", "6:9", "10:12"]
    assert row["tombstone"]["source_span"] == []
    # split: s1 moves, s2 and s3 stay; the moving vote keeps its span, the staying ones keep theirs
    old = _edge("A|KNOWS|C", "A", "C", [("s1", 0.9, 1.0, "0:5"), ("s2", 0.8, 2.0, "6:9")],
                overflow=[("s3", 0.7, 3.0, "10:12")])
    old.update(new_s="B", new_o="C", new_key="B|KNOWS|C")
    votes = merge._votes_of(old)
    r = split._row(old, None, [v for v in votes if v["source"] == "s1"], [v for v in votes if v["source"] != "s1"],
                   "A", "B", 7, "test")
    assert r["props"]["sources"] == ["s1"] and r["props"]["source_span"] == ["0:5"]
    assert r["stay"]["sources"] == ["s2", "s3"] and r["stay"]["source_span"] == ["6:9", "10:12"]
