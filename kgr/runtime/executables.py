"""The programs the JVM runtimes need (the managed Neo4j, the CoreNLP server): ``java`` and ``mvn``.

Each is the explicit path from the configuration (``KGR_JAVA``, ``KGR_MVN``) or the name looked up on
``PATH``; the caller says how new a java it needs and what for. A missing or too old program raises
:class:`~kgr.errors.KgrRuntimeError` saying how to get it and what needs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from kgr.errors import KgrRuntimeError

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


def require_java(explicit: str | None, min_major: int, needed_by: str, *, otherwise: str = "") -> str:
    """The java to run, ``explicit`` (``KGR_JAVA``) or ``java`` on PATH, checked to be ``min_major`` or newer.

    ``needed_by`` names what runs on it (``"the managed Neo4j"``); ``otherwise`` is appended to the
    message of a missing java (another way to do without it).

    Raises
    ------
    KgrRuntimeError
        No such java (naming KGR_JAVA and the apt-get package), or it is too old or does not run.
    """
    java = find_executable(explicit, "java")
    if java is None:
        where = f"KGR_JAVA={explicit} is not an executable" if explicit else "java not found on PATH"
        raise KgrRuntimeError(
            f"{where}: {needed_by} needs Java {min_major}+ (e.g. apt-get install openjdk-17-jre-headless){otherwise}"
        )
    major = java_major_version(java)
    if major < min_major:
        raise KgrRuntimeError(
            f"java at {java} is version {major}; {needed_by} needs Java {min_major} or newer "
            f"(put a newer java first on PATH or set KGR_JAVA)"
        )
    return java


def require_mvn(explicit: str | None, what: str, lib_dir: Path) -> str:
    """The Maven that downloads ``what`` (e.g. ``"Neo4j jars"``) once into ``lib_dir``: ``explicit``
    (``KGR_MVN``) or ``mvn`` on PATH.

    Raises
    ------
    KgrRuntimeError
        No such mvn (naming KGR_MVN, what needs it and the apt-get package).
    """
    mvn = find_executable(explicit, "mvn")
    if mvn is None:
        where = f"KGR_MVN={explicit} is not executable" if explicit else "mvn not found on PATH"
        raise KgrRuntimeError(f"{where} (needed once to download {what} into {lib_dir}; e.g. apt-get install maven)")
    return mvn
