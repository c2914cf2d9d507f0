"""The store commands through the real CLI (typer's CliRunner) against the real Neo4j."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.store.export import load_laplacian

pytestmark = pytest.mark.neo4j


@pytest.fixture
def kgr(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    runner = CliRunner()

    def run(*args: str, code: int = 0):
        res = runner.invoke(app, list(args))
        assert res.exit_code == code, (res.stdout, res.stderr)
        return res

    return run


def line(s, o, src, r="KNOWS", st="Person", ot="Person"):
    return json.dumps({"subject": s, "subject_type": st, "relation": r, "object": o, "object_type": ot,
                       "source": src})


def test_stage_reports_bad_lines_and_keeps_good_ones(kgr, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join([
        line("a", "b", "s1"),
        "{not json",
        json.dumps({"subject": "a", "relation": "KNOWS"}),
        line("a", "b", "s2"),
        line("x", "y", "s1", st="Bad Type"),
        "",
        line("b", "c", "s1"),
    ]) + "\n")
    res = kgr("stage", str(f), "--json")
    data = json.loads(res.stdout)
    assert (data["new_votes"], data["new_edges"]) == (3, 2)
    assert [b["line"] for b in data["bad_lines"]] == [2, 3, 5]
    assert f"{f}:2: skipped: malformed JSON" in res.stderr and f"{f}:5: skipped" in res.stderr
    again = json.loads(kgr("stage", str(f), "--json").stdout)
    assert again["new_votes"] == 0 and again["repeated_votes"] == 3


def test_undecodable_lines_are_bad_lines_never_silently_replaced(kgr, tmp_path, graph):
    # issue 13, item 7: errors="replace" made two different invalid byte sequences one entity and
    # reported "0 bad lines"
    f = tmp_path / "t.jsonl"
    good = line("a", "b", "s1").encode()
    bad1 = line("x\udcff", "b", "s1").encode().replace(b"\\udcff", b"\xff")
    bad2 = line("x\udcfe", "b", "s2").encode().replace(b"\\udcfe", b"\xfe\xfe")
    f.write_bytes(b"\n".join([good, bad1, bad2]) + b"\n")
    data = json.loads(kgr("stage", str(f), "--json").stdout)
    assert data["new_votes"] == 1
    assert [(b["line"], b["error"][:9]) for b in data["bad_lines"]] == [(2, "not UTF-8"), (3, "not UTF-8")]
    names = {r["n"] for r in graph.driver.execute_query("MATCH (e:Entity) RETURN e.name AS n").records}
    assert names == {"a", "b"}


def test_control_characters_in_names_and_sources_are_bad_lines(kgr, tmp_path, graph):
    # issue 13, item 8: NUL characters were accepted in names and sources
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join([line("a\u0000b", "c", "s1"), line("a", "c", "s\u0000"), line("a", "c", "s\u001b2"),
                            line("a", "c", "ok")]) + "\n")
    data = json.loads(kgr("stage", str(f), "--json").stdout)
    assert data["new_votes"] == 1 and [b["line"] for b in data["bad_lines"]] == [1, 2, 3]
    assert all("control character U+00" in b["error"] for b in data["bad_lines"])


def test_stage_of_nothing_stageable_and_ingest_of_nothing_ingestable_fail(kgr, tmp_path):
    # issue 13, items 8-9: `kgr stage` exited 0 when every line was bad; `kgr ingest` of nothing ingestable exited 0
    f = tmp_path / "bad.jsonl"
    f.write_text("{nope\n" + line("a", "b", "s1", r="PENDING_REL") + "\n")
    res = kgr("stage", str(f), code=2)
    assert res.stderr.strip().splitlines()[-1] == f"Error: no line of {f} could be staged (1 bad, 1 rejected)"
    empty = tmp_path / "corpus"
    empty.mkdir()
    (empty / "notes.docx").write_bytes(b"not read")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"entity_types": {"Person": {}}}))
    res = kgr("ingest", str(empty), "--schema", str(schema), code=2)
    assert res.stderr.strip().splitlines()[-1].startswith(f"Error: nothing to ingest under {empty}")


def test_a_schema_file_that_is_not_utf8_is_a_one_line_error(kgr, tmp_path):
    f = tmp_path / "schema.json"
    f.write_bytes(b'{"name": "caf\xe9"}')
    res = kgr("init", "--schema", str(f), code=1)
    assert res.stderr.strip() == f"Error: {f}: not UTF-8 (undecodable byte at offset 13)"


def test_missing_file_is_one_line_error(kgr, tmp_path):
    res = kgr("stage", str(tmp_path / "nope.jsonl"), code=1)
    assert res.stderr.strip() == f"Error: path: no such file: {tmp_path / 'nope.jsonl'}"


def test_promote_snapshot_diff_rollback_export(kgr, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(line(f"p{i}", f"p{i + 1}", s) for i in range(4) for s in ("s1", "s2")) + "\n")
    kgr("stage", str(f))
    s = json.loads(kgr("promote", "--policy", "quorum", "--json").stdout)
    assert s["promoted"] == 4 and s["version"] == 1
    snap = json.loads(kgr("snapshot", "create", "first", "--json").stdout)
    assert snap["edges"] == 4 and snap["version"] == 1

    g = tmp_path / "more.jsonl"
    g.write_text("\n".join(line("q0", "q1", s) for s in ("s1", "s2")) + "\n" + line("lonely", "x", "s1") + "\n")
    kgr("stage", str(g))
    kgr("promote", "--policy", "quorum")
    d = json.loads(kgr("snapshot", "diff", "first", "--json").stdout)
    assert [(e["subject"], e["object"]) for e in d["added"]] == [("q0", "q1")] and d["removed"] == []
    assert "+ (q0:Person) -[KNOWS]-> (q1:Person)" in kgr("snapshot", "diff", "first").stdout

    promoted = [json.loads(x) for x in kgr("export", "jsonl").stdout.splitlines()]
    assert len(promoted) == 5 and {p["status"] for p in promoted} == {"promoted"}
    assert all(p["votes"] == 2 and set(p["source"].split(",")) == {"s1", "s2"} for p in promoted)
    pending = [json.loads(x) for x in kgr("export", "jsonl", "--pending", "--status", "held").stdout.splitlines()]
    assert [(p["subject"], p["votes"], p["status"]) for p in pending] == [("lonely", 1, "held")]

    rb = json.loads(kgr("snapshot", "rollback", "first", "--json").stdout)
    assert (rb["retired"], rb["restored"]) == (1, 0) and rb["hash"] == snap["hash"]
    assert len(kgr("export", "jsonl").stdout.splitlines()) == 4
    names = [x["name"] for x in json.loads(kgr("snapshot", "list", "--json").stdout)]
    assert names == ["first"]
    assert kgr("snapshot", "rollback", "nope", code=1).stderr.startswith("Error: no snapshot named 'nope'")

    out = tmp_path / "g.npz"
    lap = json.loads(kgr("export", "laplacian", "--out", str(out), "--json").stdout)
    assert (lap["nodes"], lap["edges"]) == (5, 4)  # the path p0..p4
    L, nodes = load_laplacian(out)
    assert sorted(nodes) == [f"Person:p{i}" for i in range(5)]
    assert np.allclose(L.toarray().sum(axis=1), 0) and sorted(L.diagonal()) == [1, 1, 2, 2, 2]


def test_status_init_and_age(kgr, tmp_path):
    first = json.loads(kgr("init", "--json").stdout)
    assert json.loads(kgr("init", "--json").stdout) == first  # idempotent
    f = tmp_path / "t.jsonl"
    f.write_text(line("a", "b", "s1") + "\n")
    kgr("stage", str(f))
    st = json.loads(kgr("status", "--json").stdout)
    assert (st["entities"], st["votes"], st["pending_by_status"]) == (2, 1, {"pending": 1})
    # a fresh vote is not expired by a 30-day TTL; a tiny TTL expires it, with a recorded reason
    assert json.loads(kgr("age", "--json").stdout)["expired"] == 0
    time.sleep(0.2)  # older than the tiny TTL below (0.000001 days = 86 ms) whatever the machine's speed
    assert json.loads(kgr("age", "--ttl-days", "0.000001", "--json").stdout)["expired"] == 1
    st = json.loads(kgr("status", "--json").stdout)
    assert st["pending_by_status"] == {"expired": 1} and st["decisions"] == 1


def test_export_jsonl_json(kgr, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(line("a", "b", s) for s in ("s1", "s2")) + "\n" + line("c", "d", "s1") + "\n")
    kgr("stage", str(f))
    kgr("promote", "--policy", "quorum")
    out = tmp_path / "promoted.jsonl"
    res = kgr("export", "jsonl", "--out", str(out), "--json")
    assert json.loads(res.stdout) == {"path": str(out), "edges": 1, "pending": False, "statuses": None}
    assert [json.loads(x)["subject"] for x in out.read_text().splitlines()] == ["a"]
    res = kgr("export", "jsonl", "--pending", "--status", "held", "--out", str(out), "--json")
    assert json.loads(res.stdout)["edges"] == 1 and json.loads(out.read_text())["status"] == "held"
    # without --out the JSONL lines are the data on stdout, --json or not; the count goes to stderr
    res = kgr("export", "jsonl", "--json")
    assert [json.loads(x)["key"] for x in res.stdout.splitlines()] == [json.loads(x)["key"] for x in
                                                                       kgr("export", "jsonl").stdout.splitlines()]
    assert len(res.stdout.splitlines()) == 1 and "exported 1 edges" in res.stderr
