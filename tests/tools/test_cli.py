"""``kgr tool`` (the typer sub-app in kgr.cli.tool), driven with CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgr.cli.tool import app

runner = CliRunner()
PAYLOAD = {"text": "Ada Lovelace met Charles Babbage.", "schema": {"entity_schema": ["Person"], "relation_schema": []},
           "extracted_kg": {"entities": {"Person": ["Ada Lovelace", "Charles Babbage"]}}}


def test_list_prints_the_function_definitions() -> None:
    res = runner.invoke(app, ["--list"])
    assert res.exit_code == 0, res.stderr
    defs = json.loads(res.stdout)
    assert [d["function"]["name"] for d in defs][:2] == ["query_extraction_density", "query_coverage_feedback"]
    assert len(defs) == 6 and res.stderr == ""


def test_names_lists_one_line_per_tool() -> None:
    res = runner.invoke(app, ["--names"])
    assert res.exit_code == 0
    lines = res.stdout.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines][:2] == ["query_extraction_density", "query_coverage_feedback"]
    assert len(lines) == 6 and all(len(ln) < 140 for ln in lines)


def test_run_from_file(tmp_path: Path) -> None:
    f = tmp_path / "in.json"
    f.write_text(json.dumps(PAYLOAD), encoding="utf-8")
    res = runner.invoke(app, ["query_coverage_feedback", "--input", str(f)])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["coverage_score"] == 1.0 and res.stderr == ""


def test_run_from_stdin_option_after_name() -> None:
    res = runner.invoke(app, ["query_extraction_density"], input=json.dumps(PAYLOAD))
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["text_stats"]["token_count"] == 6


@pytest.mark.parametrize(("stdin", "message"), [
    ('{"text": ', "Error: input: malformed JSON in stdin at line 1 column 10"),
    ("", "Error: input: stdin is empty"),
    ('{"text": "x", "schema": {}, "extracted_kg": {"entities": {"Person": [1]}}}',
     "Error: extracted_kg.entities.Person.0: Input should be a valid string"),
    ('{"text": "x", "schema": {}, "extracted_kg": {}, "domain": 5}', "Error: domain: Input should be a valid string"),
    ("[1, 2]", "Error: $: query_extraction_density input must be a JSON object"),
])
def test_invalid_input_exits_non_zero_naming_the_field(stdin: str, message: str) -> None:
    res = runner.invoke(app, ["query_extraction_density"], input=stdin)
    assert res.exit_code == 1
    assert res.stdout == ""
    assert res.stderr.startswith(message), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_unknown_tool_and_missing_file(tmp_path: Path) -> None:
    res = runner.invoke(app, ["query_nothing"], input="{}")
    assert res.exit_code == 1 and res.stderr.startswith("Error: no tool named 'query_nothing'")
    res = runner.invoke(app, ["query_coverage_feedback", "-i", str(tmp_path / "missing.json")])
    assert res.exit_code == 1 and "Error: input: cannot read" in res.stderr


def test_no_args_shows_help() -> None:
    res = runner.invoke(app, [])
    assert res.exit_code != 0 or "Usage" in res.output
    assert "Usage" in res.output and "[NAME]" in res.output
