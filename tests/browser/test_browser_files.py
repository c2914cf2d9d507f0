"""The Browser files and commands without a database: style, guide, queries, URLs, bundle, guide server, CLI."""

from __future__ import annotations

import doctest
import html
import json
import re
import socket
import urllib.error
import urllib.request
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import kgr.browser as kb
from kgr.cli import browser as cli_browser
from kgr.errors import KgrIdentifierError, KgrValidationError

# --------------------------------------------------------------------------------------------------
# GraSS, parsed the way Neo4j Browser 5.24 parses it (grass.ts `parseGrass`, the non-JSON branch)

GRASS_PROPS = {"diameter", "color", "border-color", "border-width", "text-color-internal", "text-color-external",
               "font-size", "caption", "shaft-width", "padding"}


def browser_parse_grass(text: str) -> dict[str, dict[str, str]]:
    """A line-by-line port of Browser's parser: braces outside quotes delimit rules; any other
    non-space character outside braces is part of the selector; properties split on ';' and ':'
    (a property with more or fewer than one ':' is silently dropped)."""
    in_quote = in_rule = False
    selector, body = "", ""
    rules: dict[str, str] = {}
    for ch in text:
        special = True
        if ch == "{":
            if in_quote:
                special = False
            else:
                in_rule = True
        elif ch == "}":
            if in_quote:
                special = False
            else:
                in_rule = False
                rules[selector], selector, body = body, "", ""
        elif ch in "'\"":
            in_quote = not in_quote
            special = False
        else:
            special = False
        if not special:
            if in_rule:
                body += ch
            elif not ch.isspace():
                selector += ch
    parsed: dict[str, dict[str, str]] = {}
    for sel, content in rules.items():
        props = {}
        for item in content.split(";"):
            parts = item.split(":")
            if len(parts) == 2:
                props[parts[0].strip()] = parts[1].strip()
        parsed[sel] = props
    return parsed


def test_grass_parses_in_browser_terms():
    text = kb.grass()
    assert "/*" not in text and "//" not in text  # Browser's GraSS parser has no comments
    rules = browser_parse_grass(text)
    assert re.findall(r"^(\S+) \{", text, re.MULTILINE) == list(rules)  # every selector survived intact
    for sel, props in rules.items():
        assert re.fullmatch(r"(node|relationship)(\.[A-Za-z_][A-Za-z0-9_]*)?", sel), sel
        declared = [line for line in text.split(f"{sel} {{", 1)[1].split("}", 1)[0].splitlines() if line.strip()]
        assert len(props) == len(declared), f"{sel}: a property was dropped (a ':' in a value?)"
        assert set(props) <= GRASS_PROPS, sel
    assert rules["node.Entity"]["caption"] == "'{name}'"
    assert rules["relationship"]["caption"] == "'<type>'"  # promoted relationships: their type
    pending = rules["relationship.PENDING_REL"]
    assert pending["shaft-width"] == "1px" and pending["caption"] == "'{type}? ({status})'"
    assert pending["color"] != rules["relationship"]["color"]
    # entity types are coloured, each differently from the generic Entity colour
    for etype in ("Person", "Organization", "Place", "Machine", "Publication"):
        assert rules[f"node.{etype}"]["color"] != rules["node.Entity"]["color"]
    # rules apply in order, so type rules must come after node.Entity
    order = list(rules)
    assert order.index("node.Entity") < order.index("node.Person")


def test_grass_adds_schema_types_and_validates_them():
    text = kb.grass(["Person", "Gene", "Protein", "Gene"])
    rules = browser_parse_grass(text)
    assert text.count("node.Person {") == 1  # already styled: unchanged
    assert rules["node.Gene"]["color"] != rules["node.Protein"]["color"]
    assert list(rules)[-2:] == ["node.Gene", "node.Protein"]
    with pytest.raises(KgrIdentifierError, match="label"):
        kb.grass(["Bad-Type"])


def test_style_command_is_one_line_with_the_same_rules():
    cmd = kb.style_command()
    assert cmd.startswith(":style node {") and "\n" not in cmd
    assert browser_parse_grass(cmd.removeprefix(":style ")) == browser_parse_grass(kb.grass())
    assert browser_parse_grass(kb.style_command(kb.grass(["Gene"])).removeprefix(":style "))["node.Gene"]


# --------------------------------------------------------------------------------------------------
# saved queries and the guide


