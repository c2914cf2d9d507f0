"""Hostile input through the real CLI (issue 31, items 7 and 8): every refusal is one ``Error:``
line, never a traceback, and the innocent rows around a bad one are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.model.canonical import edge_key, entity_key
from kgr.model.review import EdgeLabel
from kgr.model.triples import TripleAssertion
from kgr.store.staging import stage

runner = CliRunner()
SCHEMA = str(Path(__file__).resolve().parents[2] / "examples" / "schema.json")


def one_line_error(res, code: int = 1) -> str:
    """The run failed with ``code`` and said why in exactly one ``Error:`` line (no traceback)."""
    assert res.exit_code == code, (res.stdout, res.stderr, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert "Traceback" not in res.output
    return lines[0]


def line(s: str, o: str, src: str) -> str:
    return json.dumps({"subject": s, "subject_type": "Person", "relation": "KNOWS", "object": o,
                       "object_type": "Person", "source": src}, ensure_ascii=False)


# -- without a database -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["not utf-8", "deep", "directory", "missing", "duplicate key", "too long a name"])
def test_slice_verify_on_a_file_that_is_no_slice(tmp_path, kind) -> None:
    path = tmp_path / "slice.json"
    if kind == "not utf-8":
        path.write_bytes(b"\xff\xfe{}")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "directory":
        path.mkdir()
    elif kind == "duplicate key":
        path.write_text('{"slice_id": "a", "slice_id": "b"}')
    elif kind == "too long a name":
        path = tmp_path / ("x" * 300)
    msg = one_line_error(runner.invoke(app, ["slice", "verify", str(path)]))
    assert msg.startswith("Error: slice: ")


def test_tool_input_too_deep_and_tool_json(tmp_path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}")
    msg = one_line_error(runner.invoke(app, ["tool", "query_extraction_density", "-i", str(deep)]))
    assert msg == "Error: input: JSON nested deeper than 64 levels"
    dup = tmp_path / "dup.json"
    dup.write_text('{"text": "a", "text": "b", "extracted_kg": {}}')
    assert "duplicate key 'text'" in one_line_error(runner.invoke(app, ["tool", "query_extraction_density",
                                                                        "-i", str(dup)]))
    names = runner.invoke(app, ["tool", "--names", "--json"])
    assert names.exit_code == 0, names.output
    rows = json.loads(names.stdout)
    assert "query_kg_storage" in [r["name"] for r in rows] and all(r["description"] for r in rows)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"text": "Ada met Bob.", "extracted_kg": {"entities": {"Person": ["Ada", "Bob"]}},
                              "schema": {"entity_schema": ["Person"], "relation_schema": []}}))
    out = runner.invoke(app, ["tool", "query_extraction_density", "-i", str(ok), "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["current_density"]["total_entities"] == 2


def test_label_files_are_strict_json(tmp_path) -> None:
    from kgr.cli.review import read_labels

    key = "0" * 24
    f = tmp_path / "labels.jsonl"
    f.write_text(f'{{"key": "{key}", "label": true, "reviewer": "ada", "label": false}}\n')
    msg = one_line_error(runner.invoke(app, ["review", "label", str(f)]))
    assert "1: duplicate key 'label' in a JSON object (nothing was recorded)" in msg
    # a byte-order mark and raw U+2028/U+2029 are JSON: one label per line, not three broken ones
    f.write_bytes(b"\xef\xbb\xbf" + "\n".join(json.dumps({"key": k, "label": True, "reviewer": r}, ensure_ascii=False)
                                              for k, r in [(key, "ada"), ("1" * 24, "bob")]).encode() + b"\n")
    assert [lab.reviewer for lab in read_labels(f)] == ["ada", "bob"]
    for bad in ("eve\x1b[2J", "eve\nINFO forged", "eve\x00", "\u202eeve", "eve\x9b", "eve\u2028x"):
        f.write_text(json.dumps({"key": key, "label": False, "reviewer": bad}) + "\n")
        msg = one_line_error(runner.invoke(app, ["review", "label", str(f)]))
        assert "reviewer: Value error, holds the character U+" in msg


@pytest.mark.parametrize("command", [["promote"], ["resolve", "--dry-run"]])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_target_fmr_that_is_no_number_is_named_so(command, value) -> None:
    """``--target-fmr nan`` was refused as "should be less than or equal to 0.9999": NaN is no number."""
    res = runner.invoke(app, [*command, "--target-fmr", value])
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    assert "is not a number: give a number in (0, 0.9999]" in res.stderr and "less than" not in res.stderr


@pytest.mark.parametrize("command", [["promote"], ["resolve", "--dry-run"]])
@pytest.mark.parametrize("value", ["0", "-0.5", "1", "0.99995"])
def test_target_fmr_outside_its_range_names_the_range(command, value) -> None:
    res = runner.invoke(app, [*command, "--target-fmr", value])
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    assert "is outside (0, 0.9999]: give a number in (0, 0.9999]" in res.stderr


# -- against Neo4j ------------------------------------------------------------------------------------


@pytest.fixture
def cli(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    return lambda *args: runner.invoke(app, list(args))


@pytest.mark.neo4j
def test_forget_an_id_longer_than_a_file_name(cli) -> None:
    for doc_id in ("d" * 300, "é" * 200, "a\x00b"):
        msg = one_line_error(cli("forget", doc_id))
        assert msg.startswith("Error: no document with id")


@pytest.mark.neo4j
def test_stage_keeps_the_batch_around_a_name_nfkc_expands(cli, tmp_path, graph) -> None:
    """Issue 31, item 7: 1,024 × U+FDFA passed the length check, canonicalised to 33,792 bytes and
    overflowed the entity key index: a traceback, and the innocent rows of its batch not staged."""
    f = tmp_path / "t.jsonl"
    rows = [line("Ada", f"Bob{i}", "s1") for i in range(5)]
    rows.insert(2, line("\ufdfa" * 1024, "Bob", "s1"))
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    res = cli("stage", str(f), "--json")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    data = json.loads(res.stdout)
    assert (data["new_votes"], data["new_edges"]) == (5, 5)
    assert [b["line"] for b in data["bad_lines"]] == [3]
    assert "canonicalises (NFKC) to 33792 bytes of UTF-8, more than 4096" in data["bad_lines"][0]["error"]
    names = {r["n"] for r in graph.driver.execute_query("MATCH (e:Entity) RETURN e.name AS n").records}
    assert names == {"Ada", *(f"Bob{i}" for i in range(5))}


@pytest.mark.neo4j
def test_stage_reads_a_bom_and_raw_line_separators(cli, tmp_path, graph) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + "\n".join([line("Ada", "Bob", "s1"), line("Ada\u2028Lovelace", "Bob", "s2"),
                                               line("Cy\u2029", "Dee", "s1")]).encode() + b"\n")
    data = json.loads(cli("stage", str(f), "--json").stdout)
    assert data["bad_lines"] == [] and data["new_votes"] == 3


@pytest.mark.neo4j
def test_explain_and_review_print_stored_text_escaped(cli, graph) -> None:
    """A reviewer name stored raw (before names were checked) or a quote from a hostile document
    must not reach the terminal as an escape sequence, a forged log line or reversed text."""
    from kgr.store.review import record_labels

    stage(graph, [TripleAssertion(subject="Ada\nINFO forged", subject_type="Person", relation="KNOWS",
                                  object="Bob\u202e", object_type="Person", source=s) for s in ("s1", "s2")])
    key = edge_key(entity_key("Person", "Ada\nINFO forged"), "KNOWS", entity_key("Person", "Bob\u202e"))
    evil = EdgeLabel.model_construct(key=key, label=False, reviewer="eve\x1b[2J\nINFO all good\u202e")
    record_labels(graph, [evil])
    res = cli("promote", "--explain", key)
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert "eve\\x1b[2J\\nINFO all good\\u202e" in res.stdout and "(Ada\\nINFO forged) -[KNOWS]-> (Bob\\u202e)" in res.stdout
    assert not any(c in res.stdout for c in ("\x1b", "\u202e")) and "\nINFO" not in res.stdout


@pytest.mark.neo4j
def test_ingest_reports_a_deep_jsonl_line_and_reads_on(cli, tmp_path) -> None:
    """Issue 31, item 8: a 100,000-deep line ended kgr ingest with a traceback, exit 0, and the lines
    after it never ingested."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join([json.dumps({"id": "a", "text": "Konrad Zuse built the Z3."}),
                                 "[" * 100_000 + "]" * 100_000,
                                 json.dumps({"id": "b", "text": "Alan Turing was born in London."})]) + "\n")
    res = cli("ingest", str(corpus), "--schema", SCHEMA, "--no-promote", "--json")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert "Traceback" not in res.output and "RecursionError" not in res.output
    report = json.loads(res.stdout)
    assert report["documents"] == 2 and report["chunks_processed"] == 2
    assert report["load_issues"] == [f"{corpus}:2: JSON nested deeper than 64 levels"]

