"""The pipeline's per-run disambiguation cache, its batched chunk marks and its truthful report: the
graph is the same with and without the cache (entities, votes, chunks, MENTIONS), names created by the
run's own staging are still deduplicated, and the storage step is not reported as a tool call.
Real Neo4j, real tools; a scripted extractor decides what each chunk "contains"."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from kgr.extract import RulesExtractor
from kgr.extract.base import ExtractionResult
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema, load_schema
from kgr.store.admin import fingerprint, reset

pytestmark = pytest.mark.neo4j

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMA = load_schema(EXAMPLES / "schema.json")

# chunk tag -> what the "extractor" finds in it; each chunk is extracted only once its predecessor
# is committed, so every lookup sees the previous chunks' entities
SCRIPT: dict[str, dict] = {
    "A": {"entities": {"Person": ["Grace Hopper"], "Organization": ["Harvard University"]},
          "relations": {"WORKED_AT": [{"subject": "Grace Hopper", "object": "Harvard University"}]}},
    "B": {"entities": {"Person": ["Grace Hopper"], "Machine": ["Harvard Mark I"]},
          "relations": {"DESIGNED": [{"subject": "Grace Hopper", "object": "Harvard Mark I"}]}},
    # a misspelling of a name this run created: within a run, fuzzy matches only reach entities that
    # existed when it began (order-independent), so it stays its own entity; never cached
    "C": {"entities": {"Person": ["Grace Hoper"], "Organization": ["Harvard University"]},
          "relations": {"WORKED_AT": [{"subject": "Grace Hoper", "object": "Harvard University"}]}},
    # both names resolved exactly before: no lookup at all
    "D": {"entities": {"Person": ["Grace Hopper"], "Organization": ["Harvard University"]},
          "relations": {"WORKED_AT": [{"subject": "Grace Hopper", "object": "Harvard University"}]}},
    "E": {"entities": {"Person": ["Grace Hoper"], "Organization": ["Harvard University"]},
          "relations": {"WORKED_AT": [{"subject": "Grace Hoper", "object": "Harvard University"}]}},
}


class Sequential:
    """Returns SCRIPT[tag] for a chunk "tag: ...", once the chunk before it is processed in Neo4j."""

    def __init__(self, graph):
        self.graph = graph

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        tag = chunk_text.split(":")[0]
        order = list(SCRIPT)
        if order.index(tag) > 0:
            before = order[order.index(tag) - 1]
            deadline = time.monotonic() + 30
            while not self._processed(before):
                assert time.monotonic() < deadline, f"chunk {before} was never committed"
                time.sleep(0.02)
        return ExtractionResult(kg=ExtractedKG.model_validate(SCRIPT[tag]), extractor="scripted")

    def _processed(self, tag: str) -> bool:
        rec = self.graph.driver.execute_query(
            "MATCH (c:Chunk) WHERE c.text STARTS WITH $p AND c.processed_at IS NOT NULL RETURN count(c) AS n",
            p=f"{tag}:").records
        return rec[0]["n"] == 1


def _mentions(graph) -> set[tuple[str, str]]:
    rec = graph.driver.execute_query(
        "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN left(c.text, 12) AS chunk, e.key AS key").records
    return {(r["chunk"], r["key"]) for r in rec}


def _chunk_marks(graph) -> list[tuple]:
    rec = graph.driver.execute_query(
        "MATCH (c:Chunk) RETURN left(c.text, 12) AS chunk, c.process_count AS n, c.extractor AS x, c.rounds AS r, "
        "c.processed_at IS NOT NULL AS done ORDER BY chunk").records
    return [tuple(r.values()) for r in rec]


def test_cache_skips_lookups_of_exact_matches_and_changes_nothing(graph, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"doc-{t}", "text": f"{t}: notes on Grace Hopper ({t})."}) + "\n"
                              for t in SCRIPT), encoding="utf-8")
    runs = {}
    for size in (0, 1000):
        reset(graph)
        rep = ingest(graph, [corpus], SCHEMA, extractor=Sequential(graph),
                     config=IngestConfig(concurrency=2, max_rounds=1, disambiguation_cache=size))
        assert rep.chunks_processed == 5 and rep.chunks_failed == []
        runs[size] = (rep, fingerprint(graph), _mentions(graph), _chunk_marks(graph))

    off, on = runs[0][0], runs[1000][0]
    # A, B, C, E ask the tool; D's two names were resolved exactly by B and C: no lookup
    assert (off.tool_calls["query_entity_disambiguation"], off.disambiguation_cached) == (5, 0)
    assert (on.tool_calls["query_entity_disambiguation"], on.disambiguation_cached) == (4, 3)
    assert "3 names resolved from the run's cache" in on.render()
    # the same graph either way: entities, votes, chunks, and the batched processed marks and MENTIONS
    assert runs[0][1:] == runs[1000][1:]
    fp, mentions, marks = runs[1000][1:]
    # the misspelling of an entity this run created is not matched to it (the promotion's
    # near-duplicate check is what catches it, naming the `kgr merge` that would unite them)
    people = {r["key"] for r in graph.driver.execute_query("MATCH (e:Person) RETURN e.key AS key").records}
    assert people == {"Person:grace hopper", "Person:grace hoper"}
    votes = {(r["s"], r["k"]): r["v"] for r in graph.driver.execute_query(
        "MATCH (s)-[p:PENDING_REL]->() RETURN s.key AS s, p.type AS k, p.votes AS v").records}
    assert votes == {("Person:grace hopper", "WORKED_AT"): 2, ("Person:grace hopper", "DESIGNED"): 1,
                     ("Person:grace hoper", "WORKED_AT"): 2}
    assert ("D: notes on ", "Person:grace hopper") in mentions and ("D: notes on ", "Organization:harvard university") in mentions
    assert len(mentions) == 10
    assert [m[1:] for m in marks] == [(1, "scripted", 1, True)] * 5


def _corpus(path: Path, n_docs: int, seed: int = 3, prefix: str = "doc") -> Path:
    """One-chunk documents of facts about a few gazetteer names that are far from each other (so what
    disambiguation finds cannot depend on the order chunks commit in)."""
    people = ["Grace Hopper", "Konrad Zuse", "Alan Turing", "Tommy Flowers", "Claude Shannon"]
    orgs = ["Harvard University", "IBM", "Bell Labs", "Remington Rand"]
    places = ["Berlin", "London", "Paris", "Petoskey"]
    rng = random.Random(seed)
    facts = [lambda: f"{rng.choice(people)} worked at {rng.choice(orgs)}.",
             lambda: f"{rng.choice(people)} was born in {rng.choice(places)}.",
             lambda: f"The {rng.choice(orgs)} is located in {rng.choice(places)}."]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            text = f"Record {i}. " + " ".join(rng.choice(facts)() for _ in range(4))
            fh.write(json.dumps({"id": f"{prefix}-{i}", "text": text}) + "\n")
    return path


class Lagged:
    """The rules extractor, extracting document ``more-k`` only once ``more-(k - LAG)`` is committed:
    ``LAG`` chunks are drafted at once, and whatever the machine's load, every name of a chunk
    ``LAG`` places back was looked up before a chunk is, so the cache's hits have a lower bound."""

    LAG = 8

    def __init__(self, graph):
        self.graph, self.rules = graph, RulesExtractor()

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        k = int(chunk_text.split(".")[0].removeprefix("Record "))  # "Record k. ..." (one chunk each)
        if k >= self.LAG:
            deadline = time.monotonic() + 30
            while not self._processed(f"more-{k - self.LAG}"):
                assert time.monotonic() < deadline, f"more-{k - self.LAG} was never committed"
                time.sleep(0.02)
        return self.rules.extract(chunk_text, schema, guidance=guidance)

    def _processed(self, doc: str) -> bool:
        rec = self.graph.driver.execute_query(
            "MATCH (c:Chunk {document_id: $d}) WHERE c.processed_at IS NOT NULL RETURN count(c) AS n", d=doc).records
        return rec[0]["n"] == 1


