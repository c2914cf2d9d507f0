"""The agent loop against the local LLM stub, which answers with tool calls like a function-calling model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kgr.agent import AgentConfig, AgentReport, run_agent
from kgr.cli.serve import app as serve_app
from kgr.extract.llm_client import RetryPolicy
from kgr.ingest.chunking import chunk_document
from kgr.ingest.loaders import iter_documents
from kgr.model.schema import KGSchema
from kgr.tools.registry import function_definitions
from tests.support.llm_stub import LLMStub, StubReply

pytestmark = pytest.mark.neo4j

TEXT = ("Alan Turing was born in London in 1912. Turing studied at King's College in the University of Cambridge. "
        "In 1939 Turing joined Bletchley Park. Gordon Welchman worked with Turing at Bletchley Park. "
        "Max Newman taught Turing at Cambridge and later worked at Bletchley Park.")
SCHEMA = {"entity_types": {"Person": {}, "Organization": {}},
          "relation_types": {"WORKED_AT": {"domain": ["Person"], "range": ["Organization"]}}}
SPARSE = {"entities": {"Person": ["Alan Turing"], "Organization": ["Bletchley Park"]}, "relations": {}}
FULL = {
    "entities": {"Person": ["Alan Turing", "Gordon Welchman", "Max Newman"],
                 "Organization": ["Bletchley Park", "University of Cambridge"]},
    "relations": {"WORKED_AT": [{"subject": "Alan Turing", "object": "Bletchley Park"},
                                {"subject": "Gordon Welchman", "object": "Bletchley Park"},
                                {"subject": "Max Newman", "object": "Bletchley Park"}]},
}


def _last_tool(body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The name and parsed output of the last tool answer in the conversation."""
    msgs = body["messages"]
    names = {c["id"]: c["function"]["name"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]}
    for m in reversed(msgs):
        if m["role"] == "tool":
            return names.get(m["tool_call_id"]), json.loads(m["content"])
    return None, {}


def protocol_agent(body: dict[str, Any]) -> StubReply:
    """A scripted function-calling model that reacts to the tool results like the protocol asks:
    a sparse first extraction, a denser one while density says so, then disambiguation and storage."""
    tool, result = _last_tool(body)
    if tool is None:
        return StubReply.tool_calls_reply([{"name": "query_extraction_density",
                                            "arguments": {"extracted_kg": SPARSE}}], content="First extraction.")
    if tool == "query_extraction_density":
        if result.get("needs_more_extraction"):
            return StubReply.tool_calls_reply([{"name": "query_extraction_density",
                                                "arguments": {"extracted_kg": FULL, "schema": {
                                                    "entity_schema": ["Person", "Organization"],
                                                    "relation_schema": ["WORKED_AT"]}}}])
        return StubReply.tool_calls_reply([{"name": "query_entity_disambiguation",
                                            "arguments": {"extracted_kg": FULL, "context": TEXT}}])
    if tool == "query_entity_disambiguation":
        return StubReply.tool_calls_reply([{"name": "query_kg_storage",
                                            "arguments": {"extracted_kg": result["final_kg"], "source": "made-up"}}])
    if "error" in result:  # a refused call: start the protocol properly
        return StubReply.tool_calls_reply([{"name": "query_extraction_density", "arguments": {"extracted_kg": FULL}}])
    return StubReply.text("done")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "turing.txt").write_text(TEXT, encoding="utf-8")
    return d


def _config(stub: LLMStub, **kw: Any) -> AgentConfig:
    return AgentConfig(model="openai/stub-model", api_base=stub.base_url, api_key="sk-stub",
                       retry=RetryPolicy(max_attempts=2, initial_backoff=0.01, jitter=0), **kw)


def test_transcript_follows_the_protocol_and_the_graph_holds_the_result(llm_stub_factory, graph, corpus):
    stub = llm_stub_factory(default=protocol_agent)
    report = run_agent([corpus], graph=graph, schema=KGSchema.model_validate(SCHEMA), config=_config(stub))

    (run,) = report.runs
    assert run.stop_reason == "stored" and report.stored_chunks == 1 and report.failed_chunks == 0
    assert run.phases == ["density", "re-extraction", "disambiguation", "storage"]
    tools = [e for e in run.transcript if e.kind == "tool"]
    assert [e.summary.get("needs_more_extraction") for e in tools[:2]] == [True, False]
    assert tools[0].summary["assessment_level"] == "moderate"
    assert tools[0].filled == ["text", "schema"] and tools[1].filled == ["text"]
    assert tools[0].arguments["text"].startswith("<chunk text")
    assert tools[3].summary["relations"] == 3 and tools[3].summary["overall_success"] is True
    assert (run.entities_stored, run.relations_stored, run.density_rounds) == (5, 3, 2)
    assert [e.content for e in run.transcript if e.kind == "assistant"][0] == "First extraction."

    # the model saw the six tools' function definitions, and each tool answer
    first = stub.requests[0].body
    assert first["tools"] == function_definitions() and first["tool_choice"] == "auto"
    assert len(stub.requests) == 4 and report.llm_calls == 4

    # the staged result: three pending edges, one vote each, from the chunk (not the made-up source)
    chunk = next(chunk_document(next(iter_documents([corpus]))))
    rows = graph.read("pending_edges", {"statuses": None})
    assert sorted((r["subject"], r["object"], r["votes"], tuple(r["sources"])) for r in rows) == [
        (n, "Bletchley Park", 1, (chunk.id,)) for n in ("Alan Turing", "Gordon Welchman", "Max Newman")]
    marked = graph.driver.execute_query(
        "MATCH (c:Chunk {id: $id}) OPTIONAL MATCH (c)-[:MENTIONS]->(e) RETURN c.processed_at IS NOT NULL AS done, "
        "count(e) AS mentions", {"id": chunk.id}, database_=graph.database).records[0]
    assert marked["done"] and marked["mentions"] == 5

    # a re-run skips the processed chunk without calling the model
    again = run_agent([corpus], graph=graph, schema=KGSchema.model_validate(SCHEMA), config=_config(stub))
    assert again.runs[0].stop_reason == "skipped" and len(stub.requests) == 4


