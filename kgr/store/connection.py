"""Connections to Neo4j: settings from the environment, the driver, and template execution.

Settings use the conventional variables ``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD`` and
``NEO4J_DATABASE`` (default ``neo4j``); ``KGR_NEO4J_RETRY_SECONDS`` (default 30) bounds how long a
unit of work is retried on transient errors before the database counts as gone. :func:`open_graph`
opens a Graph on a given URI; when ``NEO4J_URI`` is unset, the connection factory
:func:`kgr.connect.connect` starts (or reuses) kgr's managed local Neo4j (:mod:`kgr.runtime`).

:class:`Graph` is the one object the rest of kgr uses to talk to the database. It runs rendered
templates (:mod:`kgr.store.cypher`) with values as parameters, maps driver failures that mean
"the database is not there" to :class:`~kgr.errors.KgrNeo4jUnavailable`, and runs multi-statement
units in managed write transactions (retried by the driver on transient errors, so the unit
functions are idempotent and return plain data). A unit that raises :class:`~kgr.errors.KgrBusy`
(a promotion round holds the store's promotion lock, :mod:`kgr.store.promotion_lock`) has written
nothing; :meth:`Graph.write_unit` runs it again after a jittered backoff (:func:`backoff`), for up
to :data:`BUSY_WAIT_SECONDS`.

**Deadlocks are contention, not an outage.** Concurrent writers that lock the same nodes and edges
can wait on each other in a cycle; Neo4j aborts one of them with ``DeadlockDetected`` and the other
proceeds, so a retry always makes progress. The driver retries them within
``KGR_NEO4J_RETRY_SECONDS`` like any transient error; a deadlock that still ends a unit then is run
again by :meth:`Graph.write_unit` and :meth:`Graph.write` (after a jittered :func:`backoff`) for up
to :data:`BUSY_WAIT_SECONDS`, whatever ``KGR_NEO4J_RETRY_SECONDS`` says. Eight writers staging
the same edges through a slow machine thus finish with every vote (they used to give up after
about six deadlocks in a row, reported as an unavailable database). A unit whose connection broke
while the database still answers a new one (:func:`is_lost_connection`, checked by :meth:`Graph.ping`)
is run again too, at most :data:`LOST_CONNECTION_RETRIES` times; a failed result
(``ResultFailedError``) is judged by the error behind it.

Clusters and Aura: with a ``neo4j://`` or ``neo4j+s://`` URI the driver routes, and kgr asks it to:
:meth:`Graph.read`, :meth:`Graph.read_unit` and :meth:`Graph.stream` go to readers, everything else
to the leader. Every path shares one bookmark manager (the driver's ``execute_query`` one), so a
read always sees the writes this Graph committed before it, and transient errors of a leader
switch are retried within ``KGR_NEO4J_RETRY_SECONDS``. A single server accepts ``neo4j://`` too
(it routes to itself), which is how the tests exercise the routing path.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import tenacity
from kgr.store.neo4j_driver import neo4j  # first: the driver without its pandas import (see there)
from neo4j import GraphDatabase, RoutingControl
from neo4j.exceptions import (
    AuthError, ClientError, ConfigurationError, CypherSyntaxError, DatabaseUnavailable, IncompleteCommit,
    ResultFailedError, ServiceUnavailable, SessionExpired, TransientError,
)
from pydantic import BaseModel, ConfigDict

from kgr.errors import KgrBusy, KgrCypherBug, KgrDatabaseError, KgrNeo4jUnavailable, KgrValidationError
from kgr.store.cypher import render

__all__ = ["Neo4jSettings", "Graph", "Tx", "open_graph", "translate_driver_error", "DRIVER_ERRORS", "backoff",
           "BUSY_WAIT_SECONDS", "LOST_CONNECTION_RETRIES", "is_contention", "is_lost_connection"]

T = TypeVar("T")
log = logging.getLogger(__name__)
_GONE = (ServiceUnavailable, SessionExpired, DatabaseUnavailable, ConnectionError, OSError)


class Neo4jSettings(BaseModel):
    """Where the database is. ``uri=None`` means "use the managed local Neo4j"."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    uri: str | None = None
    username: str = "neo4j"
    password: str | None = None
    database: str = "neo4j"

    @classmethod
    def from_env(cls) -> "Neo4jSettings":
        return cls(
            uri=os.environ.get("NEO4J_URI") or None,
            username=os.environ.get("NEO4J_USERNAME", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD") or None,
            database=os.environ.get("NEO4J_DATABASE", "neo4j"),
        )

    def __repr__(self) -> str:  # never show the password
        return f"Neo4jSettings(uri={self.uri!r}, username={self.username!r}, database={self.database!r})"

    __str__ = __repr__


def _unavailable(exc: BaseException, uri: str) -> KgrNeo4jUnavailable:
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return KgrNeo4jUnavailable(f"Neo4j at {uri} is unavailable ({type(exc).__name__}: {msg[:200]})")


def translate_driver_error(exc: BaseException, uri: str) -> KgrDatabaseError | KgrNeo4jUnavailable:
    """kgr's own error for a driver exception that ended a unit of work (after the driver's retries).

    - the database went away (or still answered "transient" when the retry time ran out)
      → :class:`~kgr.errors.KgrNeo4jUnavailable`;
    - a statement error of kgr's own Cypher (syntax, semantics) → :class:`~kgr.errors.KgrCypherBug`;
    - any other client error (a constraint, a type, a size) → :class:`~kgr.errors.KgrDatabaseError`.

    Nothing above :mod:`kgr.store` needs to import the driver to tell these apart.
    """
    if isinstance(exc, (*_GONE, TransientError)):
        return _unavailable(exc, uri)
    code = getattr(exc, "code", None) or ""
    msg = (getattr(exc, "message", None) or str(exc) or type(exc).__name__).splitlines()[0][:300]
    if isinstance(exc, CypherSyntaxError):
        return KgrCypherBug(f"kgr's Cypher failed ({code}): {msg}", code=code)
    return KgrDatabaseError(f"Neo4j refused the statement ({code}): {msg}", code=code)


#: driver exceptions :func:`_translated` turns into kgr's own (AuthError is a ClientError: connect's business)
DRIVER_ERRORS = (*_GONE, TransientError, ClientError)
#: what a unit of work may end with: :data:`DRIVER_ERRORS`, and a result failed by an earlier error
_UNIT_ERRORS = (*DRIVER_ERRORS, ResultFailedError)


def _translated_unit_error(exc: BaseException, uri: str) -> Exception:
    """:func:`translate_driver_error` of what ended a unit; a failed result is translated by the
    error that failed it (a deadlock or a broken connection: unavailable; else refused)."""
    if isinstance(exc, ResultFailedError):
        root = next((e for e in _causes(exc) if isinstance(e, DRIVER_ERRORS)), None)
        if root is not None:
            return translate_driver_error(root, uri)
        return KgrDatabaseError(f"Neo4j failed a result: {str(exc).splitlines()[0][:300]}")
    return translate_driver_error(exc, uri)


#: Seconds a write unit waits at most for a busy store (a held promotion lock) before it raises.
BUSY_WAIT_SECONDS = 600.0


#: Neo4j status codes of a transaction aborted for contention with another writer (see the module
#: docstring): retried past the driver's retry time.
CONTENTION_CODES = frozenset({"Neo.TransientError.Transaction.DeadlockDetected"})


#: Times a unit is run again after its connection broke while the database kept answering (see
#: :meth:`Graph.write_unit`); a database that is really gone fails the check before any of them.
LOST_CONNECTION_RETRIES = 5


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (``__cause__``, else ``__context__``), at most 8 deep.
    The driver raises :class:`~neo4j.exceptions.ResultFailedError` for a result whose transaction an
    earlier failure (a deadlock, a broken connection) already ended: the reason is further down."""
    seen = 0
    while exc is not None and seen < 8:
        yield exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1


def is_contention(exc: BaseException) -> bool:
    """Whether a driver exception aborted a transaction for contention (a deadlock), not an outage
    (the deadlock may be the cause of a :class:`~neo4j.exceptions.ResultFailedError`)."""
    return any(isinstance(e, TransientError) and getattr(e, "code", None) in CONTENTION_CODES for e in _causes(exc))


def is_lost_connection(exc: BaseException) -> bool:
    """Whether a driver exception says the unit's connection broke (``ServiceUnavailable``,
    ``SessionExpired``: "failed to read from defunct connection"), which is an outage only if the
    database then does not answer either. Not a broken commit (:class:`~neo4j.exceptions.IncompleteCommit`):
    whether that transaction committed is unknown, and the driver does not retry it either."""
    chain = list(_causes(exc))
    return not any(isinstance(e, IncompleteCommit) for e in chain) and \
        any(isinstance(e, (ServiceUnavailable, SessionExpired)) for e in chain)


@dataclass
class _Attempts:
    """One unit's runs so far: when it started, how many re-runs, how many after a broken connection."""

    started: float = field(default_factory=time.monotonic)
    attempt: int = 0
    lost: int = 0