def _names_by_document(graph, prefix: str, n: int) -> list[set[str]]:
    """The entity keys each document ``prefix-k`` mentions, in ``k`` order."""
    rec = graph.driver.execute_query(
        "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE c.document_id STARTS WITH $p "
        "RETURN c.document_id AS d, collect(e.key) AS keys", p=f"{prefix}-").records
    by_doc = {r["d"]: set(r["keys"]) for r in rec}
    return [by_doc.get(f"{prefix}-{k}", set()) for k in range(n)]


def test_concurrent_run_with_the_cache_equals_one_without(graph, tmp_path):
    # a first job builds the graph; a second (other documents, the same names) runs on it, so every
    # lookup of the second is a unique exact match, remembered for the rest of the job
    first = _corpus(tmp_path / "a.jsonl", 48, seed=3)
    second = _corpus(tmp_path / "b.jsonl", 48, seed=4, prefix="more")
    runs = {}
    for size in (0, 65_536):
        reset(graph)
        reps = [ingest(graph, [corpus], SCHEMA, extractor=extractor,
                       config=IngestConfig(concurrency=8, commit_chunks=8, max_rounds=1, disambiguation_cache=size))
                for corpus, extractor in ((first, RulesExtractor()), (second, Lagged(graph)))]
        assert [(r.chunks_processed, r.chunks_failed) for r in reps] == [(48, [])] * 2
        runs[size] = (reps, fingerprint(graph), _mentions(graph), _chunk_marks(graph))
    (off1, off2), (on1, on2) = runs[0][0], runs[65_536][0]
    assert runs[0][1:] == runs[65_536][1:]
    assert [(r.new_votes, r.new_entities) for r in (off1, off2)] == [(r.new_votes, r.new_entities) for r in (on1, on2)]
    assert off2.new_entities == 0  # the second job's names are all known
    assert off1.disambiguation_cached == off2.disambiguation_cached == 0
    # document more-k is drafted after more-(k - 8) was committed: its names known from the
    # documents up to k - 8 come from the cache (a lower bound; chunks drafted later hit more)
    names = _names_by_document(graph, "more", 48)
    known: set[str] = set()
    floor = 0
    for k in range(Lagged.LAG, 48):
        known |= names[k - Lagged.LAG]
        floor += len(names[k] & known)
    assert floor > 100 and on2.disambiguation_cached >= floor
    assert on2.tool_calls["query_entity_disambiguation"] < off2.tool_calls["query_entity_disambiguation"] == 48
    # every chunk marked exactly once, by the group's one statement
    assert {m[1:] for m in runs[65_536][3]} == {(1, "rules", 1, True)}
    assert on1.transactions < 48 and on2.transactions < 48  # groups of chunks per transaction


