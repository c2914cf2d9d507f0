"""The jar cache: the install marker, and installs run by a stand-in ``mvn`` (no download, no server)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kgr.errors import KgrRuntimeError
from kgr.runtime import RuntimeConfig
from kgr.runtime.jars import install_jars, is_installed
from kgr.runtime.maven import MARKER_FILE
from kgr.runtime.progress import Progress

# Copies two jars into the directory given as -DoutputDirectory=..., as Maven would.
FAKE_MVN = """#!/bin/sh
for a in "$@"; do case "$a" in -DoutputDirectory=*) d="${a#-DoutputDirectory=}";; esac; done
mkdir -p "$d" && touch "$d/neo4j-5.26.30.jar" "$d/neo4j-browser-5.24.0.jar"
echo "$@" > "$d/../mvn.args"
"""


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_marker_decides_what_is_installed(tmp_path: Path) -> None:
    cfg = RuntimeConfig(home=tmp_path / "home", cache_dir=tmp_path / "cache")
    assert not is_installed(cfg)
    cfg.lib_dir.mkdir(parents=True)
    (cfg.lib_dir / "neo4j-5.26.30.jar").write_text("")
    marker = {"neo4j": cfg.neo4j_version, "browser": cfg.browser_version, "jars": ["neo4j-5.26.30.jar"]}
    (cfg.install_dir / MARKER_FILE).write_text(json.dumps(marker))
    assert is_installed(cfg)
    (cfg.install_dir / MARKER_FILE).write_text(json.dumps({**marker, "browser": "5.0.0"}))
    assert not is_installed(cfg)  # another Browser version: install again
    (cfg.install_dir / MARKER_FILE).write_text(json.dumps({**marker, "jars": ["neo4j-5.26.30.jar", "gone.jar"]}))
    assert not is_installed(cfg)  # a listed jar is missing
    (cfg.install_dir / MARKER_FILE).write_text("{not json")
    assert not is_installed(cfg)


def test_install_runs_maven_once(tmp_path: Path) -> None:
    mvn = _script(tmp_path / "mvn", FAKE_MVN)
    cfg = RuntimeConfig(home=tmp_path / "home", cache_dir=tmp_path / "cache", mvn=mvn)
    assert install_jars(cfg, Progress(quiet=True)) == cfg.lib_dir
    assert sorted(p.name for p in cfg.lib_dir.iterdir()) == ["neo4j-5.26.30.jar", "neo4j-browser-5.24.0.jar"]
    assert not (cfg.install_dir / "lib.partial").exists()
    assert "<artifactId>neo4j-browser</artifactId>" in (cfg.install_dir / "pom.xml").read_text()
    assert "dependency:copy-dependencies" in (cfg.install_dir / "mvn.args").read_text()
    assert is_installed(cfg)
    # installed: Maven is not run again (this one would fail)
    failing = cfg.model_copy(update={"mvn": _script(tmp_path / "mvn-fails", "#!/bin/sh\nexit 3\n")})
    assert install_jars(failing, Progress(quiet=True)) == cfg.lib_dir


def test_install_without_a_neo4j_jar_fails(tmp_path: Path) -> None:
    mvn = _script(tmp_path / "mvn", "#!/bin/sh\necho 'resolved nothing'\n")
    cfg = RuntimeConfig(home=tmp_path / "home", cache_dir=tmp_path / "cache", mvn=mvn)
    with pytest.raises(KgrRuntimeError, match=r"(?s)no neo4j jar was produced.*resolved nothing"):
        install_jars(cfg, Progress(quiet=True))
    assert not is_installed(cfg)