def test_saved_queries_are_well_formed():
    queries = kb.saved_queries()
    assert [q.filename[:2] for q in queries] == [f"{i:02d}" for i in range(1, len(queries) + 1)]
    for q in queries:
        assert q.text.startswith(f"// title: {q.title}\n") and q.about
        assert ";" not in q.body  # one statement per file
        # every parameter has a `:param` line, and only used parameters have one
        assert sorted(re.match(r":param (\w+)", c).group(1) for c in q.param_commands) == sorted(q.params), q.name
    assert kb.saved_query("edge_provenance").params == ["key"]
    assert kb.saved_query("snapshot_diff").params == ["base", "target"]


class _GuideParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.slides = 0
        self.runnable: list[str] = []
        self.execs: list[str] = []
        self.title = ""
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        a = dict(attrs)
        if tag == "slide":
            self.slides += 1
        if tag == "pre" and "runnable" in (a.get("class") or "").split():
            self._in = "pre"
            self.runnable.append("")
        if tag == "title":
            self._in = "title"
        if "data-exec" in a:
            self.execs.append(a["data-exec"])

    def handle_endtag(self, tag):  # noqa: ANN001
        if tag in ("pre", "title"):
            self._in = None

    def handle_data(self, data):  # noqa: ANN001
        if self._in == "pre":
            self.runnable[-1] += data
        elif self._in == "title":
            self.title += data


def test_guide_has_a_slide_per_query_with_runnable_code_and_the_style():
    page = kb.render_guide()
    assert "<script" not in page.lower()
    p = _GuideParser()
    p.feed(page)
    queries = kb.saved_queries()
    assert p.title == "kgr: inspecting the knowledge graph"
    assert p.slides == len(queries) + 3  # intro, style, one per query, command line
    for q in queries:
        assert q.body in p.runnable, q.name
        for c in q.param_commands:
            assert c in p.runnable
    assert ":" + p.execs[0] == kb.style_command()  # the button runs kgr's style
    assert "style reset" in p.execs
    assert "Gene" in kb.render_guide(["Gene"]) and "Gene" not in page


def test_cypher_in_the_guide_is_escaped():
    page = kb.render_guide()
    assert "-&gt;(o:Entity)" in page and "->(o:Entity)" not in page.split("<article", 1)[1]
    assert html.unescape(page).count(kb.saved_query("graph").body) == 1


# --------------------------------------------------------------------------------------------------
# URLs


def test_browser_url_for_the_managed_server():
    url = kb.browser_url("http://127.0.0.1:7474/browser/", bolt_uri="bolt://127.0.0.1:7687")
    assert url == ("http://127.0.0.1:7474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A7687&db=neo4j"
                   "&preselectAuthMethod=NO_AUTH")


def test_browser_url_with_user_and_guide_never_has_a_password():
    url = kb.browser_url("http://h:7474/browser/", bolt_uri="neo4j://h:7687", database="kg", username="alice",
                         auth=True, play="http://localhost:7478/kgr-guide.html")
    assert url == ("http://h:7474/browser/?dbms=neo4j%3A%2F%2Falice%40h%3A7687&db=kg&preselectAuthMethod=NATIVE"
                   "&cmd=play&arg=http%3A%2F%2Flocalhost%3A7478%2Fkgr-guide.html")
    with pytest.raises(KgrValidationError, match="may not contain"):
        kb.browser_url("http://h/browser/", bolt_uri="bolt://h:7687", play="http://x/?a=1&b=2")


@pytest.mark.parametrize(("uri", "browser"), [
    ("neo4j://db.example:7687", "http://db.example:7474/browser/"),
    ("bolt+s://db.example:7687", "https://db.example:7473/browser/"),
    ("neo4j+s://abcd1234.databases.neo4j.io", "https://browser.neo4j.io/"),
])
def test_browser_target_guesses_the_browser_of_other_servers(monkeypatch, uri, browser):
    monkeypatch.setenv("NEO4J_URI", uri)
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    monkeypatch.setenv("NEO4J_USERNAME", "bob")
    t = kb.browser_target()
    assert (t.browser, t.guessed, t.auth, t.username, t.managed) == (browser, True, True, "bob", False)
    assert "s3cret" not in t.url and "bob%40" in t.url
    t = kb.browser_target(http_url="http://elsewhere:8080")
    assert t.browser == "http://elsewhere:8080/browser/" and not t.guessed
    with pytest.raises(KgrValidationError, match="http"):
        kb.browser_target(http_url="elsewhere")


