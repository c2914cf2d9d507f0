"""The command line's collector settings (:mod:`kgr.gc_freeze`): a command's process exits frozen,
``kgr stage`` and ``kgr resolve`` run with the collector off, ``--json`` is serialised with it paused;
exit codes and output as before, and ``KGR_GC_FREEZE=0`` leaves it all as it was."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

#: Run as the program; report the collector after the command (before the exit) and in an atexit
#: handler registered first, so that it runs after kgr's.
_PROGRAM = """
import atexit, gc, sys
atexit.register(lambda: print("at exit", gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr))
from kgr.cli.main import app
try:
    app(prog_name="kgr")
except SystemExit:
    print("after the command", gc.isenabled(), file=sys.stderr)
    raise
"""


def _kgr(*args: str, freeze: str | None = None) -> subprocess.CompletedProcess:
    # nothing listens on port 9: a command that connects fails at once (never the managed Neo4j)
    env = {**{k: v for k, v in os.environ.items() if k != "KGR_GC_FREEZE"}, "NEO4J_URI": "bolt://127.0.0.1:9"}
    if freeze is not None:
        env["KGR_GC_FREEZE"] = freeze
    return subprocess.run([sys.executable, "-c", _PROGRAM, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _collector(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith(("at exit", "after the command"))]


@pytest.mark.parametrize("command", ["stage", "resolve"])
def test_a_bulk_command_runs_with_the_collector_off_and_exits_frozen(command):
    proc = _kgr(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: kgr {command} [OPTIONS]")
    assert _collector(proc) == ["after the command False", "at exit False True"]
    assert proc.stdout == _kgr(command, "--help", freeze="0").stdout


def test_another_command_keeps_the_collector_and_exits_frozen():
    proc = _kgr("status", "--help")
    assert proc.returncode == 0, proc.stderr
    assert _collector(proc) == ["after the command True", "at exit False True"]


def test_the_exit_code_and_the_error_are_kept():
    proc = _kgr("resolve", "--target-fmr", "2")
    assert proc.returncode == 2
    assert "outside (0, 0.9999]" in proc.stderr
    assert _collector(proc) == ["after the command False", "at exit False True"]
    plain = _kgr("resolve", "--target-fmr", "2", freeze="0")
    assert plain.returncode == 2 and _collector(plain) == ["after the command True", "at exit True False"]
    assert [line for line in plain.stderr.splitlines() if "outside" in line] == \
        [line for line in proc.stderr.splitlines() if "outside" in line]


def test_resolve_with_an_llm_switches_the_collector_back_on():
    proc = _kgr("resolve", "--type", "Person", "--llm-model", "openai/stand-in")
    assert proc.returncode == 1 and "is unavailable" in proc.stderr  # it got as far as connecting
    assert _collector(proc) == ["after the command True", "at exit False True"]


def test_freeze_at_exit_is_registered_once_and_runs_before_earlier_handlers():
    code = ("import atexit, gc; from kgr.gc_freeze import freeze_at_exit; calls = []; real = gc.freeze; "
            "gc.freeze = lambda: (calls.append(1), real()); "
            "atexit.register(lambda: print(len(calls), gc.isenabled(), gc.get_freeze_count() > 0)); "
            "freeze_at_exit(); freeze_at_exit()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "False", "True"]  # run once, before the probe's handler


def test_emit_serialises_with_the_collector_paused(monkeypatch, capsys):
    import kgr.cli.common as common

    seen = []
    real = common.pydantic_core.to_json

    def probe(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(common.pydantic_core, "to_json", probe)
    was = gc.isenabled()
    gc.enable()
    try:
        common.emit({"a": [1, 2]}, True)
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False]
    assert capsys.readouterr().out == '{\n  "a": [\n    1,\n    2\n  ]\n}\n'
