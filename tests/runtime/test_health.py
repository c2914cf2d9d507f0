"""The probes: free and taken ports, who holds a port, Bolt and HTTP answers (plain sockets, no server)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from kgr.errors import KgrRuntimeError
from kgr.runtime import RuntimeConfig
from kgr.runtime.health import (
    bolt_handshake,
    check_ports,
    http_ok,
    port_free,
    port_owner,
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_taken_port_is_named_with_its_owner(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        assert not port_free("127.0.0.1", port)
        if sys.platform.startswith("linux"):
            assert port_owner(port) == os.getpid()
        cfg = RuntimeConfig(home=tmp_path, bolt_port=port, http_port=_free_port())
        with pytest.raises(KgrRuntimeError, match=rf"port {port} \(Bolt\) on 127\.0\.0\.1 is already in use"):
            check_ports(cfg)
        # not Bolt, not HTTP: a listener that accepts and closes answers neither probe
        assert not bolt_handshake("127.0.0.1", port, timeout=0.5)
    assert port_free("127.0.0.1", port)
    assert not http_ok(f"http://127.0.0.1:{port}/", timeout=0.5)
