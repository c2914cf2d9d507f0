"""``kgr slice``, ``kgr slice verify``, ``kgr feedback`` and ``kgr doctor`` through the real CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.model.triples import TripleAssertion
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j


def test_slice_verify_feedback_doctor(graph, neo4j_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    monkeypatch.setenv("KGR_SLICE_KEY", "cli-slice-key-0123456789")
    stage(graph, [TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                                  source=src) for s, o in [("Ada", "Bob"), ("Bob", "Cy")] for src in ("s1", "s2")])
    promote_by_quorum(graph, quorum=2)
    run = CliRunner().invoke
    res = run(app, ["slice", "--anchor", "Person:ada", "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert len(s["edges"]) == 2 and s["text"].startswith("Facts from the knowledge graph")
    path = tmp_path / "slice.json"
    path.write_text(res.stdout)
    assert run(app, ["slice", "verify", str(path)]).exit_code == 0
    human = run(app, ["slice", "--query", "Ada"])
    assert human.exit_code == 0 and "Ada KNOWS Bob" in human.stdout and f"slice {s['slice_id']}" in human.stdout
    fb = run(app, ["feedback", s["slice_id"], "--outcome", "-1", "--json"])
    assert fb.exit_code == 0 and [round(w, 9) for w in json.loads(fb.stdout)["weights"].values()] == [0.2, 0.2]
    doc = run(app, ["doctor", "--json"])
    report = json.loads(doc.stdout)
    assert report["health"]["outcomes"] == 1 and report["shares"]["habitual"] == 1.0
    decayed = json.loads(run(app, ["doctor", "--half-life-days", "30", "--json"]).stdout)
    assert decayed["decayed"] == 2 and decayed["health"]["outcomes"] == 1  # maintenance is not an outcome
    bad = run(app, ["doctor", "--half-life-days", "0"])
    assert bad.exit_code == 1 and "half-life must be a positive number of days" in bad.stderr
    # the graph moved on: the slice is stale (exit 3); altered: invalid (exit 1)
    stage(graph, [TripleAssertion(subject="Cy", subject_type="Person", relation="KNOWS", object="Dee",
                                  object_type="Person", source=src) for src in ("s1", "s2")])
    promote_by_quorum(graph, quorum=2)
    stale = run(app, ["slice", "verify", str(path)])
    assert stale.exit_code == 3 and "stale" in stale.stdout
    s["text"] = s["text"].replace("Bob", "Rob")
    path.write_text(json.dumps(s))
    assert run(app, ["slice", "verify", str(path)]).exit_code == 1
    assert run(app, ["feedback", s["slice_id"], "--outcome", "0"]).exit_code == 1
