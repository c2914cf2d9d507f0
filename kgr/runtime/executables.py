"""The programs the launcher needs: ``java`` (at least :data:`~kgr.runtime.config.MIN_JAVA_MAJOR`) and ``mvn``.

Each is the explicit path from the config (``KGR_JAVA``, ``KGR_MVN``) or the name looked up on
``PATH``. A missing or too old program raises :class:`~kgr.errors.KgrRuntimeError` saying how to
get it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from kgr.errors import KgrRuntimeError
from kgr.runtime.config import MIN_JAVA_MAJOR, RuntimeConfig

__all__ = ["find_executable", "java_major_version", "require_java", "require_mvn"]


def find_executable(explicit: str | None, name: str) -> str | None:
    """The path of ``explicit`` (a name on PATH or an executable file), else of ``name`` on PATH."""
    if explicit:
        return shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
    return shutil.which(name)


def java_major_version(java: str) -> int:
    """Run ``java -version`` and return the major version (``1.8`` → 8, ``17.0.15`` → 17).

    Raises
    ------
    KgrRuntimeError
        When java does not run or its output names no version.
    """
    try:
        proc = subprocess.run([java, "-version"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KgrRuntimeError(f"java ({java}) could not be run: {exc}") from None
    out = proc.stderr + proc.stdout
    match = re.search(r'version "([0-9]+)(?:\.([0-9]+))?', out)
    if not match:
        first = out.strip().splitlines()[0] if out.strip() else "no output"
        raise KgrRuntimeError(f"java ({java}) did not report a version: {first}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


def require_java(config: RuntimeConfig) -> str:
    """The java that runs the server, checked to be new enough for ``config.neo4j_version``."""
    java = find_executable(config.java, "java")
    if java is None:
        where = f"KGR_JAVA={config.java}" if config.java else "java not found on PATH"
        raise KgrRuntimeError(
            f"{where}: the managed Neo4j needs Java {MIN_JAVA_MAJOR}+ "
            f"(e.g. apt-get install openjdk-17-jre-headless), or set NEO4J_URI to use another server"
        )
    major = java_major_version(java)
    if major < MIN_JAVA_MAJOR:
        raise KgrRuntimeError(
            f"java at {java} is version {major}; Neo4j {config.neo4j_version} needs Java "
            f"{MIN_JAVA_MAJOR} or newer (put a newer java first on PATH or set KGR_JAVA)"
        )
    return java


def require_mvn(config: RuntimeConfig) -> str:
    """The Maven that downloads the jars (needed once per Neo4j version and cache)."""
    mvn = find_executable(config.mvn, "mvn")
    if mvn is None:
        where = f"KGR_MVN={config.mvn} is not executable" if config.mvn else "mvn not found on PATH"
        raise KgrRuntimeError(
            f"{where} (needed once to download Neo4j jars into {config.lib_dir}; "
            f"e.g. apt-get install maven)"
        )
    return mvn
