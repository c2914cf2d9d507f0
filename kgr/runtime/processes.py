"""Operating-system helpers of the launcher: executables, Java's version, pids, ports, probes, logs.

Nothing here knows about kgr's layout; :class:`kgr.runtime.managed.ManagedNeo4j` combines them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any


from kgr.errors import KgrRuntimeError
from kgr.runtime.config import ENTRY_POINT, LOG_TAIL_LINES

__all__ = ["bolt_handshake", "cmdline", "file_lock", "find_executable", "http_ok", "is_our_server",
           "java_major_version", "pid_alive", "port_free", "port_owner", "scan_for_server", "stderr_console",
           "tail_log"]

try:  # POSIX only; the launcher targets Linux and macOS.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]



def find_executable(explicit: str | None, name: str) -> str | None:
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


def pid_alive(pid: int) -> bool:
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


def cmdline(pid: int) -> list[str]:
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


def is_our_server(pid: int, home: Path) -> bool:
    args = cmdline(pid)
    return ENTRY_POINT in args and f"--home-dir={home}" in args


def scan_for_server(home: Path) -> int | None:
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
            if ENTRY_POINT.encode() in args and needle in args and pid_alive(int(entry.name)):
                return int(entry.name)
    return None


def port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Same option Neo4j's Netty sets, so a port in TIME_WAIT after our own stop counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_owner(port: int) -> int | None:
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


def bolt_handshake(host: str, port: int, timeout: float = 2.0) -> bool:
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


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback URL we built)
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


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


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


# --------------------------------------------------------------------------------------------------
# the launcher


