"""The LLM path end to end: ``ingest(...)`` → LLMExtractor → litellm → real HTTP → the OpenAI-compatible
stub (tests/support/llm_stub.py) → staging in the real Neo4j → promotion."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:  # --import-mode=importlib: the shared helpers live in the tests.support package
    sys.path.insert(0, _ROOT)

from kgr.ingest.config import IngestConfig  # noqa: E402
from kgr.ingest.pipeline import ingest  # noqa: E402
from kgr.model.schema import load_schema  # noqa: E402
from tests.support.rounds import gedig_round as run_round  # noqa: E402
from kgr.engine import promote_by_quorum  # noqa: E402
from kgr.store.provenance import schema_proposals  # noqa: E402
from kgr.store.versions import promoted_edges  # noqa: E402
from tests.support.llm_stub import StubReply, llm_stub_factory  # noqa: E402,F401

pytestmark = pytest.mark.neo4j

SCHEMA = load_schema(Path(_ROOT) / "examples" / "schema.json")
USAGE = {"prompt_tokens": 100, "completion_tokens": 20}
# what the "model" answers for every chunk about Babbage (the text is in the prompt)
GOOD = {
    "entities": {"Person": ["Charles Babbage"], "Place": ["London"], "Machine": ["Difference Engine"]},
    "relations": {"BORN_IN": [{"subject": "Charles Babbage", "object": "London"}],
                  "DESIGNED": [{"subject": "Charles Babbage", "object": "Difference Engine"}]},
}
TEXT = "{tag}: Charles Babbage was born in London. Charles Babbage designed the Difference Engine."


def _corpus(tmp_path: Path, tags: list[str]) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    for tag in tags:
        (d / f"{tag}.txt").write_text(TEXT.format(tag=tag), encoding="utf-8")
    return d


def _prompt(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def _config(stub, **kw) -> IngestConfig:
    base = dict(extractor="llm", model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="stub-key",
                timeout=1.5, max_attempts=2, concurrency=4, max_rounds=1)
    return IngestConfig(**{**base, **kw})


def _chunk_state(graph) -> dict[str, tuple[bool, int | None]]:
    """``document tag -> (processed?, process_count)``."""
    rec = graph.driver.execute_query(
        "MATCH (c:Chunk) RETURN c.text AS text, c.processed_at IS NOT NULL AS done, c.process_count AS n").records
    return {r["text"].split(":")[0]: (r["done"], r["n"]) for r in rec}


def test_llm_ingest_normal_malformed_429_and_timeout(graph, tmp_path, llm_stub_factory):
    seen: Counter[str] = Counter()

    def responder(body: dict) -> StubReply:
        prompt = _prompt(body)
        tag = next(t for t in ("MALFORMED", "RATELIMIT", "SLOW", "NORMAL") if f"{t}-" in prompt)
        seen[tag] += 1
        if tag == "MALFORMED" and seen[tag] == 1:  # a truncated object: repaired by the one repair request
            return StubReply.text('{"entities": {"Person": ["Charles Babbage"], "Place": ["Lon', usage=USAGE)
        if tag == "RATELIMIT" and seen[tag] == 1:
            return StubReply.error(429, "slow down", retry_after=0.05)
        if tag == "SLOW":  # longer than the 1.5 s timeout, on every attempt
            return StubReply.sleep(4.0)
        return StubReply.json(GOOD, usage=USAGE)

    stub = llm_stub_factory(default=responder)
    corpus = _corpus(tmp_path, ["NORMAL-1", "NORMAL-2", "NORMAL-3", "MALFORMED-1", "RATELIMIT-1", "SLOW-1"])
    events: Counter[str] = Counter()
    rep = ingest(graph, [corpus], SCHEMA, config=_config(stub), on_progress=lambda e, n: events.update({e: n}),
                 promote=lambda: run_round(graph, schema=SCHEMA))

    # five chunks through, the timed-out one reported with its reason; the batch completed
    assert (rep.chunks, rep.chunks_processed) == (6, 5)
    (failed,) = rep.chunks_failed
    assert failed.kind == "timeout" and "timed out after 1.5 s on each of 2 attempt(s)" in failed.reason
    assert failed.path is not None and failed.path.endswith("SLOW-1.txt")
    # requests: 3 normal + malformed&repair + 429&retry + 2 timed-out attempts
    assert seen == {"NORMAL": 3, "MALFORMED": 2, "RATELIMIT": 2, "SLOW": 2}
    assert rep.llm_calls == 3 + 2 + 2 + 2 == events["llm_calls"]
    # tokens of every answered request (the 429 and the timeouts answered nothing); litellm prices gpt-4o-mini
    assert (rep.prompt_tokens, rep.completion_tokens) == (6 * 100, 6 * 20)
    import litellm

    price = litellm.model_cost["gpt-4o-mini"]
    assert rep.cost_usd > 0 and rep.unpriced_llm_calls == 0
    assert rep.cost_usd == pytest.approx(600 * price["input_cost_per_token"] + 120 * price["output_cost_per_token"],
                                         rel=1e-9)
    assert events["failed"] == 1 and events["chunks"] == 6 and events["triples"] == rep.triples_staged == 10
    # one edge per fact, five votes each; the failed chunk is NOT marked processed
    pending = graph.read("pending_edges", {"statuses": None})
    assert sorted((p["relation"], p["votes"]) for p in pending) == [("BORN_IN", 5), ("DESIGNED", 5)]
    state = _chunk_state(graph)
    assert state["SLOW-1"] == (False, None)
    assert all(state[t] == (True, 1) for t in state if t != "SLOW-1")
    assert rep.promotion and rep.promotion[0].promoted == 2
    assert "LLM calls 9, tokens 600+120" in rep.render()

    # the model recovers: a re-run retries exactly the failed chunk
    seen.clear()
    stub.default = StubReply.json(GOOD, usage=USAGE)
    again = ingest(graph, [corpus], SCHEMA, config=_config(stub))
    assert (again.chunks_skipped, again.chunks_processed, again.chunks_failed, again.llm_calls) == (5, 1, [], 1)
    assert again.new_votes == 2
    assert set(_chunk_state(graph).values()) == {(True, 1)}


def test_guidance_of_the_density_loop_reaches_the_model(graph, tmp_path, llm_stub_factory):
    # the model first answers almost nothing; the density tool asks for more, the second prompt says so
    replies = iter([StubReply.json({"entities": {"Person": ["Charles Babbage"]}, "relations": {}}, usage=USAGE)])
    stub = llm_stub_factory(default=lambda body: next(replies, StubReply.json(GOOD, usage=USAGE)))
    corpus = _corpus(tmp_path, ["NORMAL-1"])
    rep = ingest(graph, [corpus], SCHEMA, config=_config(stub, max_rounds=3, concurrency=1))
    assert rep.chunks_processed == 1 and rep.llm_calls >= 2
    first, second = stub.requests[0], stub.requests[1]
    assert "Recommendations from the assessment" not in first.prompt
    assert "Recommendations from the assessment of the previous extraction" in second.prompt
    assert rep.triples_staged == 2


def test_schema_violations_are_proposed_or_rejected_never_promoted(graph, tmp_path, llm_stub_factory):
    reply = {
        "entities": {"Person": ["Charles Babbage", "Ada Lovelace"], "Place": ["London"],
                     "Spaceship": ["Apollo 11"]},                                             # unknown entity type
        "relations": {
            "BORN_IN": [{"subject": "Charles Babbage", "object": "London"},                   # fine
                        {"subject": "London", "object": "Ada Lovelace"}],                     # wrong domain/range
            "DESIGNED": [{"subject": "Ada Lovelace", "object": "London"}],                    # wrong range
            "PILOTED": [{"subject": "Ada Lovelace", "object": "Apollo 11"}],                  # unknown relation type
        },
    }
    stub = llm_stub_factory(default=StubReply.json(reply, usage=USAGE))
    corpus = _corpus(tmp_path, ["NORMAL-1", "NORMAL-2"])
    rep = ingest(graph, [corpus], SCHEMA, config=_config(stub))
    assert rep.chunks_processed == 2 and rep.chunks_failed == []

    # unknown types are staged as schema proposals, one vote per chunk
    props = {(p.kind, p.name, p.votes) for p in schema_proposals(graph)}
    assert props == {("entity", "Spaceship", 2), ("relation", "PILOTED", 2)}
    assert rep.schema_proposals == 4
    # the rest is rejected with a recorded reason
    reasons = {(r.type, r.item): r.reason for r in rep.rejections}
    assert "domain" in reasons[("BORN_IN", "London -> Ada Lovelace")]
    assert "range" in reasons[("DESIGNED", "Ada Lovelace -> London")]
    assert rep.rejected_items >= 4

    # only the valid triple was staged; even the laxest promotion (quorum 1) promotes nothing else
    pending = graph.read("pending_edges", {"statuses": None})
    assert [(p["subject"], p["relation"], p["object"]) for p in pending] == [("Charles Babbage", "BORN_IN", "London")]
    promote_by_quorum(graph, quorum=1)
    run_round(graph, schema=SCHEMA)
    promoted = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph)}
    assert promoted == {("Person:charles babbage", "BORN_IN", "Place:london")}
    types = {r["t"] for r in graph.driver.execute_query(
        "MATCH ()-[r]->() WHERE r.valid_from IS NOT NULL RETURN DISTINCT type(r) AS t").records}
    assert types == {"BORN_IN"}


def test_cli_ingest_with_the_llm_reports_failures_with_exit_code_2(graph, neo4j_settings, tmp_path, llm_stub_factory,
                                                                    monkeypatch):
    import json

    from typer.testing import CliRunner

    from kgr.cli.main import app

    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    if neo4j_settings.password is not None:
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j_settings.password)
    stub = llm_stub_factory(default=lambda body: StubReply.sleep(4.0) if "SLOW-" in _prompt(body)
                            else StubReply.json(GOOD, usage=USAGE))
    corpus = _corpus(tmp_path, ["NORMAL-1", "SLOW-1"])
    args = ["ingest", str(corpus), "--schema", str(Path(_ROOT) / "examples" / "schema.json"), "--extractor", "llm",
            "--model", "openai/stub-model", "--api-base", stub.base_url, "--timeout", "1.5", "--max-attempts", "1",
            "--max-rounds", "1", "--no-promote", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["chunks_processed"] == 1 and report["llm_calls"] == 2
    # litellm has no price for "stub-model": cost unknown, said so rather than shown as free
    assert (report["cost_usd"], report["unpriced_llm_calls"]) == (0.0, 1)
    assert [f["kind"] for f in report["chunks_failed"]] == ["timeout"]
    assert "Error: 1 chunk(s) failed" in result.stderr and "re-run" in result.stderr

    bad = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", str(Path(_ROOT) / "examples" / "schema.json"),
                                   "--extractor", "magic"])
    assert bad.exit_code == 1 and bad.stderr.strip() == "Error: --extractor: Input should be 'rules' or 'llm'"
    no_model = CliRunner().invoke(app, ["ingest", str(corpus), "--schema",
                                        str(Path(_ROOT) / "examples" / "schema.json"), "--extractor", "llm"])
    assert no_model.exit_code == 1 and "needs --model" in no_model.stderr
    no_url = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", str(Path(_ROOT) / "examples" / "schema.json"),
                                      "--model", "openai/stub-model", "--api-base", "notaurl"])
    assert no_url.exit_code == 1 and no_url.stderr.strip() == (
        "Error: --api-base: 'notaurl' is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:8000/v1)")
    assert len(stub.requests) == 2  # the first run's, none since


def test_cli_model_implies_the_llm_extractor(graph, neo4j_settings, tmp_path, llm_stub_factory, monkeypatch):
    import json
    import os

    from kgr.litellm_offline import OPENAI_HTTP_SWITCH

    from typer.testing import CliRunner

    from kgr.cli.main import app

    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    if neo4j_settings.password is not None:
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j_settings.password)
    monkeypatch.delenv(OPENAI_HTTP_SWITCH, raising=False)
    stub = llm_stub_factory(default=StubReply.json(GOOD, usage=USAGE))
    corpus = _corpus(tmp_path, ["NORMAL-1", "NORMAL-2"])
    schema = str(Path(_ROOT) / "examples" / "schema.json")
    # no --extractor: --model means the llm extractor (the rules extractor would send no request)
    # (a model name of its own: prices given to litellm hold for the whole process)
    result = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", schema, "--model", "openai/kgr-cli-priced",
                                      "--api-base", stub.base_url, "--max-rounds", "1", "--no-promote", "--json",
                                      "--input-cost-per-token", "0.000001", "--output-cost-per-token", "0.000004"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["chunks_processed"] == 2 and report["llm_calls"] == 2 == len(stub.requests)
    # an openai/ model with --api-base: kgr ingest's process asks through litellm's HTTP handler, and
    # puts litellm's process-wide switch back as it found it (unset here) when the job ends
    assert {r.headers["user-agent"].split("/")[0] for r in stub.requests} == {"litellm"}
    assert OPENAI_HTTP_SWITCH not in os.environ
    # the prices given on the command line price the model litellm does not know
    assert report["unpriced_llm_calls"] == 0
    assert report["cost_usd"] == pytest.approx(2 * (100 * 1e-6 + 20 * 4e-6), rel=1e-9)

    # an explicit --extractor rules with an LLM option is a contradiction: one line, exit 1, nothing sent
    bad = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", schema, "--extractor", "rules",
                                   "--model", "openai/stub-model"])
    assert bad.exit_code == 1
    assert bad.stderr.strip() == "Error: --model applies to the llm extractor only, not to --extractor rules"
    half = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", schema, "--model", "openai/stub-model",
                                    "--input-cost-per-token", "0.000001"])
    assert half.exit_code == 1 and half.stderr.strip() == (
        "Error: give both --input-cost-per-token and --output-cost-per-token, or neither")
    assert len(stub.requests) == 2


def test_config_model_implies_the_llm_extractor():
    from pydantic import ValidationError

    assert IngestConfig(model="openai/stub-model").extractor == "llm"
    assert IngestConfig().extractor == "rules"
    with pytest.raises(ValidationError, match="'model' applies to the llm extractor only"):
        IngestConfig(extractor="rules", model="openai/stub-model")
    with pytest.raises(ValidationError, match="give both 'input_cost_per_token' and 'output_cost_per_token'"):
        IngestConfig(model="openai/stub-model", input_cost_per_token=1e-6)


def test_concurrency_bounds_llm_requests_in_flight_not_chunks_in_their_tools(graph, tmp_path, llm_stub_factory):
    """``concurrency`` is the number of LLM requests in flight: reached and never passed, while the
    drafter admits twice that many chunks, so a chunk running its tools holds no request slot (a
    request-bounded extractor); an extractor without its own bound gets ``concurrency`` chunks."""
    from kgr.extract import RulesExtractor
    from kgr.ingest.config import make_extractor
    from kgr.ingest.drafting import ChunkDrafter

    stub = llm_stub_factory(default=StubReply.json(GOOD, usage=USAGE), latency=0.08)
    cfg = _config(stub, concurrency=3)
    rep = ingest(graph, [_corpus(tmp_path, [f"c{i}" for i in range(24)])], SCHEMA, config=cfg)
    assert rep.chunks_processed == 24 and rep.chunks_failed == []
    assert stub.max_inflight == 3
    for extractor, admitted in ((make_extractor(cfg), 6), (RulesExtractor(), 3)):
        drafter = ChunkDrafter(graph, SCHEMA, extractor, cfg, 0.0)
        drafter.close()
        assert drafter.admitted == admitted


# (a worker's answer to a chunk the stopping job had cancelled once crashed the worker's reader
# thread: pyproject.toml turns such a thread's exception into this test's failure)
# (litellm's request coroutine of a chunk cancelled in flight is never awaited: not kgr's)
@pytest.mark.filterwarnings("ignore:coroutine 'OpenAIChatCompletion.acompletion' was never awaited:RuntimeWarning")
def test_an_llm_that_refuses_every_request_stops_the_job_and_loses_nothing(graph, tmp_path, llm_stub_factory):
    """A wrong key (HTTP 401 on every request): the job stops at the first refused chunk with one
    error naming the fix, instead of a request per chunk of the corpus; nothing is processed, and the
    re-run with a working LLM resumes the chunks read before the stop and processes every chunk once.
    Once a chunk has succeeded, refusals are ordinary failures."""
    from kgr.errors import KgrExtractionError

    refusing = llm_stub_factory(default=StubReply.error(401, "invalid api key"))
    corpus = _corpus(tmp_path, [f"NORMAL-{i:03d}" for i in range(120)])
    with pytest.raises(KgrExtractionError, match=r"^stopped: the LLM refused the first chunk \(HTTP 401: "
                                                 r"LLM request failed \(HTTP 401\).*invalid api key.*"
                                                 r"set a valid key.*re-run"):
        ingest(graph, [corpus], SCHEMA, config=_config(refusing, promote=False))
    # the refused chunk and those in flight when the job stopped (4 requests at once), not one per chunk of 120
    assert 1 <= len(refusing.requests) < 16
    read_before_stop = _chunk_state(graph)
    assert read_before_stop and not any(done for done, _ in read_before_stop.values())
    partial = graph.driver.execute_query(  # a document in the store has all its chunks (none half-written)
        "MATCH (d:Document) WHERE d.chunk_count IS NULL OR COUNT { (:Chunk)-[:PART_OF]->(d) } <> d.chunk_count "
        "RETURN count(d) AS n").records[0]["n"]
    assert partial == 0
    # the same from worker processes, whose chunk failures carry the status to the job
    asked = len(refusing.requests)
    with pytest.raises(KgrExtractionError, match=r"^stopped: the LLM refused the first chunk \(HTTP 401"):
        ingest(graph, [corpus], SCHEMA, config=_config(refusing, promote=False, executor="process", workers=2))
    assert 1 <= len(refusing.requests) - asked < 16
    assert not any(done for done, _ in _chunk_state(graph).values())

    working = llm_stub_factory(default=StubReply.json(GOOD, usage=USAGE))
    report = ingest(graph, [corpus], SCHEMA, config=_config(working, promote=False))
    assert report.chunks_processed == 120 and report.chunks_failed == []
    assert set(_chunk_state(graph).values()) == {(True, 1)}  # the chunks read before the stop: resumed, once

    served = []

    def first_then_refused(body):
        served.append(1)
        return StubReply.json(GOOD, usage=USAGE) if len(served) == 1 else \
            StubReply.sleep(4.0, then=StubReply.error(401, "key revoked"))  # after the success is committed

    later = llm_stub_factory(default=first_then_refused)
    other = tmp_path / "other"
    other.mkdir()
    for i in range(16):
        (other / f"OTHER-{i:02d}.txt").write_text(TEXT.format(tag=f"OTHER-{i:02d}"), encoding="utf-8")
    report = ingest(graph, [other], SCHEMA, config=_config(later, promote=False, timeout=10.0))
    assert report.chunks_processed == 1 and len(report.chunks_failed) == 15
    assert {(f.kind, f.http_status) for f in report.chunks_failed} == {("request_error", 401)}
