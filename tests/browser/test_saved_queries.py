"""Every saved Browser query (cypher/browser/*.cypher) runs on a real Neo4j and returns the expected rows.

The graph is the history of ``tests/browser/conftest.py`` (staged, promoted, snapshotted, rolled
back and aged with kgr's store functions); expected rows are worked out by hand from it. Each query
runs exactly as a user would paste it into Neo4j Browser (the whole file, comments included).
"""

from __future__ import annotations

import json
import math

import pytest

from kgr.browser import run_query, saved_queries, saved_query
from kgr.errors import KgrNotFound, KgrValidationError

pytestmark = pytest.mark.neo4j

TESTED = {"entity_types", "pending_vs_promoted", "graph", "edge_provenance", "edge_decisions", "snapshot_diff",
          "expired_edges", "review_queue", "document_contribution", "forget_retractions"}


def at(dt) -> float:  # noqa: ANN001 - neo4j.time.DateTime
    """Epoch seconds of a Cypher datetime (None stays None)."""
    return None if dt is None else dt.to_native().timestamp()


def test_every_saved_query_is_tested_here():
    assert {q.name for q in saved_queries()} == TESTED


def test_entity_types(graph, history):
    rows = run_query(graph, "entity_types")
    assert rows == [
        {"type": "Person", "entities": 3, "examples": ["Ada", "Babbage", "Grace"], "mentions": 4},
        {"type": "Organization", "entities": 2, "examples": ["IBM", "US Navy"], "mentions": 3},
        {"type": "Machine", "entities": 1, "examples": ["Difference Engine"], "mentions": 1},
        {"type": "Place", "entities": 1, "examples": ["London"], "mentions": 1},
    ]


def test_pending_vs_promoted(graph, history):
    rows = run_query(graph, "pending_vs_promoted")
    got = [(r["status"], r["subject"], r["relation"], r["object"], r["votes"], r["confidence"], r["sources"],
            r["promoted_in"], r["key"]) for r in rows]
    # held first (Grace's edge, retired by the rollback, has more votes), then promoted, then expired
    assert got == [
        ("held", "Grace", "WORKS_AT", "US Navy", 2, 0.98, ["c3", "src:file"], None, history.grace_navy),
        ("held", "Ada", "BORN_IN", "London", 1, 0.9, ["c1"], None, history.ada_london),
        ("promoted", "Ada", "WORKS_AT", "IBM", 2, 0.98, ["c1", "c2"], 1, history.ada_ibm),
        ("expired", "Babbage", "DESIGNED", "Difference Engine", 1, 0.7, ["c3"], None, history.babbage_engine),
    ]


def test_graph_shows_current_promoted_and_undecided_pending_edges(graph, history):
    rows = run_query(graph, "graph")
    # Record.data() renders a one-hop path as [start node, relationship type, end node]
    got = sorted((start["name"], rel, end["name"]) for start, rel, end in (r["path"] for r in rows))
    assert got == [
        ("Ada", "PENDING_REL", "London"),  # held
        ("Ada", "WORKS_AT", "IBM"),  # promoted in v1, current
        ("Grace", "PENDING_REL", "US Navy"),  # held after the rollback retired its WORKS_AT
    ]


def test_edge_provenance_follows_votes_to_chunks_and_documents(graph, history):
    rows = run_query(graph, "edge_provenance", {"key": history.grace_navy})
    assert [(r["subject"], r["relation"], r["object"], r["status"]) for r in rows] == [
        ("Grace", "WORKS_AT", "US Navy", "held")] * 2
    assert [(r["source"], r["confidence"], at(r["voted_at"]), r["chunk"], r["text"], r["document"], r["document_id"])
            for r in rows] == [
        ("c3", 0.9, history.T2, 0, history.texts["c3"], "docs/navy.txt", "d2"),
        ("src:file", 0.8, history.T2, None, None, None, None),  # a bare source: no chunk to follow
    ]
    rows = run_query(graph, "edge_provenance", {"key": history.ada_ibm})
    assert [(r["source"], r["chunk"], r["document"]) for r in rows] == [("c1", 0, "docs/ada.txt"),
                                                                        ("c2", 1, "docs/ada.txt")]
    assert run_query(graph, "edge_provenance", {"key": "no-such-key"}) == []


def test_edge_decisions_explain_an_edge(graph, history):
    rows = run_query(graph, "edge_decisions", {"key": history.grace_navy})
    assert [(r["version"], r["action"], r["reason"], r["version_kind"], at(r["decided_at"])) for r in rows] == [
        (2, "promote", "votes 2 >= quorum 2", "promotion", history.T2 + 60),
        (3, "retire", "rollback to version 1", "rollback", history.T2 + 120),
    ]
    assert json.loads(rows[0]["inputs"]) == {"votes": 2, "quorum": 2, "confidence": pytest.approx(0.98)}
    assert json.loads(rows[1]["inputs"]) == {"rollback_to": 1}

    rows = run_query(graph, "edge_decisions", {"key": history.babbage_engine})
    assert [(r["version"], r["action"], r["reason"], at(r["decided_at"])) for r in rows] == [
        (1, "hold", "votes 1 < quorum 2", history.T1 + 60),  # not decided again on unchanged evidence
        (3, "expire", "no new vote for 35.0 days (ttl 30.0)", history.T_AGE),  # aged at version 3
    ]


