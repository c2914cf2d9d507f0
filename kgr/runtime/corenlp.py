"""Stanford CoreNLP as a local server: its jars resolved with Maven on first use, one JVM per user process.

The optional dependency parser of the rules extractor (:mod:`kgr.extract.parsed`). CoreNLP is
GPL-3.0-or-later; kgr does not bundle it: ``mvn dependency:copy-dependencies`` fetches
``edu.stanford.nlp:stanford-corenlp:<version>`` and its ``models`` classifier jar (about 480 MB)
from Maven Central into ``<cache>/corenlp-<version>/lib/`` the first time a parse is asked for
(the same install lock and marker file as Neo4j's jars, :mod:`kgr.runtime.maven`), and kgr talks
to it over HTTP as a separate process:

    java -Xmx3g -cp '<lib>/*' edu.stanford.nlp.pipeline.StanfordCoreNLPServer -host 127.0.0.1
         -port <port> -preload tokenize,ssplit,pos,lemma,depparse -quiet

:class:`CoreNLPServer` starts it (or uses one that already answers on the port), waits for
``/ready`` and stops it (SIGTERM, then SIGKILL); it is a child of the calling process, stopped by
:meth:`CoreNLPServer.stop` or at the interpreter's exit (on Linux also when the process that started
it from its main thread dies: ``PR_SET_PDEATHSIG``; ``kgr corenlp stop`` ends any other), its output in
``<cache>/corenlp-<version>/server-<port>.log``.

Environment: ``KGR_CORENLP_PORT`` (9042), ``KGR_CORENLP_HEAP`` (3g), ``KGR_CACHE_DIR``, ``KGR_JAVA``, ``KGR_MVN``.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kgr.errors import KgrRuntimeError
from kgr.runtime.config import default_cache_dir
from kgr.runtime.executables import require_java
from kgr.runtime.files import file_lock, tail_log
from kgr.runtime.maven import copy_dependencies, locked_install
from kgr.runtime.progress import Progress

__all__ = ["ANNOTATORS", "CORENLP_VERSION", "CoreNLPConfig", "CoreNLPServer", "find_servers", "install_corenlp"]

CORENLP_VERSION = "4.5.10"
#: The oldest Java the CoreNLP server runs on.
MIN_JAVA_MAJOR = 8
#: What the server loads at start and runs per request (``ner`` measured no gain: docs/extract.md).
ANNOTATORS = "tokenize,ssplit,pos,lemma,depparse"
SERVER_CLASS = "edu.stanford.nlp.pipeline.StanfordCoreNLPServer"
_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kgr (kgr/runtime/corenlp.py): Stanford CoreNLP (GPL-3.0-or-later) and its English models. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgr</groupId>
  <artifactId>kgr-corenlp-runtime</artifactId>
  <version>{v}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>edu.stanford.nlp</groupId><artifactId>stanford-corenlp</artifactId><version>{v}</version></dependency>
    <dependency><groupId>edu.stanford.nlp</groupId><artifactId>stanford-corenlp</artifactId><version>{v}</version>
      <classifier>models</classifier></dependency>
  </dependencies>
</project>
"""


