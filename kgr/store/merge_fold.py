"""The edges of one kept entity as a sequence of merges leaves them, computed in memory (pure; no I/O).

:mod:`kgr.store.merge_wave` applies all the merges into one kept entity (KEEP) in one wave. Merged
one by one (:func:`kgr.store.merge.merge_in_tx`), each merge reads KEEP's edges with the keys its
moved edges get, unites its votes with them (:func:`kgr.store.merge._unite`) and writes them back,
so the next merge reads what the previous one wrote. :class:`KeepFold` holds those edges between
the merges instead: it starts from one read of KEEP's edges (the union of every merge's new keys)
and, after each merge's rows, holds exactly what a read-back would give:

- **properties**: the old ones updated by the row's (``SET p += row.props``; a null removes the
  property), a new edge starting from its ``key``;
- **overflow** ``(:Vote)`` nodes (``"<key>|<source>"``): the edge's own, plus the moved edge's
  re-keyed nodes (every property, the new id), plus one node per spilled inline vote unless a node
  with that id exists (``MERGE ... ON CREATE``); the deleted nodes are the moved edge's own, never
  KEEP's;
- **promotion**: a merge whose DROP has a current promoted edge re-creates it on KEEP unless KEEP
  has one with that key (read once, then every creation of the fold counted), and a re-created
  edge marks KEEP's pending edge with that key ``promoted`` (``decided_version`` = the version)
  when it is live (not a merge tombstone), as ``merge_promoted_edges`` does.

At the end every edge the fold changed is written once with its final properties (:meth:`KeepFold.writes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["KeepFold"]


class KeepFold:
    """KEEP's pending edges (by key) and current promoted keys, as the merges folded so far leave them.

    ``targets``: KEEP's edges as ``merge_read_edges`` reads them (``key``, ``relation``, ``s_key``,
    ``o_key``, ``props``, ``overflow``: the vote nodes' properties); ``current``: the keys among
    those asked that have a current promoted edge at KEEP before the first merge."""

    def __init__(self, version: int, targets: Iterable[dict[str, Any]], current: Iterable[str]):
        self.version = version
        self.edges: dict[str, dict[str, Any]] = {t["key"]: t for t in targets}
        self.current = set(current)
        self.touched: dict[str, None] = {}

    def targets_for(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The edges with these keys as they are now (those that exist): a merge's ``targets``."""
        return {k: self.edges[k] for k in keys if k in self.edges}

    def unite(self, moved: dict[str, Any], row: dict[str, Any]) -> None:
        """Apply one ``merge_move_pending`` row (``moved``: the old edge it was built from, with its
        vote nodes) to the edge ``row["key"]``."""
        key = row["key"]
        old = self.edges.get(key)
        props = {**(old["props"] if old else {"key": key}), **row["props"]}
        overflow = {n["id"]: n for n in (old["overflow"] if old else [])}
        nodes = {n["id"]: n for n in moved["overflow"]}
        for rk in row["rekey_votes"]:
            overflow[rk["new_id"]] = {**nodes[rk["old_id"]], "id": rk["new_id"]}
        for vr in row["new_votes"]:
            vid = f"{key}|{vr['source']}"
            if vid not in overflow:
                overflow[vid] = {"id": vid, **vr}
        self._put(key, row["s_key"], row["o_key"], props, list(overflow.values()))

    def promote(self, key: str) -> bool:
        """One re-created promoted edge with key ``key`` at KEEP: whether it is created (KEEP has no
        current one yet); a created one marks KEEP's live pending edge ``key`` promoted."""
        if key in self.current:
            return False
        self.current.add(key)
        edge = self.edges.get(key)
        if edge is not None and (edge["props"].get("status") or "merged") != "merged":
            props = {**edge["props"], "status": "promoted", "decided_version": self.version}
            self._put(key, edge["s_key"], edge["o_key"], props, edge["overflow"])
        return True

    def _put(self, key: str, s_key: str, o_key: str, props: dict[str, Any], overflow: list[dict[str, Any]]) -> None:
        props = {k: v for k, v in props.items() if v is not None}
        self.edges[key] = {"key": key, "relation": props.get("type"), "s_key": s_key, "o_key": o_key,
                           "props": props, "overflow": overflow}
        self.touched[key] = None

    def writes(self) -> list[dict[str, Any]]:
        """One row per changed edge, ``{key, s_key, o_key, props}``: its final properties, all of them."""
        return [{"key": k, "s_key": self.edges[k]["s_key"], "o_key": self.edges[k]["o_key"],
                 "props": self.edges[k]["props"]} for k in self.touched]