def backoff(attempt: int, *, base: float = 0.05, cap: float = 2.0) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): "full jitter" exponential backoff,
    :math:`U(0, \\min(cap, base \\cdot 2^{attempt}))`, so writers that collided spread out."""
    return random.uniform(0.0, min(cap, base * 2.0 ** min(attempt, 30)))


class Graph:
    """A Neo4j driver bound to one database, running kgr's Cypher templates.

    Parameters
    ----------
    driver:
        A :class:`neo4j.Driver`; the Graph owns it and closes it in :meth:`close`.
    database:
        The database every query runs against (``database_=`` on every call).
    uri:
        For error messages only.
    settings:
        What opened it (:func:`open_graph` sets it): how another process reaches the same database
        (an ingestion executor's workers open their own Graph from it). ``None`` for a Graph built
        on a driver of the caller's.
    """

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j", *, uri: str = "?",
                 settings: Neo4jSettings | None = None):
        self.driver = driver
        self.database = database
        self.uri = uri
        self.settings = settings
        #: Where this Graph's caches between processes live (:mod:`kgr.store.promoted_disk`); None
        #: keeps them in memory only. :func:`kgr.connect.connect` sets ``$KGR_CACHE_DIR``.
        self.cache_dir: Path | None = None
        self.closed = False  # set by close(); background readers check it before they start
        self._before_close: list[Callable[[], None]] = []

    def _session(self, access_mode: str = neo4j.WRITE_ACCESS) -> neo4j.Session:
        """A session that shares the bookmarks of :meth:`read`/:meth:`write` (the driver's
        ``execute_query`` bookmark manager): on a cluster, a read through any path sees every write
        this Graph committed before it, whichever member serves it."""
        return self.driver.session(database=self.database, default_access_mode=access_mode,
                                   bookmark_manager=self.driver.execute_query_bookmark_manager)

    # -- single statements ---------------------------------------------------------------------
    def read(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> list[dict[str, Any]]:
        """Run a read-only template on a reader and return its rows as dicts."""
        return self._execute(template, params, identifiers, RoutingControl.READ)

    def write(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> list[dict[str, Any]]:
        """Run a template in an auto-retried write transaction and return its rows as dicts."""
        return self._execute(template, params, identifiers, RoutingControl.WRITE)

    def read_value(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> Any:
        """Run a read-only template that returns one record and give its first value as the driver
        decodes it (None without a record). For packed results (one ``collect([...])`` of plain
        values): one Bolt message and no per-row conversion, where the driver's cost is per record."""
        records = self._records(template, params, identifiers, RoutingControl.READ)
        return records[0][0] if records else None

    def _execute(self, template: str, params: dict[str, Any] | None, identifiers: dict[str, object],
                 routing: RoutingControl) -> list[dict[str, Any]]:
        return [row_dict(r) for r in self._records(template, params, identifiers, routing)]

    def _records(self, template: str, params: dict[str, Any] | None, identifiers: dict[str, object],
                 routing: RoutingControl) -> list[neo4j.Record]:
        query = render(template, **identifiers)
        tries = _Attempts()
        while True:
            try:
                records, _, _ = self.driver.execute_query(
                    query, params or {}, database_=self.database, routing_=routing
                )
            except _UNIT_ERRORS as exc:
                if not self._again(exc, tries):
                    raise _translated_unit_error(exc, self.uri) from exc
                continue
            return records

    def _again(self, exc: BaseException, tries: _Attempts) -> bool:
        """Whether to run a unit that ended with ``exc`` again (then after a jittered :func:`backoff`,
        counted in ``tries``): after a deadlock (:func:`is_contention`) within :data:`BUSY_WAIT_SECONDS`
        of its start; after a broken connection (:func:`is_lost_connection`) at most
        :data:`LOST_CONNECTION_RETRIES` times, and only while the database answers a new connection
        (:meth:`ping`), so that a database that is gone still fails at once."""
        if time.monotonic() - tries.started >= BUSY_WAIT_SECONDS:
            return False
        if is_contention(exc):
            log.info("a write was aborted by a deadlock after the driver's retries; running it again")
        elif is_lost_connection(exc) and tries.lost < LOST_CONNECTION_RETRIES and not self.closed:
            try:
                self.ping()
            except KgrNeo4jUnavailable:
                return False
            log.info("a unit's connection broke while the database kept answering; running it again")
            tries.lost += 1
        else:
            return False
        time.sleep(backoff(tries.attempt, cap=1.0))
        tries.attempt += 1
        return True

    def stream(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> Iterator[dict[str, Any]]:
        """Yield a read template's rows one by one (bounded memory for large exports)."""
        query = render(template, **identifiers)
        try:
            with self._session(neo4j.READ_ACCESS) as session:
                for record in session.run(query, params or {}):
                    yield record.data()
        except _UNIT_ERRORS as exc:
            raise _translated_unit_error(exc, self.uri) from exc

    # -- units of work ----------------------------------------------------------------------------
    def write_unit(self, fn: Callable[["Tx"], T]) -> T:
        """Run ``fn(tx)`` in one managed write transaction (retried on transient errors, and after
        a backoff when ``fn`` raises :class:`~kgr.errors.KgrBusy` or a deadlock outlasts the driver's
        retries, for up to :data:`BUSY_WAIT_SECONDS`, or when its connection broke while the
        database still answers, see :meth:`_again`).

        ``fn`` receives a :class:`Tx` whose ``run(template, params, **identifiers)`` returns rows.
        It must be idempotent and return plain data.
        """
        tries = _Attempts()
        while True:
            try:
                with self._session() as session:
                    return session.execute_write(lambda tx: fn(Tx(tx)))
            except _UNIT_ERRORS as exc:
                if not self._again(exc, tries):
                    raise _translated_unit_error(exc, self.uri) from exc
            except KgrBusy as exc:
                if time.monotonic() - tries.started >= BUSY_WAIT_SECONDS:
                    raise
                time.sleep(min(backoff(tries.attempt, cap=0.5), max(exc.retry_after, 0.01)))
                tries.attempt += 1

    def read_unit(self, fn: Callable[["Tx"], T]) -> T:
        """Run ``fn(tx)`` in one managed read transaction."""
        try:
            with self._session(neo4j.READ_ACCESS) as session:
                return session.execute_read(lambda tx: fn(Tx(tx)))
        except _UNIT_ERRORS as exc:
            raise _translated_unit_error(exc, self.uri) from exc

    def run_script(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> int:
        """Run a template holding several statements separated by lines ending in ``;``.

        Each statement runs as an auto-commit transaction (schema statements and
        ``CALL {} IN TRANSACTIONS`` need that). Returns the count run.
        """
        text = render(template, **identifiers)
        statements = [s.strip() for s in text.split(";\n") if _has_code(s)]
        # auto-commit transactions are not retried by the driver: retry transient errors here
        # (every statement kgr runs this way is idempotent)
        run = tenacity.retry(retry=tenacity.retry_if_exception_type(TransientError), reraise=True,
                             stop=tenacity.stop_after_attempt(5),
                             wait=tenacity.wait_exponential(multiplier=0.2, max=3))(self._run_auto)
        try:
            for stmt in statements:
                run(stmt, params or {})
        except _UNIT_ERRORS as exc:
            raise _translated_unit_error(exc, self.uri) from exc
        return len(statements)

    def _run_auto(self, statement: str, params: dict[str, Any]) -> None:
        with self._session() as session:
            session.run(statement, params).consume()

    def ping(self) -> None:
        """Raise :class:`KgrNeo4jUnavailable` unless the database answers."""
        try:
            self.driver.verify_connectivity()
        except (*_GONE, AuthError) as exc:
            raise _unavailable(exc, self.uri) from exc

    def before_close(self, fn: Callable[[], None]) -> None:
        """Have :meth:`close` call ``fn`` first, while the driver is still open (a background writer
        writes what it holds). A failing ``fn`` is logged; the Graph closes anyway."""
        self._before_close.append(fn)

    def close(self) -> None:
        hooks, self._before_close = self._before_close, []
        for fn in hooks:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - closing must not fail on a hook
                log.warning("while closing the connection to %s: %s", self.uri, exc)
        self.closed = True
        self.driver.close()

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _has_code(stmt: str) -> bool:
    return any(line.strip() and not line.strip().startswith("//") for line in stmt.splitlines())


class Tx:
    """A managed transaction that runs templates (inside :meth:`Graph.write_unit`)."""

    def __init__(self, tx: neo4j.ManagedTransaction):
        self._tx = tx

    def run(self, template: str, params: dict[str, Any] | None = None, **identifiers: object) -> list[dict[str, Any]]:
        result = self._tx.run(render(template, **identifiers), params or {})
        return [row_dict(r) for r in result]


#: Value types a record field may hold that :meth:`neo4j.Record.data` returns unchanged.
_SCALARS = frozenset({str, int, float, bool, type(None), bytes})


def _is_plain(v: object) -> bool:
    t = type(v)
    if t in _SCALARS:
        return True
    if t is list:
        return all(map(_is_plain, v))  # type: ignore[arg-type]
    if t is dict:
        return all(map(_is_plain, v.values()))  # type: ignore[union-attr]
    return False


def row_dict(record: neo4j.Record) -> dict[str, Any]:
    """``record.data()``, without its per-value conversion when every value is plain (scalars, lists
    and maps of them): the driver's recursive conversion (abstract-class ``isinstance`` per value) was
    ~1/5 of applying a resolution (thousands of edges with their vote lists). Nodes, relationships,
    paths and temporal values take the driver's path, so the result is always what ``data()`` gives."""
    values = tuple(record)
    if all(map(_is_plain, values)):
        return dict(zip(record.keys(), values))
    return record.data()


def _bad_uri(uri: str, exc: BaseException) -> KgrValidationError:
    return KgrValidationError(f"Neo4j URI {uri!r} cannot be used ({exc}); give bolt://HOST:7687, or "
                              "neo4j://HOST:7687 for a cluster (neo4j+s:// for Aura)", field="uri")


def open_graph(settings: Neo4jSettings) -> Graph:
    """Open a :class:`Graph` on the server ``settings.uri`` names, and check that it answers.

    Finding a server when no URI is given (the managed local Neo4j) is the connection factory's job,
    :func:`kgr.connect.connect`, not the store's.

    Raises
    ------
    KgrValidationError
        ``settings.uri`` is not set, or is not a URI the driver accepts (a scheme other than
        ``bolt``/``neo4j`` and their ``+s``/``+ssc`` forms, a malformed address), or
        ``KGR_NEO4J_RETRY_SECONDS`` is not a number of seconds.
    KgrNeo4jUnavailable
        The database does not answer (the message names the URI, never the password).
    """
    uri = settings.uri
    if not uri:
        raise KgrValidationError("no Neo4j URI given (set NEO4J_URI, or use kgr.connect.connect for the managed "
                                 "Neo4j)", field="uri")
    auth = (settings.username, settings.password) if settings.password is not None else None
    raw_retry = os.environ.get("KGR_NEO4J_RETRY_SECONDS", "30")
    try:
        retry = float(raw_retry)
    except ValueError:
        retry = -1.0
    if not 0 <= retry < float("inf"):
        raise KgrValidationError(f"KGR_NEO4J_RETRY_SECONDS must be a number of seconds >= 0, got {raw_retry!r}",
                                 field="KGR_NEO4J_RETRY_SECONDS")
    try:
        driver = GraphDatabase.driver(uri, auth=auth, connection_timeout=10, max_transaction_retry_time=retry,
                                      notifications_min_severity="OFF")
    except (ConfigurationError, ValueError) as exc:  # an unsupported scheme, a malformed address
        raise _bad_uri(uri, exc) from exc
    graph = Graph(driver, settings.database, uri=uri, settings=settings)
    try:
        graph.ping()
    except KgrNeo4jUnavailable:
        driver.close()
        raise
    except ValueError as exc:  # an address the driver cannot resolve: "bolt://host:notaport"
        driver.close()
        raise _bad_uri(uri, exc) from exc
    except ClientError as exc:
        driver.close()
        raise KgrNeo4jUnavailable(f"Neo4j at {uri} refused the connection: {exc.message}") from exc
    return graph
