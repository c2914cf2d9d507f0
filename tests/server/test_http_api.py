"""The JSON API against the real Neo4j: the six tools, the helpers, and every error path."""

from __future__ import annotations

import time

import httpx
import pytest

from kgr.catalog import served_tools
from kgr.server.service import ToolService
from kgr.engine import promote_by_quorum
from kgr.store.versions import create_snapshot
from kgr.tools.registry import function_definitions, get_tool

from .conftest import KG, SCHEMA, TEXT, six_calls

pytestmark = pytest.mark.neo4j


def test_function_definitions_and_openapi(http_server):
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        defs = c.get("/tools").json()
        assert [d["function"]["name"] for d in defs] == [s.name for s in served_tools()]
        assert c.get("/tools", params={"only": "agent"}).json() == function_definitions()
        assert all(d["function"]["name"] not in {x["function"]["name"] for x in function_definitions()}
                   for d in c.get("/tools", params={"only": "helpers"}).json())
        bad = c.get("/tools", params={"only": "all"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "only"
        doc = c.get("/openapi.json").json()
        assert doc["openapi"] == "3.1.0" and "/tools/query_kg_storage" in doc["paths"]
        health = c.get("/health").json()
        assert health == {"status": "ok", "version": health["version"], "neo4j": "up", "tools": len(served_tools())}


def test_six_tools_over_http(http_server, graph):
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        for name, args in six_calls("http-doc"):
            r = c.post(f"/tools/{name}", json=args)
            assert r.status_code == 200, (name, r.text)
            get_tool(name).output_model.model_validate(r.json())
        metrics = c.get("/metrics").json()
    assert all(metrics["tools"][n]["calls"] == 1 and metrics["tools"][n]["errors"] == 0 for n, _ in six_calls())
    assert metrics["responses_by_status"]["200"] >= 6
    assert graph.read("graph_counts")[0]["votes"] == 3


def test_helpers_show_the_graph(http_server, graph):
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        for src in ("a", "b"):
            assert c.post("/tools/query_kg_storage", json={"extracted_kg": KG, "source": src}).status_code == 200
        promote_by_quorum(graph, quorum=2)
        create_snapshot(graph, "after-round-1", note="two sources")

        st = c.post("/tools/graph_status").json()  # no body: the empty input
        assert (st["entities"], st["votes"], st["promoted"], st["version"]) == (5, 6, 3, 1)

        hits = c.post("/tools/search_entities", json={"query": "bletchly park", "type": "Organization"}).json()
        assert hits["results"][0]["key"] == "Organization:bletchley park"
        assert c.post("/tools/search_entities", json={"query": "turing", "type": "Organization"}).json()["results"] == []
        assert c.post("/tools/search_entities", json={"query": "?!"}).json()["results"] == []

        hood = c.post("/tools/entity_neighbourhood", json={"key": "Organization:bletchley park", "limit": 2}).json()
        assert hood["entity"]["name"] == "Bletchley Park" and hood["truncated"] is True
        assert len(hood["edges"]) == 2 and {e["status"] for e in hood["edges"]} == {"promoted"}
        assert all(e["direction"] == "in" and e["votes"] == 2 for e in hood["edges"])
        everything = c.post("/tools/entity_neighbourhood",
                            json={"key": "Organization:bletchley park", "statuses": ["promoted"]}).json()
        assert len(everything["edges"]) == 6  # 3 promoted edges + their 3 PENDING_REL (status promoted)

        why = c.post("/tools/explain_edge", json={"key": hood["edges"][0]["key"]}).json()
        assert why["status"] == "promoted" and why["votes"] == 2
        assert why["decisions"][0]["action"] == "promote" and isinstance(why["decisions"][0]["inputs"], dict)

        snaps = c.post("/tools/list_snapshots", json={}).json()["snapshots"]
        assert [(s["name"], s["version"], s["edges"]) for s in snaps] == [("after-round-1", 1, 3)]

        missing = c.post("/tools/entity_neighbourhood", json={"key": "Person:nobody"})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
        assert c.post("/tools/explain_edge", json={"key": "0" * 24}).status_code == 404


def test_forget_and_aging_over_http(http_server, graph):
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        for src in ("a", "b"):
            assert c.post("/tools/query_kg_storage", json={"extracted_kg": KG, "source": src}).status_code == 200
        promote_by_quorum(graph, quorum=2)
        before = c.post("/tools/graph_status").json()
        dry = c.post("/tools/forget_document", json={"sources": ["b"], "dry_run": True}).json()
        assert dry["dry_run"] and dry["promoted_retired"] == 3 and dry["version"] is None
        assert c.post("/tools/graph_status").json() == before  # a dry run changes nothing
        done = c.post("/tools/forget_document", json={"sources": ["b"]}).json()
        assert (done["votes_removed"], done["promoted_retired"], done["version"]) == (3, 3, 2)
        after = c.post("/tools/graph_status").json()
        assert (after["promoted"], after["votes"], after["version"]) == (0, 3, 2)
        missing = c.post("/tools/forget_document", json={"documents": ["no-such-doc"]})
        assert missing.status_code == 404 and "no-such-doc" in missing.json()["error"]["message"]
        empty = c.post("/tools/forget_document", json={})
        assert empty.status_code == 422 and "at least one" in empty.json()["error"]["message"]
        for dry_run in (True, False):  # a source nothing has is refused as an unknown document is
            bogus = c.post("/tools/forget_document", json={"sources": ["bogus-source"], "dry_run": dry_run})
            assert bogus.status_code == 404 and "'bogus-source'" in bogus.json()["error"]["message"]
        typo = c.post("/tools/resolve_entities", json={"type": "Persn", "dry_run": True})
        assert typo.status_code == 404 and "did you mean 'Person'?" in typo.json()["error"]["message"]
        assert c.post("/tools/graph_status").json() == after

        aged = c.post("/tools/age_edges", json={"ttl_days": 30}).json()
        assert (aged["expired"], aged["retired"], aged["version"]) == (0, 0, None)  # fresh votes
        bad = c.post("/tools/age_edges", json={"soft_window_days": 10, "retire_after_days": -5})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "retire_after_days"


def test_slices_over_http(http_server, graph, monkeypatch):
    key = "http-slice-key-0123456789"
    monkeypatch.setenv("KGR_SLICE_KEY", key)  # the server runs in this process (a background thread)
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        for src in ("a", "b"):
            assert c.post("/tools/query_kg_storage", json={"extracted_kg": KG, "source": src}).status_code == 200
        promote_by_quorum(graph, quorum=2)
        res = c.post("/tools/get_context_slice", json={"anchors": ["Organization:bletchley park"],
                                                       "budget_tokens": 400})
        assert res.status_code == 200, res.text
        s = res.json()
        assert s["edges"] and s["anchors"] == ["Organization:bletchley park"]
        assert s["tokens"] <= 400 and key not in res.text
        ok = c.post("/tools/verify_slice", json={"slice": s}).json()
        assert (ok["valid"], ok["current"]) == (True, True)
        s["edges"][0]["votes"] = 99
        bad = c.post("/tools/verify_slice", json={"slice": s}).json()
        assert bad["valid"] is False
        edge = s["edges"][0]["key"]
        out = c.post("/tools/report_outcome", json={"slice_id": s["slice_id"], "outcome": 1, "edges": [edge]}).json()
        assert out["weights"] == {edge: pytest.approx(0.4)} and out["tiers"] == {edge: "habitual"}
        assert c.post("/tools/report_outcome", json={"slice_id": s["slice_id"], "outcome": 2}).status_code == 422
        assert c.post("/tools/get_context_slice", json={"anchors": ["Person:nobody"]}).status_code == 404


def test_error_paths(http_server):
    url = http_server.url
    with httpx.Client(base_url=url, timeout=30) as c:
        r = c.post("/tools/query_extraction_density", json={"text": TEXT, "schema": SCHEMA,
                                                            "extracted_kg": {"entities": {"Person": [1]}}})
        assert r.status_code == 422
        assert r.json()["error"]["field"] == "extracted_kg.entities.Person.0"
        r = c.post("/tools/query_kg_storage", json={"extracted_kg": KG, "unexpected": 1})
        assert r.status_code == 422 and r.json()["error"]["field"] == "unexpected"
        r = c.post("/tools/query_extraction_density", json={"text": "x" * 1_000_001, "schema": SCHEMA, "extracted_kg": KG})
        assert r.status_code == 422 and r.json()["error"]["field"] == "text"
        r = c.post("/tools/query_kg_storage", json=[1, 2])
        assert r.status_code == 422 and r.json()["error"]["field"] == "$"
        r = c.post("/tools/query_kg_storage", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "invalid JSON" in r.json()["error"]["message"]
        r = c.post("/tools/query_kg_storage", content=b'{"x": NaN}', headers={"content-type": "application/json"})
        assert r.status_code == 400
        r = c.post("/tools/query_kg_storage", content=b"{}", headers={"content-type": "text/plain"})
        assert r.status_code == 415
        r = c.post("/tools/no_such_tool", json={})
        assert r.status_code == 404 and "query_kg_storage" in r.json()["error"]["message"]
        assert c.get("/tools/query_kg_storage").status_code == 405
        assert c.get("/nowhere").json()["error"]["type"] == "not_found"
        huge = b'{"text": "' + b"x" * (9 * 1024 * 1024) + b'"}'
        r = c.post("/tools/query_extraction_density", content=huge, headers={"content-type": "application/json"})
        assert r.status_code == 413

        def chunks():  # no Content-Length: counted while read
            for _ in range(10):
                yield b"x" * (1024 * 1024)

        r = c.post("/tools/query_extraction_density", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        # DNS rebinding: a foreign Host header is refused on a loopback server
        r = c.get("/tools", headers={"host": "attacker.example:80"})
        assert r.status_code == 400


def test_deeply_nested_input_is_a_422_not_a_recursion_error(http_server, caplog):
    # issue 13, item 3: 500-900 nested arrays inside a valid body gave a 500 and ~3,000 log lines
    for depth in (500, 900):
        body = b'{"extracted_kg": {"entities": {}, "relations": {}}, "source": "s", "pad": ' + b"[" * depth \
            + b"]" * depth + b"}"
        with httpx.Client(base_url=http_server.url, timeout=30) as c:
            r = c.post("/tools/query_kg_storage", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        assert "deeper than 64 levels" in r.json()["error"]["message"]
    assert not any("RecursionError" in rec.getMessage() or rec.exc_info for rec in caplog.records)


def test_internal_error_has_no_trace(http_server, monkeypatch, caplog):
    def boom(self, name, payload):  # noqa: ANN001
        raise RuntimeError("secret-detail password=hunter2")

    monkeypatch.setattr(ToolService, "call_sync", boom)  # the tools that run in worker threads
    with httpx.Client(base_url=http_server.url, timeout=30) as c:
        r = c.post("/tools/graph_status", json={})
    assert r.status_code == 500
    body = r.text
    assert r.json()["error"]["type"] == "internal_error"
    assert "hunter2" not in body and "Traceback" not in body and "secret-detail" not in body
    error_id = r.json()["error"]["message"].split("id ")[1].split(")")[0]
    assert any(error_id in rec.getMessage() for rec in caplog.records)  # findable in the server log


def test_time_limit(graph, monkeypatch):
    from kgr.server.app import BackgroundServer
    from kgr.server.security import ServerConfig

    def slow(self, name, payload):  # noqa: ANN001
        time.sleep(1.5)
        return {}

    monkeypatch.setattr(ToolService, "call_sync", slow)  # the tools that run in worker threads
    with BackgroundServer(ServerConfig(port=0, request_timeout=0.3), graph=graph) as srv:
        t0 = time.perf_counter()
        r = httpx.post(srv.url + "/tools/graph_status", json={}, timeout=30)
        assert r.status_code == 504 and r.json()["error"]["type"] == "timeout"
        assert time.perf_counter() - t0 < 1.2


def test_openai_sdk_drives_the_json_api(http_server, graph, llm_stub):
    """docs/server.md's 'another framework' loop: the OpenAI SDK with GET /tools and POST /tools/{name}."""
    import json

    from openai import OpenAI

    from tests.support.llm_stub import StubReply

    def model(body):  # a function-calling model: store once, then stop
        if any(m["role"] == "tool" for m in body["messages"]):
            return StubReply.text("stored")
        return StubReply.tool_calls_reply([{"name": "query_kg_storage", "arguments": {"extracted_kg": KG, "source": "sdk"}}])

    llm_stub.default = model
    tools = httpx.get(f"{http_server.url}/tools", params={"only": "agent"}).json()
    llm = OpenAI(base_url=llm_stub.base_url, api_key="sk-stub", max_retries=0)
    messages: list = [{"role": "user", "content": TEXT}]
    while True:
        msg = llm.chat.completions.create(model="stub-model", messages=messages, tools=tools).choices[0].message
        messages.append(msg)
        if not msg.tool_calls:
            break
        for call in msg.tool_calls:
            r = httpx.post(f"{http_server.url}/tools/{call.function.name}", content=call.function.arguments,
                           headers={"Content-Type": "application/json"}, timeout=120)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": r.text})
    assert llm_stub.requests[0].body["tools"] == function_definitions()
    stored = json.loads(messages[2]["content"])
    assert stored["storage_status"]["relations_storage"]["stored_count"] == 3
    assert graph.read("graph_counts")[0]["votes"] == 3


def test_startup_objects_leave_the_collectors_scans(monkeypatch):
    """kgr serve freezes what is alive after startup (gc.freeze): full collections then scan only
    what came later; KGR_GC_FREEZE=0 leaves the collector alone."""
    import gc

    from kgr.gc_freeze import freeze_startup_objects

    try:
        monkeypatch.setenv("KGR_GC_FREEZE", "0")
        assert freeze_startup_objects() == 0 and gc.get_freeze_count() == 0
        monkeypatch.setenv("KGR_GC_FREEZE", "1")
        frozen = freeze_startup_objects()
        assert frozen == gc.get_freeze_count() > 10_000  # this process's modules, at least
        assert len(gc.get_objects(generation=2)) < frozen  # what a full pass still scans
    finally:
        gc.unfreeze()
