"""The managed Neo4j server: install its jars, start, stop and inspect the JVM (see :mod:`kgr.runtime`)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any


from kgr.errors import KgrRuntimeError
from kgr.runtime.config import (
    ENTRY_POINT, JVM_FLAGS, LOCK_FILE, MARKER_FILE, MIN_JAVA_MAJOR, PID_FILE, POM_TEMPLATE, START_BANNER, Neo4jStatus,
    RuntimeConfig,
)
from kgr.runtime.processes import (
    bolt_handshake, cmdline, file_lock, find_executable, http_ok, is_our_server, java_major_version, pid_alive,
    port_free, port_owner, scan_for_server, stderr_console, tail_log,
)

__all__ = ["ManagedNeo4j", "ensure_running"]

try:  # POSIX only; the launcher targets Linux and macOS.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]



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
        return self.config.home / "run" / PID_FILE

    @property
    def log_path(self) -> Path:
        return self.config.home / "logs" / "console.log"

    @property
    def _marker_path(self) -> Path:
        return self.config.install_dir / MARKER_FILE

    def _say(self, message: str) -> None:
        if self._quiet:
            return
        if self._console is None:
            self._console = stderr_console()
        self._console.print(message, highlight=False)

    # ---- prerequisites
    def _java(self) -> str:
        if self._java_path is not None:
            return self._java_path
        java = find_executable(self.config.java, "java")
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
        mvn = find_executable(self.config.mvn, "mvn")
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
        with file_lock(cfg.install_dir / ".install.lock"):
            if self.is_installed():  # another process finished while we waited
                return cfg.lib_dir
            mvn = self._mvn()
            pom = cfg.install_dir / "pom.xml"
            pom.write_text(POM_TEMPLATE.format(neo4j_version=cfg.neo4j_version, browser_version=cfg.browser_version))
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
                    f"mvn failed to download the Neo4j jars ({reason}); full log {log}:\n{tail_log(log, 15)}"
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
        if pid is not None and pid_alive(pid) and is_our_server(pid, self.config.home):
            return pid
        if pid is not None:  # stale: the process died or the pid was reused by something else
            self._clear_pid()
        found = scan_for_server(self.config.home)
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
        for arg in cmdline(pid):
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
        ready = pid is not None and bolt_handshake(cfg.host, cfg.bolt_port)
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
            *JVM_FLAGS,
            f"-Djava.io.tmpdir={cfg.home / 'run' / 'tmp'}",
            "-cp",
            f"{cfg.lib_dir}{os.sep}*",
            ENTRY_POINT,
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
            if not port_free(cfg.host, port):
                owner = port_owner(port)
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
        with file_lock(cfg.home / "run" / LOCK_FILE):
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
            log.write(f"\n{START_BANNER} {cfg.neo4j_version} at {time.ctime()} =====\n".encode())
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
            dead = (proc.poll() is not None) if proc is not None and proc.pid == pid else not pid_alive(pid)
            if dead:
                self._clear_pid()
                code = f" with exit code {proc.returncode}" if proc is not None and proc.pid == pid else ""
                raise KgrRuntimeError(
                    f"Neo4j exited during startup{code}; see {self.log_path} and "
                    f"{cfg.home / 'logs' / 'debug.log'}. Last lines:\n{tail_log(self.log_path, since=START_BANNER)}"
                )
            if bolt_handshake(cfg.host, cfg.bolt_port, timeout=1.0) and http_ok(cfg.http_url, timeout=2.0):
                return self.status()
            if time.monotonic() > deadline:
                raise KgrRuntimeError(
                    f"Neo4j (pid {pid}) did not answer on {cfg.bolt_uri} and {cfg.http_url} within "
                    f"{timeout:.0f} s; it is left running (kgr neo4j stop ends it). Last lines of "
                    f"{self.log_path}:\n{tail_log(self.log_path, since=START_BANNER)}"
                )
            time.sleep(0.25)

    # ---- stop
    def stop(self, timeout: float = 60.0) -> Neo4jStatus:
        """Stop the server: SIGTERM (clean shutdown), then SIGKILL after ``timeout`` seconds.

        Idempotent: a server that is not running (or a stale pid file) is not an error.
        """
        if not (self.config.home / "run").is_dir() and scan_for_server(self.config.home) is None:
            return self.status()  # never started on this home: nothing to stop, nothing to create
        with file_lock(self.config.home / "run" / LOCK_FILE):
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
            elif not pid_alive(pid):
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
