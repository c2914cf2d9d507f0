"""Promotion rounds, versions, the content hash, snapshots, diff, rollback and aging (real Neo4j)."""

from __future__ import annotations

import pytest

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.decisions import EdgeDecision
from kgr.model.triples import TripleAssertion
from kgr.store.aging import AgingConfig, age
from kgr.engine import promote_by_quorum
from kgr.store.promotion import apply_decisions, candidates
from kgr.store.staging import stage
from kgr.store.versions import (
    add_terms, create_snapshot, current_state, diff, full_hash, list_snapshots, list_versions, promoted_edges,
    rollback,
)

pytestmark = pytest.mark.neo4j
DAY = 86400.0


def T(s, o, src, r="KNOWS", conf=1.0):
    return TripleAssertion(subject=s, subject_type="Person", relation=r, object=o, object_type="Person", source=src,
                           confidence=conf)


def keys(graph, version=None):
    return sorted(e.key for e in promoted_edges(graph, version))


def check_hash(graph):
    """The incrementally maintained hash equals a full recomputation."""
    _, h = current_state(graph)
    assert h == full_hash(keys(graph))
    return h


def test_quorum_round_promotes_and_versions(graph):
    stage(graph, [T("a", "b", "s1"), T("a", "b", "s2"), T("b", "c", "s1")])
    summary = promote_by_quorum(graph, quorum=2)
    assert (summary.version, summary.promoted, summary.held) == (1, 1, 1)
    edges = promoted_edges(graph)
    assert [(e.subject, e.relation, e.object, e.votes) for e in edges] == [("a", "KNOWS", "b", 2)]
    # the promoted relationship has the relation's own type and validity interval
    rec = graph.driver.execute_query(
        "MATCH (:Entity {name:'a'})-[r:KNOWS]->(:Entity {name:'b'}) RETURN r.valid_from AS f, r.valid_to AS t").records
    assert [(r["f"], r["t"]) for r in rec] == [(1, None)]
    assert {r["status"] for r in graph.read("pending_edges", {"statuses": None})} == {"promoted", "held"}
    check_hash(graph)
    # a second round with nothing new promotes nothing twice
    again = promote_by_quorum(graph, quorum=2)
    assert again.promoted == 0 and len(promoted_edges(graph)) == 1
    check_hash(graph)
    # the version log, typed: the round that changed nothing opened no version
    log = list_versions(graph)
    assert [(v.version, v.promoted) for v in log] == [(1, 1)] and log[0].hash == full_hash(keys(graph))


def test_every_decision_is_recorded_with_inputs(graph):
    stage(graph, [T("a", "b", "s1"), T("a", "b", "s2")])
    promote_by_quorum(graph, quorum=2)
    key = candidates(graph, statuses=("promoted",))[0].key
    row = graph.read("decisions_for_edge", {"key": key})[0]
    assert row["status"] == "promoted" and row["decisions"][0]["action"] == "promote"
    assert '"votes": 2' in row["decisions"][0]["inputs"] and "quorum 2" in row["decisions"][0]["reason"]


