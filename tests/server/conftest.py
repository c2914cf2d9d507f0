"""Fixtures for the tool server tests: payloads for the six tools, a server in a thread, subprocess env."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kgr.server.app import BackgroundServer  # noqa: E402
from kgr.server.security import Secret, ServerConfig  # noqa: E402
from kgr.store.connection import Neo4jSettings  # noqa: E402
from tests.support.llm_stub import llm_stub, llm_stub_factory  # noqa: E402,F401

ROOT = Path(_ROOT)
TOKEN = "test-token-3f9c2a7e5b1d4c8a9e6f"

TEXT = ("Alan Turing was born in London in 1912. Turing studied at King's College in the University of Cambridge. "
        "In 1939 Turing joined Bletchley Park. Gordon Welchman worked with Turing at Bletchley Park. "
        "Max Newman taught Turing at Cambridge and later worked at Bletchley Park.")
SCHEMA = {"entity_schema": ["Person", "Organization"], "relation_schema": ["WORKED_AT"]}
KG = {
    "entities": {"Person": ["Alan Turing", "Gordon Welchman", "Max Newman"],
                 "Organization": ["Bletchley Park", "University of Cambridge"]},
    "relations": {"WORKED_AT": [{"subject": "Alan Turing", "object": "Bletchley Park"},
                                {"subject": "Gordon Welchman", "object": "Bletchley Park"},
                                {"subject": "Max Newman", "object": "Bletchley Park"}]},
}
SPARSE_KG = {"entities": {"Person": ["Alan Turing"], "Organization": ["Bletchley Park"]}, "relations": {}}


def six_calls(source: str = "doc-1") -> list[tuple[str, dict[str, Any]]]:
    """One valid call of each of the six tools, storage before disambiguation (so it finds matches)."""
    return [
        ("query_extraction_density", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG}),
        ("query_coverage_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG,
                                     "priority_types": ["WORKED_AT"]}),
        ("query_quality_metrics", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG}),
        ("query_iterative_feedback", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG,
                                      "extraction_history": [SPARSE_KG, KG], "max_iterations": 3}),
        ("query_kg_storage", {"extracted_kg": KG, "source": source}),
        ("query_entity_disambiguation", {"extracted_kg": KG, "disambiguation_strategy": "exact_match"}),
    ]


def subprocess_env(settings: Neo4jSettings, **extra: str) -> dict[str, str]:
    """Environment for a server subprocess talking to the test database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_") and k != "KGR_SERVER_TOKEN"}
    env["NEO4J_URI"] = settings.uri or ""
    env["NEO4J_USERNAME"] = settings.username
    if settings.password:
        env["NEO4J_PASSWORD"] = settings.password
    env["NEO4J_DATABASE"] = settings.database
    env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.fixture
def http_server(graph) -> Iterator[BackgroundServer]:
    """The HTTP server on an ephemeral loopback port, on the test database (emptied per test)."""
    with BackgroundServer(ServerConfig(port=0), graph=graph) as srv:
        yield srv


@pytest.fixture
def token_server() -> Iterator[BackgroundServer]:
    """A loopback server that requires :data:`TOKEN` (no database: only pure tools are called)."""
    nowhere = Neo4jSettings(uri="bolt://127.0.0.1:9")  # never reached: only pure tools are called
    with BackgroundServer(ServerConfig(port=0, token=Secret(TOKEN)), settings=nowhere, log_level="debug") as srv:
        yield srv


class ServedProcess:
    """``kgr serve --transport http --port 0`` in a subprocess on the test database; stderr (the log)
    is collected line by line in :attr:`log` while it runs.

    >>> with ServedProcess(neo4j_settings, "--log-level", "debug") as srv:   # doctest: +SKIP
    ...     httpx.get(srv.url + "/health")
    """

    def __init__(self, settings: Neo4jSettings, *args: str, preexec_fn: Any = None, env: dict[str, str] | None = None):
        self.args, self.preexec_fn = args, preexec_fn
        self.env = subprocess_env(settings, **(env or {}))
        self.log: list[str] = []
        self.url = ""
        self.proc: Any = None

    def __enter__(self) -> "ServedProcess":
        import re
        import subprocess
        import threading
        import time

        self.proc = subprocess.Popen([sys.executable, "-m", "kgr.cli.serve", "serve", "--transport", "http",
                                      "--host", "127.0.0.1", "--port", "0", *self.args],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     cwd=ROOT, preexec_fn=self.preexec_fn)
        ready = threading.Event()

        def read() -> None:
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"MCP at (http://[^/\s]+)/mcp", line)
                if m:
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 180
        while not ready.wait(0.5):
            assert time.monotonic() < deadline, "the server did not start"
        assert self.url, "".join(self.log)
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def __exit__(self, *exc: object) -> None:
        import subprocess

        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
