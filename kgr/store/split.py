"""Entity split: some sources of an entity, with their votes, moved to another entity.

:func:`move_sources` runs inside an open write unit (``kgr resolve`` and ``kgr split`` apply many
moves and merges as one version). For every staged edge (``PENDING_REL``) at entity SRC that holds a
vote of a moved source:

- the moved votes leave the edge: it keeps the others (inline first, in their order, then overflow
  nodes; ``votes`` = the sources left, ``confidence`` their noisy-or :math:`1 - \\prod (1 - c_i)`);
  an edge left with none becomes a tombstone like a merge's (status ``merged``, ``merged_into_key``);
- they join the edge with DST in SRC's place (key recomputed, :func:`~kgr.model.canonical.edge_key`),
  united by source exactly as :mod:`kgr.store.merge` unites votes (the same row builder); that edge
  is ``pending`` unless all of the old edge's votes moved, when it takes the old edge's status;
- a **promoted** edge moves only when all of its votes moved (it is retired on SRC and re-created on
  DST in this version, the content hash updated term by term, like a merge): a fact still supported
  on SRC stays current there, and its moved part waits for promotion on DST;
- the moved sources' ``MENTIONS`` (chunk ids) move to DST; every moved edge gets a ``split``
  decision under its old and new keys.

So a split moves exactly its sources' votes: the votes of SRC's edges before equal the votes left
plus the votes moved (one per source and edge), and nothing else changes. Every per-vote field the
inline lists carry (:mod:`kgr.store.vote_lists`) moves with its vote.

**Keys and later staging.** A new entity made by a split is keyed ``"<Type>:<name>#<8 hex>"``
(:func:`kgr.resolution.operations.split_key`; a hash of its sources): ``#`` never occurs in a
canonical name, so the key never collides with a staged name's, and the parent keeps its key.
Later staging of the name lands on the parent (staging keys by name); the next ``kgr resolve``
routes the new sources by their evidence (a new source asserting the split-off entity's birth date
is moved to it). The new entity records ``split_from`` and ``split_at_version``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection

from kgr.model.canonical import edge_key
from kgr.store.connection import Tx
from kgr.store.merge import _unite, _votes_of
from kgr.store.vote_lists import node_fields, per_vote_lists, to_lists
from kgr.store.staging import MAX_INLINE_VOTES

__all__ = ["move_sources", "create_split_entity", "MoveResult"]


class MoveResult:
    """What one :func:`move_sources` did: edges touched, votes moved, promoted keys created/retired."""

    def __init__(self) -> None:
        self.edges = 0
        self.votes = 0
        self.created: list[str] = []
        self.retired: list[str] = []
        self.mentions = 0


def create_split_entity(tx: Tx, parent: str, key: str, *, version: int, now: float) -> bool:
    """Create entity ``key`` split off ``parent`` (if missing); whether it was created."""
    rows = tx.run("split_create_entity", {"parent": parent, "key": key, "version": version, "now": now,
                                          "tx": uuid.uuid4().hex})
    return bool(rows and rows[0]["created"])


def _stay_props(staying: list[dict], old: dict, new_key: str) -> tuple[dict, list[str]]:
    """The old edge's properties for the votes that stay, and the vote nodes pulled inline (to delete)."""
    inline, rest = staying[:MAX_INLINE_VOTES], staying[MAX_INLINE_VOTES:]
    conf = 0.0
    for v in staying:
        conf = 1.0 - (1.0 - conf) * (1.0 - v["confidence"])
    props = {**to_lists(inline, per_vote_lists(old["props"])), "votes": len(staying), "confidence": conf}
    if not staying:
        props.update({"status": "merged", "merged_into_key": new_key, "merged_votes": len(_votes_of(old))})
    del rest  # overflow votes that stay overflow keep their nodes (same edge key)
    return props, [v["vote_id"] for v in inline if v["vote_id"] is not None]


