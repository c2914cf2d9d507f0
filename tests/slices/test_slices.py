"""Context slices against the real Neo4j: only current promoted edges, determinism, the token
budget, admissibility tokens (valid, altered, forged, stale), outcome feedback with its tiers and
the review queue, ``kgr doctor``."""

from __future__ import annotations

import json

import pytest

from kgr.connect import connect
from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import edge_key
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice, doctor, report_outcome, verify_slice
from kgr.slices.render import TokenCounter
from kgr.store.forget import forget
from kgr.engine import promote_by_quorum
from kgr.store.review import review_queue
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j
KEY = "test-slice-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("KGR_SLICE_KEY", KEY)


def T(s, o, src, rel="KNOWS", conf=0.9):
    return TripleAssertion(subject=s, subject_type="Person", relation=rel, object=o, object_type="Person",
                           source=src, confidence=conf)


def K(s, o, rel="KNOWS"):
    return edge_key(f"Person:{s.lower()}", rel, f"Person:{o.lower()}")


def build(graph):
    """Ada–Bob, Bob–Cy, Cy–Dee, Ada–Eve promoted (two votes each); Ada–Fay staged with one vote
    (held); Ada–Gus promoted then retired (its second source forgotten)."""
    items = [T(s, o, src) for s, o in [("Ada", "Bob"), ("Bob", "Cy"), ("Cy", "Dee"), ("Ada", "Eve"), ("Ada", "Gus")]
             for src in ("s1", "s2")]
    stage(graph, items + [T("Ada", "Fay", "s1"), T("Ada", "Gus", "only-gus", rel="LIKES")])
    stage(graph, [T("Ada", "Gus", "gus-2", rel="LIKES")])
    promote_by_quorum(graph, quorum=2)
    forget(graph, sources=["gus-2"])  # LIKES(Ada, Gus) falls to one vote: retired


def test_only_current_promoted_edges_deterministically(graph, neo4j_settings):
    build(graph)
    s = build_slice(graph, anchors=["Person:ada"])
    keys = {e.key for e in s.edges}
    assert keys == {K("Ada", "Bob"), K("Bob", "Cy"), K("Ada", "Eve"), K("Ada", "Gus")}  # Dee: 3 hops > radius 2
    assert K("Ada", "Fay") not in keys and K("Ada", "Gus", "LIKES") not in keys  # held; retired
    assert {n.key: n.distance for n in s.nodes}["Person:cy"] == 2 and s.anchors == ["Person:ada"]
    wide = build_slice(graph, anchors=["Person:ada"], policy="wide")
    assert {e.key for e in wide.edges} == keys | {K("Cy", "Dee")}
    assert s.edges[0].quotes and s.edges[0].quotes[0].source in {"s1", "s2"}
    # another connection (a second engine), the same graph: the same slice, id and token
    other = connect(neo4j_settings)
    try:
        again = build_slice(other, anchors=["Person:ada"])
    finally:
        other.close()
    assert again.model_dump() == s.model_dump()
    # radius 1 keeps Ada's own facts
    near = build_slice(graph, anchors=["Person:ada"], policy="focused")
    assert {e.key for e in near.edges} == {K("Ada", "Bob"), K("Ada", "Eve"), K("Ada", "Gus")}


def test_budget_is_respected_exactly(graph):
    build(graph)
    full = build_slice(graph, anchors=["Person:ada"])
    assert not full.truncated and full.tokens <= full.budget_tokens
    for budget in range(full.tokens - 1, 31, -7):
        try:
            s = build_slice(graph, anchors=["Person:ada"], budget_tokens=budget)
        except KgrValidationError:
            break
        assert s.tokens <= budget and s.tokens == TokenCounter()(s.text) and s.truncated
        # something was left out: a fact, or a fact's quote (facts come first: kgr.slices.render.pack)
        n = len(s.edges)
        assert n < len(full.edges) or s.text.count("; ") < full.text.count("; ")
        ranked = [e.key for e in full.edges]
        assert [e.key for e in s.edges] == ranked[:n]
    everyone = [f"Person:{n}" for n in ("ada", "bob", "cy", "dee", "eve", "gus")]
    with pytest.raises(KgrValidationError, match="does not hold the slice's header"):
        build_slice(graph, anchors=everyone, budget_tokens=32)
    with pytest.raises(KgrNotFound, match="no entity with key 'Person:nobody'"):
        build_slice(graph, anchors=["Person:nobody"])


def test_tokens_valid_altered_forged_stale_and_the_key_never_shows(graph, monkeypatch, caplog):
    build(graph)
    s = build_slice(graph, query="Ada")
    assert s.anchors == ["Person:ada"]
    ok = verify_slice(graph, s)
    assert (ok.valid, ok.current) == (True, True)
    altered = s.model_copy(update={"edges": [s.edges[0].model_copy(update={"confidence": 1.0}), *s.edges[1:]]})
    assert verify_slice(graph, altered).valid is False and "altered" in verify_slice(graph, altered).reason
    forged = s.model_copy(update={"admissibility_token": "0" * 64})
    assert verify_slice(graph, forged).valid is False and "forged" in verify_slice(graph, forged).reason
    monkeypatch.setenv("KGR_SLICE_KEY", "another-key-0123456789abcdef")
    assert verify_slice(graph, s).valid is False  # a token from another key
    monkeypatch.setenv("KGR_SLICE_KEY", KEY)
    stage(graph, [T("Bob", "Zed", "s1"), T("Bob", "Zed", "s2")])
    promote_by_quorum(graph, quorum=2)
    stale = verify_slice(graph, s)
    assert (stale.valid, stale.current) == (True, False) and "stale" in stale.reason
    assert KEY not in json.dumps(s.model_dump()) + json.dumps(stale.model_dump()) + caplog.text


