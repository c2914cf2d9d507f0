"""The files of a managed Neo4j home, and the two file helpers the launcher shares.

A home holds ``conf/neo4j.conf`` (created once with a comment; the user may add settings, which the
``-c`` options on the command line override), ``data/``, ``logs/`` (``console.log`` gets the server's
stdout and stderr, one banner line per start), ``run/`` (the pid file, the start/stop lock and the
JVM's temporary directory), ``plugins/`` and ``import/``. The home is created mode 0700: the
database files are the user's alone.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kgr.errors import KgrRuntimeError

try:  # POSIX only; the launcher targets Linux and macOS.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOG_TAIL_LINES", "START_BANNER", "HomeFiles", "file_lock", "tail_log"]

#: Written to ``console.log`` before each start, so a failure report shows only that start's lines.
START_BANNER = "===== kgr: starting Neo4j"
LOG_TAIL_LINES = 25
_SUBDIRS = ("conf", "data", "logs", "run", "plugins", "import")
_CONF_HEADER = (
    "# Extra settings for the kgr-managed Neo4j. kgr passes listen addresses, ports, memory,\n"
    "# auth and directories with -c on the command line; those override this file.\n"
)


@dataclass(frozen=True)
class HomeFiles:
    """The paths inside one server home, and the pid file's reads and writes."""

    home: Path

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @property
    def tmp_dir(self) -> Path:
        """The JVM's ``java.io.tmpdir``."""
        return self.run_dir / "tmp"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / "kgr-neo4j.pid"

    @property
    def lock_path(self) -> Path:
        """Held while a start or stop runs on this home."""
        return self.run_dir / "kgr-neo4j.lock"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "console.log"

    @property
    def debug_log_path(self) -> Path:
        return self.home / "logs" / "debug.log"

    def prepare(self) -> None:
        """Create the home and its directories, and an empty ``conf/neo4j.conf`` if there is none."""
        try:
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)  # the database files are the user's alone
            for sub in _SUBDIRS:
                (self.home / sub).mkdir(parents=True, exist_ok=True)
            conf = self.conf_dir / "neo4j.conf"
            if not conf.exists():
                conf.write_text(_CONF_HEADER)
        except OSError as exc:
            raise KgrRuntimeError(f"cannot prepare the Neo4j home {self.home} (set KGR_NEO4J_HOME): {exc}") from None

    def read_pid(self) -> int | None:
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    def write_pid(self, pid: int) -> None:
        self.pid_path.parent.mkdir(parents=True, exist_ok=True)
        self.pid_path.write_text(f"{pid}\n")

    def clear_pid(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pid_path.unlink()

    def start_tail(self) -> str:
        """The console log's lines since the last start banner."""
        return tail_log(self.log_path, since=START_BANNER)


def tail_log(path: Path, lines: int = LOG_TAIL_LINES, *, since: str | None = None) -> str:
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
def file_lock(path: Path) -> Iterator[None]:
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
