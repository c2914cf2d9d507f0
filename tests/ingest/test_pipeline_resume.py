"""A 200-chunk ``kgr ingest`` killed with SIGKILL halfway (or stopped by Ctrl-C), then re-run, ends
with the same graph as an uninterrupted run — staged content (fingerprint) and, after a final promotion round, the promoted
graph's hash — and no chunk is ever processed twice. Subprocesses against the real Neo4j."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgr.model.schema import load_schema
from kgr.store.admin import fingerprint, reset
from tests.support.corpus import generate_corpus
from tests.support.rounds import gedig_round as run_round
from kgr.store.versions import current_state

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "examples" / "schema.json"
N_CHUNKS = 200


def _env(settings) -> dict[str, str]:
    env = {**os.environ, "NEO4J_URI": settings.uri, "NEO4J_DATABASE": settings.database}
    if settings.password is not None:
        env.update(NEO4J_USERNAME=settings.username, NEO4J_PASSWORD=settings.password)
    return env


def _cmd(corpus: Path, executor: str = "inprocess") -> list[str]:
    return [sys.executable, "-m", "kgr.cli", "ingest", str(corpus), "--schema", str(SCHEMA_PATH),
            "--no-promote", "--concurrency", "4", "--json", "--executor", executor] + (
                ["--workers", "2"] if executor != "inprocess" else [])


def _run(corpus: Path, env: dict[str, str], executor: str = "inprocess") -> dict:
    proc = subprocess.run(_cmd(corpus, executor), env=env, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _processed(graph) -> int:
    rec = graph.driver.execute_query("MATCH (c:Chunk) WHERE c.processed_at IS NOT NULL RETURN count(c) AS n").records
    return rec[0]["n"]


def _process_counts(graph) -> dict[int | None, int]:
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.process_count AS k, count(*) AS n").records
    return {r["k"]: r["n"] for r in rec}


def test_generated_corpus_has_one_chunk_per_document(tmp_path):
    from kgr.ingest.chunking import ChunkingConfig, iter_chunks
    from kgr.ingest.loaders import iter_documents

    corpus = generate_corpus(tmp_path / "c.jsonl", load_schema(SCHEMA_PATH), 20)
    chunks = list(iter_chunks(iter_documents(corpus), config=ChunkingConfig()))
    assert len(chunks) == 20 and len({c.id for c in chunks}) == 20


@pytest.mark.parametrize("executor", ["inprocess", "process"])
def test_sigkill_halfway_then_rerun_gives_the_uninterrupted_graph(graph, neo4j_settings, tmp_path, executor):
    """(``process``: the job and its worker processes go together; the re-run starts new ones.)"""
    schema = load_schema(SCHEMA_PATH)
    corpus = generate_corpus(tmp_path / "corpus.jsonl", schema, N_CHUNKS)
    env = _env(neo4j_settings)

    # 1. the uninterrupted run, then one promotion round
    full = _run(corpus, env)
    assert (full["chunks"], full["chunks_processed"], full["chunks_failed"]) == (N_CHUNKS, N_CHUNKS, [])
    staged_full = fingerprint(graph)
    promoted_full = run_round(graph, schema=schema)
    assert promoted_full.promoted > 0
    state_full, everything_full = current_state(graph), fingerprint(graph)

    # 2. from scratch: the same job, SIGKILLed once about half the chunks are processed
    reset(graph)
    proc = subprocess.Popen(_cmd(corpus, executor), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            if _processed(graph) >= N_CHUNKS // 2:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"the job ended before it was killed: {err.decode()[-1000:]}"
    done_at_kill = _processed(graph)
    assert N_CHUNKS // 2 <= done_at_kill < N_CHUNKS

    # 3. the re-run finishes the job: it skips what was done and processes the rest, once
    rest = _run(corpus, env, executor)
    assert rest["chunks_skipped"] == done_at_kill
    assert rest["chunks_processed"] == N_CHUNKS - done_at_kill and rest["chunks_failed"] == []
    assert _process_counts(graph) == {1: N_CHUNKS}  # no chunk processed twice
    assert fingerprint(graph) == staged_full  # entities, pending edges, votes, chunks: identical

    promoted_rest = run_round(graph, schema=schema)
    assert (promoted_rest.promoted, promoted_rest.held, promoted_rest.rejected) == (
        promoted_full.promoted, promoted_full.held, promoted_full.rejected)
    assert current_state(graph) == state_full  # same version, same promoted-graph hash
    assert fingerprint(graph) == everything_full


def test_ctrl_c_says_how_many_chunks_are_done_and_the_rerun_resumes(graph, neo4j_settings, tmp_path):
    """SIGINT (Ctrl-C) stops ``kgr ingest`` with one line: the chunks done and that re-running the
    same command resumes (exit 130); the re-run skips every chunk written before the stop."""
    corpus = generate_corpus(tmp_path / "corpus.jsonl", load_schema(SCHEMA_PATH), N_CHUNKS)
    env = _env(neo4j_settings)
    proc = subprocess.Popen(_cmd(corpus), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            if _processed(graph) >= N_CHUNKS // 4:
                proc.send_signal(signal.SIGINT)
                break
            time.sleep(0.05)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    last = err.decode().strip().splitlines()[-1]
    assert proc.returncode == 130, f"the job did not stop on SIGINT: {err.decode()[-1000:]}"
    said = int(last.split()[1])
    assert last == f"Interrupted: {said} chunks done (kept in the graph); re-run the same command to resume"
    done = _processed(graph)
    assert 0 < said <= done < N_CHUNKS  # (chunks in flight at the stop are written, not counted)
    rest = _run(corpus, env)
    assert rest["chunks_skipped"] == done and rest["chunks_processed"] == N_CHUNKS - done
    assert _process_counts(graph) == {1: N_CHUNKS}
