"""Neo4j's jars: resolved once with Maven from Maven Central into a cache directory.

``<cache>/neo4j-<version>/`` holds a tiny ``pom.xml`` naming ``org.neo4j:neo4j`` and
``org.neo4j.client:neo4j-browser``, Maven's log ``mvn.log`` and ``lib/`` (the server's classpath).
``mvn dependency:copy-dependencies`` writes into ``lib.partial/``, which becomes ``lib/`` only when a
``neo4j-<version>`` jar is among the results; a marker file listing the versions and the jars is
written last, so an interrupted download is redone and a complete one is never repeated. An
install lock serialises concurrent installs into one cache (all of it :mod:`kgr.runtime.maven`,
shared with the CoreNLP jars).
"""

from __future__ import annotations

from pathlib import Path

from kgr.runtime.config import RuntimeConfig
from kgr.runtime.maven import copy_dependencies, is_complete, locked_install
from kgr.runtime.progress import Progress

__all__ = ["POM_TEMPLATE", "install_jars", "is_installed"]

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


def _versions(config: RuntimeConfig) -> dict[str, str]:
    """What the marker must name for ``config``'s jars to count as installed."""
    return {"neo4j": config.neo4j_version, "browser": config.browser_version}


def is_installed(config: RuntimeConfig) -> bool:
    """True when the marker names ``config``'s versions and every jar it lists is in ``lib/``."""
    return is_complete(config.install_dir, _versions(config))


def install_jars(config: RuntimeConfig, progress: Progress) -> Path:
    """Download the jars of ``config``'s versions with Maven unless they are there. Returns ``lib/``.

    Raises
    ------
    KgrRuntimeError
        The cache cannot be created, mvn is missing, or Maven failed (with the end of its log).
    """
    return locked_install(config.install_dir, _versions(config), lambda: _fetch(config, progress), progress)


def _fetch(config: RuntimeConfig, progress: Progress) -> list[str]:
    """The Neo4j and Browser jars into ``lib.partial/`` (:func:`~kgr.runtime.maven.copy_dependencies`)."""
    return copy_dependencies(
        config.install_dir,
        POM_TEMPLATE.format(neo4j_version=config.neo4j_version, browser_version=config.browser_version),
        config.mvn,
        progress,
        expect=f"neo4j-{config.neo4j_version}",
        what="Neo4j jars",
        announce=f"Downloading Neo4j {config.neo4j_version} and Neo4j Browser {config.browser_version} jars "
        f"with Maven into {config.lib_dir} (once, about 140 MB)...",
    )
