"""The managed Neo4j server: install, start, stop and inspect one server home (see :mod:`kgr.runtime`).

:class:`ManagedNeo4j` puts the parts together: the jars (:mod:`~kgr.runtime.jars`), the home's files
(:mod:`~kgr.runtime.files`), the JVM process (:mod:`~kgr.runtime.process`) and the probes that say
whether it answers (:mod:`~kgr.runtime.health`). Starts and stops on one home are serialised by a
file lock, so several processes (test workers, two shells) may race safely.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from kgr.errors import KgrRuntimeError
from kgr.runtime.config import MIN_JAVA_MAJOR, Neo4jStatus, RuntimeConfig
from kgr.runtime.executables import require_java
from kgr.runtime.files import HomeFiles, file_lock
from kgr.runtime.health import bolt_handshake, check_ports, server_answers
from kgr.runtime.jars import install_jars, is_installed
from kgr.runtime.process import (
    exited,
    is_our_server,
    jvm_command,
    pid_alive,
    running_config,
    scan_for_server,
    send_signal,
    spawn,
    wait_exit,
)
from kgr.runtime.progress import Progress

__all__ = ["ManagedNeo4j", "ensure_running"]


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
        self.files = HomeFiles(self.config.home)
        self._progress = Progress(console, quiet=quiet)
        self._java: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None  # the server, when this object spawned it

    @property
    def pid_path(self) -> Path:
        return self.files.pid_path

    @property
    def log_path(self) -> Path:
        return self.files.log_path

    def java(self) -> str:
        """The java that runs the server (looked up and version-checked on first use)."""
        if self._java is None:
            self._java = require_java(self.config.java, MIN_JAVA_MAJOR, "the managed Neo4j",
                                      otherwise=", or set NEO4J_URI to use another server")
        return self._java

    def is_installed(self) -> bool:
        """True when the jars of this config's versions are in the cache."""
        return is_installed(self.config)

    def install(self) -> Path:
        """Download the Neo4j and Browser jars with Maven, once. Returns the lib directory.

        Raises
        ------
        KgrRuntimeError
            java or mvn missing, Java too old, or Maven failed (with the end of its output).
        """
        self.java()  # first: no point downloading 140 MB for a server that cannot run
        return install_jars(self.config, self._progress)

    def command(self) -> list[str]:
        """The java command line that runs the server (java resolved, lib dir from the config)."""
        return jvm_command(self.config, self.java())

    # ---- state
    def _live_pid(self) -> int | None:
        """The pid of our running server, clearing a stale pid file; None when not running."""
        pid = self.files.read_pid()
        if pid is not None and pid_alive(pid) and is_our_server(pid, self.config.home):
            return pid
        if pid is not None:  # stale: the process died or the pid was reused by something else
            self.files.clear_pid()
        found = scan_for_server(self.config.home)
        if found is not None:
            self.files.write_pid(found)
        return found

    def status(self) -> Neo4jStatus:
        """Report whether the server on this home runs, and where it answers."""
        pid = self._live_pid()
        cfg = running_config(self.config, pid) if pid is not None else self.config
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
    def start(self, timeout: float = 120.0, *, announce: str | None = None) -> Neo4jStatus:
        """Start the server if it is not running and wait until Bolt and HTTP answer.

        Idempotent: when the server on this home already runs, returns its status (same pid).
        ``announce`` replaces the line said when the process is spawned (``""``: none; see :func:`ensure_running`).

        Raises
        ------
        KgrRuntimeError
            java/mvn missing, a port taken by another process, the process died during startup, or
            it did not answer within ``timeout`` seconds (each with the tail of the console log).
        """
        cfg = self.config
        self.files.prepare()
        with file_lock(self.files.lock_path):
            pid = self._live_pid()
            if pid is None:
                self.install()
                check_ports(cfg)
                pid = self._spawn(announce)
            else:
                cfg = running_config(cfg, pid)
                self._progress.say(f"Neo4j is already running (pid {pid}) on {cfg.bolt_uri}.")
        with self._progress.spinner(f"waiting for Neo4j to answer on {cfg.bolt_uri}…"):
            return self._wait_ready(pid, cfg, timeout)

    def _spawn(self, announce: str | None = None) -> int:
        cfg = self.config
        cmd = self.command()
        line = announce if announce is not None else \
            f"Starting Neo4j {cfg.neo4j_version} on {cfg.bolt_uri} (home {cfg.home})..."
        if line:  # ("": said already, by ensure_running)
            self._progress.say(line)
        # Keep the Popen object: it reaps the child when it exits while we are still its parent.
        self._proc = spawn(cfg, cmd)
        return self._proc.pid

    def _wait_ready(self, pid: int, cfg: RuntimeConfig, timeout: float) -> Neo4jStatus:
        deadline = time.monotonic() + timeout
        proc = self._proc
        while True:
            if exited(pid, proc):
                self.files.clear_pid()
                code = f" with exit code {proc.returncode}" if proc is not None and proc.pid == pid else ""
                raise KgrRuntimeError(
                    f"Neo4j exited during startup{code}; see {self.log_path} and "
                    f"{self.files.debug_log_path}. Last lines:\n{self.files.start_tail()}"
                )
            if server_answers(cfg):
                return self.status()
            if time.monotonic() > deadline:
                raise KgrRuntimeError(
                    f"Neo4j (pid {pid}) did not answer on {cfg.bolt_uri} and {cfg.http_url} within "
                    f"{timeout:.0f} s; it is left running (kgr neo4j stop ends it). Last lines of "
                    f"{self.log_path}:\n{self.files.start_tail()}"
                )
            time.sleep(0.25)

    # ---- stop
    def stop(self, timeout: float = 60.0) -> Neo4jStatus:
        """Stop the server: SIGTERM (clean shutdown), then SIGKILL after ``timeout`` seconds.

        Idempotent: a server that is not running (or a stale pid file) is not an error.
        """
        if not self.files.run_dir.is_dir() and scan_for_server(self.config.home) is None:
            return self.status()  # never started on this home: nothing to stop, nothing to create
        with file_lock(self.files.lock_path):
            pid = self._live_pid()
            if pid is not None:
                self._progress.say(f"Stopping Neo4j (pid {pid})...")
                send_signal(pid, signal.SIGTERM)
                if not wait_exit(pid, self._proc, timeout):
                    self._progress.say(f"Neo4j (pid {pid}) did not stop within {timeout:.0f} s; killing it.")
                    send_signal(pid, signal.SIGKILL)
                    if not wait_exit(pid, self._proc, 10.0):
                        raise KgrRuntimeError(f"Neo4j (pid {pid}) survived SIGKILL; stop it by hand")
            self.files.clear_pid()
        return self.status()


def ensure_running(config: RuntimeConfig | None = None, *, timeout: float = 120.0, quiet: bool = False) -> Neo4jStatus:
    """Install and start the managed Neo4j if needed; return its status once Bolt answers.

    This is what the connection factory (:func:`kgr.connect.connect`) calls when ``NEO4J_URI`` is
    unset. Progress (the one-time jar download, the start) goes to stderr; an instance that is
    already up costs a pid check and one Bolt handshake. A stopped one is announced on one line
    before anything else is done for it (the jars, the ports, the process: ``kgr: starting the managed
    Neo4j (stopped) on bolt://... ...``), so a command that waits for it, or fails to start it, says why.
    """
    neo = ManagedNeo4j(config, quiet=quiet)
    current = neo.status()
    if current.running and current.ready:
        return current
    announce = (f"kgr: starting the managed Neo4j ({'stopped' if current.installed else 'first start'}) "
                f"on {current.bolt_uri}, home {current.home}; `kgr neo4j stop` stops it …")
    neo._progress.say(announce)
    return neo.start(timeout=timeout, announce="")
