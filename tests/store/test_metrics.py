"""`kgr metrics` on the real Neo4j: counts, S_VN and Cov_κ against closed forms, round figures, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kgr.cli import metrics as metrics_cli
from kgr.errors import KgrValidationError
from kgr.promotion.gedig import PromotionConfig
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.decision_tally import gates, parse_inputs, tally_holds
from kgr.store.metrics import collect_metrics
from tests.support.rounds import gedig_round as run_round
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage
from kgr.store.versions import rollback

SCHEMA = KGSchema.model_validate({
    "entity_types": {"Person": {}, "City": {}},
    "relation_types": {"KNOWS": {"domain": ["Person"], "range": ["Person"]},
                       "LIVES_IN": {"domain": ["Person"], "range": ["City"]}},
})


def knows(s: str, o: str, sources: str = "ab", ot: str = "Person") -> list[TripleAssertion]:
    return [TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type=ot, source=src)
            for src in sources]


def path_entropy(n: int) -> float:
    """S_VN of the path P_n from its Laplacian spectrum 2 − 2cos(πk/n), k = 0..n−1 (trace 2(n−1))."""
    lam = np.array([2.0 - 2.0 * math.cos(math.pi * k / n) for k in range(n)])
    rho = lam[lam > 1e-12] / (2.0 * (n - 1))
    return float(-(rho * np.log(rho)).sum())


# -- no database ---------------------------------------------------------------------------------

def _gates(raw):
    return gates(parse_inputs(raw))


def test_gates_are_read_from_recorded_inputs():
    inputs = {"gates": {"ag": True, "dg": False}, "gauge": {"hops": [{"edges_before": 0}, {"edges_before": 3}]}}
    assert _gates(json.dumps(inputs)) == (True, False, True)
    inputs["gauge"]["hops"][-1]["edges_before"] = 0  # empty ball: decided without the gauge
    assert _gates(json.dumps(inputs)) == (True, False, False)
    assert _gates(json.dumps({"votes": 1, "quorum": 2})) is None  # a quorum-rule decision
    assert _gates(json.dumps({"gates": None})) is None
    assert _gates("not json") is None and _gates(None) is None and _gates("[1]") is None


def test_holds_are_tallied_as_the_decision_nodes_were_counted():
    gauged = {"votes": 2, "quorum": 2, "gates": {"ag": False, "dg": True}, "gauge": {"hops": [{"edges_before": 2}]}}
    empty_ball = {"votes": 3, "quorum": 2, "gates": {"ag": True, "dg": True}, "gauge": {"hops": [{"edges_before": 0}]}}
    assert tally_holds([gauged, empty_ball, {"votes": 1, "quorum": 2}, {"p_hat": 0.4}]) == {
        "held": 4, "corroborated": 2, "gauged": 1, "ag_fired": 0, "dg_fired": 1, "no_context": 1}
    assert tally_holds([]) == dict.fromkeys(("held", "corroborated", "gauged", "ag_fired", "dg_fired", "no_context"), 0)


def test_path_entropy_closed_form():
    # P_3: spectrum {0, 1, 3}, trace 4 → S = −(1/4)ln(1/4) − (3/4)ln(3/4)
    assert path_entropy(3) == pytest.approx(-0.25 * math.log(0.25) - 0.75 * math.log(0.75))


# -- real Neo4j ----------------------------------------------------------------------------------

@pytest.mark.neo4j
def test_empty_store(graph):
    m = collect_metrics(graph)
    assert (m.version, m.nodes, m.edges, m.pending_edges) == (0, 0, 0, 0)
    assert m.status == {"pending": 0, "held": 0, "promoted": 0, "rejected": 0, "expired": 0}
    assert m.entropy.value is None and m.entropy.method is None and m.coverage.value == 0.0
    assert m.rounds == [] and m.totals.candidates == 0 and m.totals.acceptance is None


@pytest.mark.neo4j
def test_rounds_out_of_range(graph):
    with pytest.raises(KgrValidationError, match="rounds must be an integer from 1 to 1000"):
        collect_metrics(graph, rounds=0)


@pytest.mark.neo4j
def test_triangle_entropy_coverage_and_counts(graph):
    stage(graph, knows("A", "B") + knows("B", "C") + knows("C", "A") + knows("A", "D", sources="a"))
    promote_by_quorum(graph, quorum=2)
    m = collect_metrics(graph)
    assert (m.version, m.nodes, m.edges, m.pending_edges) == (1, 4, 3, 4)
    assert m.status == {"pending": 0, "held": 1, "promoted": 3, "rejected": 0, "expired": 0}
    # K_3: Laplacian spectrum {0, 3, 3}, ρ = diag(0, 1/2, 1/2): S = ln 2 = ln(n − 1)
    assert m.entropy.method == "exact" and (m.entropy.nodes, m.entropy.edges) == (3, 3)
    assert m.entropy.value == pytest.approx(math.log(2), abs=1e-12)
    # Cov_κ, κ = 0.1, h = 1: three nodes of degree 2 → 3·(1 − 0.9²) = 0.57; D has no promoted edge
    assert m.coverage.value == pytest.approx(0.57, abs=1e-12) and (m.coverage.kappa, m.coverage.h) == (0.1, 1)
    (r,) = m.rounds
    assert (r.version, r.note, r.candidates, r.promoted, r.held, r.rejected) == (1, "quorum 2", 4, 3, 1, 0)
    assert r.acceptance == pytest.approx(0.75) and r.rejection_rate == 0.0
    assert r.gauged == 0 and r.ag_rate is None and r.dg_rate is None  # the quorum rule has no gates
    assert r.retracted == 0 and r.mean_decision_latency_ms is not None and r.mean_decision_latency_ms >= 0


@pytest.mark.neo4j
def test_path_entropy_and_mu(graph):
    names = [f"N{i}" for i in range(5)]
    stage(graph, [a for u, v in zip(names, names[1:]) for a in knows(u, v)])
    promote_by_quorum(graph, quorum=2)
    m = collect_metrics(graph)
    assert m.entropy.value == pytest.approx(path_entropy(5), abs=1e-12)
    # degrees 1, 2, 2, 2, 1 → 2·0.1 + 3·0.19
    assert m.coverage.value == pytest.approx(0.77, abs=1e-12)
    # with μ = 1: ρ = (L + I)/(tr L + 5), eigenvalues (3 − 2cos(πk/5))/13; κ = 0.5 → 2·0.5 + 3·0.75
    lam = np.array([3.0 - 2.0 * math.cos(math.pi * k / 5) for k in range(5)]) / (8.0 + 5.0)
    m1 = collect_metrics(graph, config=PromotionConfig(mu=1.0, kappa=0.5))
    assert m1.entropy.value == pytest.approx(float(-(lam * np.log(lam)).sum()), abs=1e-12) and m1.entropy.mu == 1.0
    assert m1.coverage.value == pytest.approx(2 * 0.5 + 3 * 0.75)


@pytest.mark.neo4j
def test_gedig_round_rates_and_retraction(graph):
    # round 1 (quorum rule): two triangles joined through m — the decide_round doctest's graph
    base = [("a0", "a1"), ("a1", "a2"), ("a0", "a2"), ("a0", "m"), ("m", "b0"), ("b0", "b1"), ("b1", "b2"), ("b0", "b2")]
    stage(graph, [a for u, v in base for a in knows(u, v)], schema=SCHEMA)
    promote_by_quorum(graph, quorum=2)
    # round 2 (geDIG, fresh thresholds θ_AG = 0.75, θ_DG = 0): four candidates
    stage(graph, knows("a1", "b1", sources="abc")             # bridge between known nodes: g0 = 1/2, DG fires
          + knows("newbie", "a0")                            # one new node: g0 = 1 > θ_AG, AG fires
          + knows("a2", "b2", sources="a")                   # one vote: held by quorum, never gauged
          + knows("a2", "Paris", ot="City"),                # KNOWS range is Person: rejected
          schema=SCHEMA)
    summary = run_round(graph, schema=SCHEMA)
    assert summary.version == 2 and summary.candidates == 4 and summary.rejected == 1
    m = collect_metrics(graph, rounds=5)
    assert [r.version for r in m.rounds] == [2, 1]
    r2, r1 = m.rounds
    assert (r2.note, r2.candidates, r2.promoted, r2.rejected) == ("gedig policy", 4, summary.promoted, 1)
    assert r2.held == 4 - 1 - summary.promoted
    assert r2.gauged == 2 and r2.no_context == 0
    assert (r2.ag_fired, r2.dg_fired) == (1, 1) and r2.ag_rate == 0.5 and r2.dg_rate == 0.5
    assert summary.promoted == 1 and r2.acceptance == pytest.approx(0.25) and r2.rejection_rate == pytest.approx(0.25)
    assert (r1.candidates, r1.promoted) == (8, 8)
    t = m.totals
    assert (t.candidates, t.promoted, t.held, t.rejected, t.gauged, t.ag_fired, t.dg_fired) == (12, 9, 2, 1, 2, 1, 1)
    assert t.acceptance == pytest.approx(9 / 12) and t.dg_rate == 0.5 and t.note == "2 rounds"
    assert m.edges == 9 and m.status["rejected"] == 1 and m.status["held"] == 2
    # only the last round when asked for one
    assert [r.version for r in collect_metrics(graph, rounds=1).rounds] == [2]
    # PSZ: the bridge and the 8 quorum promotions, against the newbie held past the quorum (2 votes);
    # the one-vote hold and the rejection do not count; both rounds recorded their decide time
    assert (r2.corroborated_held, r1.corroborated_held) == (1, 0)
    assert all(r.mean_decision_latency_ms is not None and r.mean_decision_latency_ms >= 0 for r in m.rounds)
    z = m.psz
    assert z.acceptance == pytest.approx(9 / 10) and z.fmr == 0.0
    lat = sorted(r.mean_decision_latency_ms for r in m.rounds)
    assert z.p50_latency_ms == pytest.approx((lat[0] + lat[1]) / 2)
    assert z.shortfall == pytest.approx(0.05 + max(0.0, (z.p50_latency_ms - 200) / 200)) and z.in_zone is False

    # rolling back to version 1 retires the bridge: round 2's promotion shows as retracted
    rollback(graph, 1)
    after = collect_metrics(graph)
    r2 = after.rounds[0]
    assert r2.version == 2 and r2.retracted == 1 and r2.retracted_share == 1.0
    assert after.edges == 8 and after.psz.fmr == pytest.approx(1 / 9)  # a retraction counts as a false merge


@pytest.mark.neo4j
@pytest.mark.slow
def test_large_graph_uses_slq(graph):
    n = 3200  # above SLQ_AUTO_THRESHOLD = 3000 nodes
    names = [f"v{i}" for i in range(n)]
    stage(graph, [a for u, v in zip(names, names[1:]) for a in knows(u, v, sources="a")], batch_size=5000)
    promote_by_quorum(graph, quorum=1)
    m = collect_metrics(graph)
    assert m.entropy.method == "slq" and (m.entropy.nodes, m.entropy.edges) == (n, n - 1)
    assert m.entropy.value == pytest.approx(path_entropy(n), rel=5e-3)


@pytest.mark.neo4j
def test_cli_metrics_json_and_errors(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    stage(graph, knows("A", "B") + knows("B", "C") + knows("C", "A"))
    promote_by_quorum(graph, quorum=2)
    root = typer.Typer()  # mounted as the main app does: a top-level command
    root.callback()(lambda: None)  # a group, as `kgr` is (typer would otherwise collapse a single command)
    root.registered_commands.extend(metrics_cli.app.registered_commands)
    runner = CliRunner()
    res = runner.invoke(root, ["metrics", "--json", "--rounds", "3"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["edges"] == 3 and data["rounds_requested"] == 3 and len(data["rounds"]) == 1
    assert data["entropy"]["value"] == pytest.approx(math.log(2)) and data["coverage"]["value"] == pytest.approx(0.57)
    res = runner.invoke(root, ["metrics"])
    assert res.exit_code == 0 and "S_VN 0.6931" in res.stdout and "quorum 2" in res.stdout
    # the staged edges of any status and those whose status is pending are told apart (JSON keys kept)
    assert data["pending_edges"] == 3 and data["status"]["pending"] == 0 and data["status"]["promoted"] == 3
    assert "promoted edges 3, staged edges 3 (any status)" in res.stdout and "pending edges" not in res.stdout
    assert "staged edges by status: pending (undecided) 0, held 0, promoted 3, rejected 0, expired 0" in res.stdout
    assert "PSZ (targets Acc >= 0.95, FMR <= 0.02, P50 <= 200 ms), without labels: corroborated acceptance 100.0 %" \
        in res.stdout
    assert "measured against labels instead" in res.stdout  # not to be mistaken for the benchmark's Acceptance
    res = runner.invoke(root, ["metrics", "--rounds", "0"])
    assert res.exit_code == 2 and "rounds" in res.output.lower()


def test_the_calibrated_policys_holds_count_against_corroborated_acceptance(graph):
    """A calibrated settle records the quorum with every decision, so its holds past the quorum count:
    corroborated acceptance is promoted / (promoted + those holds), not 100 % whatever it held."""
    from kgr.engine import Engine

    stage(graph, [a for i in range(6) for a in knows(f"p{i}", f"q{i}")], schema=SCHEMA)
    summary = Engine(graph, schema=SCHEMA).promote()
    assert summary.held >= 1  # six look-alike edges and no label: nothing separates them
    r = collect_metrics(graph, rounds=1).rounds[0]
    assert r.corroborated_held == summary.held
    assert collect_metrics(graph, rounds=1).psz.acceptance == pytest.approx(summary.promoted / (summary.promoted + summary.held))