def test_outcomes_make_reflex_paths_and_inhibit_bad_edges(graph):
    build(graph)
    s = build_slice(graph, anchors=["Person:ada"], policy="focused")
    good, bad = K("Ada", "Bob"), K("Ada", "Eve")
    for i in range(3):
        rep = report_outcome(graph, s.slice_id, 1, edges=[good])
    assert rep.tiers == {good: "reflex"} and rep.weights[good] == pytest.approx(0.6)
    for i in range(4):
        rep = report_outcome(graph, s.slice_id, -1, edges=[bad])
        assert rep.review_flagged == ([bad] if i >= 2 else [])
    assert rep.tiers == {bad: "inhibitory"} and rep.weights[bad] == pytest.approx(-0.1)
    later = build_slice(graph, anchors=["Person:ada"], policy="focused")
    assert bad not in {e.key for e in later.edges}  # vetoed
    assert later.edges[0].key == good and later.edges[0].tier == "reflex"  # rewarded: ranked first
    queue = review_queue(graph, limit=5)
    assert [(i.key, i.why) for i in queue.items][:1] == [(bad, "outcome")]
    d = doctor(graph)
    assert (d.health.reflex, d.health.inhibitory, d.health.review, d.health.outcomes) == (1, 1, 1, 7)
    assert any("await review" in f for f in d.findings) and not d.ok
    # maintenance: halfway back to neutral; the inhibitory edge becomes dormant and returns to slices
    relaxed = doctor(graph, relax=0.5)
    assert relaxed.relaxed == 2 and (relaxed.health.reflex, relaxed.health.inhibitory, relaxed.health.outcomes) == (0, 0, 7)
    after = {e.key: (e.outcome_weight, e.tier) for e in build_slice(graph, anchors=["Person:ada"], policy="focused").edges}
    assert after[bad] == (pytest.approx(0.1), "dormant") and after[good] == (pytest.approx(0.45), "habitual")
    with pytest.raises(KgrValidationError, match="relax"):
        doctor(graph, relax=1.5)
    with pytest.raises(KgrValidationError, match="is not in slice"):
        report_outcome(graph, s.slice_id, 1, edges=[K("Cy", "Dee")])
    with pytest.raises(KgrNotFound):
        report_outcome(graph, "0" * 32, 1)


def test_the_same_slice_from_another_process(graph, neo4j_settings, monkeypatch):
    """Another process (another engine, another hash seed) cuts the same slice: same id, text, token."""
    import os
    import subprocess
    import sys

    build(graph)
    here = build_slice(graph, anchors=["Person:ada"], policy="wide")
    env = {**os.environ, "NEO4J_URI": neo4j_settings.uri, "NEO4J_DATABASE": neo4j_settings.database,
           "KGR_SLICE_KEY": KEY, "PYTHONHASHSEED": "12345"}
    if neo4j_settings.password is not None:
        env.update(NEO4J_USERNAME=neo4j_settings.username, NEO4J_PASSWORD=neo4j_settings.password)
    proc = subprocess.run([sys.executable, "-m", "kgr.cli", "slice", "--anchor", "Person:ada", "--policy", "wide",
                           "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    there = json.loads(proc.stdout)
    assert (there["slice_id"], there["text"], there["admissibility_token"]) == (
        here.slice_id, here.text, here.admissibility_token)
    assert there == here.model_dump(mode="json")


def test_outcome_weights_decay_with_time_and_runs_compose(graph):
    """``doctor --half-life-days``: a rated weight's distance from neutral halves per half-life of
    time since its last outcome or decay, whichever is later; two decays equal one over the same
    time; a weight a new outcome moved decays from there; a bad half-life is refused."""
    import time

    build(graph)
    s = build_slice(graph, anchors=["Person:ada"], policy="focused")
    good, bad = K("Ada", "Bob"), K("Ada", "Eve")
    for _ in range(3):
        report_outcome(graph, s.slice_id, 1, edges=[good])  # 0.6: reflex
    for _ in range(4):
        report_outcome(graph, s.slice_id, -1, edges=[bad])  # -0.1: inhibitory
    t0 = time.time()
    day = 86_400.0

    def weights():
        return {e.key: e.outcome_weight for e in build_slice(graph, anchors=["Person:ada"], policy="wide").edges}

    d = doctor(graph, half_life_days=1.0, now=t0 + day)  # one half-life: halfway to neutral (0.3)
    assert d.decayed == 2
    w = weights()
    assert w[good] == pytest.approx(0.45, abs=1e-4) and w[bad] == pytest.approx(0.1, abs=1e-4)
    doctor(graph, half_life_days=1.0, now=t0 + 1.5 * day)  # half a half-life more ...
    doctor(graph, half_life_days=1.0, now=t0 + 2 * day)  # ... and another: two half-lives in all
    w = weights()
    assert w[good] == pytest.approx(0.3 + 0.3 / 4, abs=1e-4) and w[bad] == pytest.approx(0.3 - 0.4 / 4, abs=1e-4)
    doctor(graph, half_life_days=1.0, now=t0 + 2 * day)  # no time passed: nothing moves
    assert weights()[good] == pytest.approx(0.375, abs=1e-4)
    report_outcome(graph, s.slice_id, 1, edges=[good])  # a new outcome moves the weight ...
    fresh = weights()[good]
    assert fresh > 0.375
    doctor(graph, half_life_days=1.0, now=t0 + 3 * day)  # ... which decays from there (a day after the last decay)
    assert weights()[good] == pytest.approx(0.3 + (fresh - 0.3) / 2, abs=1e-3)
    with pytest.raises(KgrValidationError, match="half-life"):
        doctor(graph, half_life_days=0)
