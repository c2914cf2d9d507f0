"""The admissibility token covers everything a slice shows, and a slice is stale when anything it
shows has changed — against the real Neo4j, on a real ingest (issue 31, item 4).

Before: altering a quote's text, its document id or path, its chunk id, an edge's tier or
priority, the anchor flag, ``graph_version`` or ``truncated`` still verified as valid and current
(exit 0), and after three negative outcomes changed an edge's tier and the slice's id, the old
slice still verified as current."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.schema import load_schema
from kgr.model.slices import ContextSlice
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice, report_outcome, verify_slice
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]
KEY = "integrity-slice-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("KGR_SLICE_KEY", KEY)


@pytest.fixture
def quoted(graph, tmp_path) -> ContextSlice:
    """A slice of a real ingest (two files), promoted at quorum 1: quotes with chunk, document and path."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("01_babbage_and_lovelace.md", "02_alan_turing.md"):
        shutil.copy(ROOT / "examples" / "corpus" / name, corpus / name)
    ingest(graph, [corpus], load_schema(ROOT / "examples" / "schema.json"), config=IngestConfig(promote=False))
    promote_by_quorum(graph, quorum=1)
    s = build_slice(graph, anchors=["Person:charles babbage"], policy="wide")
    assert len(s.edges) >= 3 and s.edges[0].quotes[0].chunk_id and s.edges[0].quotes[0].document_id
    assert s.edges[0].quotes[0].path and s.edges[0].quotes[0].quote
    return s


def forge(s: ContextSlice, field: str) -> ContextSlice:
    """``s`` with one field a reader sees changed, its id and token kept."""
    e, q = s.edges[0], s.edges[0].quotes[0]
    quote = {"quote": "FORGED: the opposite is true", "document_id": "/elsewhere/forged.md",
             "path": "/elsewhere/forged.md", "chunk_id": "0" * 64, "source": "0" * 64}
    if field in quote:
        edges = [e.model_copy(update={"quotes": [q.model_copy(update={field: quote[field]}), *e.quotes[1:]]}),
                 *s.edges[1:]]
        return s.model_copy(update={"edges": edges})
    edge = {"tier": "reflex" if e.tier != "reflex" else "habitual", "priority": e.priority + 1e-9,
            "outcome_weight": 0.9, "votes": e.votes + 1, "confidence": e.confidence - 0.01}
    if field in edge:
        return s.model_copy(update={"edges": [e.model_copy(update={field: edge[field]}), *s.edges[1:]]})
    if field == "anchor":
        nodes = [n.model_copy(update={"anchor": not n.anchor}) for n in s.nodes]
        return s.model_copy(update={"nodes": nodes})
    if field == "edge order":
        return s.model_copy(update={"edges": s.edges[::-1]})
    if field == "dropped edge":
        return s.model_copy(update={"edges": s.edges[1:]})
    other = {"graph_version": s.graph_version + 1, "truncated": not s.truncated, "graph_hash": "sha256:" + "1" * 64,
             "schema_version": "sha256:forged", "text": s.text.replace("Babbage", "Babage")}
    return s.model_copy(update={field: other[field]})


FIELDS = ["quote", "document_id", "path", "chunk_id", "source", "tier", "priority", "outcome_weight", "votes",
          "confidence", "anchor", "edge order", "dropped edge", "graph_version", "truncated", "graph_hash",
          "schema_version", "text"]


def test_every_field_a_reader_sees_is_covered(graph, quoted, neo4j_settings, monkeypatch, tmp_path):
    ok = verify_slice(graph, quoted)
    assert (ok.valid, ok.current, ok.reason) == (True, True, "valid and current")
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    path = tmp_path / "slice.json"
    runner = CliRunner()
    for field in FIELDS:
        forged = forge(quoted, field)
        assert forged.model_dump() != quoted.model_dump(), field
        v = verify_slice(graph, forged)
        assert (v.valid, v.current) == (False, False) and "altered" in v.reason, field
        path.write_text(forged.model_dump_json())
        res = runner.invoke(app, ["slice", "verify", str(path)])
        assert res.exit_code == 1 and "altered" in res.stdout, (field, res.stdout)
    path.write_text(quoted.model_dump_json())
    assert runner.invoke(app, ["slice", "verify", str(path)]).exit_code == 0


def test_outcomes_that_change_a_tier_make_the_old_slice_stale(graph, quoted):
    bad = quoted.edges[0].key
    for _ in range(3):
        report_outcome(graph, quoted.slice_id, -1, edges=[bad])
    now = build_slice(graph, anchors=quoted.anchors, policy="wide")
    assert quoted.edges[0].tier == "habitual" and {e.key: e.tier for e in now.edges}[bad] == "dormant"
    assert now.slice_id != quoted.slice_id and now.graph_hash == quoted.graph_hash  # weights moved, not the graph
    stale = verify_slice(graph, quoted)
    assert (stale.valid, stale.current) == (True, False)
    assert "stale" in stale.reason and f"edge {bad}'s tier habitual -> dormant" in stale.reason
    assert verify_slice(graph, now).current  # the new one is current
    report_outcome(graph, quoted.slice_id, -1, edges=[bad])  # a fourth: inhibitory, out of every slice
    gone = verify_slice(graph, now)
    assert not gone.current and f"edge {bad} is no longer in it" in gone.reason


def test_one_outcome_that_moves_a_weight_is_a_change_too(graph, quoted):
    key = quoted.edges[0].key
    report_outcome(graph, quoted.slice_id, 1, edges=[key])
    stale = verify_slice(graph, quoted)
    assert (stale.valid, stale.current) == (True, False) and f"edge {key}'s outcome weight 0.3 -> 0.4" in stale.reason


def test_a_new_vote_on_a_shown_edge_makes_it_stale(graph, quoted):
    """A vote staged on a promoted edge changes its quotes and votes but not the promoted graph's hash."""
    e = quoted.edges[0]
    names = {n.key: n for n in quoted.nodes}
    s, o = names[e.subject], names[e.object]
    stage(graph, [TripleAssertion(subject=s.name, subject_type=s.type, relation=e.relation, object=o.name,
                                  object_type=o.type, source="a-later-source")])
    v = verify_slice(graph, quoted)
    assert (v.valid, v.current) == (True, False) and f"edge {e.key}'s quotes changed" in v.reason
    assert json.loads(verify_slice(graph, quoted).model_dump_json())["graph_hash_now"] == quoted.graph_hash


def test_a_slice_cut_with_an_unregistered_policy_is_checked_with_it(graph, quoted):
    from kgr.model.slices import SlicePolicy

    mine = SlicePolicy(name="mine-only", radius=1, budget_tokens=600)
    s = build_slice(graph, anchors=quoted.anchors, policy=mine)
    assert verify_slice(graph, s, policy=mine).current
    v = verify_slice(graph, s)
    assert (v.valid, v.current) == (True, False) and "is not registered here" in v.reason
