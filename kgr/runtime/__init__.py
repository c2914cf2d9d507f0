"""kgr.runtime — the managed local Neo4j: install, start, stop and inspect a Neo4j 5.26 Community server without Docker.

kgr uses this server whenever ``NEO4J_URI`` is unset. It is a plain Java process built from jars that
Maven resolves once from Maven Central:

- **Install** (:meth:`ManagedNeo4j.install`): a tiny ``pom.xml`` naming ``org.neo4j:neo4j`` and
  ``org.neo4j.client:neo4j-browser`` is written to ``<cache>/neo4j-<version>/`` and
  ``mvn dependency:copy-dependencies`` copies the runtime jars (about 140 MB) into ``lib/``. A marker
  file written after success makes later installs a no-op; an interrupted download is redone.
- **Run** (:meth:`ManagedNeo4j.start`): ``java -cp 'lib/*' org.neo4j.server.CommunityEntryPoint
  --home-dir=<home> --console-mode -c key=value ...``, detached from the caller (own session), with
  stdout/stderr appended to ``<home>/logs/console.log`` and the pid in ``<home>/run/kgr-neo4j.pid``.
  Start returns once Bolt answers a real handshake and the HTTP endpoint answers.
- **Persist**: the home directory keeps ``data/`` across stop/start; ``conf/neo4j.conf`` is created
  empty and may hold extra settings (the ``-c`` options below take precedence over it).

The package knows nothing of the store (and the store nothing of it): it runs a process and probes
sockets, and sends no query. :func:`kgr.connect.connect` is where the two meet.

Modules, one job each: :mod:`~kgr.runtime.config` (settings, paths, ports, the status model),
:mod:`~kgr.runtime.executables` (``java`` and ``mvn``), :mod:`~kgr.runtime.jars` (the Neo4j jars),
:mod:`~kgr.runtime.maven` (Maven and the jar cache, shared with CoreNLP), :mod:`~kgr.runtime.files`
(the home's layout, ``conf/neo4j.conf``, the pid file, logs, locks),
:mod:`~kgr.runtime.process` (the JVM command line, spawning, finding and stopping the process),
:mod:`~kgr.runtime.health` (ports, Bolt handshake, HTTP), :mod:`~kgr.runtime.progress` (messages on
stderr) and :mod:`~kgr.runtime.managed` (:class:`ManagedNeo4j`, which puts them together).

Conventions
-----------
- Authentication is **disabled** and the server listens on **loopback only**. The managed server is
  a development and CI database for one user: nothing off this machine can reach it, there is no
  password to provision, leak or forget, and the driver, ``cypher-shell`` and Neo4j Browser connect
  with no setup. The price: any process on this machine can use it, so on a shared multi-user host
  run a server with authentication instead. A non-loopback ``host`` is refused; use
  ``docker/compose.yaml`` (auth on) or any server via ``NEO4J_URI`` for anything shared.
- Sizes (``heap``, ``pagecache``) are strings like ``512m`` or ``1g``; durations like ``15m``.
- Every failure the user can fix raises :class:`~kgr.errors.KgrRuntimeError` naming the missing piece
  (``java``, ``mvn``, a port, the log tail); bad settings raise :class:`~kgr.errors.KgrValidationError`.

Environment variables
---------------------
``KGR_CACHE_DIR`` (default ``$XDG_CACHE_HOME/kgr`` or ``~/.cache/kgr``), ``KGR_NEO4J_HOME`` (default
``$XDG_DATA_HOME/kgr/neo4j`` or ``~/.local/share/kgr/neo4j``), ``KGR_NEO4J_BOLT_PORT`` (7687),
``KGR_NEO4J_HTTP_PORT`` (7474), ``KGR_NEO4J_HEAP`` (512m), ``KGR_NEO4J_PAGECACHE`` (256m),
``KGR_JAVA`` and ``KGR_MVN`` (explicit executables; otherwise ``java``/``mvn`` are looked up on PATH).
"""

from kgr.runtime.config import (
    BROWSER_VERSION,
    MIN_JAVA_MAJOR,
    NEO4J_VERSION,
    Neo4jStatus,
    RuntimeConfig,
)
from kgr.runtime.executables import java_major_version
from kgr.runtime.managed import ManagedNeo4j, ensure_running

__all__ = [
    "BROWSER_VERSION",
    "MIN_JAVA_MAJOR",
    "NEO4J_VERSION",
    "ManagedNeo4j",
    "Neo4jStatus",
    "RuntimeConfig",
    "ensure_running",
    "java_major_version",
]