def _row(e: dict, target: dict | None, moving: list[dict], staying: list[dict], src: str, dst: str,
         version: int, reason: str) -> dict:
    sub = {"key": e["key"], "relation": e["relation"], "s_key": e["s_key"], "o_key": e["o_key"],
           "new_s": e["new_s"], "new_o": e["new_o"], "overflow": [],
           "props": {**e["props"], **to_lists([v for v in moving if v["vote_id"] is None], per_vote_lists(e["props"]))}}
    # the moving votes as an edge of their own (overflow ones keep their node ids, so they are re-keyed)
    sub["overflow"] = [{"id": v["vote_id"], **node_fields(v)} for v in moving if v["vote_id"] is not None]
    row = _unite(sub, target, e["new_key"], dst, src, version, reason)
    whole = not staying
    props = row["props"]
    if not whole:  # a partial move: the old edge still stands, so the new one is no successor of it
        props["merged_from"] = [k for k in props.get("merged_from", []) if k != e["key"]]
        props["split_from"] = e["key"]
        for k in ("status", "reason", "decided_version", "decided_votes", "p_hat"):
            props[k] = target["props"].get(k) if target is not None else None
        props["status"] = props["status"] or "pending"
    stay, pulled = _stay_props(staying, e, e["new_key"])
    row["stay"] = stay
    row["delete_votes"] = [*row["delete_votes"], *pulled]
    row.pop("tombstone", None)
    row["_whole"] = whole
    return row


def move_sources(tx: Tx, src: str, dst: str, sources: Collection[str], *, version: int, now: float,
                 reason: str) -> MoveResult:
    """Move the votes of ``sources`` from entity ``src``'s edges to entity ``dst`` (module docstring)."""
    res = MoveResult()
    moving_sources = set(sources)
    edges = [e for e in tx.run("merge_read_edges", {"drop": src}, targets=False)
             if e["props"].get("status") != "merged"]
    work = []
    for e in edges:
        votes = _votes_of(e)
        moving = [v for v in votes if v["source"] in moving_sources]
        if not moving:
            continue
        e["new_s"] = dst if e["s_key"] == src else e["s_key"]
        e["new_o"] = dst if e["o_key"] == src else e["o_key"]
        e["new_key"] = edge_key(e["new_s"], e["relation"], e["new_o"])
        work.append((e, moving, [v for v in votes if v["source"] not in moving_sources]))
    if not work:
        return res
    wanted = [{"key": e["new_key"], "s_key": e["new_s"], "o_key": e["new_o"]} for e, _, _ in work]
    targets = {t["key"]: t for t in tx.run("merge_read_edges", {"rows": wanted}, targets=True)}
    rows = [_row(e, targets.get(e["new_key"]), mv, st, src, dst, version, reason) for e, mv, st in work]
    tx.run("split_move_votes", {"rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]})
    res.edges, res.votes = len(rows), sum(len(mv) for _, mv, _ in work)
    whole = [{"old_key": r["old_key"], "old_s": r["old_s"], "old_o": r["old_o"], "key": r["key"], "s_key": r["s_key"],
              "o_key": r["o_key"], "recreate": r["s_key"] != r["o_key"], "votes": r["props"]["votes"],
              "confidence": r["props"]["confidence"]} for r in rows if r["_whole"]]
    done = tx.run("merge_promoted_edges", {"rows": whole, "version": version}) if whole else []
    res.created = [d["key"] for d in done if d["created"]]
    res.retired = [d["old_key"] for d in done]
    chunk_ids = sorted(moving_sources)
    res.mentions = tx.run("split_move_mentions", {"src": src, "dst": dst, "sources": chunk_ids})[0]["moved"]
    decisions = []
    for r, (e, mv, st) in zip(rows, work):
        inputs = json.dumps({"split": {"from": src, "to": dst}, "old_key": e["key"], "new_key": r["key"],
                             "moved": len(mv), "stayed": len(st)}, sort_keys=True)
        decisions.append({"id": uuid.uuid4().hex, "key": e["key"], "action": "split", "round": version,
                          "reason": f"{reason}: {len(mv)} votes moved to {r['key']}", "inputs": inputs})
        decisions.append({"id": uuid.uuid4().hex, "key": r["key"], "action": "split", "round": version,
                          "reason": f"{reason}: received {len(mv)} votes of {e['key']}", "inputs": inputs})
    tx.run("record_decisions", {"rows": decisions, "version": version, "now": now})
    return res
