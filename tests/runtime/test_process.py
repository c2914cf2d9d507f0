"""The server process helpers on stand-in processes: the JVM command line, finding and ending a process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from kgr.runtime import RuntimeConfig
from kgr.runtime.process import (
    ENTRY_POINT,
    exited,
    is_our_server,
    jvm_command,
    pid_alive,
    running_config,
    send_signal,
    wait_exit,
)


def test_jvm_command_line(tmp_path: Path) -> None:
    cfg = RuntimeConfig(home=tmp_path / "home", cache_dir=tmp_path / "cache", bolt_port=17001, http_port=17002,
                        heap="1g")
    args = jvm_command(cfg, "/opt/jdk/bin/java")
    assert args[:3] == ["/opt/jdk/bin/java", "-Xms1g", "-Xmx1g"]
    assert args[args.index("-cp") + 1] == f"{cfg.lib_dir}{os.sep}*"
    assert args[args.index(ENTRY_POINT) + 1:args.index(ENTRY_POINT) + 4] == [
        f"--home-dir={cfg.home}", f"--config-dir={cfg.home / 'conf'}", "--console-mode"]
    assert f"-Djava.io.tmpdir={cfg.home / 'run' / 'tmp'}" in args
    settings = [args[i + 1] for i, a in enumerate(args) if a == "-c"]
    assert settings == [f"{k}={v}" for k, v in cfg.settings().items()]
    assert "server.bolt.listen_address=127.0.0.1:17001" in settings


def test_running_config_reads_the_address_from_the_command_line(tmp_path: Path) -> None:
    cfg = RuntimeConfig(home=tmp_path, bolt_port=17001, http_port=17002)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                             "server.bolt.listen_address=127.0.0.1:18001",
                             "server.http.listen_address=127.0.0.1:18002"])
    try:
        assert pid_alive(proc.pid) and not exited(proc.pid, proc)
        assert not is_our_server(proc.pid, tmp_path)  # no Neo4j entry point in its argv
        running = running_config(cfg, proc.pid)
        assert (running.bolt_port, running.http_port, running.home) == (18001, 18002, cfg.home)
    finally:
        send_signal(proc.pid, signal.SIGTERM)
    assert wait_exit(proc.pid, proc, 10.0)
    assert exited(proc.pid, proc) and not pid_alive(proc.pid)
    send_signal(proc.pid, signal.SIGTERM)  # already gone: not an error
