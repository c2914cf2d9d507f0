"""Versions, the promoted-graph content hash, snapshots, diff and rollback.

**Versions.** ``(:KgrState {version, hash})`` holds the current version number; every promotion
round, rollback or merge increments it under the node's write lock (rounds are serialised) and
writes a ``(:Version {number, kind, at, hash})`` record. Promoted edges carry ``valid_from`` (the
version that promoted them) and ``valid_to`` (the version that retired them, null while current),
so the edge set *valid at* version V is ``{e : valid_from ≤ V < valid_to}``. Nothing is deleted.

**Content hash.** The promoted graph's hash is

.. math:: H(E) = \\sum_{e \\in E} \\operatorname{int}(\\mathrm{sha256}(\\mathrm{key}_e)) \\bmod 2^{256}

(hex, 64 digits). It is order-independent, and each promotion/retirement updates it in O(1) by
adding or subtracting one term. :func:`full_hash` recomputes it from the edges for checking.

**Snapshots** name a version with its hash. :func:`diff` lists the edges added and removed between
two versions; :func:`rollback` opens a new version whose promoted edge set equals that of the
snapshot's version (edges not in it are retired, missing ones restored as new instances), except
the facts whose every vote source a forget removed since: those stay out, listed as ``unrestored``.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.store import promotion_lock
from kgr.store.connection import Graph, Tx

__all__ = [
    "ZERO_HASH", "edge_term", "add_terms", "full_hash", "Snapshot", "EdgeRow", "Diff",
    "current_state", "open_version", "close_version", "promoted_edges", "create_snapshot",
    "list_snapshots", "get_snapshot", "diff", "rollback", "list_versions", "VersionRecord",
]

MOD = 1 << 256
ZERO_HASH = "0" * 64


def edge_term(key: str) -> int:
    """The hash term of one promoted edge: ``int(sha256(key))``."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest(), "big")


def add_terms(hash_hex: str, added: Iterable[str] = (), removed: Iterable[str] = ()) -> str:
    """Update a content hash by adding and removing edge keys (O(1) per key).

    >>> h = add_terms(ZERO_HASH, ["a", "b"])
    >>> add_terms(h, removed=["a"]) == add_terms(ZERO_HASH, ["b"])
    True
    """
    value = int(hash_hex, 16)
    for k in added:
        value = (value + edge_term(k)) % MOD
    for k in removed:
        value = (value - edge_term(k)) % MOD
    return f"{value:064x}"


def full_hash(keys: Iterable[str]) -> str:
    """Recompute the content hash of an edge key set from scratch."""
    return add_terms(ZERO_HASH, keys)


class EdgeRow(BaseModel):
    key: str
    relation: str
    subject_key: str
    subject: str
    subject_type: str
    object_key: str
    object: str
    object_type: str
    votes: int | None = None
    confidence: float | None = None


class Snapshot(BaseModel):
    name: str
    version: int
    hash: str
    created_at: float
    edges: int
    note: str = ""


class Diff(BaseModel):
    """Edges added and removed going from version ``base`` to version ``target``."""

    base: int
    target: int
    added: list[EdgeRow] = Field(default_factory=list)
    removed: list[EdgeRow] = Field(default_factory=list)


def current_state(graph: Graph) -> tuple[int, str]:
    """``(version, hash)`` of the store (``(0, ZERO_HASH)`` before ``kgr init``)."""
    rows = graph.read("state_read")
    if not rows:
        return 0, ZERO_HASH
    return int(rows[0]["version"]), rows[0]["hash"]


def open_version(tx: Tx) -> tuple[int, str]:
    """Inside a write unit, as its first statement: take the state lock and return ``(new version,
    current hash)``.

    Raises
    ------
    PromotionLocked
        A promotion round holds the store's promotion lock (:mod:`kgr.store.promotion_lock`):
        nothing is written, and :meth:`Graph.write_unit` runs the unit again once it is released.
    """
    rows = tx.run("state_bump_version")
    if not rows:
        raise KgrNotFound("the store is not initialised: run `kgr init`")
    promotion_lock.check(rows[0])
    return int(rows[0]["version"]), rows[0]["hash"]


def close_version(tx: Tx, version: int, new_hash: str, *, kind: str, now: float, note: str = "",
                  promoted: int = 0, retired: int = 0, decide_ms: float | None = None,
                  holds: dict[str, int] | None = None) -> None:
    """Inside a write unit: store the hash and write the ``(:Version)`` record (``decide_ms``: the
    round's decision time; ``holds``: a promotion round's :func:`~kgr.store.decision_tally.tally_holds`;
    both read back by ``kgr metrics``)."""
    tx.run("version_close", {"version": version, "hash": new_hash, "kind": kind, "now": now, "note": note,
                             "promoted": promoted, "retired": retired, "decide_ms": decide_ms,
                             "holds": json.dumps(holds, sort_keys=True) if holds is not None else None})


def promoted_edges(graph: Graph, version: int | None = None) -> list[EdgeRow]:
    """Promoted edges valid at ``version`` (current ones when None), sorted by key."""
    return [EdgeRow(**r) for r in graph.read("promoted_edges", {"version": version})]


