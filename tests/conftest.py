"""Shared fixtures: a real Neo4j for integration tests.

The tests WIPE the database they use, so they never use the one a user's ``NEO4J_URI`` names:
``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE`` are removed from the
test process's environment when this file is loaded (subprocesses inherit the cleaned one), and the
header of the run says so. Where the database comes from, in order:

1. ``KGR_TEST_NEO4J_URI`` (with ``KGR_TEST_NEO4J_USERNAME``/``KGR_TEST_NEO4J_PASSWORD``/
   ``KGR_TEST_NEO4J_DATABASE``) when set: an explicit opt-in to a throwaway server;
2. testcontainers (``neo4j:5.26-community``) when a Docker engine answers;
3. otherwise kgr's managed local Neo4j, as a separate test instance (its own home under
   ``$KGR_CACHE_DIR``/``~/.cache/kgr``, Bolt on 127.0.0.1:17687, HTTP on 17474 unless
   ``KGR_TEST_BOLT_PORT``/``KGR_TEST_HTTP_PORT`` say otherwise), started on first use — and stopped
   when the run ends if this run started it (one already running, e.g. started by ``.ci/run`` or by
   hand with ``kgr neo4j start``, is left running; ``KGR_TEST_KEEP_NEO4J=1`` keeps it too).

With ``KGR_TEST_ROUTING=1`` a ``bolt://`` URI is used through the routing scheme ``neo4j://`` (the
single instance routes to itself): ``tests/store/test_routing.py`` runs the CLI tests so.

Without a database the integration tests skip — except under ``KGR_REQUIRE_NEO4J=1`` (set by
``.ci/run``), where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgr.connect import connect
from kgr.store.admin import init_store, reset
from kgr.store.connection import Graph, Neo4jSettings

#: ``data/`` holds test data and the scripts that drew the annotated samples from this machine's files:
#: provenance, not tests. Collected for doctests, the older scripts re-ran their draws at import (4.5 min
#: of every suite run, files written where their first argument pointed).
collect_ignore = ["data"]

#: A user's connection settings, removed from the environment so that no test can touch that database.
USER_NEO4J = {k: os.environ.pop(k) for k in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE")
              if k in os.environ}
REQUIRE = os.environ.get("KGR_REQUIRE_NEO4J") == "1"
ROUTING = os.environ.get("KGR_TEST_ROUTING") == "1"
TEST_BOLT_PORT = int(os.environ.get("KGR_TEST_BOLT_PORT", "17687"))
TEST_HTTP_PORT = int(os.environ.get("KGR_TEST_HTTP_PORT", "17474"))


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


def test_home_name() -> str:
    """One server home per test Bolt port, so parallel runs on other ports never share data."""
    return "test-neo4j-home" if TEST_BOLT_PORT == 17687 else f"test-neo4j-home-{TEST_BOLT_PORT}"


test_home_name.__test__ = False  # type: ignore[attr-defined]


def test_runtime_env() -> dict[str, str]:
    """Environment that points the managed launcher at the test instance."""
    cache = Path(os.environ.get("KGR_CACHE_DIR", Path.home() / ".cache" / "kgr"))
    return {
        "KGR_NEO4J_HOME": str(cache / test_home_name()),
        "KGR_NEO4J_BOLT_PORT": str(TEST_BOLT_PORT),
        "KGR_NEO4J_HTTP_PORT": str(TEST_HTTP_PORT),
    }


test_runtime_env.__test__ = False  # type: ignore[attr-defined]


def _provision() -> tuple[Neo4jSettings, object | None, object | None]:
    """``(settings, container to stop, managed server to stop)`` for the run's database."""
    if os.environ.get("KGR_TEST_NEO4J_URI"):
        return Neo4jSettings(uri=os.environ["KGR_TEST_NEO4J_URI"],
                             username=os.environ.get("KGR_TEST_NEO4J_USERNAME", "neo4j"),
                             password=os.environ.get("KGR_TEST_NEO4J_PASSWORD") or None,
                             database=os.environ.get("KGR_TEST_NEO4J_DATABASE", "neo4j")), None, None
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer  # type: ignore[import-untyped]

        container = Neo4jContainer("neo4j:5.26-community")
        container.start()
        return Neo4jSettings(uri=container.get_connection_url(), username="neo4j",
                             password=container.password), container, None
    os.environ.update(test_runtime_env())
    from kgr.runtime import ManagedNeo4j, ensure_running

    was_running = ManagedNeo4j(quiet=True).status().running
    status = ensure_running()
    keep = was_running or os.environ.get("KGR_TEST_KEEP_NEO4J") == "1"
    return Neo4jSettings(uri=status.bolt_uri), None, None if keep else ManagedNeo4j(quiet=True)


@pytest.fixture(scope="session")
def neo4j_settings() -> Iterator[Neo4jSettings]:
    try:
        settings, container, started = _provision()
        probe = connect(settings)
        probe.close()
    except Exception as exc:  # noqa: BLE001 - reported as skip or failure below
        message = f"no Neo4j for integration tests: {type(exc).__name__}: {exc}"
        if REQUIRE:
            pytest.fail(message + " (KGR_REQUIRE_NEO4J=1)")
        pytest.skip(message + " (set KGR_REQUIRE_NEO4J=1 to make this a failure)")  # KGR_REQUIRE_NEO4J
    if ROUTING and settings.uri and settings.uri.startswith("bolt://"):
        settings = settings.model_copy(update={"uri": "neo4j://" + settings.uri.removeprefix("bolt://")})
    yield settings
    if container is not None:
        container.stop()  # type: ignore[attr-defined]
    if started is not None:  # this run started the managed test instance: it stops it (~1 GB of memory)
        started.stop(timeout=60)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def _session_graph(neo4j_settings: Neo4jSettings) -> Iterator[Graph]:
    g = connect(neo4j_settings)
    init_store(g)
    yield g
    g.close()


@pytest.fixture
def graph(_session_graph: Graph) -> Graph:
    """A Graph on an emptied, initialised database (schema kept, data wiped before the test)."""
    reset(_session_graph)
    return _session_graph


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    if USER_NEO4J.get("NEO4J_URI"):
        lines.append("kgr: NEO4J_URI is ignored: the tests wipe their database, so they never use yours "
                     "(KGR_TEST_NEO4J_URI names a throwaway one)")
    if ROUTING:
        lines.append("kgr: test database through the neo4j:// routing scheme (KGR_TEST_ROUTING=1)")
    return lines