def test_out_of_order_calls_are_refused_and_corrected(llm_stub_factory, graph, corpus):
    stub = llm_stub_factory(default=protocol_agent)
    stub.enqueue(StubReply.tool_calls_reply([{"name": "query_kg_storage", "arguments": {"extracted_kg": FULL}}]))
    report = run_agent([corpus], graph=graph, config=_config(stub))
    (run,) = report.runs
    first = next(e for e in run.transcript if e.kind == "tool")
    assert first.tool == "query_kg_storage" and first.ok is False
    assert first.error.startswith("protocol: call query_extraction_density")
    assert run.stop_reason == "stored" and run.phases[-2:] == ["disambiguation", "storage"]
    assert graph.read("graph_counts")[0]["votes"] == 3
    # the refusal went back to the model as the tool's answer
    tool_msgs = [m for m in stub.requests[1].body["messages"] if m["role"] == "tool"]
    assert "protocol" in json.loads(tool_msgs[0]["content"])["error"]


def test_invalid_arguments_go_back_to_the_model(llm_stub_factory, graph, corpus):
    stub = llm_stub_factory(default=protocol_agent)
    stub.enqueue(StubReply.tool_calls_reply([
        {"name": "query_extraction_density", "arguments": {"extracted_kg": {"entities": {"bad type": ["x"]}}}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "query_quality_metrics", "arguments": "{not json"},
    ]))
    run = run_agent([corpus], graph=graph, config=_config(stub)).runs[0]
    errors = [e.error for e in run.transcript if e.kind == "tool" and not e.ok]
    assert errors[0].startswith("invalid arguments: extracted_kg.entities")
    assert errors[1].startswith("unknown tool 'no_such_tool'")
    assert errors[2].startswith("arguments are not valid JSON")
    assert run.stop_reason == "stored"


def test_step_cap(llm_stub_factory, graph, corpus):
    stub = llm_stub_factory(default=StubReply.tool_calls_reply(
        [{"name": "query_coverage_feedback", "arguments": {"extracted_kg": SPARSE}}]))
    run = run_agent([corpus], graph=graph, config=_config(stub, max_steps=3)).runs[0]
    assert (run.stop_reason, run.steps, run.phases) == ("step_cap", 3, ["feedback"] * 3)
    assert graph.read("graph_counts")[0]["votes"] == 0


def test_llm_failure_is_reported(llm_stub_factory, graph, corpus):
    stub = llm_stub_factory()
    stub.enqueue(StubReply.error(503), StubReply.error(400, "model not found"))
    report = run_agent([corpus], graph=graph, config=_config(stub))
    (run,) = report.runs
    assert run.stop_reason == "llm_error" and "model not found" in run.error and report.failed_chunks == 1
    assert len(stub.requests) == 2  # the 503 was retried, the 400 was not
    assert "sk-stub" not in report.model_dump_json()


def test_cli_agent_json(llm_stub_factory, graph, corpus, tmp_path, neo4j_settings, monkeypatch):
    stub = llm_stub_factory(default=protocol_agent)
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA), encoding="utf-8")
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    if neo4j_settings.password:
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j_settings.password)
    monkeypatch.setenv("STUB_KEY", "sk-secret-stub")
    res = CliRunner().invoke(serve_app, ["agent", str(corpus), "--model", "openai/stub-model", "--api-base",
                                         stub.base_url, "--api-key-env", "STUB_KEY", "--schema", str(schema_file),
                                         "--json"])
    assert res.exit_code == 0, res.output
    report = AgentReport.model_validate_json(res.stdout)
    assert report.runs[0].phases == ["density", "re-extraction", "disambiguation", "storage"]
    assert "sk-secret-stub" not in res.output
    assert stub.requests[0].headers["authorization"] == "Bearer sk-secret-stub"

    stub2 = llm_stub_factory(default=StubReply.text("I will not call tools."))
    res = CliRunner().invoke(serve_app, ["agent", str(corpus), "--model", "openai/stub-model", "--api-base",
                                         stub2.base_url, "--api-key-env", "STUB_KEY", "--redo"])
    assert res.exit_code == 1 and "no_storage" in res.stdout and "did not complete the protocol" in res.output
    served = len(stub2.requests)
    res = CliRunner().invoke(serve_app, ["agent", str(corpus), "--model", "openai/stub-model", "--api-base",
                                         "127.0.0.1:8000/v1", "--redo"])
    assert res.exit_code == 1 and res.stderr.strip() == (
        "Error: --api-base: '127.0.0.1:8000/v1' is not an http:// or https:// URL with a host "
        "(e.g. http://127.0.0.1:8000/v1)")
    assert len(stub2.requests) == served