def test_rollback_restores_snapshot_exactly_and_diff_lists_changes(graph):
    stage(graph, [T(f"p{i}", f"p{i + 1}", s) for i in range(6) for s in ("s1", "s2")])
    promote_by_quorum(graph)
    snap_a = create_snapshot(graph, "A")
    keys_a = keys(graph)
    assert snap_a.edges == 6 and snap_a.hash == full_hash(keys_a)

    # round 2: three new edges promoted, two old ones retired by a rejecting policy round
    stage(graph, [T(f"q{i}", f"q{i + 1}", s) for i in range(3) for s in ("s1", "s2")])
    new = [r for r in candidates(graph) if r.subject.startswith("q")]
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key, action="promote", reason="test") for r in new])
    rb_partial = rollback(graph, "A", reason="undo q edges")
    assert rb_partial.retired == 3 and rb_partial.restored == 0
    assert keys(graph) == keys_a
    check_hash(graph)

    # promote the q edges again, then snapshot B; diff A..B lists exactly them
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key, action="promote", reason="again") for r in new])
    snap_b = create_snapshot(graph, "B")
    d = diff(graph, "A", "B")
    assert sorted(e.key for e in d.added) == sorted(r.key for r in new) and d.removed == []
    assert {e.subject for e in d.added} == {"q0", "q1", "q2"}

    # rollback to A again, then forward to B: hash and edge list equal the snapshot's
    rollback(graph, "A")
    assert keys(graph) == keys_a and current_state(graph)[1] == snap_a.hash
    rb = rollback(graph, "B")
    assert rb.restored == 3 and keys(graph) == keys(graph, snap_b.version)
    assert current_state(graph)[1] == snap_b.hash
    check_hash(graph)
    # nothing was deleted: closed instances stay with valid_to set
    closed = graph.driver.execute_query(
        "MATCH ()-[r]->() WHERE r.valid_to IS NOT NULL RETURN count(r) AS n").records[0]["n"]
    assert closed == 6  # q edges retired twice (3 + 3)
    assert [s.name for s in list_snapshots(graph)] == ["A", "B"]


def test_diff_lists_removed_edges_exactly(graph):
    """diff in both directions: ``removed`` holds exactly the edges that left, ``added`` those that came."""
    stage(graph, [T(f"p{i}", f"p{i + 1}", s) for i in range(4) for s in ("s1", "s2")])
    promote_by_quorum(graph)
    snap_a = create_snapshot(graph, "A")
    stage(graph, [T(f"q{i}", f"q{i + 1}", s) for i in range(3) for s in ("s1", "s2")])
    promote_by_quorum(graph)
    create_snapshot(graph, "B")
    q_keys = sorted(set(keys(graph)) - set(keys(graph, snap_a.version)))
    assert len(q_keys) == 3
    rollback(graph, "A")  # retires the q edges (held: a quorum round would promote them again)
    stage(graph, [T(f"r{i}", f"r{i + 1}", s) for i in range(2) for s in ("s1", "s2")])
    apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key,
                                         action="promote", reason="r only")
                            for r in candidates(graph) if r.subject.startswith("r")])
    create_snapshot(graph, "C")
    r_keys = sorted(set(keys(graph)) - set(keys(graph, snap_a.version)))
    assert len(r_keys) == 2

    d = diff(graph, "B", "C")
    assert [e.key for e in d.removed] == q_keys and [e.key for e in d.added] == r_keys
    assert sorted((e.subject, e.object) for e in d.removed) == [("q0", "q1"), ("q1", "q2"), ("q2", "q3")]
    assert all(e.relation == "KNOWS" and e.votes == 2 for e in d.removed)
    back = diff(graph, "C", "B")  # the reverse swaps the lists
    assert [e.key for e in back.removed] == r_keys and [e.key for e in back.added] == q_keys
    assert [e.key for e in diff(graph, "B", "A").removed] == q_keys and diff(graph, "B", "A").added == []


def test_snapshot_errors(graph):
    create_snapshot(graph, "x")
    with pytest.raises(KgrValidationError, match="already exists"):
        create_snapshot(graph, "x")
    with pytest.raises(KgrNotFound, match="no snapshot named"):
        rollback(graph, "nope")
    with pytest.raises(KgrValidationError, match="does not exist"):
        rollback(graph, 99)


def test_aging_decays_and_expires_with_reason(graph):
    t0 = 1_700_000_000.0
    stage(graph, [T("old", "x", "s1")], now=t0)
    stage(graph, [T("fresh", "y", "s1")], now=t0 + 29 * DAY)
    rep = age(graph, AgingConfig(xi=0.1, ttl_days=30), now=t0 + 31 * DAY)
    assert rep.expired == 1
    rows = {r["subject"]: r for r in graph.read("pending_edges", {"statuses": None})}
    assert rows["old"]["status"] == "expired" and rows["fresh"]["status"] == "pending"
    w = graph.driver.execute_query("MATCH ()-[p:PENDING_REL]->() RETURN p.weight AS w, p.reason AS r ORDER BY w").records
    import math
    assert w[0]["w"] == pytest.approx(math.exp(-0.1 * 31)) and "no new vote for 31.0 days" in w[0]["r"]
    assert w[1]["w"] == pytest.approx(math.exp(-0.1 * 2))
    dec = graph.read("decisions_for_edge", {"key": rep.expired_keys[0]})[0]["decisions"]
    assert [d["action"] for d in dec] == ["expire"]
    # a new vote revives an expired edge
    stage(graph, [T("old", "x", "s2")], now=t0 + 32 * DAY)
    assert {r["subject"]: r["status"] for r in graph.read("pending_edges", {"statuses": None})}["old"] == "pending"


