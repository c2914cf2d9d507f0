"""The ingestion pipeline with the offline rules extractor: the density loop, symmetric relations,
resumability inside one process, progress events and the report. Integration tests use the real Neo4j."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.errors import KgrExtractionError
from kgr.extract import RulesExtractor
from kgr.extract.base import ExtractionResult
from kgr.extract.llm import LLMExtractor
from kgr.ingest.assertions import assertions_of as _assertions
from kgr.ingest.config import IngestConfig, make_extractor
from kgr.ingest.pipeline import ingest
from kgr.ingest.report import IngestReport
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema, load_schema
from kgr.store.admin import fingerprint, status
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMA = load_schema(EXAMPLES / "schema.json")


def _kg(entities: dict, relations: dict) -> ExtractedKG:
    return ExtractedKG.model_validate({"entities": entities, "relations": relations})


class Recording:
    """Wraps an extractor and records the guidance of every call (round)."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[tuple[str, list[str] | None]] = []

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        self.calls.append((chunk_text, None if guidance is None else list(guidance)))
        return self.inner.extract(chunk_text, schema, guidance=guidance)


class Empty:
    """Finds nothing, ever: the density tool keeps asking for more."""

    def __init__(self):
        self.calls = 0

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        self.calls += 1
        return ExtractionResult(extractor="empty")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# -- pure pieces ---------------------------------------------------------------------------------


def test_symmetric_relations_are_staged_in_canonical_order():
    assert SCHEMA.relation_types["COLLABORATED_WITH"].symmetric
    one = _kg({"Person": ["John Mauchly", "J. Presper Eckert"]},
              {"COLLABORATED_WITH": [{"subject": "John Mauchly", "object": "J. Presper Eckert"}]})
    other = _kg({"Person": ["J. Presper Eckert", "John Mauchly"]},
                {"COLLABORATED_WITH": [{"subject": "Eckert", "object": "John Mauchly"}]})
    other.entities["Person"].append("Eckert")
    (a,), _ = _assertions(one, SCHEMA, "c1")
    (b,), _ = _assertions(other, SCHEMA, "c2")
    # both orders become (Eckert)-[COLLABORATED_WITH]->(Mauchly): "Person:j presper eckert" < "Person:john mauchly"
    assert (a.subject, a.object) == ("J. Presper Eckert", "John Mauchly")
    assert (b.subject, b.object) == ("Eckert", "John Mauchly")  # the alias resolves to the same key
    # a directed relation keeps its order
    d = _kg({"Person": ["Konrad Zuse"], "Machine": ["Z3"]}, {"DESIGNED": [{"subject": "Konrad Zuse", "object": "Z3"}]})
    (c,), _ = _assertions(d, SCHEMA, "c3")
    assert (c.subject, c.object) == ("Konrad Zuse", "Z3")


def test_assertions_reject_with_reasons():
    kg = _kg({"Person": ["Ada Lovelace", "Charles Babbage"], "Place": ["London"]},
             {"BORN_IN": [{"subject": "London", "object": "Ada Lovelace"},        # domain and range violated
                          {"subject": "Ada Lovelace", "object": "Nowhere"},       # endpoint never extracted
                          {"subject": "Charles Babbage", "object": "London"}],    # fine
              "COLLABORATED_WITH": [{"subject": "Ada Lovelace", "object": "Ada Lovelace"}]})  # self loop
    good, bad = _assertions(kg, SCHEMA, "chunk-9")
    assert [(a.subject, a.relation, a.object) for a in good] == [("Charles Babbage", "BORN_IN", "London")]
    reasons = {r.item: r.reason for r in bad}
    assert "BORN_IN domain is ['Person'], got Place" in reasons["London -> Ada Lovelace"]
    assert "'Nowhere' is not among the extracted entities" in reasons["Ada Lovelace -> Nowhere"]
    assert reasons["Ada Lovelace -> Ada Lovelace"] == "self loop"
    assert {r.chunk_id for r in bad} == {"chunk-9"}


