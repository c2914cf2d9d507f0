"""The home layout of the managed Neo4j: directories, ``conf/neo4j.conf``, the pid file, log tails (no server)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kgr.errors import KgrRuntimeError
from kgr.runtime.files import START_BANNER, HomeFiles, tail_log


def test_prepare_creates_the_layout_and_keeps_user_settings(tmp_path: Path) -> None:
    files = HomeFiles(tmp_path / "home")
    files.prepare()
    for sub in ("conf", "data", "logs", "run", "plugins", "import"):
        assert (files.home / sub).is_dir()
    assert stat.S_IMODE(files.home.stat().st_mode) == 0o700
    conf = files.conf_dir / "neo4j.conf"
    assert conf.read_text().startswith("# Extra settings for the kgr-managed Neo4j.")
    conf.write_text("db.transaction.concurrent.maximum=7\n")
    files.prepare()  # a second start leaves the user's file alone
    assert conf.read_text() == "db.transaction.concurrent.maximum=7\n"


def test_prepare_names_the_home_it_cannot_create(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(KgrRuntimeError, match=r"cannot prepare the Neo4j home .*file/home \(set KGR_NEO4J_HOME\)"):
        HomeFiles(blocker / "home").prepare()


def test_pid_file_round_trip(tmp_path: Path) -> None:
    files = HomeFiles(tmp_path)
    assert files.read_pid() is None
    files.write_pid(4321)
    assert files.pid_path == tmp_path / "run" / "kgr-neo4j.pid"
    assert files.pid_path.read_text() == "4321\n" and files.read_pid() == 4321
    files.pid_path.write_text("not a pid\n")
    assert files.read_pid() is None
    files.clear_pid()
    files.clear_pid()  # clearing twice is fine
    assert not files.pid_path.exists()


def test_tail_starts_at_the_last_banner(tmp_path: Path) -> None:
    files = HomeFiles(tmp_path)
    assert files.start_tail() == "(no log)"
    files.log_path.parent.mkdir(parents=True)
    files.log_path.write_text("")
    assert files.start_tail() == "(log is empty)"
    files.log_path.write_text(f"{START_BANNER} 1 =====\nold\n{START_BANNER} 2 =====\nnew 1\nnew 2\n")
    assert files.start_tail() == "new 1\nnew 2"
    assert tail_log(files.log_path, 2) == "new 1\nnew 2"
    assert tail_log(files.log_path, 1) == "new 2"
