"""Neo4j's jars: resolved once with Maven from Maven Central into a cache directory.

``<cache>/neo4j-<version>/`` holds a tiny ``pom.xml`` naming ``org.neo4j:neo4j`` and
``org.neo4j.client:neo4j-browser``, Maven's log ``mvn.log`` and ``lib/`` (the server's classpath).
``mvn dependency:copy-dependencies`` writes into ``lib.partial/``, which becomes ``lib/`` only when a
``neo4j-<version>`` jar is among the results; a marker file listing the versions and the jars is
written last, so an interrupted download is redone and a complete one is never repeated. An
install lock serialises concurrent installs into one cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from kgr.errors import KgrRuntimeError
from kgr.runtime.config import RuntimeConfig
from kgr.runtime.executables import require_mvn
from kgr.runtime.files import file_lock, tail_log
from kgr.runtime.progress import Progress

__all__ = ["MARKER_FILE", "POM_TEMPLATE", "copy_dependencies", "install_jars", "is_installed"]

MARKER_FILE = ".kgr-install-complete"

POM_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kgr (kgr/runtime/jars.py): the jars of the managed local Neo4j. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgr</groupId>
  <artifactId>kgr-neo4j-runtime</artifactId>
  <version>{neo4j_version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.neo4j</groupId>
      <artifactId>neo4j</artifactId>
      <version>{neo4j_version}</version>
    </dependency>
    <dependency>
      <groupId>org.neo4j.client</groupId>
      <artifactId>neo4j-browser</artifactId>
      <version>{browser_version}</version>
    </dependency>
  </dependencies>
</project>
"""


def _marker_path(config: RuntimeConfig) -> Path:
    return config.install_dir / MARKER_FILE


def is_installed(config: RuntimeConfig) -> bool:
    """True when the marker names ``config``'s versions and every jar it lists is in ``lib/``."""
    try:
        marker = json.loads(_marker_path(config).read_text())
    except (OSError, ValueError):
        return False
    if marker.get("neo4j") != config.neo4j_version or marker.get("browser") != config.browser_version:
        return False
    jars = marker.get("jars") or []
    return bool(jars) and all((config.lib_dir / jar).is_file() for jar in jars)


def install_jars(config: RuntimeConfig, progress: Progress) -> Path:
    """Download the jars of ``config``'s versions with Maven unless they are there. Returns ``lib/``.

    Raises
    ------
    KgrRuntimeError
        The cache cannot be created, mvn is missing, or Maven failed (with the end of its log).
    """
    if is_installed(config):
        return config.lib_dir
    try:
        config.install_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KgrRuntimeError(f"cannot create the jar cache {config.install_dir} (set KGR_CACHE_DIR): {exc}") from None
    with file_lock(config.install_dir / ".install.lock"):
        if is_installed(config):  # another process finished while we waited
            return config.lib_dir
        started = time.monotonic()
        jars = _copy_dependencies(config, require_mvn(config), progress)
        shutil.rmtree(config.lib_dir, ignore_errors=True)
        (config.install_dir / "lib.partial").rename(config.lib_dir)
        _marker_path(config).write_text(
            json.dumps({"neo4j": config.neo4j_version, "browser": config.browser_version, "jars": jars}, indent=1)
        )
        progress.say(f"Installed {len(jars)} jars in {time.monotonic() - started:.0f} s.")
    return config.lib_dir


def _copy_dependencies(config: RuntimeConfig, mvn: str, progress: Progress) -> list[str]:
    """Run ``mvn dependency:copy-dependencies`` into ``lib.partial/``; the jar names it produced."""
    pom = POM_TEMPLATE.format(neo4j_version=config.neo4j_version, browser_version=config.browser_version)
    progress.say(
        f"Downloading Neo4j {config.neo4j_version} and Neo4j Browser {config.browser_version} jars "
        f"with Maven into {config.lib_dir} (once, about 140 MB)..."
    )
    return copy_dependencies(config.install_dir, pom, mvn, progress, expect=f"neo4j-{config.neo4j_version}",
                             what="the Neo4j jars")


def copy_dependencies(install_dir: Path, pom_text: str, mvn: str, progress: Progress, *, expect: str,
                      what: str) -> list[str]:
    """Write ``pom_text`` to ``install_dir/pom.xml`` and run ``mvn dependency:copy-dependencies`` into
    ``install_dir/lib.partial/``; the jar names it produced. Shared by every jar set kgr resolves
    (Neo4j here, Stanford CoreNLP in :mod:`kgr.runtime.corenlp`); the caller holds the install lock,
    renames ``lib.partial`` and writes its marker.

    Raises
    ------
    KgrRuntimeError
        Maven failed, or no jar whose name starts with ``expect`` was produced (with the log's end).
    """
    pom = install_dir / "pom.xml"
    pom.write_text(pom_text)
    partial = install_dir / "lib.partial"
    shutil.rmtree(partial, ignore_errors=True)
    log = install_dir / "mvn.log"
    cmd = [
        mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
        f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
    ]  # fmt: skip
    with log.open("w") as out, progress.spinner("Maven is downloading..."):
        rc = subprocess.run(cmd, check=False, stdout=out, stderr=subprocess.STDOUT, cwd=install_dir).returncode
    jars = sorted(p.name for p in partial.glob("*.jar")) if partial.is_dir() else []
    if rc != 0 or not any(j.startswith(expect) for j in jars):
        reason = f"exit code {rc}" if rc else f"no {expect.rsplit('-', 1)[0]} jar was produced"
        raise KgrRuntimeError(f"mvn failed to download {what} ({reason}); full log {log}:\n{tail_log(log, 15)}")
    return jars