def test_make_extractor_passes_llm_options():
    ex = make_extractor(IngestConfig(extractor="llm", model="openai/x", api_base="http://127.0.0.1:9/v1",
                                     api_key="secret", timeout=7.5, max_attempts=2, concurrency=12))
    assert isinstance(ex, LLMExtractor)
    assert (ex.timeout, ex.retry.max_attempts, ex.max_concurrency, ex.api_base) == (7.5, 2, 12, "http://127.0.0.1:9/v1")
    assert isinstance(make_extractor(IngestConfig()), RulesExtractor)
    with pytest.raises(KgrExtractionError, match="needs --model"):
        make_extractor(IngestConfig(extractor="llm"))
    # the key never shows in the config's repr or dump
    cfg = IngestConfig(extractor="llm", model="m", api_key="secret")
    assert "secret" not in repr(cfg) and "api_key" not in cfg.model_dump()


def test_report_render_lists_failures_and_promotion():
    from kgr.ingest.report import ChunkFailure
    from kgr.model.decisions import RoundSummary

    rep = IngestReport(chunks=3, chunks_processed=2, llm_calls=5, triples_staged=4,
                       chunks_failed=[ChunkFailure(chunk_id="c" * 64, document_id="d" * 64, path="a.txt",
                                                   kind="timeout", reason="LLM request timed out")],
                       promotion=[RoundSummary(version=1, candidates=4, promoted=3, held=1)])
    text = rep.render()
    assert "LLM calls 5" in text and "triples staged 4" in text
    assert "promotion v1: 3 promoted, 1 held, 0 rejected, 0 expired of 4 candidates" in text
    assert "failed chunk cccccccccccc (a.txt): [timeout] LLM request timed out" in text
    assert rep.promotion_totals() == {"promoted": 3, "held": 1, "rejected": 0, "expired": 0}


# -- against Neo4j ---------------------------------------------------------------------------------


@pytest.mark.neo4j
def test_density_loop_reextracts_with_the_density_guidance(graph, tmp_path):
    # names the gazetteer does not know: round 1 finds little, the density tool asks for more
    text = ("Joseph Clement built the Difference Engine in London. Joseph Clement was born in Walworth. "
            "Percy Ludgate designed the Analytical Machine. Percy Ludgate was born in Skibbereen. "
            "Leonardo Torres built the Electromechanical Arithmometer.")
    _write(tmp_path, "doc.txt", text)
    rec = Recording(RulesExtractor())
    rep = ingest(graph, [tmp_path], SCHEMA, config=IngestConfig(max_rounds=3, concurrency=1), extractor=rec)

    assert rep.chunks_processed == 1 and len(rec.calls) >= 2
    assert rec.calls[0][1] is None  # round 1: no guidance
    # round 2's guidance is exactly what the density tool recommended for round 1's extraction
    first = RulesExtractor().extract(text, SCHEMA)
    density = call_tool("query_extraction_density",
                        {"text": text, "schema": {"entity_schema": sorted(SCHEMA.entity_types),
                                                  "relation_schema": sorted(SCHEMA.relation_types)},
                         "extracted_kg": first.kg.model_dump()}, context=ToolContext(schema=SCHEMA))
    assert density["needs_more_extraction"] is True
    assert rec.calls[1][1] == density["recommendations"] and rec.calls[1][1]
    assert rep.tool_calls["query_extraction_density"] >= 2
    # the guided round found more: Joseph Clement is staged as a designer
    keys = {r["key"] for r in graph.driver.execute_query("MATCH (e:Entity) RETURN e.key AS key").records}
    assert "Person:joseph clement" in keys and rep.triples_staged > len(first.kg.relations.get("DESIGNED", []))


@pytest.mark.neo4j
def test_density_loop_stops_at_max_rounds(graph, tmp_path):
    _write(tmp_path, "doc.txt", "Charles Babbage was born in London. He designed the Difference Engine.")
    empty = Empty()
    rep = ingest(graph, [tmp_path], SCHEMA, config=IngestConfig(max_rounds=4), extractor=empty)
    assert empty.calls == 4
    assert rep.rounds_per_chunk["max"] == 4 and rep.rounds_per_chunk["=4"] == 1
    # rounds 1-3 ask the density tool, which asks for more each time; round 4 can be followed by none, so
    # only its quality is scored (density, coverage and feedback decide nothing there)
    assert rep.tool_calls == {"query_extraction_density": 3, "query_quality_metrics": 1}  # nothing to disambiguate
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.rounds AS r, c.process_count AS n, "
                                     "c.processed_at IS NOT NULL AS done").records
    assert [(r["r"], r["n"], r["done"]) for r in rec] == [(4, 1, True)]