def test_browser_target_of_the_managed_server(monkeypatch, tmp_path):
    monkeypatch.delenv("NEO4J_URI", raising=False)
    monkeypatch.setenv("KGR_NEO4J_HOME", str(tmp_path / "home"))  # nothing runs there
    monkeypatch.setenv("KGR_NEO4J_BOLT_PORT", "27687")
    monkeypatch.setenv("KGR_NEO4J_HTTP_PORT", "27474")
    t = kb.browser_target()
    assert (t.managed, t.running, t.auth, t.bolt_uri, t.browser) == (
        True, False, False, "bolt://127.0.0.1:27687", "http://127.0.0.1:27474/browser/")
    assert t.url.endswith("dbms=bolt%3A%2F%2F127.0.0.1%3A27687&db=neo4j&preselectAuthMethod=NO_AUTH")
    assert not (tmp_path / "home").exists()  # asking did not create or start anything


# --------------------------------------------------------------------------------------------------
# files on disk


def test_write_bundle_writes_everything_and_protects_edits(tmp_path):
    paths = kb.write_bundle(tmp_path / "kb")
    names = sorted(str(p.relative_to(tmp_path / "kb")) for p in paths)
    assert names == sorted(["kgr-guide.html", "kgr.grass", "kgr-saved-queries.zip",
                            *[f"queries/{q.filename}" for q in kb.saved_queries()]])
    with zipfile.ZipFile(tmp_path / "kb" / "kgr-saved-queries.zip") as zf:
        assert zf.namelist() == [f"kgr/{q.filename}" for q in kb.saved_queries()]
        graph_q = kb.saved_query("graph")
        favorite = zf.read("kgr/03_graph.cypher").decode()
        assert favorite == kb.favorite_text(graph_q) == f"// 03 {graph_q.title}\n" + graph_q.text.split("\n", 1)[1]
    assert (tmp_path / "kb" / "kgr.grass").read_text() == kb.grass()
    assert kb.write_bundle(tmp_path / "kb") == paths  # same content: fine
    (tmp_path / "kb" / "kgr.grass").write_text("node { color: #000000; }\n")
    with pytest.raises(KgrValidationError, match="exists with other content"):
        kb.write_bundle(tmp_path / "kb")
    kb.write_bundle(tmp_path / "kb", overwrite=True)
    assert (tmp_path / "kb" / "kgr.grass").read_text() == kb.grass()
    with pytest.raises(KgrValidationError, match="not a directory"):
        kb.write_bundle(tmp_path / "kb" / "kgr.grass")


def test_saved_queries_zip_is_reproducible():
    assert kb.saved_queries_zip() == kb.saved_queries_zip()


# --------------------------------------------------------------------------------------------------
# the guide server


def _get(url: str, method: str = "GET", headers: dict | None = None):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310 - loopback test server
        return resp.status, dict(resp.headers), resp.read()


