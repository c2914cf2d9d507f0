"""Merge and split carry every per-vote field of kgr.store.merge.VOTE_LISTS (no Neo4j: row builders only)."""

from __future__ import annotations

import kgr.store.merge as merge
from kgr.store import split


def _edge(key, s, o, votes, overflow=()):
    props = {"sources": [v[0] for v in votes], "source_confidence": [v[1] for v in votes],
             "source_at": [v[2] for v in votes], "source_span": [v[3] for v in votes], "status": "pending"}
    return {"key": key, "relation": "KNOWS", "s_key": s, "o_key": o, "props": props,
            "overflow": [{"id": f"{key}|{v[0]}", "source": v[0], "confidence": v[1], "at": v[2], "span": v[3]}
                         for v in overflow]}


def test_a_new_per_vote_list_moves_with_its_votes_in_merge_and_split(monkeypatch):
    monkeypatch.setattr(merge, "VOTE_LISTS", {**merge.VOTE_LISTS, "source_span": "span"})
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