@pytest.mark.neo4j
def test_examples_ingest_is_idempotent_and_reports_everything(graph):
    events: dict[str, int] = {}
    rounds = []

    def promote():
        from tests.support.rounds import gedig_round as run_round

        rounds.append(run_round(graph, schema=SCHEMA))
        return rounds[-1]

    rep = ingest(graph, [EXAMPLES / "corpus"], SCHEMA, config=IngestConfig(concurrency=4, commit_chunks=4),
                 on_progress=lambda e, n: events.__setitem__(e, events.get(e, 0) + n), promote=promote)
    st = status(graph)
    assert rep.chunks == rep.chunks_processed == st.chunks == 20 and rep.chunks_failed == []
    assert rep.documents == 13 and rep.load_issues == []
    assert rep.new_votes == st.votes > 100 and rep.new_entities == st.entities
    # the end-of-job resolution finds the corpus's conflicting birthplaces (Turing: Manchester vs London)
    # but only proposes those splits (IngestConfig.resolve_splits): no entity was created by it
    assert rep.resolution is not None and not rep.resolution.splits_applied
    assert "Person:alan turing" in {sp.entity for sp in rep.resolution.splits}
    assert "splits proposed" in rep.render()
    assert rep.triples_staged == rep.new_votes + rep.repeated_votes
    assert rep.transactions >= 5  # at most 4 chunks per commit
    # progress events carry documents, chunks, triples staged (and LLM calls when there are some)
    # and what was read, for the totals and ETA of the progress lines: 8 files (one JSONL holds 6
    # documents), their bytes on disk, every chunk read
    corpus = sorted((EXAMPLES / "corpus").iterdir())
    text = events.pop("text_loaded")
    assert events.pop("text_known") == text > 0  # every document loaded was cut
    assert events == {"documents": 13, "chunks": 20, "triples": rep.triples_staged, "files": len(corpus),
                      "file_bytes": sum(p.stat().st_size for p in corpus), "chunks_read": 20, "chunks_known": 20,
                      "read_all": 1}
    # the report carries the promotion summary
    assert rep.promotion == rounds and rounds[0].promoted > 0 and "promotion v1" in rep.render()
    # the tool calls follow the rounds: a round that may be followed by another asks the density tool, and
    # when it wants no more, the quality then the feedback tool (and coverage when feedback goes on); the
    # last round allowed (max_rounds=3) is only scored by the quality tool, nothing is left to decide there
    calls, rounds = rep.tool_calls, round(rep.rounds_per_chunk["mean"] * 20)
    last = int(rep.rounds_per_chunk.get("=3", 0))
    density, quality = calls["query_extraction_density"], calls["query_quality_metrics"]
    feedback, coverage = calls.get("query_iterative_feedback", 0), calls.get("query_coverage_feedback", 0)
    assert density == rounds - last and quality == feedback + last and density >= 20
    assert coverage == (rounds - 20) - (density - feedback)  # rounds continued by feedback, not by density
    assert calls["query_entity_disambiguation"] > 0
    # the storage step stages directly in each chunk's transaction: reported as such, not as a tool call
    assert "query_kg_storage" not in rep.tool_calls
    assert f"storage: 20 chunks staged in {rep.transactions} write transactions" in rep.render()
    assert 1 <= rep.rounds_per_chunk["mean"] <= 3

    fp = fingerprint(graph)
    again = ingest(graph, [EXAMPLES / "corpus"], SCHEMA)
    assert (again.chunks_skipped, again.chunks_processed, again.new_votes) == (20, 0, 0)
    assert fingerprint(graph) == fp
    counts = {r["n"] for r in graph.driver.execute_query("MATCH (c:Chunk) RETURN c.process_count AS n").records}
    assert counts == {1}


@pytest.mark.neo4j
def test_the_end_of_an_ingest_promotes_until_the_backlog_is_settled(graph):
    from kgr.promotion.gedig import PromotionConfig
    from tests.support.rounds import gedig_round as run_round

    small = PromotionConfig(max_promotions_per_round=3)
    rep = ingest(graph, [EXAMPLES / "corpus"], SCHEMA, config=IngestConfig(concurrency=2),
                 promote=lambda: run_round(graph, schema=SCHEMA, config=small))
    rounds = rep.promotion
    assert len(rounds) > 2 and all(r.promoted <= 3 for r in rounds)
    assert rounds[-1].settled and not any(r.settled for r in rounds[:-1])
    assert run_round(graph, schema=SCHEMA, config=small).settled  # nothing left to gain
    again = ingest(graph, [EXAMPLES / "corpus"], SCHEMA, config=IngestConfig(final_promotion_rounds=1),
                   promote=lambda: run_round(graph, schema=SCHEMA, config=small))
    assert len(again.promotion) == 1  # the cap holds


