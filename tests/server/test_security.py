"""Bind policy, bearer tokens and log hygiene."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from kgr.cli.serve import app as serve_app
from kgr.errors import KgrValidationError
from kgr.server.security import Secret, ServerConfig, is_loopback

from .conftest import KG, ROOT, SCHEMA, TEXT, TOKEN, subprocess_env


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_non_loopback_without_token_is_refused(host):
    with pytest.raises(KgrValidationError, match="not a loopback address, without a bearer token") as info:
        ServerConfig(host=host).check()
    assert info.value.field == "host"
    ServerConfig(host=host, token=Secret(TOKEN)).check()  # with a token it is allowed
    ServerConfig(host=host, transport="stdio").check()  # stdio binds nothing


def test_short_token_is_refused():
    with pytest.raises(KgrValidationError, match="shorter than 16"):
        ServerConfig(token=Secret("short")).check()


def test_loopback_detection():
    assert all(map(is_loopback, ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.1.2.3", "my-host", ""]))


def test_cli_refuses_non_loopback_bind(monkeypatch):
    monkeypatch.delenv("KGR_SERVER_TOKEN", raising=False)
    res = CliRunner().invoke(serve_app, ["serve", "--host", "0.0.0.0", "--port", "0"])
    assert res.exit_code == 1
    assert "Error: host: refusing to listen on 0.0.0.0" in res.output and "KGR_SERVER_TOKEN" in res.output


def test_process_refuses_to_start_without_token():
    env = {k: v for k, v in subprocess_env_minimal().items()}
    proc = subprocess.run([sys.executable, "-m", "kgr.cli.serve", "serve", "--host", "0.0.0.0", "--port", "0"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: host: refusing to listen on 0.0.0.0")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def subprocess_env_minimal() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "KGR_SERVER_TOKEN"}
    env["NEO4J_URI"] = "bolt://127.0.0.1:9"
    env["PYTHONPATH"] = str(ROOT)
    return env


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_wrong_or_missing_token_is_401(token_server, caplog):
    caplog.set_level(logging.DEBUG)
    url = token_server.url
    call = {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG}
    with httpx.Client(base_url=url, timeout=30) as c:
        for headers in ({}, _auth("wrong-token-but-long-enough"), _auth(TOKEN[:-1]), _auth(TOKEN + "x"),
                        {"authorization": TOKEN}, {"authorization": f"Basic {TOKEN}"}):
            for method, path in (("GET", "/tools"), ("POST", "/tools/query_coverage_feedback"), ("GET", "/health"),
                                 ("GET", "/openapi.json"), ("POST", "/mcp")):
                r = c.request(method, path, json=call if method == "POST" else None, headers=headers)
                assert r.status_code == 401, (headers, path)
                assert r.headers["www-authenticate"].startswith("Bearer")
                assert r.json()["error"]["type"] == "unauthorized"
        ok = c.post("/tools/query_coverage_feedback", json=call, headers=_auth(TOKEN))
        assert ok.status_code == 200
        assert c.get("/tools", headers={"authorization": f"bearer {TOKEN}"}).status_code == 200
        doc = c.get("/openapi.json", headers=_auth(TOKEN)).json()
        assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"

    async def mcp_calls() -> None:
        async with Client(url + "/mcp", mode="legacy") as _:
            pass

    with pytest.raises(Exception):  # noqa: B017,PT011 - the SDK raises its transport error on 401
        anyio.run(mcp_calls)
    assert TOKEN not in caplog.text


def test_mcp_over_http_with_token(token_server):
    import httpx2  # the MCP SDK's HTTP client

    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        async with httpx2.AsyncClient(headers=_auth(TOKEN), timeout=30) as http:
            transport = streamable_http_client(token_server.url + "/mcp", http_client=http)
            async with Client(transport) as client:
                res = await client.call_tool("query_quality_metrics", {"text": TEXT, "schema": SCHEMA, "extracted_kg": KG})
                assert not res.is_error

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.neo4j
def test_token_never_logged_by_a_real_server(neo4j_settings):
    """A non-loopback server with a token, debug logging, good and bad requests: the token is in no log line."""
    port = _free_port()
    env = subprocess_env(neo4j_settings, KGR_SERVER_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "kgr.cli.serve", "serve", "--host", "0.0.0.0", "--port", str(port),
                             "--log-level", "debug"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        with httpx.Client(base_url=base, timeout=30) as c:
            assert c.get("/health", headers=_auth(TOKEN)).json()["neo4j"] == "up"
            assert c.post("/tools/query_kg_storage", json={"extracted_kg": KG, "source": TOKEN},
                          headers=_auth(TOKEN)).status_code == 200
            assert c.post("/tools/query_kg_storage", json={"extracted_kg": {"entities": {"x y": []}}},
                          headers=_auth(TOKEN)).status_code == 422
            assert c.get(f"/tools?only={TOKEN}", headers=_auth(TOKEN)).status_code == 422
            assert c.get("/tools", headers=_auth(TOKEN[:-2] + "zz")).status_code == 401
            assert c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers=_auth("x" + TOKEN)).status_code == 401
    finally:
        proc.terminate()
        out, errtext = proc.communicate(timeout=30)
    assert "kgr serve: MCP at http://0.0.0.0" in errtext and "bearer token from $KGR_SERVER_TOKEN required" in errtext
    assert "POST /tools/query_kg_storage 200" in errtext  # the access log is there...
    assert TOKEN not in errtext and TOKEN not in out  # ...and the token is not
    assert TOKEN[:-2] not in errtext