def test_guide_server_serves_with_cors_for_the_browser():
    with kb.GuideServer(port=0, entity_types=["Gene"]) as srv:
        assert srv.guide_url == f"http://localhost:{srv.port}/kgr-guide.html"
        base = f"http://127.0.0.1:{srv.port}"
        status, headers, body = _get(f"{base}/kgr-guide.html", headers={"Origin": "http://127.0.0.1:7474"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "*"
        assert headers["Content-Type"].startswith("text/html") and b"node.Gene" in body
        # Browser sends pragma/cache-control plus tracing headers: the preflight must allow them all
        status, headers, _ = _get(f"{base}/kgr.grass", "OPTIONS", {
            "Origin": "http://127.0.0.1:7474", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "pragma,cache-control,sentry-trace,baggage"})
        assert status == 204
        assert headers["Access-Control-Allow-Headers"] == "pragma, cache-control, sentry-trace, baggage"
        assert _get(f"{base}/kgr.grass")[2].decode() == kb.grass(["Gene"])
        assert _get(f"{base}/queries/04_edge_provenance.cypher")[2].decode() == kb.saved_query("4").text
        assert b"kgr-guide.html" in _get(f"{base}/")[2]
        with pytest.raises(urllib.error.HTTPError, match="404"):
            _get(f"{base}/../etc/passwd")


def test_guide_server_reports_a_busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        with pytest.raises(KgrValidationError, match=f"port: cannot serve the guide on 127.0.0.1:{s.getsockname()[1]}"):
            kb.GuideServer(port=s.getsockname()[1])


def test_module_doctests():
    import importlib

    attempted = 0
    for name in ("queries", "style", "guide", "urls", "server"):
        result = doctest.testmod(importlib.import_module(f"kgr.browser.{name}"), optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, name
        attempted += result.attempted
    assert attempted >= 4


# --------------------------------------------------------------------------------------------------
# the CLI (mounted as kgr/cli/main.py mounts it)


@pytest.fixture
def cli(monkeypatch, tmp_path) -> typer.Typer:
    app = typer.Typer()
    app.add_typer(cli_browser.app, name="browser")
    app.command("browse")(cli_browser.browse)
    # a database that is not there: nothing may hang or start
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    return app


def test_cli_browse_json(cli):
    res = CliRunner().invoke(cli, ["browse", "--json", "--http-url", "http://127.0.0.1:7474"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["target"]["url"].startswith("http://127.0.0.1:7474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A9&db=neo4j")
    assert data["style_command"] == kb.style_command() and data["guide_url"] is None
    assert "entity types not read from the database" in res.stderr


def test_cli_browse_human(cli, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"entity_types": {"Gene": {}, "Person": {}}}))
    res = CliRunner().invoke(cli, ["browse", "--schema", str(schema)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "Neo4j Browser for bolt://127.0.0.1:9 (database neo4j, no authentication):"
    assert lines[1].strip().startswith("http://127.0.0.1:7474/browser/?dbms=")
    assert any(line.strip() == kb.style_command(kb.grass(["Gene", "Person"])) for line in lines)
    assert any(line.strip() == ":play http://localhost:7478/kgr-guide.html" for line in lines)
    assert "assuming Neo4j Browser at http://127.0.0.1:7474/browser/" in res.stderr


def test_cli_browse_serve_plays_the_guide(cli, monkeypatch):
    served = []
    monkeypatch.setattr(kb.GuideServer, "serve_forever", lambda self: served.append(self.port))
    res = CliRunner().invoke(cli, ["browse", "--serve", "--port", "0", "--json", "--http-url", "http://h:7474"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    port = served[0]
    assert data["guide_url"] == f"http://localhost:{port}/kgr-guide.html" and data["port"] == port
    assert data["style_command"] == f":style http://localhost:{port}/kgr.grass"
    assert data["target"]["url"].endswith(f"&cmd=play&arg=http%3A%2F%2Flocalhost%3A{port}%2Fkgr-guide.html")
    assert f"serving kgr's guide on http://localhost:{port}" in res.stderr


def test_cli_browse_managed_server_not_running(cli, monkeypatch, tmp_path):
    monkeypatch.delenv("NEO4J_URI")
    monkeypatch.setenv("KGR_NEO4J_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KGR_NEO4J_HTTP_PORT", "27474")
    monkeypatch.setenv("KGR_NEO4J_BOLT_PORT", "27687")
    res = CliRunner().invoke(cli, ["browse"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1].strip() == kb.browser_url("http://127.0.0.1:27474/browser/",
                                                                bolt_uri="bolt://127.0.0.1:27687")
    assert res.stderr.strip() == "warning: the managed Neo4j is not running; start it with `kgr neo4j start`"


def test_cli_setup_writes_and_refuses_to_clobber(cli, tmp_path):
    res = CliRunner().invoke(cli, ["browser", "setup", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["files"]) == len(kb.saved_queries()) + 3
    (tmp_path / "out" / "queries" / "03_graph.cypher").write_text("// mine\nRETURN 1\n")
    res = CliRunner().invoke(cli, ["browser", "setup", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: directory: ") and "use --force" in res.stderr
    res = CliRunner().invoke(cli, ["browser", "setup", str(tmp_path / "out"), "--force"])
    assert res.exit_code == 0 and "wrote" in res.stdout


def test_cli_setup_without_directory_prints_queries_and_style(cli):
    res = CliRunner().invoke(cli, ["browser", "setup"])
    assert res.exit_code == 0
    for q in kb.saved_queries():
        assert q.text in res.stdout
    assert res.stdout.endswith(kb.grass())


def test_cli_queries_and_style(cli):
    runner = CliRunner()
    res = runner.invoke(cli, ["browser", "queries", "--json"])
    assert [q["name"] for q in json.loads(res.stdout)] == [q.name for q in kb.saved_queries()]
    res = runner.invoke(cli, ["browser", "queries", "6"])
    assert res.exit_code == 0 and res.stdout == kb.saved_query("snapshot_diff").text
    res = runner.invoke(cli, ["browser", "queries", "nope"])
    assert res.exit_code == 1 and res.stderr.startswith("Error: no saved query named 'nope'")
    res = runner.invoke(cli, ["browser", "style", "--command"])
    assert res.stdout == kb.style_command() + "\n"
    res = runner.invoke(cli, ["browser", "style"])
    assert res.stdout == kb.grass()


def test_shipped_files_are_package_data():
    folder = Path(kb.__file__).resolve().parents[2] / "cypher" / "browser"
    assert not [p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"]  # package data is browser/*
    assert {p.name for p in folder.glob("*.cypher")} == {q.filename for q in kb.saved_queries()}
