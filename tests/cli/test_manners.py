"""The first hour's manners (issue 32, items 3 and 6), through the real CLI against the real Neo4j:
entity keys normalised with a did-you-mean, one-line errors on missing files (`slice verify` too),
tables and JSON the same at 40 and 200 columns, progress with totals and ETA on and off a terminal,
what `kgr review label` says, a stopped managed Neo4j announced before it is started, and an ingest
that cannot reach its LLM failing on one line before it writes anything."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.cli.progress import IngestProgress
from kgr.errors import KgrNotFound
from kgr.model.canonical import edge_key
from kgr.store.inspect import entity_neighbourhood

pytestmark = pytest.mark.neo4j

SCHEMA = {"name": "software", "entity_types": {"Software": {}, "Person": {}},
          "relation_types": {"DEPENDS_ON": {"domain": ["Software"], "range": ["Software"]}}}


@pytest.fixture
def kgr(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    runner = CliRunner()

    def run(*args: str, code: int = 0, input: str | None = None):
        res = runner.invoke(app, list(args), input=input)
        assert res.exit_code == code, (res.stdout, res.stderr)
        return res

    return run


def _flask(kgr, tmp_path):
    rows = [("Flask", "Werkzeug", "a"), ("Flask", "Werkzeug", "b"), ("Flask", "Jinja", "a"), ("Flask", "Jinja", "c")]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"subject": s, "subject_type": "Software", "relation": "DEPENDS_ON", "object": o,
                                     "object_type": "Software", "source": src}) + "\n" for s, o, src in rows))
    kgr("stage", str(p))
    kgr("promote", "--policy", "quorum", "--quorum", "2")


def test_entity_keys_are_normalised_with_a_did_you_mean(kgr, tmp_path, graph):
    _flask(kgr, tmp_path)
    s = json.loads(kgr("slice", "--anchor", "Software:Flask", "--json").stdout)
    assert s["anchors"] == ["Software:flask"] and len(s["edges"]) == 2

    res = kgr("slice", "--anchor", "Software:Flsk", code=1)
    assert res.stderr == "Error: no entity with key 'Software:flsk'; did you mean 'Software:flask'?\n"
    res = kgr("slice", "--anchor", "Flask", code=1)
    assert res.stderr == "Error: no entity with key 'Flask'; did you mean 'Software:flask'?\n"

    res = kgr("merge", "Software:Flask", "Software:Werkzeg", code=1)
    assert res.stderr == "Error: no entity with key 'Software:werkzeg' (drop); did you mean 'Software:werkzeug'?\n"

    why = json.loads(kgr("promote", "--explain", "Software:Flask|DEPENDS_ON|Software:WERKZEUG", "--json").stdout)
    assert why["key"] == edge_key("Software:flask", "DEPENDS_ON", "Software:werkzeug") and why["status"] == "promoted"
    res = kgr("promote", "--explain", "Software:Flsk|DEPENDS_ON|Software:Werkzeug", code=1)
    assert "did you mean 'Software:flask'?" in res.stderr
    res = kgr("promote", "--explain", "nonsense", code=1)
    assert res.stderr.count("\n") == 1 and "SUBJECT_KEY|RELATION|OBJECT_KEY" in res.stderr

    assert entity_neighbourhood(graph, "Software:FLASK").entity.key == "Software:flask"
    with pytest.raises(KgrNotFound, match="did you mean 'Software:jinja'"):
        entity_neighbourhood(graph, "Software:Jinj")


def test_tables_are_not_cut_to_80_columns_off_a_terminal(kgr, tmp_path, graph, monkeypatch):
    _flask(kgr, tmp_path)
    st = json.loads(kgr("status", "--json").stdout)
    human = kgr("status").stdout
    assert st["hash"] in human and "…" not in human  # the 64-digit hash whole (it was cut at 80 columns)
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal's width: the table keeps its own
    metrics = kgr("metrics").stdout.splitlines()
    top = next(i for i, line in enumerate(metrics) if "prom/cand" in line)
    table = metrics[top:top + 4]  # the header, its rule, the round and the totals
    assert table[0].split()[-1] in ("retr", "ms/cand") and len(table[0]) > 60, table
    assert not any("…" in line for line in table), table
    assert json.loads(kgr("metrics", "--json").stdout)["hash"] == st["hash"]  # JSON: never wrapped either


def test_review_label_says_a_promotion_is_needed(kgr, tmp_path, graph):
    _flask(kgr, tmp_path)
    key = edge_key("Software:flask", "DEPENDS_ON", "Software:jinja")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"key": key, "label": True, "reviewer": "ada"}) + "\n")
    res = kgr("review", "label", str(labels), "--json")
    assert json.loads(res.stdout)["labelled"] == 1
    assert "take effect on promotion at the next round: run `kgr promote`" in res.stderr


def test_ingest_off_a_terminal_logs_progress_with_totals(kgr, tmp_path, graph, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.txt").write_text(f"Flask {i} depends on Werkzeug. Werkzeug depends on MarkupSafe.\n" * 40)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    monkeypatch.setenv("KGR_PROGRESS_SECONDS", "0.05")
    res = kgr("ingest", str(docs), "--schema", str(schema), "--no-promote", "--chunk-size", "64", "--json")
    report = json.loads(res.stdout)
    lines = [x for x in res.stderr.splitlines() if x.startswith("kgr ingest: ")]
    assert lines, res.stderr
    n = report["chunks"]
    assert lines[-1].startswith(f"kgr ingest: {n}/{n} chunks (100 %), 6/6 files, ")  # the total, exact at the end
    assert all(re.match(r"kgr ingest: \d+(/≈?\d+ chunks \(\d+ %\))?.* files, \d+ triples", x) for x in lines), lines


def test_the_progress_line_estimates_the_total_and_the_time_left():
    """Pure: the estimate from the bytes read, and the ETA from the rate (a fake clock)."""

    class Console:
        is_terminal = False

    t = [100.0]
    p = IngestProgress(Console(), files=4, size=4000, every=0, clock=lambda: t[0])
    p("files", 1)
    p("file_bytes", 1000)
    p("chunks_read", 10)
    t[0] += 5.0
    p("chunks", 5)
    p("triples", 12)
    # a quarter of the bytes gave 10 chunks: about 40 in all; 5 done in 5 s: 35 left at 1/s
    assert p.line() == ("kgr ingest: 5/≈40 chunks (12 %), 1/4 files, 12 triples, 1.0 chunks/s, elapsed 0:00:05, "
                        "ETA 0:00:35")
    for _ in range(3):
        p("files", 1)
    p("chunks_read", 22)
    # every file loaded is not every chunk known (documents are loaded ahead of being cut): still an estimate
    assert p.line().startswith("kgr ingest: 5/≈32 chunks (15 %), 4/4 files")
    p("read_all", 1)
    p.set_phase("promoting, round 1")
    assert p.line().startswith("kgr ingest: 5/32 chunks (15 %), 4/4 files") and p.line().endswith("promoting, round 1")


def test_the_estimate_counts_the_loaded_text_not_cut_yet():
    """The walkthrough's 51 files: all loaded after 10 s, 256 chunks cut of 570, and the line said
    "/256", exact, then "/448", then "/570". The text loaded but not cut counts at the cut documents'
    chunks per character."""

    class Console:
        is_terminal = False

    p = IngestProgress(Console(), files=3, size=3000, every=0, clock=lambda: 0.0)
    for event, n in (("files", 3), ("file_bytes", 3000), ("text_loaded", 30_000), ("text_known", 10_000),
                     ("chunks_known", 40), ("chunks_read", 40)):
        p(event, n)
    assert p.total() == (120, False)  # 40 chunks for a third of the text
    p("text_known", 10_000)
    p("chunks_known", 50)
    p("chunks_read", 50)
    assert p.total() == (135, False)  # 90 for two thirds: 45 per 10,000 characters
    p("text_known", 10_000)
    p("chunks_known", 40)
    p("chunks_read", 40)
    p("read_all", 1)
    assert p.total() == (130, True)


def test_an_ingest_without_a_key_fails_on_one_line_and_writes_nothing(kgr, tmp_path, graph, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Flask depends on Werkzeug.")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    res = kgr("ingest", str(docs), "--schema", str(schema), "--model", "openai/gpt-4o-mini", code=1)
    assert res.stderr == ("Error: no API key for openai/gpt-4o-mini: set OPENAI_API_KEY in the environment "
                          "(or give --api-base a server that needs none)\n")
    st = json.loads(kgr("status", "--json").stdout)
    assert (st["documents"], st["chunks"]) == (0, 0)


@pytest.mark.parametrize("args", [("stage", "{tmp}/missing.jsonl"), ("review", "label", "{tmp}/missing.jsonl"),
                                  ("init", "--schema", "{tmp}/missing.json"),
                                  ("export", "laplacian", "--out", "{tmp}/no/such/dir/g.npz"),
                                  ("export", "jsonl", "--out", "{tmp}"), ("slice", "verify", "{tmp}/missing.json"),
                                  ("slice", "verify", "{tmp}")])
def test_a_missing_file_is_one_line(kgr, tmp_path, args):
    res = kgr(*(a.format(tmp=tmp_path) for a in args), code=1)
    assert res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stdout + res.stderr


def test_on_a_terminal_the_live_line_shows_the_total_and_the_eta():
    import io

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    t = [0.0]
    with IngestProgress(console, files=2, size=200, clock=lambda: t[0]) as p:
        for event, n in (("files", 2), ("file_bytes", 200), ("chunks_read", 8), ("read_all", 1)):
            p(event, n)
        t[0] = 4.0
        p("chunks", 2)
        p._bar.refresh()  # (rich redraws on its own timer; draw now)
    assert "2/8 chunks (25 %), 2/2 files" in buf.getvalue() and "ETA 0:00:12" in buf.getvalue()


def _cli(*args: str, columns: int, uri: str) -> str:
    """``kgr ARGS`` in a fresh process whose environment says the terminal has ``columns`` columns
    (rich reads ``COLUMNS`` when its consoles are made, at import: CliRunner cannot change it)."""
    env = {**os.environ, "COLUMNS": str(columns), "NEO4J_URI": uri}
    proc = subprocess.run([sys.executable, "-c", "from kgr.cli.main import app; app(prog_name='kgr')", *args],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_json_and_tables_do_not_depend_on_the_terminals_width(kgr, tmp_path, graph, neo4j_settings):
    _flask(kgr, tmp_path)
    seen = {}
    for args in (("status", "--json"), ("metrics", "--json"), ("metrics",)):
        seen[args] = narrow = _cli(*args, columns=40, uri=neo4j_settings.uri)
        assert narrow == _cli(*args, columns=200, uri=neo4j_settings.uri), args
    metrics = seen[("metrics",)].splitlines()
    top = next(i for i, line in enumerate(metrics) if "prom/cand" in line)
    table = metrics[top:top + 4]  # the header, its rule, the round and the totals
    assert len(table[0]) > 40 and table[0].split()[-1] in ("retr", "ms/cand"), table  # wider than 40: whole
    assert not any("…" in line for line in table), table
    assert json.loads(seen[("status", "--json")])["promoted"] == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_stopped_managed_neo4j_is_announced_before_anything_is_done_for_it(tmp_path, monkeypatch):
    """No NEO4J_URI: the command needs the managed Neo4j, finds it stopped (a home with no server)
    and says so on one line before it tries to start it; here the start fails (no java), on one
    line too. (tests/runtime/test_runtime.py shows the same line before a real start.)"""
    bolt, http = _free_port(), _free_port()
    home = tmp_path / "home"
    for var in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    env = {"KGR_NEO4J_HOME": str(home), "KGR_NEO4J_BOLT_PORT": str(bolt), "KGR_NEO4J_HTTP_PORT": str(http),
           "KGR_JAVA": str(tmp_path / "no-java")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    res = CliRunner().invoke(app, ["status"])
    assert res.exit_code == 1, res.output
    said = res.stderr.splitlines()
    assert len(said) == 2, said
    assert re.fullmatch(rf"kgr: starting the managed Neo4j \((stopped|first start)\) on bolt://127\.0\.0\.1:{bolt}, "
                        rf"home {re.escape(str(home))}; `kgr neo4j stop` stops it …", said[0]), said
    assert said[1].startswith(f"Error: KGR_JAVA={tmp_path / 'no-java'} is not an executable: the managed Neo4j needs "
                              "Java 17+"), said


def test_off_a_terminal_the_periodic_lines_show_the_total_and_the_eta():
    """A log (no terminal): a line every ``every`` seconds from the job's first event, each with the
    total and, while reading, the ETA; the last line says where the job ended."""
    import io
    import time

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=80)
    t = [0.0]
    with IngestProgress(console, files=2, size=200, every=0.02, clock=lambda: t[0]) as p:
        time.sleep(0.1)
        assert buf.getvalue() == ""  # nothing before the job's first event
        for event, n in (("files", 2), ("file_bytes", 200), ("chunks_read", 8), ("read_all", 1)):
            p(event, n)
        t[0] = 4.0
        p("chunks", 2)
        deadline = time.monotonic() + 10
        while "ETA" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        p("chunks", 6)
    lines = buf.getvalue().splitlines()
    assert "kgr ingest: 2/8 chunks (25 %), 2/2 files, 0 triples, 0.5 chunks/s, elapsed 0:00:04, ETA 0:00:12" in lines
    assert lines[-1] == "kgr ingest: 8/8 chunks (100 %), 2/2 files, 0 triples, 2.0 chunks/s, elapsed 0:00:04"
    assert all(x.startswith("kgr ingest: ") for x in lines), lines  # whole lines (width 80): none wrapped
