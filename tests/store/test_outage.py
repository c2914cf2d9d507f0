"""A database that goes away in the middle of a staging run: clear failure, nothing lost, re-run converges."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgr.connect import connect
from kgr.engine import Engine
from kgr.runtime import ManagedNeo4j, RuntimeConfig
from kgr.store.admin import fingerprint
from kgr.store.connection import Neo4jSettings

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kgr(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kgr.cli", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _write_file(path: Path, n: int = 12_000) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"subject": f"P{i % 997}", "subject_type": "Person", "relation": "KNOWS",
                                 "object": f"P{(i * 7) % 991}", "object_type": "Person",
                                 "source": f"doc{i % 13}", "confidence": 0.5 + (i % 5) / 10}) + "\n")


def test_stage_survives_database_outage(graph, tmp_path, monkeypatch):
    data = tmp_path / "triples.jsonl"
    _write_file(data)
    # reference: an uninterrupted run on the shared test database
    kg = Engine(graph)
    kg.stage_file(data, batch_size=100)
    reference = fingerprint(graph)

    cfg = RuntimeConfig(home=tmp_path / "home", bolt_port=_free_port(), http_port=_free_port())
    server = ManagedNeo4j(cfg, quiet=True)
    server.start(timeout=180)
    try:
        env = {**os.environ, "NEO4J_URI": cfg.bolt_uri, "KGR_NEO4J_RETRY_SECONDS": "3"}
        assert _kgr(["init"], env).wait(timeout=120) == 0
        proc = _kgr(["stage", str(data), "--batch-size", "100"], env)
        probe = connect(Neo4jSettings(uri=cfg.bolt_uri))
        deadline = time.time() + 120
        while time.time() < deadline:  # wait until some batches have committed
            if probe.driver.execute_query("MATCH ()-[p:PENDING_REL]->() RETURN sum(p.votes) AS n").records[0]["n"] > 300:
                break
            time.sleep(0.05)
        probe.close()
        monkeypatch.setenv("KGR_NEO4J_RETRY_SECONDS", "3")
        served = connect(Neo4jSettings(uri=cfg.bolt_uri))  # a tool server's connection, opened while up
        os.kill(server.status().pid, signal.SIGKILL)  # the database goes away mid-run
        # issue 13, item 8: with the database down, 6 concurrent storage calls must all fail within the
        # retry bound (plus one back-off), not one retry period after another as they queue up
        import threading

        from kgr.errors import KgrNeo4jUnavailable
        from kgr.model.triples import TripleAssertion
        from kgr.store.group_commit import GroupWriter

        writer = GroupWriter(served)
        took: dict[int, tuple[str, float]] = {}

        def call(i: int) -> None:
            t0 = time.perf_counter()
            try:
                writer.stage([TripleAssertion(subject=f"Z{i}", subject_type="Person", relation="KNOWS", object="Y",
                                              object_type="Person", source="x")], timeout=120)
                took[i] = ("ok", time.perf_counter() - t0)
            except KgrNeo4jUnavailable:
                took[i] = ("unavailable", time.perf_counter() - t0)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        writer.close()
        served.close()
        assert {k for k, _ in took.values()} == {"unavailable"}
        # the driver's back-off before its last retry is at most 4 s + 20 % jitter (initial 1 s, x2,
        # jitter 0.2), and that retry's connection attempt is refused at once: 3 + 4.8 + 0.5
        assert max(t for _, t in took.values()) < 3 + 4 * 1.2 + 0.5, took
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 1, stderr
        assert stderr.strip().splitlines()[-1].startswith("Error: Neo4j at " + cfg.bolt_uri + " is unavailable"), stderr
        assert "Traceback" not in stderr

        server.start(timeout=180)  # committed batches survived the crash
        again = _kgr(["stage", str(data), "--batch-size", "100", "--json"], env)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert json.loads(out)["repeated_votes"] > 0  # the first part was already there
        with connect(Neo4jSettings(uri=cfg.bolt_uri)) as g:
            assert fingerprint(g) == reference

        # issue 13, item 8: `kgr ingest` needed 96 s to exit after the database went away (retry 30 s)
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        examples = Path(__file__).resolve().parents[2] / "examples"
        for i in range(30):  # 30 distinct copies (a JSONL line's id is its document's: each copy gets its own)
            for f in sorted((examples / "corpus").iterdir()):
                if f.suffix == ".jsonl":
                    lines = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
                    text = "".join(json.dumps({**d, "id": f"{d['id']}-{i}", "text": d["text"] + f" Copy {i}."}) + "\n"
                                   if "id" in d else json.dumps({**d, "text": d["text"] + f" Copy {i}."}) + "\n"
                                   for d in lines)
                else:
                    text = f.read_text(encoding="utf-8") + f"\n\nCopy {i}.\n"
                (corpus / f"{i}-{f.name}").write_text(text, encoding="utf-8")
        ing = _kgr(["ingest", str(corpus), "--schema", str(examples / "schema.json")], env)
        probe = connect(Neo4jSettings(uri=cfg.bolt_uri))
        deadline = time.time() + 120
        while time.time() < deadline:  # wait until chunks are being committed
            if probe.driver.execute_query("MATCH (c:Chunk) WHERE c.processed_at IS NOT NULL RETURN count(c) AS n"
                                          ).records[0]["n"] > 20:
                break
            time.sleep(0.1)
        probe.close()
        os.kill(server.status().pid, signal.SIGKILL)
        killed = time.perf_counter()
        _, stderr = ing.communicate(timeout=180)
        took = time.perf_counter() - killed
        assert ing.returncode == 1 and "is unavailable" in stderr.strip().splitlines()[-1], stderr[-2000:]
        assert took < 3 + 6, f"kgr ingest took {took:.1f} s to stop (retry bound 3 s)"
    finally:
        server.stop()
