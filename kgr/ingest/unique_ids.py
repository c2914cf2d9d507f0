"""Document ids given twice in JSONL input: one document would take the other's place in the store
(the second text in the first's place), so an ingestion refuses such input before it reads it
(:func:`require_unique_ids`). Only ids a line gives are checked: a line without one is identified by
its text's hash, so two such lines with one id hold the same text."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from kgr.errors import KgrValidationError
from kgr.ingest.loaders import MAX_JSONL_LINE_BYTES, bounded_lines, iter_files, resolved_path
from kgr.model.jsontext import loads_strict

__all__ = ["duplicate_ids", "require_unique_ids"]


def _jsonl_ids(path: Path) -> Iterator[tuple[int, str]]:
    """The ids the lines of a JSONL file give (1-based line number, id); lines that are not a JSON
    object with a string ``id`` are passed over (the loader reports the bad ones)."""
    try:
        fh = path.open("rb")
    except OSError:  # the loader reports it
        return
    with fh:
        for n, raw in enumerate(bounded_lines(fh, MAX_JSONL_LINE_BYTES), start=1):
            if raw is None or b'"id"' not in raw:
                continue
            try:
                data = loads_strict(raw.decode("utf-8-sig" if n == 1 else "utf-8"))
            except (UnicodeDecodeError, KgrValidationError):
                continue
            if isinstance(data, dict) and isinstance(data.get("id"), str) and data["id"]:
                yield n, data["id"]


def _where(places: list[tuple[str, int]]) -> str:
    """Lines of files in words: ``d.jsonl lines 1 and 2``, ``a.jsonl line 1 and b.jsonl line 3``.

    >>> _where([("d.jsonl", 1), ("d.jsonl", 2), ("e.jsonl", 7)])
    'd.jsonl lines 1 and 2, e.jsonl line 7'
    """
    by_file: dict[str, list[int]] = {}
    for path, line in places:
        by_file.setdefault(path, []).append(line)
    parts = []
    for path, lines in by_file.items():
        nums = ", ".join(map(str, lines[:-1])) + (" and " if len(lines) > 1 else "") + str(lines[-1])
        parts.append(f"{path} line{'s' if len(lines) > 1 else ''} {nums}")
    return ", ".join(parts)


def duplicate_ids(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> dict[str, list[tuple[str, int]]]:
    """The document ids that more than one JSONL line under ``paths`` gives, across files, each with
    its places (file as named, 1-based line), in the order met. A file named twice (itself and its
    directory) is read once. Holds one entry per id given (no text).

    Raises
    ------
    KgrValidationError
        A missing path.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    first: dict[str, tuple[str, int]] = {}
    dups: dict[str, list[tuple[str, int]]] = {}
    read: set[str] = set()
    for root in paths:
        for f in iter_files(root):
            if f.suffix.lower() != ".jsonl" or resolved_path(str(f)) in read:
                continue
            read.add(resolved_path(str(f)))
            for line, doc_id in _jsonl_ids(f):
                place = (str(f), line)
                if doc_id not in first:
                    first[doc_id] = place
                else:
                    dups.setdefault(doc_id, [first[doc_id]]).append(place)
    return dups


def require_unique_ids(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, listed: int = 5) -> None:
    """Refuse JSONL input in which two lines give the same document id (one document would take
    the other's place, in silence): checked before anything is loaded.

    Raises
    ------
    KgrValidationError
        Naming the first ``listed`` duplicate ids and their files and lines; or a missing path.
    """
    dups = duplicate_ids(paths)
    if not dups:
        return
    times = {2: "twice"}
    said = [f"document id {doc_id!r} appears {times.get(len(places), f'{len(places)} times')} ({_where(places)})"
            for doc_id, places in list(dups.items())[:listed]]
    more = f"; and {len(dups) - listed} more duplicate ids" if len(dups) > listed else ""
    raise KgrValidationError("; ".join(said) + more + ": ids must be unique")