def test_hash_is_order_independent():
    assert add_terms(add_terms("0" * 64, ["a"]), ["b"]) == full_hash(["b", "a"])
    assert add_terms(full_hash(["a", "b"]), removed=["a", "b"]) == "0" * 64


def test_promoted_edges_decay_after_the_soft_window_and_retire_past_the_hard_one(graph):
    """Issue 15, item 3, on a hand-built history with fixed clocks: three promoted edges last
    confirmed 10, 50 and 60 days before the aging run; soft 7, hard 45, ξ_p = 0.01/day."""
    import math

    t0 = 1_700_000_000.0
    now = t0 + 60 * DAY
    stage(graph, [T("a", "x", s, conf=0.5) for s in ("s1", "s2")], now=t0)            # c = 0.75, 60 days
    stage(graph, [T("b", "y", s, conf=0.9) for s in ("s1", "s2")], now=t0 + 10 * DAY)  # c = 0.99, 50 days
    stage(graph, [T("c", "z", s, conf=0.5) for s in ("s1", "s2")], now=t0 + 50 * DAY)  # c = 0.75, 10 days
    promote_by_quorum(graph, quorum=2, now=t0 + 51 * DAY)
    keys = {e.subject: e.key for e in promoted_edges(graph)}
    create_snapshot(graph, "before-aging")
    w = lambda c, days: c * math.exp(-0.01 * max(0.0, days - 7))  # noqa: E731 - the documented formula

    # the default retires nothing, only lowers weights (and is idempotent: weights are recomputed, not compounded)
    for _ in range(2):
        rep = age(graph, AgingConfig(), now=now)
        assert (rep.retired, rep.version) == (0, None)
    weights = {r["s"]: r["w"] for r in graph.driver.execute_query(
        "MATCH (s:Entity)-[r]->() WHERE r.valid_to IS NULL AND r.valid_from IS NOT NULL RETURN s.name AS s, "
        "r.weight AS w", database_=graph.database).records}
    assert weights == pytest.approx({"a": w(0.75, 60), "b": w(0.99, 50), "c": w(0.75, 10)})

    # floor 0.6: a (60 days, 0.441) retires; b (50 days, 0.644) is above the floor; c is inside the hard window
    version_before = current_state(graph)[0]
    rep = age(graph, AgingConfig(floor=0.6), now=now)
    assert (rep.retired, rep.retired_keys, rep.version) == (1, [keys["a"]], version_before + 1)
    assert sorted(e.subject for e in promoted_edges(graph)) == ["b", "c"]
    assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
    why = graph.read("decisions_for_edge", {"key": keys["a"]})[0]
    assert why["status"] == "expired" and why["decisions"][-1]["action"] == "retire"
    assert "aged out: no new vote for 60.0 days" in why["decisions"][-1]["reason"]
    assert age(graph, AgingConfig(floor=0.6), now=now).retired == 0  # nothing left due: no new version
    assert current_state(graph)[0] == version_before + 1

    # a rollback to before the aging restores the promoted set exactly; a new vote re-opens the edge
    rollback(graph, "before-aging")
    assert sorted(e.subject for e in promoted_edges(graph)) == ["a", "b", "c"]
    stage(graph, [T("a", "x", "s3")], now=now + DAY)
    assert {r["subject"]: r["status"] for r in graph.read("pending_edges", {"statuses": None})}["a"] in (
        "pending", "promoted")
