"""``row_dict``: the fast decoding of a record gives exactly what ``Record.data()`` gives."""

import neo4j
import neo4j.time
from neo4j.graph import Graph, Node

from kgr.store.connection import row_dict


def test_plain_values_decode_as_data_does():
    rec = neo4j.Record({"key": "k", "n": 3, "p": 0.5, "ok": True, "none": None,
                        "props": {"sources": ["a", "b"], "source_at": [1.0, 2.0], "nested": {"x": [1, [2]]}},
                        "overflow": [{"source": "c", "confidence": 0.9}]})
    assert row_dict(rec) == rec.data()
    assert list(row_dict(rec)) == list(rec.keys())


def test_nodes_and_temporal_values_take_the_drivers_path():
    g = Graph()
    node = Node(g, "4:x:1", 1, ["Entity"], {"key": "Person:a"})
    day = neo4j.time.Date(2020, 1, 2)
    rec = neo4j.Record({"e": node, "in_list": [node], "in_map": {"n": node}, "d": day})
    out = row_dict(rec)
    assert out == rec.data()
    assert out["e"] == {"key": "Person:a"} and out["in_list"] == [{"key": "Person:a"}]
    assert out["d"] == day
