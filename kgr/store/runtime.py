"""The managed local Neo4j: install, start, stop and inspect a Neo4j 5.26 Community server without Docker.

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

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kgr.errors import KgrRuntimeError, KgrValidationError

try:  # POSIX only; the launcher targets Linux and macOS.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "NEO4J_VERSION",
    "BROWSER_VERSION",
    "MIN_JAVA_MAJOR",
    "RuntimeConfig",
    "Neo4jStatus",
    "ManagedNeo4j",
    "ensure_running",
    "java_major_version",
]

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
MIN_JAVA_MAJOR = 17

_ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
_PID_FILE = "kgr-neo4j.pid"
_LOCK_FILE = "kgr-neo4j.lock"
_MARKER_FILE = ".kgr-install-complete"
_SIZE = r"^[1-9][0-9]*[kKmMgG]$"
_DURATION = r"^[0-9]+(ms|s|m|h)$"
_LOG_TAIL_LINES = 25
_START_BANNER = "===== kgr: starting Neo4j"

# JVM flags the neo4j launcher script would add from its default neo4j.conf (server.jvm.additional).
_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
)

_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kgr (kgr/store/runtime.py): the jars of the managed local Neo4j. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgr</groupId>
  <artifactId>kgr-neo4j-runtime</artifactId>
  <version>{neo4j_version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.neo4j</groupId>
      <artifactId>neo4j</artifactId>
      <version>{neo4j_version}</version>
    </dependency>
    <dependency>
      <groupId>org.neo4j.client</groupId>
      <artifactId>neo4j-browser</artifactId>
      <version>{browser_version}</version>
    </dependency>
  </dependencies>
</project>
"""


