"""A unit of work whose connection breaks while the database keeps answering is run again, once per
break, up to LOST_CONNECTION_RETRIES; a deadlock behind a failed result counts as contention; a broken
commit is never re-run (kgr.store.connection)."""
import socket

import pytest
from neo4j.exceptions import IncompleteCommit, Neo4jError, ResultFailedError, ServiceUnavailable

from kgr.errors import KgrNeo4jUnavailable
from kgr.store.connection import LOST_CONNECTION_RETRIES, is_contention, is_lost_connection

pytestmark = pytest.mark.neo4j


def _deadlock() -> Neo4jError:
    return Neo4jError._hydrate_neo4j(code="Neo.TransientError.Transaction.DeadlockDetected", message="cycle")  # noqa: SLF001


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as got:  # noqa: BLE001 - the chained exception is the point
        return got


def test_the_reason_behind_a_failed_result_decides():
    failed_by_deadlock = _raised_from(ResultFailedError(None, "the result has failed"), _deadlock())
    failed_by_break = _raised_from(ResultFailedError(None, "the result has failed"), ServiceUnavailable("defunct"))
    assert is_contention(failed_by_deadlock) and not is_lost_connection(failed_by_deadlock)
    assert is_lost_connection(failed_by_break) and not is_contention(failed_by_break)
    assert is_lost_connection(ServiceUnavailable("Failed to read from defunct connection"))
    assert not is_lost_connection(IncompleteCommit("the commit's outcome is unknown"))
    assert not is_contention(Neo4jError._hydrate_neo4j(code="Neo.TransientError.General.OutOfMemoryError",  # noqa: SLF001
                                                       message="heap"))


def _break(tx) -> None:
    """Shut the socket of the connection the unit runs on, as a broken network would."""
    tx._tx._connection.socket._socket.shutdown(socket.SHUT_RDWR)  # noqa: SLF001 - the point of the test


def _impatient(graph, monkeypatch):
    from kgr.connect import connect

    monkeypatch.setenv("KGR_NEO4J_RETRY_SECONDS", "0")  # the driver gives up at once: kgr's loop decides
    return connect(graph.settings)


def test_a_unit_whose_connection_breaks_runs_again_and_writes_once(graph, monkeypatch):
    g = _impatient(graph, monkeypatch)
    calls = []

    def unit(tx):
        calls.append(1)
        tx._tx.run("MERGE (n:RetryProbe {id: 1}) ON CREATE SET n.created = 1").consume()
        if len(calls) < 3:
            _break(tx)
            tx._tx.run("RETURN 1").consume()  # the next message meets the broken connection
        return len(calls)

    try:
        assert g.write_unit(unit) == 3  # two breaks, two re-runs, then it commits
    finally:
        g.close()
    rows = graph.driver.execute_query("MATCH (n:RetryProbe) RETURN count(n) AS n, collect(n.created) AS c").records[0]
    assert rows["n"] == 1 and rows["c"] == [1]


def test_a_connection_that_keeps_breaking_is_reported_after_the_retries(graph, monkeypatch):
    g = _impatient(graph, monkeypatch)
    calls = []

    def unit(tx):
        calls.append(1)
        _break(tx)
        tx._tx.run("CREATE (:RetryProbe {id: 2})").consume()

    try:
        with pytest.raises(KgrNeo4jUnavailable):
            g.write_unit(unit)
    finally:
        g.close()
    assert len(calls) == LOST_CONNECTION_RETRIES + 1
    assert graph.driver.execute_query("MATCH (n:RetryProbe {id: 2}) RETURN count(n) AS n").records[0]["n"] == 0
