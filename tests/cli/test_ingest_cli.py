"""``kgr ingest`` through the real CLI against the real Neo4j: options validated by IngestConfig and
reported in option names, an edited corpus re-ingested with --prune, ``kgr forget DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from kgr.cli.ingest import as_flags
from kgr.cli.main import app
from kgr.ingest.chunking import ChunkingConfig
from kgr.store.admin import reset

pytestmark = pytest.mark.neo4j

SCHEMA = str(Path(__file__).resolve().parents[2] / "examples" / "schema.json")


@pytest.fixture
def kgr(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    runner = CliRunner()

    def run(*args: str, code: int = 0):
        res = runner.invoke(app, list(args))
        assert res.exit_code == code, (res.stdout, res.stderr)
        return res

    return run


def test_config_messages_in_option_names():
    names = {"input_cost_per_token", "output_cost_per_token", "extractor"}
    assert as_flags("Value error, give both 'input_cost_per_token' and 'output_cost_per_token', or neither", names) \
        == "give both --input-cost-per-token and --output-cost-per-token, or neither"
    assert as_flags("Input should be 'rules' or 'llm'", names) == "Input should be 'rules' or 'llm'"


def test_bad_options_are_the_configs_errors(kgr, tmp_path):
    (tmp_path / "a.txt").write_text("Konrad Zuse built the Z3.", encoding="utf-8")
    res = kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--concurrency", "0", code=1)
    assert res.stderr.strip() == "Error: --concurrency: Input should be greater than or equal to 1"
    res = kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--forget-quorum", "0", code=1)
    assert res.stderr.strip().startswith("Error: --forget-quorum: Input should be greater than or equal to 1")


def test_reingest_with_prune_then_forget_a_directory(kgr, tmp_path):
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("Konrad Zuse built the Z3. Konrad Zuse was born in Berlin.", encoding="utf-8")
    (root / "b.txt").write_text("Konrad Zuse built the Z3.", encoding="utf-8")
    (root / "sub" / "c.txt").write_text("Alan Turing was born in London.", encoding="utf-8")
    first = json.loads(kgr("ingest", str(root), "--schema", SCHEMA, "--policy", "quorum", "--json").stdout)
    assert first["chunks_processed"] == 3
    promoted = json.loads(kgr("status", "--json").stdout)["promoted"]
    assert promoted == 1  # BUILT(Zuse, Z3) has two votes (a and b)

    (root / "b.txt").unlink()
    (root / "a.txt").write_text("Konrad Zuse was born in Berlin.", encoding="utf-8")
    second = json.loads(kgr("ingest", str(root), "--schema", SCHEMA, "--policy", "quorum", "--prune",
                            "--json").stdout)
    assert (second["chunks_forgotten"], second["documents_pruned"], second["promoted_retracted"]) == (1, 1, 1)
    assert second["chunks_processed"] == 1 and second["chunks_skipped"] == 1  # the new a; c unchanged
    assert json.loads(kgr("status", "--json").stdout)["promoted"] == 0
    text = kgr("ingest", str(root), "--schema", SCHEMA, "--policy", "quorum", "--prune").stdout
    assert "0 processed, 2 already done" in text

    # kgr forget DIR: every document read from under it
    res = json.loads(kgr("forget", str(root / "sub"), "--json").stdout)
    assert res["documents"] == [(root / "sub" / "c.txt").resolve().as_posix()] and res["chunks_removed"] == 1


def test_executor_options(kgr, graph, tmp_path):
    """``--executor process --workers 2`` drafts in two worker processes and stages what the
    in-process run stages; worker options without a worker executor are the config's errors."""
    root = tmp_path / "corpus"
    root.mkdir()
    for i, (who, what) in enumerate([("Konrad Zuse", "Z3"), ("Konrad Zuse", "Z4"), ("Alan Turing", "ACE")]):
        (root / f"{i}.txt").write_text(f"{who} built the {what}. {who} was born in Berlin.", encoding="utf-8")
    res = kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--workers", "2", code=1)
    assert res.stderr.strip() == ("Error: --workers applies to the process and ray executors, "
                                  "not to --executor inprocess")
    res = kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--ray-address", "auto", code=1)
    assert "--ray-address applies to the ray executor only" in res.stderr
    first = json.loads(kgr("ingest", str(root), "--schema", SCHEMA, "--no-promote", "--json").stdout)
    votes = json.loads(kgr("status", "--json").stdout)["votes"]
    reset(graph)
    report = json.loads(kgr("ingest", str(root), "--schema", SCHEMA, "--no-promote", "--executor", "process",
                            "--workers", "2", "--json").stdout)
    assert (report["executor"], len(report["workers"]), report["chunks_processed"]) == ("process", 2, 3)
    assert report["new_votes"] == first["new_votes"] and json.loads(kgr("status", "--json").stdout)["votes"] == votes


def _graph_state(kgr) -> tuple[int, list[str]]:
    """The store's version and its promoted edges (``kgr export jsonl``), sorted."""
    version = json.loads(kgr("status", "--json").stdout)["version"]
    return version, sorted(kgr("export", "jsonl").stdout.splitlines())