@pytest.mark.parametrize(("base", "target", "expected"), [
    ("A", "B", [("added", 1, 2)]),
    ("B", "C", [("removed", 2, 3)]),
    ("A", "C", []),  # the rollback restored A's edge set exactly
    ("B", "current", [("removed", 2, 3)]),
    ("1", "2", [("added", 1, 2)]),  # version numbers as text, as typed in :param
    (2, 1, [("removed", 2, 1)]),  # and as integers
    ("nope", "B", []),  # an unknown snapshot gives no rows, not "everything was added"
])
def test_snapshot_diff(graph, history, base, target, expected):
    rows = run_query(graph, "snapshot_diff", {"base": base, "target": target})
    assert [(r["change"], r["base_version"], r["target_version"]) for r in rows] == expected
    for r in rows:  # the only edge that ever changed after A
        assert (r["subject"], r["relation"], r["object"], r["key"]) == ("Grace", "WORKS_AT", "US Navy",
                                                                        history.grace_navy)


def test_expired_edges(graph, history):
    rows = run_query(graph, "expired_edges")
    assert len(rows) == 1
    r = rows[0]
    assert (r["subject"], r["relation"], r["object"], r["votes"], r["key"]) == (
        "Babbage", "DESIGNED", "Difference Engine", 1, history.babbage_engine)
    assert r["weight"] == pytest.approx(round(0.7 * math.exp(-0.1 * 35), 4))
    assert r["reason"] == "no new vote for 35.0 days (ttl 30.0)"
    assert (at(r["last_vote"]), at(r["expired_at"])) == (history.T0, history.T_AGE)


def test_review_queue(graph, history):
    # the history was promoted by the quorum rule (no p_hat); score its edges by hand, label one
    scores = {history.ada_ibm: 0.95, history.ada_london: 0.5, history.grace_navy: 0.88}
    for key, p in scores.items():
        graph.driver.execute_query("MATCH ()-[r:PENDING_REL {key: $k}]->() SET r.p_hat = $p, r.status = 'held'",
                                   k=key, p=p)
    graph.driver.execute_query("MATCH ()-[r:PENDING_REL {key: $k}]->() SET r.label = true", k=history.ada_london)
    rows = run_query(graph, "review_queue", {"tau": 0.9})
    assert [(r["key"], r["p_hat"]) for r in rows] == [(history.grace_navy, 0.88), (history.ada_ibm, 0.95)]
    assert rows[1]["subject"] == "Ada" and rows[1]["supports"] == 0  # nearest the cut first; the labelled one left out


def test_document_contribution(graph, history):
    rows = run_query(graph, "document_contribution", {"document": "d1"})
    got = [(r["subject"], r["relation"], r["object"], r["status"], r["votes"], r["from_document"], r["without_it"],
            r["promotion_depends_on_it"]) for r in rows]
    assert got == [  # WORKS_AT(Ada, IBM) is promoted on d1's two chunks alone
        ("Ada", "WORKS_AT", "IBM", "promoted", 2, 2, 0, True),
        ("Ada", "BORN_IN", "London", "held", 1, 1, 0, False),
    ]
    rows = run_query(graph, "document_contribution", {"document": "d2"})
    assert sorted((r["relation"], r["status"], r["from_document"], r["without_it"]) for r in rows) == [
        ("DESIGNED", "expired", 1, 0), ("WORKS_AT", "held", 1, 1)]  # Grace's edge keeps the bare source
    assert run_query(graph, "document_contribution", {"document": "no-such-document"}) == []


def test_forget_retractions(graph, history):
    from kgr.store.forget import forget

    assert run_query(graph, "forget_retractions") == []
    rep = forget(graph, documents=["d1"])
    rows = run_query(graph, "forget_retractions")
    assert {r["version"] for r in rows} == {rep.version} and rows[0]["retired_in_version"] == 1
    assert sorted(r["edge"] for r in rows) == sorted([history.ada_ibm, history.ada_london])
    ibm = next(r for r in rows if r["edge"] == history.ada_ibm)
    assert "2 → 0 vote(s); retired; edge removed" in ibm["reason"]
    assert json.loads(ibm["inputs"])["forgotten_sources"] == ["c1", "c2"]


def test_saved_query_lookup_and_missing_params(graph):
    assert saved_query("4") == saved_query("04_edge_provenance") == saved_query("edge_provenance")
    with pytest.raises(KgrNotFound, match="no saved query named 'nope'"):
        saved_query("nope")
    with pytest.raises(KgrValidationError, match=r"needs \$base, \$target"):
        run_query(graph, "snapshot_diff")
