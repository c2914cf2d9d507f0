"""Slow and greedy clients cannot exhaust the server (issue 31, item 6).

Before: no header or body deadline and no connection cap. Under ``ulimit -n 1024``, 1,100 clients
sending their headers slowly made probes time out ("Too many open files" in accept); a body shorter
than its Content-Length waited for ever; a token-protected server answered 401 and then went on
reading the refused body; a client leaving mid-body wrote ~47 traceback lines into the log.
"""

from __future__ import annotations

import resource
import socket
import threading
import time

import httpx
import pytest

from kgr.server.app import BackgroundServer
from kgr.server.security import ServerConfig
from tests.server.conftest import TOKEN, ServedProcess

pytestmark = pytest.mark.neo4j


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """What the server sends within ``timeout`` seconds, and whether it closed the connection."""
    sock.settimeout(0.2)
    deadline, got = time.monotonic() + timeout, b""
    while time.monotonic() < deadline:
        try:
            part = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return got, True
        if not part:
            return got, True
        got += part
    return got, False


def _limit_files(n: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def test_slow_header_clients_do_not_lock_out_probes(neo4j_settings):
    """500 clients sending a header byte every 2 s to a server limited to 400 open files."""
    with ServedProcess(neo4j_settings, "--log-level", "warning", preexec_fn=_limit_files(400)) as srv:
        host, port = _address(srv.url)
        assert httpx.get(srv.url + "/health", timeout=60).status_code == 200
        stop = threading.Event()
        slow: list[socket.socket] = []

        def dribble() -> None:
            head = b"POST /tools/query_extraction_density HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4096
            for _ in range(500):
                try:
                    s = socket.create_connection((host, port), timeout=5)
                except OSError:
                    continue
                slow.append(s)
            i = 0
            while not stop.wait(2.0):
                for s in slow:
                    try:
                        s.send(head[i:i + 1])
                    except OSError:
                        pass
                i += 1

        attacker = threading.Thread(target=dribble, daemon=True)
        attacker.start()
        probes: list[tuple[object, float]] = []
        try:
            time.sleep(2.0)
            with httpx.Client(timeout=10) as c:
                for _ in range(24):  # 12 s of probes while the slow clients hold on
                    t0 = time.perf_counter()
                    try:
                        status: object = c.get(srv.url + "/health").status_code
                    except httpx.TransportError as exc:
                        status = type(exc).__name__
                    probes.append((status, time.perf_counter() - t0))
                    time.sleep(0.5)
        finally:
            stop.set()
            attacker.join(timeout=30)
            for s in slow:
                s.close()
        log = "".join(srv.log)
    assert len(slow) >= 400, len(slow)  # the slow clients were there (the listen queue took them)
    assert all(s == 200 for s, _ in probes), probes
    assert max(t for _, t in probes) < 2.0, probes
    assert "Too many open files" not in log and "out of system resource" not in log, log[-3000:]


def test_a_body_shorter_than_its_length_gets_a_408(graph):
    config = ServerConfig(port=0)
    config.body_timeout = 1.0
    with BackgroundServer(config, graph=graph) as srv:
        for path in ("/tools/query_extraction_density", "/mcp"):
            with socket.create_connection(_address(srv.url)) as s:
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
                          '{"text": "'.encode())
                t0 = time.perf_counter()
                got, closed = _read_until_closed(s, 6.0)
            assert got.startswith(b"HTTP/1.1 408 "), (path, got)
            assert b'"type":"timeout"' in got and closed, (path, got)
            assert time.perf_counter() - t0 < 4.0
        assert httpx.get(srv.url + "/health", timeout=30).status_code == 200


def test_slow_headers_get_a_408_and_the_connection_closes(graph):
    config = ServerConfig(port=0)
    config.header_timeout = 1.0
    with BackgroundServer(config, graph=graph) as srv:
        with socket.create_connection(_address(srv.url)) as idle, socket.create_connection(_address(srv.url)) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never the blank line
            t0 = time.perf_counter()
            got, closed = _read_until_closed(s, 6.0)
            idle_got, idle_closed = _read_until_closed(idle, 1.0)  # a connection that sent nothing at all
        assert got.startswith(b"HTTP/1.1 408 ") and closed, got
        assert time.perf_counter() - t0 < 4.0
        assert idle_got.startswith(b"HTTP/1.1 408 ") and idle_closed


def test_unauthenticated_large_body_is_refused_on_its_headers(token_server):
    for auth in ("", f"Authorization: Bearer {TOKEN[:-1]}x\r\n"):
        with socket.create_connection(_address(token_server.url)) as s:
            s.sendall(("POST /tools/query_extraction_density HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       f"Content-Type: application/json\r\n{auth}Content-Length: 50000000\r\n\r\n").encode())
            got, closed = _read_until_closed(s, 3.0)  # no byte of the 50 MB body was sent
        assert got.startswith(b"HTTP/1.1 401 "), got
        assert closed, "the server kept the connection open to read the refused body"


def test_connections_beyond_the_cap_take_idle_places_or_get_503(graph):
    config = ServerConfig(port=0)
    config.max_connections = 16
    with BackgroundServer(config, graph=graph) as srv:
        addr = _address(srv.url)
        idle = [socket.create_connection(addr) for _ in range(30)]  # more idle connections than the cap
        try:
            time.sleep(0.5)
            assert httpx.get(srv.url + "/health", timeout=10).status_code == 200  # took an idle one's place
            closed = sum(_read_until_closed(s, 0.05)[1] for s in idle)
            assert closed >= 30 - 16 + 1
        finally:
            for s in idle:
                s.close()
        busy = [socket.create_connection(addr) for _ in range(16)]  # each with a request in flight
        try:
            for s in busy:
                s.sendall(b"POST /tools/query_extraction_density HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            time.sleep(0.5)
            r = httpx.get(srv.url + "/health", timeout=10)
            assert r.status_code == 503 and r.json()["error"]["type"] == "unavailable"
        finally:
            for s in busy:
                s.close()


@pytest.mark.parametrize("level", ["info", "debug"])
def test_a_client_leaving_mid_body_costs_at_most_one_log_line(neo4j_settings, level):
    with ServedProcess(neo4j_settings, "--log-level", level) as srv:
        assert httpx.get(srv.url + "/health", timeout=60).status_code == 200
        before = len(srv.log)
        for path in ("/tools/query_extraction_density", "/mcp", "/tools/query_extraction_density"):
            with socket.create_connection(_address(srv.url)) as s:
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
                          '{"text": "ab'.encode())
                time.sleep(0.5)
        time.sleep(1.0)
        assert httpx.get(srv.url + "/health", timeout=30).status_code == 200
        lines = srv.log[before:]
    about = [ln for ln in lines if "left before" in ln or "ClientDisconnect" in ln or "Traceback" in ln
             or "Exception" in ln or "Error handling" in ln]
    assert not any("Traceback" in ln or "Exception" in ln for ln in lines), "".join(lines)
    assert len(about) <= (3 if level == "debug" else 0), "".join(lines)
