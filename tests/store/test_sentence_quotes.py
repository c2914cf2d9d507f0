"""Provenance to the sentence, on the real Neo4j: the quote shown for an edge is the sentence that
produced each vote (review queue, ``explain``, slices, the Browser's provenance query), through a
forget of another source, a merge, a rollback and a re-ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.ingest.config import IngestConfig
from kgr.ingest.loaders import file_document_id
from kgr.ingest.pipeline import ingest
from kgr.model.canonical import edge_key, entity_key
from kgr.model.schema import load_schema
from kgr.model.slices import SlicePolicy
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice
from kgr.store import stage_rows, staging
from kgr.store.forget import forget
from kgr.store.inspect import explain_edge, run_saved_query
from kgr.store.merge import merge_entities
from kgr.engine import promote_by_quorum
from kgr.store.review import review_queue
from kgr.store.staging import stage
from kgr.store.versions import create_snapshot, rollback

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(ROOT / "examples" / "schema.json")
A = "Charles Babbage was born in London."
B = "Babbage was born in London, as the parish register shows."
KEY = edge_key("Person:charles babbage", "BORN_IN", "Place:london")
POLICY = SlicePolicy(name="two-quotes", quotes_per_edge=2, quote_chars=200, budget_tokens=4000)

pytestmark = pytest.mark.neo4j


def _corpus(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    # the sentences that state the fact are not at the start of their chunks
    a.write_text(f"# Notes on the engines\n\nThe winter of 1791 was cold in the south of England. {A} "
                 "He spent his fortune on machines.\n", encoding="utf-8")
    b.write_text(f"# A second source\n\nMany visitors came to the exhibition that year. {B}\n", encoding="utf-8")
    return a, b


def _quotes(graph, key: str = KEY) -> dict[str, set[str]]:
    """The quotes of edge ``key`` as explain, the review queue, a slice and the Browser query show them."""
    graph.driver.execute_query("MATCH ()-[p:PENDING_REL {key: $k}]->() SET p.p_hat = 0.5, p.label = null, "
                               "p.status = CASE p.status WHEN 'promoted' THEN 'promoted' ELSE 'held' END",
                               k=key, database_=graph.database)
    review = next(i for i in review_queue(graph, limit=50, audit_share=0.0).items if i.key == key)
    browser = (ROOT / "cypher" / "browser" / "04_edge_provenance.cypher").read_text(encoding="utf-8")
    out = {"explain": {e.quote for e in explain_edge(graph, key).evidence},
           "review": {e.quote for e in review.evidence},
           "browser": {r["text"] for r in run_saved_query(graph, browser, {"key": key})}}
    if graph.driver.execute_query("MATCH ()-[r {key: $k}]->() WHERE r.valid_from IS NOT NULL AND r.valid_to IS NULL "
                                  "RETURN count(r) AS n", k=key, database_=graph.database).records[0]["n"]:
        s_key = explain_edge(graph, key)  # the slice is cut around the subject of the promoted edge
        anchor = next(r["key"] for r in graph.driver.execute_query(
            "MATCH (s:Entity)-[p:PENDING_REL {key: $k}]->() RETURN s.key AS key", k=key,
            database_=graph.database).records)
        cut = build_slice(graph, anchors=[anchor], policy=POLICY)
        out["slice"] = {q.quote for e in cut.edges if e.key == key for q in e.quotes}
        assert s_key.key == key and out["slice"], "the promoted edge is in its subject's slice"
    return out


def test_every_view_quotes_the_sentence_through_forget_merge_rollback_and_reingest(graph, tmp_path):
    a, b = _corpus(tmp_path)
    ingest(graph, [a, b], SCHEMA, config=IngestConfig(promote=False))
    both = {A, B}
    assert all(q == both for q in _quotes(graph).values())
    promote_by_quorum(graph, quorum=1)
    snap = create_snapshot(graph, "both")
    quotes = _quotes(graph)
    assert set(quotes) == {"explain", "review", "browser", "slice"} and all(q == both for q in quotes.values())

    # forgetting the first vote's document leaves the second vote, now first, with its own sentence
    forget(graph, documents=[file_document_id(a)], quorum=1)
    assert all(q == {B} for q in _quotes(graph).values())

    # a rollback restores promoted edges; the staged edge's quote is still the sentence
    rollback(graph, snap.name)
    assert all(q == {B} for q in _quotes(graph).values())

    # re-ingesting both documents: a's vote comes back with its sentence, b's is not repeated
    ingest(graph, [a, b], SCHEMA, config=IngestConfig(promote=False))
    assert all(q == both for q in _quotes(graph).values())
    assert explain_edge(graph, KEY).votes == 2

    # a merge moves the votes to the kept entity's edge, each with its own sentence
    stage(graph, [TripleAssertion(subject="C. Babbage", subject_type="Person", relation="BORN_IN", object="London",
                                  object_type="Place", source="register-1")], schema=SCHEMA)
    keep = entity_key("Person", "C. Babbage")
    merge_entities(graph, keep=keep, drop="Person:charles babbage")
    kept = edge_key(keep, "BORN_IN", "Place:london")
    views = _quotes(graph, kept)
    assert views["explain"] == views["review"] == {A, B, None}  # register-1 is no chunk: no quote
    assert {q for q in views["browser"] if q} == both


def test_a_triple_file_span_is_quoted_and_votes_without_one_quote_the_chunk(graph, tmp_path):
    a, _ = _corpus(tmp_path)
    ingest(graph, [a], SCHEMA, config=IngestConfig(promote=False))
    chunk = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text",
                                       database_=graph.database).records[0]
    text = chunk["text"]
    start = text.index("He spent")
    said = TripleAssertion(subject="Charles Babbage", subject_type="Person", relation="DESIGNED",
                           object="Analytical Engine", object_type="Machine", source=chunk["id"],
                           span=(start, start + len("He spent his fortune on machines.")))
    unsaid = said.model_copy(update={"subject": "Ada Lovelace", "span": None})
    stage(graph, [said, unsaid], schema=SCHEMA)
    assert {e.quote for e in explain_edge(graph, said.key).evidence} == {"He spent his fortune on machines."}
    assert {e.quote for e in explain_edge(graph, unsaid.key).evidence} == {text[:300]}


def test_overflow_votes_keep_their_sentence_when_a_forget_moves_them_inline(graph, tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "MAX_INLINE_VOTES", 1)
    monkeypatch.setattr(stage_rows, "MAX_INLINE_VOTES", 1)
    monkeypatch.setattr("kgr.store.forget.MAX_INLINE_VOTES", 1)
    monkeypatch.setattr("kgr.store.group_commit.MAX_INLINE_VOTES", 1)
    a, b = _corpus(tmp_path)
    ingest(graph, [a], SCHEMA, config=IngestConfig(promote=False))
    ingest(graph, [b], SCHEMA, config=IngestConfig(promote=False))
    spans = graph.driver.execute_query(
        "MATCH ()-[p:PENDING_REL {key: $k}]->() OPTIONAL MATCH (v:Vote) WHERE v.id STARTS WITH $k + '|' "
        "RETURN p.source_span AS inline, collect(v.span) AS overflow", k=KEY, database_=graph.database).records[0]
    assert len(spans["inline"]) == 1 and len(spans["overflow"]) == 1 and all(spans["inline"] + spans["overflow"])
    forget(graph, documents=[file_document_id(a)], quorum=1)
    assert {e.quote for e in explain_edge(graph, KEY).evidence} == {B}


def test_an_agent_session_stores_votes_with_the_sentence_naming_both_ends(graph, tmp_path):
    from kgr.tools.context import ToolContext
    from kgr.tools.registry import run_tool

    a, _ = _corpus(tmp_path)
    ingest(graph, [a], SCHEMA, config=IngestConfig(promote=False, max_rounds=1))
    chunk = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text",
                                       database_=graph.database).records[0]
    kg = {"entities": {"Person": ["Charles Babbage"], "Machine": ["Analytical Engine"]},
          "relations": {"DESIGNED": [{"subject": "Charles Babbage", "object": "Analytical Engine"}]}}
    text = chunk["text"] + " In 1834 Charles Babbage conceived the Analytical Engine."
    graph.driver.execute_query("MATCH (c:Chunk {id: $id}) SET c.text = $t", id=chunk["id"], t=text,
                               database_=graph.database)
    ctx = ToolContext(graph=graph, schema=SCHEMA, source=chunk["id"], source_text=text)
    run_tool("query_kg_storage", {"extracted_kg": kg}, context=ctx)
    key = edge_key("Person:charles babbage", "DESIGNED", "Machine:analytical engine")
    assert {e.quote for e in explain_edge(graph, key).evidence} == {
        "In 1834 Charles Babbage conceived the Analytical Engine."}
