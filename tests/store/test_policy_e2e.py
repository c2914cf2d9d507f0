"""End to end on the real Neo4j: staged votes → kgr promote (geDIG policy) → edges, decisions, a version."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.promotion.gedig import PromotionConfig
from tests.support.rounds import gedig_round as run_round
from kgr.store.staging import stage
from kgr.store.versions import current_state, full_hash, list_versions, promoted_edges

pytestmark = pytest.mark.neo4j

SCHEMA = KGSchema.model_validate({
    "entity_types": {"Person": {}, "Organization": {}, "City": {}},
    "relation_types": {
        "WORKS_AT": {"domain": ["Person"], "range": ["Organization"]},
        "BORN_IN": {"domain": ["Person"], "range": ["City"], "functional": True},
    },
})


def A(s, st, r, o, ot, src):
    return TripleAssertion(subject=s, subject_type=st, relation=r, object=o, object_type=ot, source=src)


def test_gedig_round_promotes_voted_edges_and_records_why(graph):
    rows = [A(f"P{i}", "Person", "WORKS_AT", f"Org{i % 3}", "Organization", s) for i in range(9) for s in ("a", "b")]
    rows += [A("Lonely", "Person", "WORKS_AT", "Org0", "Organization", "a")]                 # one vote
    rows += [A("P1", "Person", "WORKS_AT", "Berlin", "City", s) for s in ("a", "b", "c")]     # range violation
    stage(graph, rows, schema=SCHEMA)
    summary = run_round(graph, schema=SCHEMA)
    assert summary.version == 1 and summary.candidates == 11
    edges = {(e.subject, e.object) for e in promoted_edges(graph)}
    assert ("Lonely", "Org0") not in edges and ("P1", "Berlin") not in edges
    assert summary.promoted == len(edges) >= 1
    assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
    assert list_versions(graph)[0].kind == "promotion"
    pend = {r["subject"] + ">" + r["object"]: r for r in graph.read("pending_edges", {"statuses": None})}
    assert pend["Lonely>Org0"]["status"] == "held"
    assert pend["P1>Berlin"]["status"] == "rejected"
    why = graph.read("decisions_for_edge", {"key": pend["P1>Berlin"]["key"]})[0]["decisions"][0]
    inputs = json.loads(why["inputs"])
    assert why["action"] == "reject" and "range" in inputs["violated"] and inputs["r_contr"] > 0


def test_cli_promote_json_and_explain(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    stage(graph, [A("Ada", "Person", "WORKS_AT", "IBM", "Organization", s) for s in ("a", "b", "c")]
          + [A("Bob", "Person", "WORKS_AT", "IBM", "Organization", "a")])
    runner = CliRunner()
    res = runner.invoke(app, ["promote", "--policy", "gedig", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["candidates"] == 2 and data["held"] >= 1 and set(data["timings"]) >= {"read", "decide", "write"}
    key = next(r["key"] for r in graph.read("pending_edges", {"statuses": None}) if r["subject"] == "Bob")
    res = runner.invoke(app, ["promote", "--explain", key])
    assert res.exit_code == 0 and "held" in res.stdout and "votes 1" in res.stdout
    res = runner.invoke(app, ["promote", "--explain", "nope"])
    assert res.exit_code == 1 and "no staged edge" in res.stderr


def test_functional_conflict_in_one_round_keeps_the_best_supported(graph):
    # two BORN_IN objects for one subject, both above quorum: only the better-supported one is promoted,
    # the other is held with the reason; later rounds stay stable (no promote/rollback bounce)
    rows = [A("Ada", "Person", "BORN_IN", "London", "City", s) for s in ("a", "b", "c")]
    rows += [A("Ada", "Person", "BORN_IN", "Paris", "City", s) for s in ("a", "b")]
    stage(graph, rows, schema=SCHEMA)
    from kgr.promotion.gedig import PromotionConfig

    summary = run_round(graph, schema=SCHEMA, config=PromotionConfig(calibrate_thresholds=False, theta_dg=10.0,
                                                                     audit=False))
    assert summary.promoted == 1 and not summary.rolled_back
    assert [(e.subject, e.object) for e in promoted_edges(graph)] == [("Ada", "London")]
    paris = next(r for r in graph.read("pending_edges", {"statuses": None}) if r["object"] == "Paris")
    assert paris["status"] == "held"
    why = graph.read("decisions_for_edge", {"key": paris["key"]})[0]["decisions"][-1]["reason"]
    assert "functional relation BORN_IN" in why
    again = run_round(graph, schema=SCHEMA, config=PromotionConfig(calibrate_thresholds=False, theta_dg=10.0,
                                                                   audit=False))
    assert again.promoted == 0 and not again.rolled_back
    assert [v.kind for v in list_versions(graph)] == ["promotion"] * len(list_versions(graph))


def test_held_edges_on_unchanged_evidence_are_not_decided_again(graph):
    stage(graph, [A("Solo", "Person", "WORKS_AT", "IBM", "Organization", "a")], schema=SCHEMA)
    first = run_round(graph, schema=SCHEMA)
    second = run_round(graph, schema=SCHEMA)
    assert (first.held, first.candidates) == (1, 1)
    assert (second.candidates, second.version) == (0, None) and second.settled  # not read, no version
    key = graph.read("pending_edges", {"statuses": None})[0]["key"]

    def history() -> list[tuple[str, int]]:
        return [(d["action"], d["version"]) for d in graph.read("decisions_for_edge", {"key": key})[0]["decisions"]]

    assert history() == [("hold", first.version)]  # the hold is recorded on the edge, once
    assert graph.driver.execute_query("MATCH (d:Decision) RETURN count(d) AS n").records[0]["n"] == 0
    # a new vote changes the evidence: the next round decides (and records) again
    stage(graph, [A("Solo", "Person", "WORKS_AT", "IBM", "Organization", "b")], schema=SCHEMA)
    third = run_round(graph, schema=SCHEMA)
    assert third.promoted == 1
    assert history() == [("hold", first.version), ("promote", third.version)]


def test_an_edge_held_twice_keeps_both_holds_in_its_history_and_in_the_metrics(graph):
    """A hold is recorded on its edge; the next hold of the same edge moves the earlier one into a
    (:Decision) node, so `kgr promote --explain` and `kgr metrics` still see every round's holds."""
    from kgr.store.metrics import collect_metrics

    cfg = PromotionConfig(quorum=3)
    stage(graph, [A("Solo", "Person", "WORKS_AT", "IBM", "Organization", "a"),
                  A("Duo", "Person", "WORKS_AT", "IBM", "Organization", "a")], schema=SCHEMA)
    first = run_round(graph, schema=SCHEMA, config=cfg)
    stage(graph, [A("Solo", "Person", "WORKS_AT", "IBM", "Organization", "b")], schema=SCHEMA)
    second = run_round(graph, schema=SCHEMA, config=cfg)
    stage(graph, [A("Solo", "Person", "WORKS_AT", "IBM", "Organization", "c")], schema=SCHEMA)
    third = run_round(graph, schema=SCHEMA, config=cfg)
    assert (first.held, second.held, second.candidates, third.promoted) == (2, 1, 1, 1)
    solo = next(r["key"] for r in graph.read("pending_edges", {"statuses": None}) if r["subject"] == "Solo")
    got = [(d["action"], d["version"], d["reason"], json.loads(d["inputs"]).get("votes"))
           for d in graph.read("decisions_for_edge", {"key": solo})[0]["decisions"]]
    assert got == [("hold", first.version, "votes 1 < quorum 3", 1), ("hold", second.version, "votes 2 < quorum 3", 2),
                   ("promote", third.version, got[2][2], 3)]
    nodes = graph.driver.execute_query("MATCH (d:Decision {action: 'hold'}) RETURN d.version AS v, d.at AS at").records
    at = {v.version: v.at for v in list_versions(graph)}
    assert [(r["v"], r["at"]) for r in nodes] == [(first.version, at[first.version])]  # only the overwritten hold
    rounds = {r.version: r for r in collect_metrics(graph, rounds=5).rounds}
    assert [(rounds[v].held, rounds[v].candidates) for v in (first.version, second.version, third.version)] == [
        (2, 2), (1, 1), (0, 1)]


