"""A Ray cluster address kgr cannot use fails at once with a clear error, instead of Ray's minutes of
retries; the command line says so and exits non-zero."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgr.errors import KgrRuntimeError, KgrValidationError
from kgr.ingest.executors.ray_actors import check_ray_address

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the block ends: nothing listens there


@pytest.mark.parametrize("address", ["head", "head:", ":6379", "head:port", "head:70000", "ray://head"])
def test_a_malformed_address_is_refused(address):
    with pytest.raises(KgrValidationError, match="is not host:port or ray://host:port") as info:
        check_ray_address(address)
    assert info.value.field == "ray_address"


def test_nothing_listening_fails_within_seconds(monkeypatch):
    port = _closed_port()
    start = time.monotonic()
    with pytest.raises(KgrRuntimeError, match=rf"cannot reach the Ray cluster at 127\.0\.0\.1:{port}"):
        check_ray_address(f"127.0.0.1:{port}")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # the environment's address, when none is given
    with pytest.raises(KgrRuntimeError, match="cannot reach the Ray cluster"):
        check_ray_address(None)
    assert time.monotonic() - start < 5


def test_a_listening_address_and_rays_own_words_pass(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_ray_address(f"127.0.0.1:{server.getsockname()[1]}")
    for address in (None, "auto", "local"):
        check_ray_address(address)


def test_a_ray_client_address_needs_ray_client():
    try:
        import grpc  # noqa: F401
    except ImportError:
        with pytest.raises(KgrValidationError, match=r"needs Ray Client: pip install 'ray\[client\]'"):
            check_ray_address("ray://127.0.0.1:10001")
    else:  # Ray Client's dependency is there: the address is checked like any other
        with pytest.raises(KgrRuntimeError, match="cannot reach the Ray cluster"):
            check_ray_address(f"ray://127.0.0.1:{_closed_port()}")


@pytest.mark.neo4j
def test_the_command_line_says_it_exits_non_zero_and_writes_nothing(tmp_path, graph, neo4j_settings):
    (tmp_path / "a.txt").write_text("Ada Lovelace was born in London.", encoding="utf-8")
    port = _closed_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(NEO4J_URI=neo4j_settings.uri, NEO4J_USERNAME=neo4j_settings.username or "neo4j",
               NEO4J_PASSWORD=neo4j_settings.password or "")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kgr.cli", "ingest", str(tmp_path), "--schema", str(ROOT / "examples" / "schema.json"),
         "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--workers", "1"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in proc.stdout + proc.stderr
    assert time.monotonic() - start < 60
    left = graph.driver.execute_query("MATCH (n) WHERE n:Document OR n:Chunk RETURN count(n) AS n").records[0]["n"]
    assert left == 0