@pytest.mark.neo4j
def test_symmetric_votes_are_shared_in_the_graph(graph, tmp_path):
    _write(tmp_path, "a.txt", "John Mauchly worked with J. Presper Eckert.")
    _write(tmp_path, "b.txt", "J. Presper Eckert collaborated with John Mauchly.")
    rep = ingest(graph, [tmp_path], SCHEMA, config=IngestConfig(max_rounds=1))
    assert rep.chunks_processed == 2
    rows = [r for r in graph.read("pending_edges", {"statuses": None}) if r["relation"] == "COLLABORATED_WITH"]
    assert len(rows) == 1 and rows[0]["votes"] == 2
    assert (rows[0]["subject_key"], rows[0]["object_key"]) == ("Person:j presper eckert", "Person:john mauchly")


@pytest.mark.neo4j
def test_a_chunk_repeated_in_one_run_is_processed_once(graph, tmp_path):
    text = "Konrad Zuse built the Z3 in Berlin. Konrad Zuse was born in Berlin."
    a = _write(tmp_path, "a.txt", text)
    rep = ingest(graph, [tmp_path, a], SCHEMA)  # the file twice (in its directory, and by name): one document
    assert (rep.chunks, rep.chunks_processed, rep.chunks_skipped) == (2, 1, 1)
    counts = [r["n"] for r in graph.driver.execute_query("MATCH (c:Chunk) RETURN c.process_count AS n").records]
    assert counts == [1]


@pytest.mark.neo4j
def test_bad_inputs_are_reported_not_fatal(graph, tmp_path):
    _write(tmp_path, "good.txt", "Konrad Zuse built the Z3.")
    (tmp_path / "bad.jsonl").write_text('{"text": "Alan Turing was born in London."}\nnot json\n', encoding="utf-8")
    rep = ingest(graph, [tmp_path], SCHEMA)
    assert rep.chunks_processed == 2
    assert len(rep.load_issues) == 1 and "bad.jsonl:2" in rep.load_issues[0]


@pytest.mark.neo4j
def test_a_chunk_the_database_refuses_fails_alone(graph, tmp_path, monkeypatch):
    """A group commit that Neo4j refuses for one chunk's data is retried chunk by chunk."""
    import time

    import neo4j.exceptions

    from kgr.store import group_commit
    from kgr.ingest.chunking import ChunkingConfig, iter_chunks
    from kgr.ingest.loaders import iter_documents

    for i, machine in enumerate(["Z1", "Z3", "ENIAC", "EDSAC", "Colossus", "BINAC"]):
        _write(tmp_path, f"d{i}.txt", f"Konrad Zuse built the {machine}.")
    bad = next(c for c in iter_chunks(iter_documents(tmp_path), config=ChunkingConfig()) if "ENIAC" in c.text)
    real_finish, real_commit = group_commit.write_marks, group_commit.GroupWriter._commit
    groups: list[list[str]] = []

    def finish(tx, marks, **kw):  # the group's processed marks, one statement: refused when the bad chunk is in it
        if any(m.chunk_id == bad.id for m in marks):
            raise neo4j.exceptions.ClientError("refused by the test")
        return real_finish(tx, marks, **kw)

    def commit(self, group):
        groups.append([m.chunk_id for u in group for m in u.marks])
        if len(groups) == 1:  # the others queue up behind the first commit and form one group
            deadline = time.monotonic() + 20
            while len(group) + len(self._shared) < 6 and time.monotonic() < deadline:  # (a fixed sleep: flaky)
                time.sleep(0.02)
        return real_commit(self, group)

    class SlowOnBad(RulesExtractor):
        def extract(self, chunk_text, schema, *, guidance=None):
            if "Z1" not in chunk_text:
                time.sleep(0.2)  # Z1 reaches the writer alone; the others, the bad one among them, form a group
            return super().extract(chunk_text, schema, guidance=guidance)

    monkeypatch.setattr(group_commit, "write_marks", finish)
    monkeypatch.setattr(group_commit.GroupWriter, "_commit", commit)
    rep = ingest(graph, [tmp_path], SCHEMA, extractor=SlowOnBad(),
                 config=IngestConfig(concurrency=6, commit_chunks=8, max_rounds=1))
    assert rep.chunks_processed == 5 and [f.chunk_id for f in rep.chunks_failed] == [bad.id]
    assert rep.chunks_failed[0].kind == "KgrDatabaseError" and "refused by the test" in rep.chunks_failed[0].reason
    assert any(bad.id in g and len(g) > 1 for g in groups)  # it was refused inside a group ...
    assert [bad.id] in groups  # ... then retried alone
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.process_count AS n").records
    assert {r["id"]: r["n"] for r in rec} == {**{r["id"]: 1 for r in rec if r["id"] != bad.id}, bad.id: None}
    assert not any(p["object"] == "ENIAC" for p in graph.read("pending_edges", {"statuses": None}))


