"""The server's JVM process: its command line, spawning it, finding it again, and its exit.

The server runs as ``java ... org.neo4j.server.CommunityEntryPoint --home-dir=<home> --console-mode
-c key=value ...`` in its own session, so it survives Ctrl-C and the exit of the calling shell. A
process is *ours* when its argv names that entry point and this home; that is how a stale or lost
pid file is told apart from a live server (``/proc`` on Linux, ``ps`` elsewhere).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from kgr.runtime.config import RuntimeConfig
from kgr.runtime.files import START_BANNER, HomeFiles

__all__ = [
    "ENTRY_POINT",
    "JVM_FLAGS",
    "cmdline",
    "exited",
    "is_our_server",
    "jvm_command",
    "pid_alive",
    "running_config",
    "scan_for_server",
    "send_signal",
    "spawn",
    "wait_exit",
]

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"

# JVM flags the neo4j launcher script would add from its default neo4j.conf (server.jvm.additional).
JVM_FLAGS = (
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


def jvm_command(config: RuntimeConfig, java: str) -> list[str]:
    """The argv that runs the server of ``config`` with ``java`` (heap, classpath, home, ``-c`` settings)."""
    files = HomeFiles(config.home)
    args = [
        java,
        f"-Xms{config.heap}",
        f"-Xmx{config.heap}",
        *JVM_FLAGS,
        f"-Djava.io.tmpdir={files.tmp_dir}",
        "-cp",
        f"{config.lib_dir}{os.sep}*",
        ENTRY_POINT,
        f"--home-dir={config.home}",
        f"--config-dir={files.conf_dir}",  # without it the entry point reads no neo4j.conf at all
        "--console-mode",
    ]
    for key, value in config.settings().items():
        args += ["-c", f"{key}={value}"]
    return args


def spawn(config: RuntimeConfig, command: list[str]) -> subprocess.Popen[bytes]:
    """Start ``command`` detached, appending its output to the console log; record its pid."""
    files = HomeFiles(config.home)
    files.tmp_dir.mkdir(parents=True, exist_ok=True)
    with files.log_path.open("ab") as log:
        log.write(f"\n{START_BANNER} {config.neo4j_version} at {time.ctime()} =====\n".encode())
        log.flush()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=config.home,
            start_new_session=True,  # survives Ctrl-C and the exit of the calling shell
            close_fds=True,
        )
    files.write_pid(proc.pid)
    return proc


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
    """The argv of ``pid`` ([] when unknown): /proc on Linux, ``ps`` elsewhere (split on spaces).

    A process in the middle of ``execve`` (just started) shows an empty command line for an
    instant: it is read again, for up to 0.2 s."""
    if Path("/proc/self/cmdline").exists():
        raw = b""
        for _ in range(20):
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                return []
            if raw:
                break
            time.sleep(0.01)
        return [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    try:  # macOS and other systems without /proc
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], check=False, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return out.split()


def is_our_server(pid: int, home: Path) -> bool:
    """True when ``pid`` runs the Neo4j entry point on ``home``."""
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


def running_config(config: RuntimeConfig, pid: int) -> RuntimeConfig:
    """``config`` with the address the running server ``pid`` was started with (from its command line)."""
    update: dict[str, Any] = {}
    for arg in cmdline(pid):
        key, _, value = arg.partition("=")
        host, _, port = value.rpartition(":")
        if key in ("server.bolt.listen_address", "server.http.listen_address") and port.isdigit():
            update["host"] = host.strip("[]")
            update["bolt_port" if "bolt" in key else "http_port"] = int(port)
    return config.model_copy(update=update)


def exited(pid: int, proc: subprocess.Popen[bytes] | None) -> bool:
    """True when ``pid`` is gone; asks ``proc`` (and so reaps it) when it is that very child."""
    if proc is not None and proc.pid == pid:
        return proc.poll() is not None
    return not pid_alive(pid)


def send_signal(pid: int, sig: int) -> None:
    """``kill(pid, sig)``, where a process that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def wait_exit(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to exit; True when it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exited(pid, proc):
            return True
        time.sleep(0.1)
    return False