def _env_port() -> int:
    raw = os.environ.get("KGR_CORENLP_PORT", "").strip() or "9042"
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise KgrRuntimeError(f"KGR_CORENLP_PORT must be a TCP port number, got {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class CoreNLPConfig:
    """Where the CoreNLP jars live and how its server runs (defaults from the environment)."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    port: int = field(default_factory=_env_port)
    heap: str = field(default_factory=lambda: os.environ.get("KGR_CORENLP_HEAP", "").strip() or "3g")
    java: str | None = field(default_factory=lambda: os.environ.get("KGR_JAVA") or None)
    mvn: str | None = field(default_factory=lambda: os.environ.get("KGR_MVN") or None)
    version: str = CORENLP_VERSION

    @property
    def install_dir(self) -> Path:
        return self.cache_dir / f"corenlp-{self.version}"

    @property
    def lib_dir(self) -> Path:
        return self.install_dir / "lib"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.install_dir / f"server-{self.port}.log"


def install_corenlp(config: CoreNLPConfig, progress: Progress | None = None) -> Path:
    """Download the CoreNLP jars and models with Maven unless they are in the cache. Returns ``lib/``.

    Raises
    ------
    KgrRuntimeError
        mvn missing, the cache not writable, or Maven failed (with the end of its log).
    """
    progress = progress or Progress(quiet=True)
    return locked_install(config.install_dir, {"corenlp": config.version}, lambda: _fetch(config, progress), progress)


def _fetch(config: CoreNLPConfig, progress: Progress) -> list[str]:
    """The CoreNLP jar and its models jar into ``lib.partial/`` (:func:`~kgr.runtime.maven.copy_dependencies`)."""
    return copy_dependencies(config.install_dir, _POM.format(v=config.version), config.mvn, progress,
                             expect=f"stanford-corenlp-{config.version}", what="the CoreNLP parser's jars",
                             announce=f"Downloading Stanford CoreNLP {config.version} (GPL-3.0-or-later) and its "
                             f"English models with Maven into {config.lib_dir} (once, about 480 MB)...")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM when the process that started it dies (even by SIGKILL)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def find_servers(port: int) -> list[int]:
    """The pids of CoreNLP servers listening on ``port`` (Linux ``/proc``; [] elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SERVER_CLASS.encode() in args and b"-port" in args and args[args.index(b"-port") + 1:][:1] == [str(port).encode()]:
            found.append(int(entry.name))
    return found


class CoreNLPServer:
    """One CoreNLP server on ``127.0.0.1:<port>``: :meth:`start` (idempotent), :meth:`stop`, :meth:`ready`.

    A server that already answers on the port is used and never stopped by this object (another
    process owns it).
    """

    def __init__(self, config: CoreNLPConfig | None = None, *, progress: Progress | None = None):
        self.config = config or CoreNLPConfig()
        self.progress = progress or Progress(quiet=True)
        self._proc: subprocess.Popen[bytes] | None = None
        self.start_seconds: float | None = None  # wall time of the last start (jar download excluded)

    def ready(self) -> bool:
        """True when a CoreNLP server answers ``GET /ready`` on the port."""
        try:
            with urllib.request.urlopen(f"{self.config.url}/ready", timeout=2) as resp:
                return resp.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def command(self, java: str) -> list[str]:
        cfg = self.config
        return [java, f"-Xmx{cfg.heap}", "-cp", f"{cfg.lib_dir}{os.sep}*", SERVER_CLASS, "-host", "127.0.0.1",
                "-port", str(cfg.port), "-timeout", "120000", "-threads", "2", "-quiet",
                "-annotators", ANNOTATORS, "-preload", ANNOTATORS]

    def start(self, timeout: float = 180.0) -> "CoreNLPServer":
        """Install the jars if needed, spawn the server and wait until ``/ready`` answers.

        Raises
        ------
        KgrRuntimeError
            java or mvn missing, the download failed, or the server exited or stayed silent for
            ``timeout`` seconds (with the end of its log).
        """
        if self._proc is not None and self._proc.poll() is None or self.ready():
            return self
        java = require_java(self.config.java, MIN_JAVA_MAJOR, "the CoreNLP parser")
        install_corenlp(self.config, self.progress)
        with file_lock(self.config.install_dir / f"server-{self.config.port}.lock"):  # one start per port at a time
            if not self.ready():
                self._spawn(java, timeout)
        return self

    def _spawn(self, java: str, timeout: float) -> None:
        t0 = time.monotonic()
        self.progress.say(f"Starting the Stanford CoreNLP server on {self.config.url} (log {self.config.log_path})...")
        with self.config.log_path.open("ab") as log:
            log.write(f"\n===== kgr: starting CoreNLP {self.config.version} at {time.ctime()} =====\n".encode())
            log.flush()
            main = threading.current_thread() is threading.main_thread()
            self._proc = subprocess.Popen(self.command(java), stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, close_fds=True,
                                          preexec_fn=_die_with_parent if main else None)
        atexit.register(self.stop)
        while not self.ready():
            if self._proc.poll() is not None:
                code, self._proc = self._proc.returncode, None
                raise KgrRuntimeError(f"the CoreNLP server exited during startup (exit code {code}); last lines of "
                                      f"{self.config.log_path}:\n{tail_log(self.config.log_path, 8, since='===== kgr')}")
            if time.monotonic() - t0 > timeout:
                self.stop()
                raise KgrRuntimeError(f"the CoreNLP server did not answer on {self.config.url} within {timeout:.0f} s "
                                      f"(stopped); see {self.config.log_path}")
            time.sleep(0.25)
        self.start_seconds = time.monotonic() - t0

    def alive(self) -> bool:
        """True when this object's server process runs (or another process's server answers)."""
        return self._proc.poll() is None if self._proc is not None else self.ready()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server this object started (SIGTERM, SIGKILL after ``timeout`` s); else nothing."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> "CoreNLPServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