class VersionRecord(BaseModel):
    """One ``(:Version)``: its number, what opened it, when, the promoted graph's hash after it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int
    kind: str | None = None
    at: float | None = None
    hash: str | None = None
    note: str | None = None
    promoted: int | None = None
    retired: int | None = None


def list_versions(graph: Graph, limit: int = 50) -> list[VersionRecord]:
    """The most recent versions, newest first."""
    return [VersionRecord(**r) for r in graph.read("version_list", {"limit": limit})]


def create_snapshot(graph: Graph, name: str, *, note: str = "", now: float | None = None) -> Snapshot:
    """Name the current version. Raises :class:`KgrValidationError` if the name is taken."""
    if not name or len(name) > 200:
        raise KgrValidationError("snapshot name must have 1 to 200 characters", field="name")
    if get_snapshot(graph, name, missing_ok=True) is not None:
        raise KgrValidationError(f"snapshot {name!r} already exists", field="name")
    edges = len(promoted_edges(graph))
    rows = graph.write("snapshot_create", {"name": name, "now": time.time() if now is None else now,
                                           "edges": edges, "note": note})
    return Snapshot(**rows[0])


def list_snapshots(graph: Graph) -> list[Snapshot]:
    return [Snapshot(**r) for r in graph.read("snapshot_list", {"name": None})]


def get_snapshot(graph: Graph, name: str, *, missing_ok: bool = False) -> Snapshot | None:
    rows = graph.read("snapshot_list", {"name": name})
    if not rows:
        if missing_ok:
            return None
        raise KgrNotFound(f"no snapshot named {name!r} (see `kgr snapshot list`)")
    return Snapshot(**rows[0])


def _version_of(graph: Graph, ref: str | int) -> int:
    if isinstance(ref, int):
        return ref
    if ref.isdigit():
        return int(ref)
    if ref in ("current", "HEAD"):
        return current_state(graph)[0]
    snap = get_snapshot(graph, ref)
    assert snap is not None
    return snap.version


def diff(graph: Graph, base: str | int, target: str | int = "current") -> Diff:
    """Edges added and removed between two versions or snapshot names (``"current"`` = now)."""
    v0, v1 = _version_of(graph, base), _version_of(graph, target)
    before = {e.key: e for e in promoted_edges(graph, v0)}
    after = {e.key: e for e in promoted_edges(graph, v1)}
    return Diff(
        base=v0,
        target=v1,
        added=[after[k] for k in sorted(after.keys() - before.keys())],
        removed=[before[k] for k in sorted(before.keys() - after.keys())],
    )


class RollbackResult(BaseModel):
    version: int
    target_version: int
    retired: int
    restored: int
    hash: str
    unrestored: list[str] = Field(default_factory=list, description=(
        "keys of edges promoted at the target that were not restored: a forget after the target removed "
        "every vote source they had (no evidence left)"))


def rollback(graph: Graph, ref: str | int, *, reason: str = "", now: float | None = None) -> RollbackResult:
    """Open a new version whose promoted edge set equals the one valid at ``ref``, less the facts
    whose evidence was forgotten since.

    Edges current now but absent then are retired (``valid_to`` set, pending status ``held``);
    edges present then but not now are restored as new instances (their staged edge ``promoted``).
    Both are recorded as decisions. An edge that a forget after ``ref`` left without a single vote
    (its staged edge deleted: :mod:`kgr.store.forget`) is **not** restored: it is listed in
    ``unrestored`` with a decision ``unrestored`` naming the forget's version, and the new hash is
    that of the edges actually current. An edge that kept some votes is restored (it has evidence).
    So the promoted edges and the staged edges marked ``promoted`` stay one set (``kgr status``).
    """
    target = _version_of(graph, ref)
    ts = time.time() if now is None else now
    why = reason or f"rollback to version {target}"

    def unit(tx: Tx) -> RollbackResult:
        version, old_hash = open_version(tx)
        if target >= version or target < 0:
            raise KgrValidationError(f"version {target} does not exist (current is {version - 1})", field="ref")
        now_rows = tx.run("promoted_edges", {"version": None})
        then_rows = tx.run("promoted_edges", {"version": target})
        current = {r["key"]: r for r in now_rows}
        wanted = {r["key"]: r for r in then_rows}
        retire = sorted(current.keys() - wanted.keys())
        restore = sorted(wanted.keys() - current.keys())

        def row(e: dict) -> dict:
            return {"key": e["key"], "s_key": e["subject_key"], "o_key": e["object_key"], "reason": why}

        forgotten = {r["key"]: r["forgotten_at"] for r in
                     tx.run("rollback_forgotten", {"rows": [row(wanted[k]) for k in restore], "target": target})} \
            if restore else {}
        restore = [k for k in restore if k not in forgotten]
        rows_r = [row(current[k]) for k in retire]
        rows_s = [row(wanted[k]) for k in restore]
        done_r = tx.run("retire_edges", {"rows": rows_r, "version": version, "status": "held"}) if rows_r else []
        done_s = tx.run("restore_edges", {"rows": rows_s, "version": version, "target": target}) if rows_s else []
        decisions = [
            {"id": uuid.uuid4().hex, "key": k, "action": act, "round": version, "reason": why,
             "inputs": json.dumps({"rollback_to": target})}
            for act, keys in (("retire", retire), ("restore", restore)) for k in keys
        ] + [{"id": uuid.uuid4().hex, "key": k, "action": "unrestored", "round": version,
              "reason": f"{why}: not restored, every vote source was forgotten in version {v}",
              "inputs": json.dumps({"rollback_to": target, "forgotten_in": v})} for k, v in sorted(forgotten.items())]
        if decisions:
            tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
        new_hash = add_terms(old_hash, added=[r["key"] for r in done_s], removed=[r["key"] for r in done_r])
        note = why + (f" ({len(forgotten)} edge(s) not restored: their sources were forgotten)" if forgotten else "")
        close_version(tx, version, new_hash, kind="rollback", now=ts, note=note,
                      promoted=len(done_s), retired=len(done_r))
        return RollbackResult(version=version, target_version=target, retired=len(done_r),
                              restored=len(done_s), hash=new_hash, unrestored=sorted(forgotten))

    return graph.write_unit(unit)
