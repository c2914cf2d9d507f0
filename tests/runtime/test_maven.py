"""The shared locked install of a jar set (kgr.runtime.maven), with stand-in fetches (no Maven, no download)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kgr.errors import KgrRuntimeError
from kgr.runtime.files import file_lock
from kgr.runtime.maven import MARKER_FILE, is_complete, locked_install
from kgr.runtime.progress import Progress

VERSIONS = {"thing": "1.0"}


def _fetch_into(install_dir: Path, calls: list[str]):
    """A fetch that puts one jar into ``lib.partial/``, as Maven would, and counts its calls."""

    def fetch() -> list[str]:
        calls.append("fetch")
        (install_dir / "lib.partial").mkdir(exist_ok=True)
        (install_dir / "lib.partial" / "thing-1.0.jar").write_text("")
        return ["thing-1.0.jar"]

    return fetch


def test_installs_once_and_writes_the_marker_last(tmp_path: Path) -> None:
    install_dir, calls = tmp_path / "thing-1.0", []
    lib = locked_install(install_dir, VERSIONS, _fetch_into(install_dir, calls), Progress(quiet=True))
    assert lib == install_dir / "lib" and (lib / "thing-1.0.jar").is_file()
    assert not (install_dir / "lib.partial").exists()
    assert json.loads((install_dir / MARKER_FILE).read_text()) == {"thing": "1.0", "jars": ["thing-1.0.jar"]}
    assert is_complete(install_dir, VERSIONS) and not is_complete(install_dir, {"thing": "2.0"})
    assert locked_install(install_dir, VERSIONS, _fetch_into(install_dir, calls), Progress(quiet=True)) == lib
    assert calls == ["fetch"]


def test_a_caller_that_waited_for_the_lock_finds_it_installed(tmp_path: Path) -> None:
    """The second caller passes the first check while another holds the lock, then re-checks and does not fetch."""
    install_dir, calls = tmp_path / "thing-1.0", []
    install_dir.mkdir()
    done: list[Path] = []
    with file_lock(install_dir / ".install.lock"):  # "another process" installing
        waiter = threading.Thread(target=lambda: done.append(
            locked_install(install_dir, VERSIONS, _fetch_into(install_dir, calls), Progress(quiet=True))))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not done  # blocked on the lock
        _fetch_into(install_dir, ["other"])()
        (install_dir / "lib.partial").rename(install_dir / "lib")
        (install_dir / MARKER_FILE).write_text(json.dumps({**VERSIONS, "jars": ["thing-1.0.jar"]}))
    waiter.join(10)
    assert done == [install_dir / "lib"] and calls == []


def test_a_failed_fetch_leaves_no_lib_and_no_marker(tmp_path: Path) -> None:
    install_dir = tmp_path / "thing-1.0"

    def failing() -> list[str]:
        (install_dir / "lib.partial").mkdir()
        raise KgrRuntimeError("mvn failed to download thing (exit code 1)")

    with pytest.raises(KgrRuntimeError, match="exit code 1"):
        locked_install(install_dir, VERSIONS, failing, Progress(quiet=True))
    assert not (install_dir / "lib").exists() and not (install_dir / MARKER_FILE).exists()
    calls: list[str] = []  # the next run tries again
    locked_install(install_dir, VERSIONS, _fetch_into(install_dir, calls), Progress(quiet=True))
    assert calls == ["fetch"] and is_complete(install_dir, VERSIONS)


def test_an_unwritable_cache_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(KgrRuntimeError, match=r"cannot create the jar cache .*file/thing-1.0 \(set KGR_CACHE_DIR\)"):
        locked_install(blocker / "thing-1.0", VERSIONS, lambda: [], Progress(quiet=True))
