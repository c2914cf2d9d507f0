"""The promoted graph's structure kept on disk between processes, keyed by what identifies it.

A settle (:func:`kgr.store.settle.read_settle`) needs every current promoted edge as (key, subject,
relation, object): on a 100k-edge store that read scans every promoted relationship (``round_promoted_read``,
about a second of server time), and each ``kgr promote`` is a new process. This module keeps that
structure in one JSON file per state of the promoted graph, so a new process on an unchanged promoted
graph reads a file instead.

The identity of a state is ``(uri, database, created_at, hash)``:

- ``created_at`` is set when the store is initialised (``kgr init``), so a reset store never matches
  the files of the store it replaced;
- ``hash`` is the promoted graph's content hash (:func:`kgr.store.versions.add_terms`): the sum, modulo
  :math:`2^{256}`, of a SHA-256 term per current edge key, and an edge key is a SHA-256 prefix of
  (subject, relation, object) (:func:`kgr.model.canonical.edge_key`). Two states with one hash hold
  the same edges, whatever their version numbers: a round that decides without promoting, or a
  rollback to an earlier set, keeps its file valid.

Only the structure is kept (votes and scores move without a new version, and the settle reads them
with the managed rows). Each file also records the store ``version`` it was read at, so that the first
process after the promoted graph changed can start from the newest earlier file
(:func:`load_earlier`) and read only what changed since (:meth:`kgr.store.promoted_cache.PromotedGraphCache.structure`). Files live in ``directory`` (``$KGR_CACHE_DIR/promoted``, set by
:func:`kgr.connect.connect`); at most :data:`KEEP` per database. Anything unreadable is a miss: this is a
cache, and a settle never fails because of it. Each file also records its identity, checked on load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEEP", "Saved", "load", "load_earlier", "save"]

log = logging.getLogger(__name__)

#: Files kept per database (the newest by modification time).
KEEP = 3
_FORMAT = 2
_COLUMNS = ("key", "subject", "relation", "object")

#: (keys, subjects, relations, objects): the structure of one state, parallel columns.
Columns = tuple[list[str], list[str], list[str], list[str]]


@dataclass(frozen=True)
class Saved:
    """A state read back from disk: its store ``version`` when saved, its content ``hash``, its columns."""

    version: int
    hash: str
    columns: Columns


def _prefix(uri: str, database: str) -> str:
    """The file-name prefix naming the database: a reset store's files share it, so they are pruned
    as the new store's are written."""
    return hashlib.sha256(f"{uri}\x1f{database}".encode()).hexdigest()[:16]


def _names(uri: str, database: str, created_at: float, hash_: str) -> tuple[str, str]:
    """(the database's prefix, file name of the state)."""
    store = _prefix(uri, database)
    state = hashlib.sha256(f"{created_at!r}\x1f{hash_}".encode()).hexdigest()[:32]
    return store, f"{store}-{state}.json"


def _read(path: Path, uri: str, database: str, created_at: float, hash_: str | None) -> Saved | None:
    """The file at ``path`` when it is whole and belongs to this store (and, unless ``hash_`` is None,
    to this state); else None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        cols = [data[c] for c in _COLUMNS]
        version = data.get("version")
        ok = data.get("format") == _FORMAT and data.get("created_at") == created_at \
            and data.get("uri") == uri and data.get("database") == database \
            and isinstance(data.get("hash"), str) and (hash_ is None or data["hash"] == hash_) \
            and isinstance(version, int) and not isinstance(version, bool) \
            and all(isinstance(c, list) and len(c) == len(cols[0]) for c in cols)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not ok:
        return None
    return Saved(version, data["hash"], (cols[0], cols[1], cols[2], cols[3]))


def load(directory: Path, uri: str, database: str, created_at: float, hash_: str) -> Columns | None:
    """The (keys, subjects, relations, objects) saved for this state, or None (a miss)."""
    saved = _read(directory / _names(uri, database, created_at, hash_)[1], uri, database, created_at, hash_)
    return None if saved is None else saved.columns


def load_earlier(directory: Path, uri: str, database: str, created_at: float, version: int) -> Saved | None:
    """The newest file (by modification time) of this store (same server, database and
    ``created_at``) saved at a version below ``version``, or None. At most :data:`KEEP` files are
    looked at, and anything unreadable is skipped."""
    store = _prefix(uri, database)
    try:
        mine = sorted(directory.glob(f"{store}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for path in mine[:KEEP]:
        saved = _read(path, uri, database, created_at, None)
        if saved is not None and saved.version < version:
            return saved
    return None


def save(directory: Path, uri: str, database: str, created_at: float, hash_: str, keys: list[str],
         subjects: list[str], relations: list[str], objects: list[str], *, version: int) -> None:
    """Write this state's structure, read at store ``version`` (atomically: a temporary file
    renamed), then drop the store's older files beyond :data:`KEEP`. Failures are logged at debug
    level and ignored."""
    store, name = _names(uri, database, created_at, hash_)
    body = {"format": _FORMAT, "uri": uri, "database": database, "created_at": created_at, "hash": hash_,
            "version": version,
            "key": list(keys), "subject": list(subjects), "relation": list(relations), "object": list(objects)}
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".promoted-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(body, fh, separators=(",", ":"))
            os.replace(tmp, directory / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        mine = sorted(directory.glob(f"{store}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in mine[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("promoted graph not cached on disk: %s", exc)