# --------------------------------------------------------------------------------------------------
# configuration


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def _env_port(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise KgrValidationError(f"must be a TCP port number, got {raw!r}", field=name) from None


def _default_cache_dir() -> Path:
    if os.environ.get("KGR_CACHE_DIR", "").strip():
        return Path(os.environ["KGR_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "kgr"


def _default_home() -> Path:
    if os.environ.get("KGR_NEO4J_HOME", "").strip():
        return Path(os.environ["KGR_NEO4J_HOME"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(base).expanduser() / "kgr" / "neo4j"


Port = Annotated[int, Field(ge=1, le=65535)]


class RuntimeConfig(BaseModel):
    """Settings of the managed local Neo4j.

    ``RuntimeConfig()`` reads the ``KGR_*`` environment variables listed in the module docstring;
    keyword arguments override them (``RuntimeConfig(bolt_port=17687, home=tmp)``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    neo4j_version: Annotated[str, Field(pattern=r"^5\.[0-9]+\.[0-9]+$")] = NEO4J_VERSION
    browser_version: Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = BROWSER_VERSION
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    home: Path = Field(default_factory=_default_home)
    host: str = "127.0.0.1"
    bolt_port: Port = Field(default_factory=lambda: _env_port("KGR_NEO4J_BOLT_PORT", 7687))
    http_port: Port = Field(default_factory=lambda: _env_port("KGR_NEO4J_HTTP_PORT", 7474))
    heap: str = Field(default_factory=lambda: _env("KGR_NEO4J_HEAP", "512m"))
    pagecache: str = Field(default_factory=lambda: _env("KGR_NEO4J_PAGECACHE", "256m"))
    #: Longest a transaction may run before Neo4j terminates it (Neo4j's default, 0, means forever).
    transaction_timeout: str = "15m"
    #: Longest a transaction waits for a lock (deadlocks are detected separately and fail fast).
    lock_timeout: str = "5m"
    java: str | None = Field(default_factory=lambda: os.environ.get("KGR_JAVA") or None)
    mvn: str | None = Field(default_factory=lambda: os.environ.get("KGR_MVN") or None)

    @field_validator("cache_dir", "home")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("heap", "pagecache")
    @classmethod
    def _size(cls, value: str) -> str:
        if not re.fullmatch(_SIZE, value):
            raise ValueError(f"must be a size like 512m or 1g, got {value!r}")
        return value.lower()

    @field_validator("transaction_timeout", "lock_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not re.fullmatch(_DURATION, value):
            raise ValueError(f"must be a duration like 30s or 15m, got {value!r}")
        return value

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        try:
            loopback = value == "localhost" or ipaddress.ip_address(value).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"the managed Neo4j runs without authentication, so it only listens on loopback "
                f"(127.0.0.1, ::1, localhost), not {value!r}; for a shared server use "
                f"docker/compose.yaml or set NEO4J_URI"
            )
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> "RuntimeConfig":
        if self.bolt_port == self.http_port:
            raise ValueError(f"bolt_port and http_port must differ (both {self.bolt_port})")
        return self

    def __init__(self, **data: Any) -> None:
        from pydantic import ValidationError

        try:
            super().__init__(**data)
        except ValidationError as exc:
            error = KgrValidationError.from_pydantic(exc, prefix="neo4j")
            first = error.details[0]["msg"] if error.details else str(exc)
            raise KgrValidationError(
                first.removeprefix("Value error, "), field=error.field, details=error.details
            ) from None

    # ---- derived locations
    @property
    def install_dir(self) -> Path:
        """``<cache>/neo4j-<version>``: the pom, the Maven log and ``lib/``."""
        return self.cache_dir / f"neo4j-{self.neo4j_version}"

    @property
    def lib_dir(self) -> Path:
        """The jars on the server's classpath."""
        return self.install_dir / "lib"

    @property
    def _url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def bolt_uri(self) -> str:
        return f"bolt://{self._url_host}:{self.bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://{self._url_host}:{self.http_port}"

    @property
    def browser_url(self) -> str:
        return f"{self.http_url}/browser/"

    def settings(self) -> dict[str, str]:
        """The ``-c key=value`` settings passed to the server (they override ``conf/neo4j.conf``)."""
        home = self.home
        return {
            "server.default_listen_address": self.host,
            "server.default_advertised_address": self.host,
            "server.bolt.listen_address": f"{self.host}:{self.bolt_port}",
            "server.bolt.advertised_address": f"{self._url_host}:{self.bolt_port}",
            "server.http.listen_address": f"{self.host}:{self.http_port}",
            "server.http.advertised_address": f"{self._url_host}:{self.http_port}",
            "server.https.enabled": "false",
            # Loopback only, single user: see the module docstring for why auth is off.
            "dbms.security.auth_enabled": "false",
            "dbms.usage_report.enabled": "false",
            "server.memory.pagecache.size": self.pagecache,
            "server.memory.heap.initial_size": self.heap,
            "server.memory.heap.max_size": self.heap,
            "db.transaction.timeout": self.transaction_timeout,
            "db.lock.acquisition.timeout": self.lock_timeout,
            # Netty waits a 5 s quiet period twice while closing Bolt, after the databases have
            # already been checkpointed and closed; without it a clean stop takes ~11 s instead of well under one.
            "internal.dbms.bolt.netty_server_shutdown_quiet_period": "0",
            "server.directories.data": str(home / "data"),
            "server.directories.logs": str(home / "logs"),
            "server.directories.run": str(home / "run"),
            "server.directories.plugins": str(home / "plugins"),
            "server.directories.import": str(home / "import"),
            "server.directories.lib": str(self.lib_dir),
        }


class Neo4jStatus(BaseModel):
    """What ``kgr neo4j status`` reports. ``ready`` means Bolt answered a handshake just now."""

    model_config = ConfigDict(extra="forbid")

    running: bool
    ready: bool
    pid: int | None
    bolt_uri: str
    http_url: str
    browser_url: str
    home: str
    version: str
    log_path: str
    installed: bool


# --------------------------------------------------------------------------------------------------
# small process and network helpers


def _find_executable(explicit: str | None, name: str) -> str | None:
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
        return path
    return shutil.which(name)


def java_major_version(java: str) -> int:
    """Run ``java -version`` and return the major version (``1.8`` → 8, ``17.0.15`` → 17).

    Raises
    ------
    KgrRuntimeError
        When java does not run or its output names no version.
    """
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KgrRuntimeError(f"java ({java}) could not be run: {exc}") from None
    out = proc.stderr + proc.stdout
    match = re.search(r'version "([0-9]+)(?:\.([0-9]+))?', out)
    if not match:
        first = out.strip().splitlines()[0] if out.strip() else "no output"
        raise KgrRuntimeError(f"java ({java}) did not report a version: {first}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


def _pid_alive(pid: int) -> bool:
    """True when ``pid`` is a live, non-zombie process (reaping it first if it is our child)."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    return True


def _cmdline(pid: int) -> list[str]:
    """The argv of ``pid`` ([] when unknown): /proc on Linux, ``ps`` elsewhere (split on spaces)."""
    if Path("/proc/self/cmdline").exists():
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return []
        return [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    try:  # macOS and other systems without /proc
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return out.split()


def _is_our_server(pid: int, home: Path) -> bool:
    args = _cmdline(pid)
    return _ENTRY_POINT in args and f"--home-dir={home}" in args


def _scan_for_server(home: Path) -> int | None:
    """Find a running server on ``home`` whose pid file was lost (Linux only; best effort)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    needle = f"--home-dir={home}".encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if _ENTRY_POINT.encode() in args and needle in args and _pid_alive(int(entry.name)):
                return int(entry.name)
    return None


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Same option Neo4j's Netty sets, so a port in TIME_WAIT after our own stop counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _port_owner(port: int) -> int | None:
    """The pid listening on ``port`` (Linux, same user; best effort, None when unknown)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def _bolt_handshake(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when something on host:port speaks Bolt (the server picks one of the offered versions)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            # magic preamble, then four proposals: 5.0-5.4 (range), 4.4, 4.3, 3.0
            sock.sendall(
                b"\x60\x60\xb0\x17"
                + b"\x00\x04\x04\x05"
                + b"\x00\x00\x04\x04"
                + b"\x00\x00\x03\x04"
                + b"\x00\x00\x00\x03"
            )
            reply = b""
            while len(reply) < 4:
                chunk = sock.recv(4 - len(reply))
                if not chunk:
                    return False
                reply += chunk
            return reply != b"\x00\x00\x00\x00"
    except OSError:
        return False


def _http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback URL we built)
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _tail(path: Path, lines: int = _LOG_TAIL_LINES, *, since: str | None = None) -> str:
    """The last ``lines`` lines of ``path``, starting no earlier than the last line containing ``since``."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            kept: deque[str] = deque(maxlen=lines)
            for line in fh:
                if since is not None and since in line:
                    kept.clear()
                    continue
                kept.append(line)
    except OSError:
        return "(no log)"
    return "".join(kept).rstrip() or "(log is empty)"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise installs/starts/stops across processes (several test workers may race)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


# --------------------------------------------------------------------------------------------------
# the launcher


class ManagedNeo4j:
    """One managed Neo4j server, identified by its home directory.

    Parameters
    ----------
    config:
        Where the jars and the home live and how the server listens; ``None`` reads the environment.
    console:
        A :class:`rich.console.Console` for progress messages (stderr by default); ``quiet=True``
        silences them.

    Examples
    --------
    Starting a server (a real process, so not a doctest)::

        neo = ManagedNeo4j(RuntimeConfig(bolt_port=17687, http_port=17474))
        neo.start().bolt_uri   # 'bolt://127.0.0.1:17687'
    """

    def __init__(self, config: RuntimeConfig | None = None, *, console: Any = None, quiet: bool = False):
        self.config = config or RuntimeConfig()
        self._console = console
        self._quiet = quiet
        self._java_path: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None  # the server, when this object spawned it

    # ---- paths
    @property
    def pid_path(self) -> Path:
        return self.config.home / "run" / _PID_FILE

    @property
    def log_path(self) -> Path:
        return self.config.home / "logs" / "console.log"

    @property
    def _marker_path(self) -> Path:
        return self.config.install_dir / _MARKER_FILE

    def _say(self, message: str) -> None:
        if self._quiet:
            return
        if self._console is None:
            self._console = _stderr_console()
        self._console.print(message, highlight=False)

    # ---- prerequisites
    def _java(self) -> str:
        if self._java_path is not None:
            return self._java_path
        java = _find_executable(self.config.java, "java")
        if java is None:
            where = f"KGR_JAVA={self.config.java}" if self.config.java else "java not found on PATH"
            raise KgrRuntimeError(
                f"{where}: the managed Neo4j needs Java {MIN_JAVA_MAJOR}+ "
                f"(e.g. apt-get install openjdk-17-jre-headless), or set NEO4J_URI to use another server"
            )
        major = java_major_version(java)
        if major < MIN_JAVA_MAJOR:
            raise KgrRuntimeError(
                f"java at {java} is version {major}; Neo4j {self.config.neo4j_version} needs Java "
                f"{MIN_JAVA_MAJOR} or newer (put a newer java first on PATH or set KGR_JAVA)"
            )
        self._java_path = java
        return java

    def _mvn(self) -> str:
        mvn = _find_executable(self.config.mvn, "mvn")
        if mvn is None:
            where = f"KGR_MVN={self.config.mvn} is not executable" if self.config.mvn else "mvn not found on PATH"
            raise KgrRuntimeError(
                f"{where} (needed once to download Neo4j jars into {self.config.lib_dir}; "
                f"e.g. apt-get install maven)"
            )
        return mvn

    def is_installed(self) -> bool:
        """True when the marker exists and every jar it lists is in ``lib/``."""
        try:
            marker = json.loads(self._marker_path.read_text())
        except (OSError, ValueError):
            return False
        if marker.get("neo4j") != self.config.neo4j_version or marker.get("browser") != self.config.browser_version:
            return False
        jars = marker.get("jars") or []
        return bool(jars) and all((self.config.lib_dir / jar).is_file() for jar in jars)

    # ---- install
    def install(self) -> Path:
        """Download the Neo4j and Browser jars with Maven, once. Returns the lib directory.

        Raises
        ------
        KgrRuntimeError
            java or mvn missing, Java too old, or Maven failed (with the end of its output).
        """
        cfg = self.config
        self._java()
        if self.is_installed():
            return cfg.lib_dir
        try:
            cfg.install_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KgrRuntimeError(f"cannot create the jar cache {cfg.install_dir} (set KGR_CACHE_DIR): {exc}") from None
        with _file_lock(cfg.install_dir / ".install.lock"):
            if self.is_installed():  # another process finished while we waited
                return cfg.lib_dir
            mvn = self._mvn()
            pom = cfg.install_dir / "pom.xml"
            pom.write_text(_POM.format(neo4j_version=cfg.neo4j_version, browser_version=cfg.browser_version))
            partial = cfg.install_dir / "lib.partial"
            shutil.rmtree(partial, ignore_errors=True)
            log = cfg.install_dir / "mvn.log"
            cmd = [
                mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
                f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
            ]  # fmt: skip
            message = (
                f"Downloading Neo4j {cfg.neo4j_version} and Neo4j Browser {cfg.browser_version} jars "
                f"with Maven into {cfg.lib_dir} (once, about 140 MB)..."
            )
            started = time.monotonic()
            self._say(message)
            with log.open("w") as out:
                run = functools.partial(subprocess.run, cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cfg.install_dir)
                if not self._quiet and self._console is not None and self._console.is_terminal:
                    with self._console.status("Maven is downloading..."):
                        rc = run().returncode
                else:
                    rc = run().returncode
            jars = sorted(p.name for p in partial.glob("*.jar")) if partial.is_dir() else []
            if rc != 0 or not any(j.startswith(f"neo4j-{cfg.neo4j_version}") for j in jars):
                reason = f"exit code {rc}" if rc else "no neo4j jar was produced"
                raise KgrRuntimeError(
                    f"mvn failed to download the Neo4j jars ({reason}); full log {log}:\n{_tail(log, 15)}"
                )
            shutil.rmtree(cfg.lib_dir, ignore_errors=True)
            partial.rename(cfg.lib_dir)
            self._marker_path.write_text(
                json.dumps({"neo4j": cfg.neo4j_version, "browser": cfg.browser_version, "jars": jars}, indent=1)
            )
            self._say(f"Installed {len(jars)} jars in {time.monotonic() - started:.0f} s.")
        return cfg.lib_dir

    # ---- state
    def _read_pid(self) -> int | None:
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    def _live_pid(self) -> int | None:
        """The pid of our running server, clearing a stale pid file; None when not running."""
        pid = self._read_pid()
        if pid is not None and _pid_alive(pid) and _is_our_server(pid, self.config.home):
            return pid
        if pid is not None:  # stale: the process died or the pid was reused by something else
            self._clear_pid()
        found = _scan_for_server(self.config.home)
        if found is not None:
            self.pid_path.parent.mkdir(parents=True, exist_ok=True)
            self.pid_path.write_text(f"{found}\n")
        return found

    def _clear_pid(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pid_path.unlink()

    def _running_config(self, pid: int) -> RuntimeConfig:
        """Our config with the address the running server was started with (from its command line)."""
        update: dict[str, Any] = {}
        for arg in _cmdline(pid):
            key, _, value = arg.partition("=")
            host, _, port = value.rpartition(":")
            if key in ("server.bolt.listen_address", "server.http.listen_address") and port.isdigit():
                update["host"] = host.strip("[]")
                update["bolt_port" if "bolt" in key else "http_port"] = int(port)
        return self.config.model_copy(update=update)

    def status(self) -> Neo4jStatus:
        """Report whether the server on this home runs, and where it answers."""
        pid = self._live_pid()
        cfg = self._running_config(pid) if pid is not None else self.config
        ready = pid is not None and _bolt_handshake(cfg.host, cfg.bolt_port)
        return Neo4jStatus(
            running=pid is not None,
            ready=ready,
            pid=pid,
            bolt_uri=cfg.bolt_uri,
            http_url=cfg.http_url,
            browser_url=cfg.browser_url,
            home=str(cfg.home),
            version=cfg.neo4j_version,
            log_path=str(self.log_path),
            installed=self.is_installed(),
        )

    # ---- start
    def _prepare_home(self) -> None:
        home = self.config.home
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)  # the database files are the user's alone
            for sub in ("conf", "data", "logs", "run", "plugins", "import"):
                (home / sub).mkdir(parents=True, exist_ok=True)
            conf = home / "conf" / "neo4j.conf"
            if not conf.exists():
                conf.write_text(
                    "# Extra settings for the kgr-managed Neo4j. kgr passes listen addresses, ports, memory,\n"
                    "# auth and directories with -c on the command line; those override this file.\n"
                )
        except OSError as exc:
            raise KgrRuntimeError(f"cannot prepare the Neo4j home {home} (set KGR_NEO4J_HOME): {exc}") from None

    def command(self) -> list[str]:
        """The java command line that runs the server (java resolved, lib dir from the config)."""
        cfg = self.config
        args = [
            self._java(),
            f"-Xms{cfg.heap}",
            f"-Xmx{cfg.heap}",
            *_JVM_FLAGS,
            f"-Djava.io.tmpdir={cfg.home / 'run' / 'tmp'}",
            "-cp",
            f"{cfg.lib_dir}{os.sep}*",
            _ENTRY_POINT,
            f"--home-dir={cfg.home}",
            f"--config-dir={cfg.home / 'conf'}",  # without it the entry point reads no neo4j.conf at all
            "--console-mode",
        ]
        for key, value in cfg.settings().items():
            args += ["-c", f"{key}={value}"]
        return args

    def _check_ports(self) -> None:
        cfg = self.config
        for name, port, env in (
            ("Bolt", cfg.bolt_port, "KGR_NEO4J_BOLT_PORT"),
            ("HTTP", cfg.http_port, "KGR_NEO4J_HTTP_PORT"),
        ):
            if not _port_free(cfg.host, port):
                owner = _port_owner(port)
                by = f" by pid {owner}" if owner else ""
                raise KgrRuntimeError(
                    f"port {port} ({name}) on {cfg.host} is already in use{by}; stop that process, "
                    f"choose another port ({env} or --{name.lower()}-port), or point NEO4J_URI at that server"
                )

    def start(self, timeout: float = 120.0) -> Neo4jStatus:
        """Start the server if it is not running and wait until Bolt and HTTP answer.

        Idempotent: when the server on this home already runs, returns its status (same pid).

        Raises
        ------
        KgrRuntimeError
            java/mvn missing, a port taken by another process, the process died during startup, or
            it did not answer within ``timeout`` seconds (each with the tail of the console log).
        """
        cfg = self.config
        self._prepare_home()
        with _file_lock(cfg.home / "run" / _LOCK_FILE):
            pid = self._live_pid()
            if pid is None:
                self.install()
                self._check_ports()
                pid = self._spawn()
            else:
                cfg = self._running_config(pid)
                self._say(f"Neo4j is already running (pid {pid}) on {cfg.bolt_uri}.")
        return self._wait_ready(pid, cfg, timeout)

    def _spawn(self) -> int:
        cfg = self.config
        cmd = self.command()
        (cfg.home / "run" / "tmp").mkdir(parents=True, exist_ok=True)
        self._say(f"Starting Neo4j {cfg.neo4j_version} on {cfg.bolt_uri} (home {cfg.home})...")
        with self.log_path.open("ab") as log:
            log.write(f"\n{_START_BANNER} {cfg.neo4j_version} at {time.ctime()} =====\n".encode())
            log.flush()
            proc = subprocess.Popen(  # noqa: S603 (fixed argv we built)
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cfg.home,
                start_new_session=True,  # survives Ctrl-C and the exit of the calling shell
                close_fds=True,
            )
        # Keep the Popen object: it reaps the child when it exits while we are still its parent.
        self._proc = proc
        self.pid_path.write_text(f"{proc.pid}\n")
        return proc.pid

    def _wait_ready(self, pid: int, cfg: RuntimeConfig, timeout: float) -> Neo4jStatus:
        deadline = time.monotonic() + timeout
        proc = self._proc
        while True:
            dead = (proc.poll() is not None) if proc is not None and proc.pid == pid else not _pid_alive(pid)
            if dead:
                self._clear_pid()
                code = f" with exit code {proc.returncode}" if proc is not None and proc.pid == pid else ""
                raise KgrRuntimeError(
                    f"Neo4j exited during startup{code}; see {self.log_path} and "
                    f"{cfg.home / 'logs' / 'debug.log'}. Last lines:\n{_tail(self.log_path, since=_START_BANNER)}"
                )
            if _bolt_handshake(cfg.host, cfg.bolt_port, timeout=1.0) and _http_ok(cfg.http_url, timeout=2.0):
                return self.status()
            if time.monotonic() > deadline:
                raise KgrRuntimeError(
                    f"Neo4j (pid {pid}) did not answer on {cfg.bolt_uri} and {cfg.http_url} within "
                    f"{timeout:.0f} s; it is left running (kgr neo4j stop ends it). Last lines of "
                    f"{self.log_path}:\n{_tail(self.log_path, since=_START_BANNER)}"
                )
            time.sleep(0.25)

    # ---- stop
    def stop(self, timeout: float = 60.0) -> Neo4jStatus:
        """Stop the server: SIGTERM (clean shutdown), then SIGKILL after ``timeout`` seconds.

        Idempotent: a server that is not running (or a stale pid file) is not an error.
        """
        if not (self.config.home / "run").is_dir() and _scan_for_server(self.config.home) is None:
            return self.status()  # never started on this home: nothing to stop, nothing to create
        with _file_lock(self.config.home / "run" / _LOCK_FILE):
            pid = self._live_pid()
            if pid is not None:
                self._say(f"Stopping Neo4j (pid {pid})...")
                self._signal(pid, signal.SIGTERM)
                if not self._wait_exit(pid, timeout):
                    self._say(f"Neo4j (pid {pid}) did not stop within {timeout:.0f} s; killing it.")
                    self._signal(pid, signal.SIGKILL)
                    if not self._wait_exit(pid, 10.0):
                        raise KgrRuntimeError(f"Neo4j (pid {pid}) survived SIGKILL; stop it by hand")
            self._clear_pid()
        return self.status()

    @staticmethod
    def _signal(pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        proc = self._proc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.pid == pid:
                if proc.poll() is not None:
                    return True
            elif not _pid_alive(pid):
                return True
            time.sleep(0.1)
        return False


def ensure_running(config: RuntimeConfig | None = None, *, timeout: float = 120.0, quiet: bool = False) -> Neo4jStatus:
    """Install and start the managed Neo4j if needed; return its status once Bolt answers.

    This is what the connection layer calls when ``NEO4J_URI`` is unset. Progress (the one-time jar
    download, the start) goes to stderr; an instance that is already up costs a pid check and one
    Bolt handshake.
    """
    neo = ManagedNeo4j(config, quiet=quiet)
    current = neo.status()
    if current.running and current.ready:
        return current
    return neo.start(timeout=timeout)