@pytest.mark.neo4j
def test_ingest_at_concurrency_8_gives_the_graph_of_concurrency_1(graph, tmp_path):
    """Issue 13, item 6: two ingests of one corpus at the default concurrency differed in two edges'
    votes: whether a name matched an entity by fuzzy similarity depended on which chunk committed
    first. Fuzzy matches now only reach entities that existed when the run began."""
    from kgr.model.schema import KGSchema
    from kgr.store.admin import fingerprint, init_store, reset

    schema = KGSchema.model_validate({
        "entity_types": {"Person": {"patterns": [r"\bDr [A-Z][a-z]+\b"]},
                         "Organization": {"patterns": [r"\bMicros\w*\b", r"\bInit\w*ch\b"]}},
        "relation_types": {"WORKS_AT": {"domain": ["Person"], "range": ["Organization"], "triggers": ["works at"]}}})
    names = ["Microsoft", "Microsft", "Microsoftt", "Initech", "Inittech"]
    for i in range(24):
        org = names[i % len(names)]
        (tmp_path / f"d{i:02d}.txt").write_text(f"Dr {'Abcdefghij'[i % 10]}ow works at {org}.\n", encoding="utf-8")
    prints = []
    for conc in (1, 8, 8):
        reset(graph)
        init_store(graph, schema)
        ingest(graph, [tmp_path], schema, config=IngestConfig(concurrency=conc, promote=False))
        prints.append(fingerprint(graph))
    assert prints[0] == prints[1] == prints[2]


@pytest.mark.neo4j
def test_a_feedback_round_is_guided_by_coverage_and_feedback_and_carries_quality_suggestions(graph, tmp_path,
                                                                                             monkeypatch):
    """The loop reads the tools' typed outputs: a round the feedback tool asks for gets the coverage
    recommendations and the feedback's next steps as guidance, and the next feedback call receives
    the quality tool's improvement suggestions (these keys were once read from dicts that lacked them)."""
    import functools

    from kgr.ingest import drafting

    _write(tmp_path, "doc.txt", "Charles Babbage was born in London. Charles Babbage designed the Difference Engine.")
    seen: dict[str, list] = {"coverage": [], "quality": [], "feedback_in": []}

    def spying(fn):
        @functools.wraps(fn)
        def spy(params, *, context):
            out = fn(params, context=context)
            if fn.__name__ == "query_coverage_feedback":
                seen["coverage"].append(out.recommendations)
            if fn.__name__ == "query_quality_metrics":
                seen["quality"].append(out.improvement_suggestions)
            if fn.__name__ == "query_iterative_feedback":
                seen["feedback_in"].append(params.feedback_history)
                if len(seen["feedback_in"]) == 1:  # ask for one more round, with a step of its own
                    out = out.model_copy(update={"should_continue_iteration": True, "next_steps": ["NEXT STEP X"]})
            return out
        return spy

    for name in ("query_coverage_feedback", "query_quality_metrics", "query_iterative_feedback"):
        monkeypatch.setattr(drafting, name, spying(getattr(drafting, name)))
    rec = Recording(RulesExtractor())
    ingest(graph, [tmp_path], SCHEMA, config=IngestConfig(max_rounds=3, concurrency=1), extractor=rec)
    assert len(rec.calls) >= 2
    assert rec.calls[1][1] == [*seen["coverage"][0], "NEXT STEP X"][:10]
    assert seen["feedback_in"][1] == seen["quality"][0][:5] and seen["quality"][0]
