"""Is the server there: free ports, who holds a port, a Bolt handshake, an HTTP answer.

These probes speak to sockets only (no driver, no query): :func:`bolt_handshake` sends Bolt's
preamble and version proposals and reads the server's choice.
"""

from __future__ import annotations

import contextlib
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path

from kgr.errors import KgrRuntimeError
from kgr.runtime.config import RuntimeConfig

__all__ = ["bolt_handshake", "check_ports", "http_ok", "port_free", "port_owner", "server_answers"]


def port_free(host: str, port: int) -> bool:
    """True when ``host:port`` can be bound (a port in TIME_WAIT after our own stop counts as free)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Same option Neo4j's Netty sets, so a port in TIME_WAIT after our own stop counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on ``port``, from /proc/net/tcp and tcp6."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    return inodes


def port_owner(port: int) -> int | None:
    """The pid listening on ``port`` (Linux, same user; best effort, None when unknown)."""
    inodes = _listening_inodes(port)
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


def check_ports(config: RuntimeConfig) -> None:
    """Raise :class:`~kgr.errors.KgrRuntimeError` naming the port (and its owner) when one is taken."""
    for name, port, env in (
        ("Bolt", config.bolt_port, "KGR_NEO4J_BOLT_PORT"),
        ("HTTP", config.http_port, "KGR_NEO4J_HTTP_PORT"),
    ):
        if not port_free(config.host, port):
            owner = port_owner(port)
            by = f" by pid {owner}" if owner else ""
            raise KgrRuntimeError(
                f"port {port} ({name}) on {config.host} is already in use{by}; stop that process, "
                f"choose another port ({env} or --{name.lower()}-port), or point NEO4J_URI at that server"
            )


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
    """True when ``url`` answers with a 2xx status."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def server_answers(config: RuntimeConfig) -> bool:
    """True when the server at ``config``'s address answers on both Bolt and HTTP (startup is over)."""
    return bolt_handshake(config.host, config.bolt_port, timeout=1.0) and http_ok(config.http_url, timeout=2.0)