def test_near_duplicate_entity_is_rejected_with_its_twin_named(graph):
    base = [A("Rowen Mogorpel", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("a", "b")]
    base += [A(f"Member {i}", "Person", "WORKS_AT", "Acme", "Organization", s) for i in (1, 2) for s in ("a", "b")]
    base += [A("Ada Lovelace", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("a", "b")]
    stage(graph, base, schema=SCHEMA)
    first = run_round(graph, schema=SCHEMA)
    assert first.promoted == 4  # an empty graph: accepted on votes and constraints
    later = [A("Rowen Mogropel", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("c", "d", "e")]  # a typo
    later += [A("Member 11", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("c", "d", "e")]  # numbered
    later += [A("Rowen Mogropel", "Person", "WORKS_AT", "Initech", "Organization", s) for s in ("c", "d", "e")]
    later += [A("Ada Lovelace", "Person", "WORKS_AT", "Globex", "Organization", s) for s in ("c", "d", "e")]
    stage(graph, later, schema=SCHEMA)
    run_round(graph, schema=SCHEMA)
    pend = {r["subject"] + ">" + r["object"]: r for r in graph.read("pending_edges", {"statuses": None})}
    typo = pend["Rowen Mogropel>Acme"]
    assert typo["status"] == "rejected"
    why = graph.read("decisions_for_edge", {"key": typo["key"]})[0]["decisions"][0]
    assert "duplicate_entity" in json.loads(why["inputs"])["violated"]
    assert "looks like Person:rowen mogorpel" in why["reason"] and "kgr merge" in why["reason"]
    # not duplicates: a numbered sibling, the typo'd name with another organisation, a known person's new fact
    for ok in ("Member 11>Acme", "Rowen Mogropel>Initech", "Ada Lovelace>Globex"):
        assert pend[ok]["status"] != "rejected", (ok, pend[ok]["status"])


def test_near_duplicate_of_a_candidate_in_the_same_round(graph):
    seed = [A("Rowen Mogorpel", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("a", "b")]
    stage(graph, seed, schema=SCHEMA)
    run_round(graph, schema=SCHEMA)  # Rowen Mogorpel is now an established entity
    both = [A("Rowen Mogorpel", "Person", "WORKS_AT", "Initech", "Organization", s) for s in ("c", "d", "e")]
    both += [A("Rowen Mogropel", "Person", "WORKS_AT", "Initech", "Organization", s) for s in ("c", "d", "e")]
    stage(graph, both, schema=SCHEMA)
    run_round(graph, schema=SCHEMA)
    pend = {r["subject"] + ">" + r["object"]: r for r in graph.read("pending_edges", {"statuses": None})}
    assert pend["Rowen Mogropel>Initech"]["status"] == "rejected"
    why = graph.read("decisions_for_edge", {"key": pend["Rowen Mogropel>Initech"]["key"]})[0]["decisions"][0]
    assert "is a candidate for WORKS_AT" in why["reason"]
    assert pend["Rowen Mogorpel>Initech"]["status"] != "rejected"


def test_rounds_are_bounded_take_fresh_evidence_first_and_until_done_works_through_the_backlog(graph):
    from kgr.engine import Engine

    # three sources each: accepted on strong corroboration whatever the gates say, so only the budget holds
    people = [A(f"P{i:03d}", "Person", "WORKS_AT", f"Org{i % 7}", "Organization", s) for i in range(130)
              for s in ("a", "b", "c")]
    stage(graph, people, schema=SCHEMA)
    cfg = PromotionConfig(max_candidates_per_round=50, max_promotions_per_round=20)
    first = run_round(graph, schema=SCHEMA, config=cfg)
    assert (first.candidates, first.deferred, first.promoted) == (50, 80, 20)
    second = run_round(graph, schema=SCHEMA, config=cfg)  # the next 50 never decided, not round 1's holds
    assert (second.candidates, second.deferred, second.promoted) == (50, 60, 20)
    # 30 never-decided edges and 60 unchanged holds remain; new evidence goes before the holds
    stage(graph, [A("Zed", "Person", "WORKS_AT", "Org1", "Organization", s) for s in ("a", "b", "c")], schema=SCHEMA)
    third = run_round(graph, schema=SCHEMA, config=cfg)
    assert (third.candidates, third.deferred) == (50, 41)
    status = {r["subject"]: r["status"] for r in graph.read("pending_edges", {"statuses": None})}
    assert status["Zed"] != "pending" and sum(1 for v in status.values() if v == "pending") == 0

    kg = Engine(graph, schema=SCHEMA)
    seen = []
    rounds = kg.promote_until_done(policy="gedig", config=cfg, on_round=seen.append)
    assert rounds == seen and all(r.candidates <= 50 and r.promoted <= 20 for r in rounds)
    assert rounds[-1].deferred == 0  # the round after it found nothing to decide and wrote no version
    assert len(promoted_edges(graph)) == 131  # every edge, in bounded rounds
    assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
    assert kg.promote_until_done(policy="gedig", config=cfg)[0].version is None  # nothing left: one empty round, no version


def test_cli_promote_until_done(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    stage(graph, [A(f"P{i}", "Person", "WORKS_AT", "Acme", "Organization", s) for i in range(12) for s in ("a", "b")]
          + [A("Solo", "Person", "WORKS_AT", "Acme", "Organization", "a")])
    res = CliRunner().invoke(app, ["promote", "--policy", "gedig", "--until-done", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["promoted"] == 12 and data["deferred"] == 0 and data["held"] >= 1
    assert [r["version"] for r in data["rounds"]] == sorted(r["version"] for r in data["rounds"])


def test_grace_period_audit_refuses_to_commit_a_functional_conflict(graph, monkeypatch):
    import kgr.promotion.policies as policies

    stage(graph, [A("Ada", "Person", "WORKS_AT", "IBM", "Organization", s) for s in ("a", "b")], schema=SCHEMA)
    first = run_round(graph, schema=SCHEMA)
    before = (current_state(graph)[1], sorted(e.key for e in promoted_edges(graph)))
    # the in-round guard normally holds all but one BORN_IN per subject; disable it to reach the audit
    monkeypatch.setattr(policies, "functional_losers", lambda *args, **kwargs: {})
    stage(graph, [A("Ada", "Person", "BORN_IN", city, "City", s) for city in ("London", "Paris") for s in ("a", "b", "c")],
          schema=SCHEMA)
    summary = run_round(graph, schema=SCHEMA)
    # the audit ran inside the round's transaction: the conflicting promotions were held, nothing else changed
    assert summary.promoted == 0 and summary.version == first.version + 1 and not summary.rolled_back
    assert (current_state(graph)[1], sorted(e.key for e in promoted_edges(graph))) == before
    pend = {r["object"]: r for r in graph.read("pending_edges", {"statuses": None}) if r["relation"] == "BORN_IN"}
    for city in ("London", "Paris"):
        assert pend[city]["status"] == "held"
        why = graph.read("decisions_for_edge", {"key": pend[city]["key"]})[0]["decisions"][-1]["reason"]
        assert "grace-period audit: functional relation BORN_IN would give Person:ada 2 objects" in why
    monkeypatch.undo()  # with the guard back, the next round promotes exactly one of them
    assert run_round(graph, schema=SCHEMA).promoted == 1
    assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
