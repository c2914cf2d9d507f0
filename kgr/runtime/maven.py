"""Jar sets resolved with Maven into a cache directory, installed once under a lock.

Shared by every jar set kgr runs (Neo4j's in :mod:`kgr.runtime.jars`, Stanford CoreNLP's in
:mod:`kgr.runtime.corenlp`). An install directory holds the ``pom.xml``, Maven's log ``mvn.log``,
``lib/`` (the classpath) and a marker file naming the versions and the jars. Maven writes into
``lib.partial/``, which replaces ``lib/`` only when it succeeded; the marker is written last, so an
interrupted download is redone and a complete one is never repeated. ``.install.lock`` serialises
concurrent installs into one directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kgr.errors import KgrRuntimeError
from kgr.runtime.executables import require_mvn
from kgr.runtime.files import file_lock, tail_log
from kgr.runtime.progress import Progress

__all__ = ["MARKER_FILE", "copy_dependencies", "is_complete", "locked_install"]

MARKER_FILE = ".kgr-install-complete"


def is_complete(install_dir: Path, versions: Mapping[str, str]) -> bool:
    """True when ``install_dir``'s marker names ``versions`` and every jar it lists is in ``lib/``."""
    try:
        marker = json.loads((install_dir / MARKER_FILE).read_text())
    except (OSError, ValueError):
        return False
    if any(marker.get(key) != value for key, value in versions.items()):
        return False
    jars = marker.get("jars") or []
    return bool(jars) and all((install_dir / "lib" / jar).is_file() for jar in jars)


def locked_install(install_dir: Path, versions: Mapping[str, str], fetch: Callable[[], list[str]],
                   progress: Progress) -> Path:
    """Install a jar set into ``install_dir/lib/`` unless :func:`is_complete` says it is there. Returns ``lib/``.

    Under ``install_dir/.install.lock`` (checked again once held: another process may have finished
    meanwhile) ``fetch()`` fills ``lib.partial/`` and returns the jar names; ``lib.partial/`` then
    replaces ``lib/`` and the marker (``versions`` and the jars) is written last; a ``fetch`` that
    raises writes no marker, so the next call tries again. Says "Installed N jars in S s." after.

    Raises
    ------
    KgrRuntimeError
        ``install_dir`` cannot be created, or whatever ``fetch`` raises.
    """
    lib_dir = install_dir / "lib"
    if is_complete(install_dir, versions):
        return lib_dir
    try:
        install_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KgrRuntimeError(f"cannot create the jar cache {install_dir} (set KGR_CACHE_DIR): {exc}") from None
    with file_lock(install_dir / ".install.lock"):
        if is_complete(install_dir, versions):  # another process finished while we waited
            return lib_dir
        started = time.monotonic()
        jars = fetch()
        shutil.rmtree(lib_dir, ignore_errors=True)
        (install_dir / "lib.partial").rename(lib_dir)
        (install_dir / MARKER_FILE).write_text(json.dumps({**versions, "jars": jars}, indent=1))
        progress.say(f"Installed {len(jars)} jars in {time.monotonic() - started:.0f} s.")
    return lib_dir


def copy_dependencies(install_dir: Path, pom_text: str, mvn: str | None, progress: Progress, *, expect: str,
                      what: str, announce: str) -> list[str]:
    """Write ``pom_text`` to ``install_dir/pom.xml`` and run ``mvn dependency:copy-dependencies`` into
    ``install_dir/lib.partial/``; the jar names it produced. ``mvn`` is the configured Maven
    (``KGR_MVN``, else ``mvn`` on PATH), ``what`` names the jars in errors, ``announce`` is said once
    Maven is found. Meant as the ``fetch`` of :func:`locked_install`, which holds the lock, renames
    ``lib.partial`` and writes the marker.

    Raises
    ------
    KgrRuntimeError
        mvn is missing (:func:`~kgr.runtime.executables.require_mvn`), Maven failed, or no jar whose
        name starts with ``expect`` was produced (with the log's end).
    """
    mvn = require_mvn(mvn, what, install_dir / "lib")
    progress.say(announce)
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