def test_nothing_to_ingest_opens_no_version(kgr, tmp_path):
    """An ingest that reads no document (an empty file, a directory with nothing kgr reads, a broken
    JSONL file) fails before any promotion round or resolution: no version written, the promoted
    graph unchanged."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Konrad Zuse built the Z3. Alan Turing was born in London.", encoding="utf-8")
    (corpus / "b.txt").write_text("Konrad Zuse built the Z3. Alan Turing was born in London.", encoding="utf-8")
    kgr("ingest", str(corpus), "--schema", SCHEMA, "--policy", "quorum")
    before = _graph_state(kgr)
    assert before[0] >= 1 and len(before[1]) == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{nope\n", encoding="utf-8")
    for path in (empty, broken):
        res = kgr("ingest", str(path), "--schema", SCHEMA, "--policy", "quorum", code=2)
        assert res.stderr.strip().splitlines()[-1].startswith(f"Error: nothing to ingest under {path}")
        assert "promotion" not in res.stderr + res.stdout.replace("promotion: not run", "")
        assert _graph_state(kgr) == before


def test_chunk_overlap_must_be_smaller_than_the_size(kgr, tmp_path):
    """``--chunk-overlap`` >= ``--chunk-size`` is the chunking config's error, in option names, before
    any work (it was clamped to size - 1 in silence: every sentence in several chunks, each a vote)."""
    (tmp_path / "a.txt").write_text("Konrad Zuse built the Z3.", encoding="utf-8")
    for overlap in ("100", "64"):
        res = kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--chunk-size", "64", "--chunk-overlap", overlap, code=1)
        assert res.stderr.strip() == f"Error: --chunk-overlap ({overlap}) must be smaller than --chunk-size (64)"
    assert json.loads(kgr("status", "--json").stdout)["version"] == 0  # nothing ran
    # without --chunk-overlap a small size gets a quarter of it as overlap, not an error
    report = json.loads(kgr("ingest", str(tmp_path), "--schema", SCHEMA, "--chunk-size", "32", "--json").stdout)
    assert report["documents"] == 1 and report["chunks_processed"] == 1
    with pytest.raises(ValidationError, match="'overlap' \\(64\\) must be smaller than 'size' \\(64\\)"):
        ChunkingConfig(size=64, overlap=64)
    assert ChunkingConfig(size=64, overlap=63).overlap == 63


def test_duplicate_jsonl_ids_are_refused_before_anything_is_written(kgr, tmp_path):
    """Two JSONL lines with one id (one file, or two files of one ingest) were one Document in
    silence, the second text in the first's place: refused, naming the id, files and lines."""
    d = tmp_path / "d.jsonl"
    d.write_text(json.dumps({"id": "dup", "text": "curl supports LDAP."}) + "\n"
                 + json.dumps({"id": "dup", "text": "git supports IMAP."}) + "\n", encoding="utf-8")
    res = kgr("ingest", str(d), "--schema", SCHEMA, code=1)
    assert res.stderr.strip() == f"Error: document id 'dup' appears twice ({d} lines 1 and 2): ids must be unique"
    e = tmp_path / "e.jsonl"
    e.write_text(json.dumps({"id": "x", "text": "Konrad Zuse built the Z3."}) + "\n", encoding="utf-8")
    f = tmp_path / "f.jsonl"
    f.write_text(json.dumps({"id": "y", "text": "Alan Turing was born in London."}) + "\n"
                 + json.dumps({"id": "x", "text": "Konrad Zuse built the Z4."}) + "\n", encoding="utf-8")
    res = kgr("ingest", str(e), str(f), "--schema", SCHEMA, code=1)
    assert res.stderr.strip() == f"Error: document id 'x' appears twice ({e} line 1, {f} line 2): ids must be unique"
    status = json.loads(kgr("status", "--json").stdout)
    assert (status["version"], status["documents"], status["chunks"]) == (0, 0, 0)
    # unique ids across the files, and a file named twice (itself and its directory), are read as before
    f.write_text(json.dumps({"id": "y", "text": "Alan Turing was born in London."}) + "\n", encoding="utf-8")
    d.unlink()
    report = json.loads(kgr("ingest", str(e), str(tmp_path), "--schema", SCHEMA, "--json").stdout)
    assert report["chunks_processed"] == 2
    assert json.loads(kgr("status", "--json").stdout)["documents"] == 2


def test_files_no_loader_reads_are_counted_by_extension(kgr, tmp_path):
    """Files under a directory that no loader reads were passed over in silence: one line on stderr
    counts them by extension, and ``--json`` has them as ``files_skipped``."""
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text("Konrad Zuse built the Z3.", encoding="utf-8")
    for name in ("x.gz", "sub/y.gz", "z.GZ", "page.docx", "table.csv", "Makefile", ".hidden.gz"):
        (corpus / name).write_bytes(b"\x1f\x8b not read")
    res = kgr("ingest", str(corpus), "--schema", SCHEMA, "--json")
    assert json.loads(res.stdout)["files_skipped"] == {".gz": 3, "(none)": 1, ".csv": 1, ".docx": 1}
    assert res.stderr.strip().splitlines()[-1] == "skipped 6 files with no loader: .gz ×3, (none), .docx, .csv"
    res = kgr("ingest", str(corpus / "a.txt"), "--schema", SCHEMA)
    assert "with no loader" not in res.stderr + res.stdout
