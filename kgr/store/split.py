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
from collections.abc import Collection, Sequence
from typing import NamedTuple

from kgr.model.canonical import edge_key
from kgr.store.connection import Tx
from kgr.store.merge import _unite, _votes_of
from kgr.store.vote_lists import node_fields, per_vote_lists, to_lists
from kgr.store.staging import MAX_INLINE_VOTES

__all__ = ["move_sources", "move_sources_many", "create_split_entity", "MoveResult", "Move"]


class Move(NamedTuple):
    """One source move: the votes of ``sources`` from entity ``src`` to entity ``dst``."""

    src: str
    dst: str
    sources: tuple[str, ...]
    reason: str


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


def _work(edges: list[dict], src: str, dst: str, moving_sources: set[str]) -> list[tuple[dict, list, list]]:
    """SRC's live edges that hold a moved vote, with their new ends and key: (edge, moving, staying)."""
    work = []
    for e in edges:
        if e["props"].get("status") == "merged":
            continue
        votes = _votes_of(e)
        moving = [v for v in votes if v["source"] in moving_sources]
        if not moving:
            continue
        e["new_s"] = dst if e["s_key"] == src else e["s_key"]
        e["new_o"] = dst if e["o_key"] == src else e["o_key"]
        e["new_key"] = edge_key(e["new_s"], e["relation"], e["new_o"])
        work.append((e, moving, [v for v in votes if v["source"] not in moving_sources]))
    return work


def _apply(tx: Tx, moves: Sequence[Move], edges: dict[str, list[dict]], *, version: int, now: float) -> MoveResult:
    """Moves of pairwise disjoint entities (no edge between two of them) with a few statements in all:
    one read of the KEEP-side edges, one vote write, one promoted-edge write, MENTIONS, decisions."""
    res = MoveResult()
    plans = [(mv, _work(edges.get(mv.src, []), mv.src, mv.dst, set(mv.sources))) for mv in moves]
    wanted = [{"key": e["new_key"], "s_key": e["new_s"], "o_key": e["new_o"]} for _, work in plans for e, _, _ in work]
    targets = {t["key"]: t for t in tx.run("merge_read_edges", {"rows": wanted}, targets=True)} if wanted else {}
    rows: list[dict] = []
    decisions: list[dict] = []
    for mv, work in plans:
        mine = [_row(e, targets.get(e["new_key"]), m, st, mv.src, mv.dst, version, mv.reason) for e, m, st in work]
        rows += mine
        res.edges += len(mine)
        res.votes += sum(len(m) for _, m, _ in work)
        decisions += _decisions(mv, mine, work, version)
    if rows:
        tx.run("split_move_votes", {"rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]})
    whole = [{"old_key": r["old_key"], "old_s": r["old_s"], "old_o": r["old_o"], "key": r["key"], "s_key": r["s_key"],
              "o_key": r["o_key"], "recreate": r["s_key"] != r["o_key"], "votes": r["props"]["votes"],
              "confidence": r["props"]["confidence"]} for r in rows if r["_whole"]]
    done = tx.run("merge_promoted_edges", {"rows": whole, "version": version}) if whole else []
    res.created = [d["key"] for d in done if d["created"]]
    res.retired = [d["old_key"] for d in done]
    mentions = [{"src": mv.src, "dst": mv.dst, "sources": sorted(set(mv.sources))} for mv, work in plans if work]
    if mentions:
        res.mentions = tx.run("split_move_mentions", {"rows": mentions})[0]["moved"]
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": now})
    return res


def _decisions(mv: Move, rows: list[dict], work: list[tuple[dict, list, list]], version: int) -> list[dict]:
    """One ``split`` decision per moved edge, about its old key and its new key (each side's reason)."""
    out = []
    for r, (e, m, st) in zip(rows, work):
        inputs = json.dumps({"split": {"from": mv.src, "to": mv.dst}, "old_key": e["key"], "new_key": r["key"],
                             "moved": len(m), "stayed": len(st)}, sort_keys=True)
        out.append({"id": uuid.uuid4().hex, "key": e["key"], "new_key": r["key"], "action": "split", "round": version,
                    "reason": f"{mv.reason}: {len(m)} votes moved to {r['key']}",
                    "received": f"{mv.reason}: received {len(m)} votes of {e['key']}", "inputs": inputs})
    return out


def move_sources(tx: Tx, src: str, dst: str, sources: Collection[str], *, version: int, now: float,
                 reason: str) -> MoveResult:
    """Move the votes of ``sources`` from entity ``src``'s edges to entity ``dst`` (module docstring)."""
    edges = tx.run("merge_read_edges", {"drop": src}, targets=False)
    return _apply(tx, [Move(src, dst, tuple(sources), reason)], {src: edges}, version=version, now=now)


def _waves(moves: Sequence[Move], neighbours: dict[str, set[str]]) -> list[list[Move]]:
    """``moves`` in waves: a move goes one wave after the last earlier move it conflicts with (a shared
    entity, or an edge between SRC and the other move's entities), so conflicting moves keep their
    order and a wave's moves are independent."""
    member: dict[str, int] = {}  # entity -> last wave it was a move's SRC or DST in
    touched: dict[str, int] = {}  # entity -> last wave it was a neighbour of a move's SRC in
    waves: list[list[Move]] = []
    for mv in moves:
        own = {mv.src, mv.dst}
        near = own | neighbours.get(mv.src, set())
        w = 1 + max([member.get(x, -1) for x in near] + [touched.get(x, -1) for x in own])
        if w == len(waves):
            waves.append([])
        waves[w].append(mv)
        member.update({x: max(member.get(x, -1), w) for x in own})
        touched.update({x: max(touched.get(x, -1), w) for x in near})
    return waves


def move_sources_many(tx: Tx, moves: Sequence[Move], *, version: int, now: float) -> MoveResult:
    """The source moves ``moves``, applied as if one by one in their order (:func:`move_sources`), in
    waves of independent moves (:func:`_waves`) with a few statements per wave (``kgr resolve``)."""
    total = MoveResult()
    if not moves:
        return total
    neighbours: dict[str, set[str]] = {}
    for e in tx.run("merge_wave_read_edges", {"drops": sorted({mv.src for mv in moves})}):
        neighbours.setdefault(e["drop"], set()).update({e["s_key"], e["o_key"]} - {e["drop"]})
    for wave in _waves(moves, neighbours):
        edges: dict[str, list[dict]] = {}
        for e in tx.run("merge_wave_read_edges", {"drops": [mv.src for mv in wave]}):
            edges.setdefault(e.pop("drop"), []).append(e)
        res = _apply(tx, wave, edges, version=version, now=now)
        total.edges += res.edges
        total.votes += res.votes
        total.mentions += res.mentions
        total.created += res.created
        total.retired += res.retired
    return total
