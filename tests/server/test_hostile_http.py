"""Fuzzing the served ways in (issue 13): hostile identifiers, names, nesting depths and encodings
sent as raw bytes to the HTTP API and piped to ``kgr tool``.

Each example asserts: no 5xx for a client's mistake, a one-line error message, and an unchanged
store fingerprint whenever the call was refused or nothing in it was valid.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.model.canonical import RESERVED_LABELS, RESERVED_RELATION_TYPES
from kgr.server.app import BackgroundServer
from kgr.server.security import ServerConfig
from kgr.store.admin import fingerprint, reset

pytestmark = pytest.mark.neo4j

FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

identifiers = st.one_of(
    st.sampled_from(sorted(RESERVED_LABELS | RESERVED_RELATION_TYPES) + ["KgrX", "KGR_Y", "Person", "WORKS_AT"]),
    st.text(min_size=0, max_size=70),
    st.text(alphabet="AbZ_09 `:{}()\x00\n'\"\\", min_size=1, max_size=12),
)
names = st.one_of(st.text(min_size=0, max_size=40), st.text(alphabet="a\x00\x1b\u200b\u0301 .'", min_size=1,
                                                               max_size=10), st.just("x" * 3000))
encodings = st.sampled_from(["utf-8", "utf-16", "latin-1", "cp1252"])


def body(etype: str, rel: str, name: str, depth: int) -> dict:
    nested: object = []
    for _ in range(depth):
        nested = [nested]
    return {"source": "fuzz", "extracted_kg": {
        "entities": {etype: [name], "Organization": ["Acme"]},
        "relations": {rel: [{"subject": name, "object": "Acme", "extra": nested}]}}}


def encode(payload: dict, encoding: str) -> bytes:
    text = json.dumps(payload, ensure_ascii=False)
    return text.encode(encoding, "surrogatepass" if encoding.startswith("utf") else "replace")


def one_line(message: str) -> bool:
    return bool(message.strip()) and len(message.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def server(_session_graph):
    with BackgroundServer(ServerConfig(port=0), graph=_session_graph) as srv:
        yield srv


@FUZZ
@given(etype=identifiers, rel=identifiers, name=names, depth=st.sampled_from([0, 1, 70, 900]), enc=encodings)
def test_http_storage_refuses_clearly(server, _session_graph, etype, rel, name, depth, enc):
    graph = _session_graph
    reset(graph)
    before = fingerprint(graph)
    r = httpx.post(f"{server.url}/tools/query_kg_storage", content=encode(body(etype, rel, name, depth), enc),
                   headers={"content-type": "application/json"}, timeout=60)
    assert r.status_code < 500, r.text
    out = r.json()
    if r.status_code != 200:
        assert one_line(out["error"]["message"]) and fingerprint(graph) == before
        return
    status = out["storage_status"]
    stored = status["relations_storage"]["stored_count"]
    if stored == 0 and not status.get("entities_storage", {}).get("stored_count"):
        assert fingerprint(graph) == before
    if rel in RESERVED_RELATION_TYPES or etype in RESERVED_LABELS:
        assert stored == 0  # a reserved name never reaches the graph


@FUZZ
@given(etype=identifiers, rel=identifiers, name=names, depth=st.sampled_from([0, 70, 900]),
       enc=encodings, garbage=st.binary(max_size=20))
def test_kgr_tool_refuses_clearly(graph, neo4j_settings, monkeypatch, etype, rel, name, depth, enc, garbage):
    reset(graph)
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    before = fingerprint(graph)
    raw = encode(body(etype, rel, name, depth), enc)
    for stdin in (raw, raw[: len(raw) // 2] + garbage):
        res = CliRunner().invoke(app, ["tool", "query_kg_storage"], input=stdin)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        if res.exit_code != 0:
            assert one_line(res.stderr), res.stderr
            assert "Traceback" not in res.stderr
        else:
            json.loads(res.stdout)
    if rel in RESERVED_RELATION_TYPES or etype in RESERVED_LABELS:
        rows = graph.driver.execute_query("MATCH ()-[r:PENDING_REL]->() RETURN count(r) AS n",
                                          database_=graph.database).records
        assert rows[0]["n"] == 0
    if etype in RESERVED_LABELS:
        assert fingerprint(graph) == before  # the one entity row is refused, and the relation with it