def test_storage_step_is_reported_as_staging_not_as_a_tool_call(graph, tmp_path, monkeypatch):
    import functools

    from kgr.ingest import drafting

    called: list[str] = []

    def spying(fn):
        @functools.wraps(fn)
        def spy(params, *, context):
            called.append(fn.__name__)
            return fn(params, context=context)
        return spy

    tools = {name: fn for name, fn in vars(drafting).items() if hasattr(fn, "tool_spec")}  # every tool it calls
    assert len(tools) == 5
    for name, fn in tools.items():
        monkeypatch.setattr(drafting, name, spying(fn))
    corpus = _corpus(tmp_path / "c.jsonl", 6)
    rep = ingest(graph, [corpus], SCHEMA, config=IngestConfig(concurrency=2, max_rounds=1))
    assert rep.chunks_processed == 6 and rep.new_votes > 0
    # the report counts exactly the tools the pipeline called; query_kg_storage is not one of them
    assert "query_kg_storage" not in called and "query_kg_storage" not in rep.tool_calls
    assert rep.tool_calls == {name: called.count(name) for name in set(called)}
    assert f"storage: 6 chunks staged in {rep.transactions} write transactions" in rep.render()
    data = rep.model_dump()
    assert "query_kg_storage" not in data["tool_calls"]
