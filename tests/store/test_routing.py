"""The routing path (``neo4j://``) against the managed single instance, which routes to itself: the
CLI's store commands work through it, and every kind of unit shares one bookmark manager, so a
read sees the writes before it on any cluster member."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.connect import connect
from kgr.store.connection import Neo4jSettings

pytestmark = pytest.mark.neo4j
SCHEMA = Path(__file__).resolve().parents[2] / "examples" / "schema.json"


def _routing_uri(settings: Neo4jSettings) -> str:
    assert settings.uri.startswith("bolt://")
    return "neo4j://" + settings.uri.removeprefix("bolt://")


def test_every_unit_shares_the_bookmarks(graph, neo4j_settings):
    from kgr.store.versions import create_snapshot, list_snapshots

    g = connect(neo4j_settings.model_copy(update={"uri": _routing_uri(neo4j_settings)}))
    try:
        manager = g.driver.execute_query_bookmark_manager
        g.read("graph_counts")
        before = set(manager.get_bookmarks())
        g.write_unit(lambda tx: tx.run("slice_record", {"slices": [{"id": "s", "policy_id": "p", "graph_hash": "h",
                                                                    "edges": [], "now": 1.0}]}))  # a unit only: its own session
        after = set(manager.get_bookmarks())
        assert after and after != before  # the session's commit reached the shared bookmark manager
        create_snapshot(g, "routing-test")
        assert [s.name for s in list_snapshots(g)] == ["routing-test"]  # read (routed to a reader) sees it
    finally:
        g.close()


def test_the_cli_path_through_neo4j_scheme(graph, neo4j_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("NEO4J_URI", _routing_uri(neo4j_settings))
    monkeypatch.setenv("KGR_SLICE_KEY", "routing-slice-key-0123456789")
    run = CliRunner().invoke

    def ok(*args: str) -> str:
        res = run(app, list(args))
        assert res.exit_code == 0, (args, res.output)
        return res.stdout

    triples = tmp_path / "t.jsonl"
    triples.write_text("\n".join(json.dumps({"subject": s, "subject_type": "Person", "relation": "KNOWS", "object": o,
                                             "object_type": "Person", "source": src})
                                 for s, o in [("Ada", "Bob"), ("Bob", "Cy")] for src in ("s1", "s2")) + "\n")
    ok("init")
    ok("stage", str(triples))
    assert json.loads(ok("promote", "--policy", "quorum", "--json"))["promoted"] == 2
    ok("snapshot", "create", "two")
    assert json.loads(ok("status", "--json"))["promoted"] == 2
    s = json.loads(ok("slice", "--anchor", "Person:ada", "--json"))
    assert len(s["edges"]) == 2
    forgot = json.loads(ok("forget", "s2", "--sources", "--json"))
    assert forgot["promoted_retired"] == 2
    assert json.loads(ok("status", "--json"))["promoted"] == 0  # read right after the write: bookmarks
    ok("snapshot", "rollback", "two")
    assert json.loads(ok("status", "--json"))["promoted"] == 2
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Konrad Zuse built the Z3. Konrad Zuse was born in Berlin.", encoding="utf-8")
    rep = json.loads(ok("ingest", str(corpus), "--schema", str(SCHEMA), "--policy", "quorum", "--json"))
    assert rep["chunks_processed"] == 1
    out = tmp_path / "edges.jsonl"
    ok("export", "jsonl", "--out", str(out))
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.slow
def test_the_cli_tests_pass_through_the_neo4j_scheme(graph):
    """The CLI's store and ingest command tests, run again in a child pytest whose session URI is
    ``neo4j://`` (the store commands, ingest and the tools' CLI: the paths that read and write; the
    manners and hostile-input modules test the CLI's own text and need no second scheme)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "KGR_TEST_ROUTING": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEs",
                           "tests/cli/test_store_commands.py",
                           "tests/cli/test_ingest_cli.py", "tests/cli/test_schema_in_graph.py", "tests/tools/test_cli.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-3000:]
    assert "through the neo4j:// routing scheme" in proc.stdout
    assert proc.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail and " skipped" not in tail, tail


@pytest.mark.parametrize("uri, says", [
    ("http://127.0.0.1:7474", "URI scheme 'http' is not supported"),
    ("bolt://127.0.0.1:notaport", "Cannot resolve address"),
    ("neo4j://127.0.0.1:7687?x", "Invalid parameters"),
])
def test_a_uri_the_driver_cannot_use_is_a_clear_error(uri, says, monkeypatch, tmp_path):
    """Not a traceback: the command names the URI, what is wrong with it, and the forms that work."""
    from kgr.errors import KgrValidationError
    from kgr.store.connection import open_graph

    with pytest.raises(KgrValidationError, match="give bolt://HOST:7687, or neo4j://HOST:7687") as info:
        open_graph(Neo4jSettings(uri=uri))
    assert says in str(info.value) and info.value.field == "uri"
    monkeypatch.setenv("NEO4J_URI", uri)
    res = CliRunner().invoke(app, ["status"])
    assert res.exit_code == 1, res.output
    assert f"Neo4j URI '{uri}' cannot be used" in res.output and "Traceback" not in res.output


def test_a_retry_period_that_is_not_seconds_is_a_clear_error(neo4j_settings, monkeypatch):
    from kgr.errors import KgrValidationError
    from kgr.store.connection import open_graph

    for bad in ("abc", "-1", "inf"):
        monkeypatch.setenv("KGR_NEO4J_RETRY_SECONDS", bad)
        with pytest.raises(KgrValidationError, match=f"must be a number of seconds >= 0, got '{bad}'"):
            open_graph(neo4j_settings)
