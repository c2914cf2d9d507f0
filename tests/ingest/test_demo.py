"""``kgr demo`` end to end through the CLI (CliRunner, NEO4J_URI at the test database): the report,
the Browser URL, a non-empty graph; a second run is idempotent."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.demo import browser_url
from kgr.store.admin import fingerprint, status


@pytest.fixture
def runner_env(graph, neo4j_settings, monkeypatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    monkeypatch.setenv("NEO4J_DATABASE", neo4j_settings.database)
    if neo4j_settings.password is not None:
        monkeypatch.setenv("NEO4J_USERNAME", neo4j_settings.username)
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j_settings.password)
    else:
        monkeypatch.delenv("NEO4J_PASSWORD", raising=False)


@pytest.mark.neo4j
def test_demo_twice(graph, neo4j_settings, runner_env):
    runner = CliRunner()
    first = runner.invoke(app, ["demo"])
    assert first.exit_code == 0, first.output
    text = first.stdout
    assert "documents 13, chunks 20 (20 processed, 0 already done, 0 failed)" in text
    assert re.search(r"^promotion v\d+:", text, re.M) and "tool calls: query_coverage_feedback" in text
    url_line = next(line for line in text.splitlines() if line.startswith("Neo4j Browser: "))
    url = url_line.removeprefix("Neo4j Browser: ")
    assert url.startswith("http://") and "/browser/?dbms=" in url and " " not in url  # one unbroken line
    assert url == browser_url(neo4j_settings.uri, no_auth=neo4j_settings.password is None)
    st = status(graph)
    # the calibrated policy promotes what the corpus supports: the first round, then the candidates it
    # escalated once the rules verifier has re-read their chunks
    assert st.entities > 50 and st.votes > 100 and st.promoted > 10 and st.version >= 2
    assert "re-read" in text and "supports" in text
    fp, state = fingerprint(graph), (st.version, st.hash)

    second = runner.invoke(app, ["demo", "--json"])
    assert second.exit_code == 0, second.output
    data = json.loads(second.stdout)
    ing = data["ingest"]
    assert (ing["chunks_skipped"], ing["chunks_processed"], ing["new_votes"], ing["new_edges"]) == (20, 0, 0, 0)
    assert ing["promotion"] == []  # nothing new: no promotion round, no new version
    assert (data["status"]["version"], data["status"]["hash"]) == state
    assert data["browser_url"] == url
    assert fingerprint(graph) == fp


def test_browser_url_for_the_managed_server_and_for_others(monkeypatch):
    monkeypatch.setenv("KGR_NEO4J_BOLT_PORT", "17687")
    monkeypatch.setenv("KGR_NEO4J_HTTP_PORT", "17474")
    assert browser_url("bolt://127.0.0.1:17687") == (
        "http://127.0.0.1:17474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A17687&preselectAuthMethod=NO_AUTH")
    assert browser_url("neo4j://db.example.org:7687", no_auth=False) == (
        "http://db.example.org:7474/browser/?dbms=neo4j%3A%2F%2Fdb.example.org%3A7687")
