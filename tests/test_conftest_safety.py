"""The README's test command is safe (issue 32, item 6): it never touches the database a user's
``NEO4J_URI`` names (the tests wipe theirs), and it stops the managed test Neo4j it started, never
one it found running (``.ci/run`` starts it first). Each case is an inner pytest run of
tests/support/neo4j_probe.py under tests/conftest.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kgr.runtime import ManagedNeo4j, RuntimeConfig

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "support" / "neo4j_probe.py"

pytestmark = pytest.mark.neo4j


def _inner(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "probe.json"
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("NEO4J_", "KGR_TEST_NEO4J_")) and k != "KGR_TEST_KEEP_NEO4J"}
    proc = subprocess.run([sys.executable, "-m", "pytest", str(PROBE), "-p", "no:cacheprovider", "-x"],
                          cwd=ROOT, env={**clean, "KGR_PROBE_OUT": str(out), "KGR_REQUIRE_NEO4J": "1", **env},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


def test_a_users_neo4j_uri_is_never_used_and_a_running_instance_is_left_running(tmp_path, neo4j_settings):
    """NEO4J_URI names "the user's database" (nothing listens there: any use would fail the run);
    the run uses the test instance, which was running before and is still running after."""
    user = "bolt://127.0.0.1:9"  # discard port: a connection attempt would fail
    proc, seen = _inner(tmp_path, NEO4J_URI=user, NEO4J_PASSWORD="users-secret",
                        KGR_TEST_BOLT_PORT=os.environ.get("KGR_TEST_BOLT_PORT", "17687"),
                        KGR_TEST_HTTP_PORT=os.environ.get("KGR_TEST_HTTP_PORT", "17474"))
    assert seen["uri"] != user and seen["env_uri"] is None and seen["env_password"] is None
    assert "kgr: NEO4J_URI is ignored" in proc.stdout
    if not os.environ.get("KGR_TEST_NEO4J_URI"):  # (a managed test instance: still running)
        assert seen["uri"] == neo4j_settings.uri.replace("neo4j://", "bolt://")
        assert ManagedNeo4j(quiet=True).status().running


def test_an_explicit_test_uri_is_the_opt_in(tmp_path, neo4j_settings):
    uri = neo4j_settings.uri
    _, seen = _inner(tmp_path, NEO4J_URI="bolt://127.0.0.1:9", KGR_TEST_NEO4J_URI=uri)
    assert seen["uri"] == uri


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_the_instance_a_run_started_is_stopped_when_it_ends(tmp_path, neo4j_settings):
    bolt, http = _free_port(), _free_port()
    cache = Path(os.environ.get("KGR_CACHE_DIR", Path.home() / ".cache" / "kgr"))
    home = cache / f"test-neo4j-home-{bolt}"
    try:
        _, seen = _inner(tmp_path, KGR_TEST_BOLT_PORT=str(bolt), KGR_TEST_HTTP_PORT=str(http),
                         KGR_NEO4J_HEAP="256m", KGR_NEO4J_PAGECACHE="64m")
        assert seen["uri"] == f"bolt://127.0.0.1:{bolt}"
        status = ManagedNeo4j(RuntimeConfig(home=home, bolt_port=bolt, http_port=http), quiet=True).status()
        assert not status.running
    finally:
        ManagedNeo4j(RuntimeConfig(home=home, bolt_port=bolt, http_port=http), quiet=True).stop(timeout=30)
        import shutil

        shutil.rmtree(home, ignore_errors=True)
