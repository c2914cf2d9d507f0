"""Entity merge: one entity (DROP) folded into another (KEEP) of the same type, as one version.

``merge_entities(graph, keep, drop)`` runs in one write transaction and opens one
``(:Version {kind: 'merge'})``. What it does:

- **Checks.** Both entities exist (:class:`~kgr.errors.KgrNotFound` otherwise) and have the same
  type; KEEP ≠ DROP; KEEP is not itself merged into something; DROP is not merged into another
  entity (:class:`~kgr.errors.KgrValidationError`). Merging DROP into the KEEP it is already merged
  into again is allowed: it moves what arrived on DROP since (see *Concurrency* and *Rollback*).
  Keys are canonicalised like staging's (``"Person:Ada  Lovelace"`` → ``"Person:ada lovelace"``).
- **Pending edges** (``PENDING_REL``) of DROP move to KEEP. An edge's key is recomputed with KEEP
  in place of DROP (:func:`~kgr.model.canonical.edge_key`). When KEEP already has a pending edge
  with that key, the votes are united by source, exactly as staging would have counted them: KEEP's
  votes first, then DROP's votes from sources KEEP's edge does not have (a source that voted on
  both counts once, with the confidence KEEP's edge recorded). ``votes`` = distinct sources; the
  first :data:`~kgr.store.staging.MAX_INLINE_VOTES` stay inline (``sources``), the rest are
  ``(:Vote {id: "<key>|<source>"})`` nodes (DROP's overflow nodes are re-keyed, inline votes that
  spill over become nodes linked to their chunk, nodes of votes that became inline or duplicate
  are deleted); confidence continues staging's noisy-or over the added votes; ``first_seen`` /
  ``last_seen`` are the min / max; every per-vote field moves with its vote (``sources`` and each
  parallel ``source_*`` list inline, the same fields on overflow nodes: :mod:`kgr.store.vote_lists`);
  the status is the livelier of the two (promoted > pending > held > rejected > expired);
  ``merged_from`` lists the old keys. The old edge stays on DROP as a
  tombstone: status ``'merged'``, ``merged_into_key``, no votes (they live on the new edge).
- **Self-loops.** A pending edge whose two ends both become KEEP (an edge between KEEP and DROP,
  or a loop on DROP) is not moved: it stays, status ``'rejected'``, ``merge_self_loop = true``, with
  the merge as the recorded reason (a promoted one is retired, not re-created).
- **Promoted edges** of DROP (current: ``valid_to`` null) are retired (``valid_to`` = the merge
  version) and re-created on KEEP with the new key (``valid_from`` = the merge version,
  ``merged_from`` = the old key, votes and confidence of the united pending edge) unless KEEP
  already has that promoted edge. The content hash is updated by the same O(1)-per-edge rule as
  promotion and rollback (:func:`~kgr.store.versions.add_terms`: minus each retired key, plus each
  created key), so it equals :func:`~kgr.store.versions.full_hash` of the promoted edge set.
- **Entities.** KEEP's aliases gain DROP's name and aliases (KEEP's first, bounded by
  :data:`~kgr.store.staging.MAX_ALIASES` like staging's). ``(:Chunk)-[:MENTIONS]->`` links move to
  KEEP. DROP is kept, nothing is deleted: ``merged_into`` = KEEP's key, ``merged_at_version``.
  Entities merged into DROP earlier are re-pointed to KEEP, so a redirect is always one hop.
- **Decisions.** Every moved edge gets one ``(:Decision {action: 'merge'})`` about its old key
  (``edge_key``) and, unless it was a self-loop, its new key (``new_key``), with the merge's inputs
  (old and new key, outcome, votes before and after, what happened to the promoted edge) and the
  reason read from each side (``reason``, ``received``), so ``kgr promote --explain KEY`` shows the
  move from either side.
- **Later staging** of DROP's name lands on KEEP: ``stage_entities`` reports rows whose node has
  ``merged_into`` and staging re-keys them before writing votes (:mod:`kgr.store.staging`); a
  chunk's MENTIONS of DROP go to KEEP (``finish_chunk``). No query is added to staging's path.

**Concurrency.** The merge takes the version lock first (like a promotion round), then write-locks
both entities (key order) and every edge it reads before reading its votes, so a concurrent vote
on those edges waits for the merge and none is lost. A staging call that resolved DROP's key before
the merge committed may still add a vote to a DROP edge (a tombstone or a new edge); merging DROP
into KEEP again moves it.

**Rollback.** ``kgr snapshot rollback`` to a version before the merge restores exactly the promoted
edge set of that version (the re-created KEEP edges are retired, DROP's old instances restored:
same hash, same edge list). It does not undo the rest of the merge: pending edges and their votes
stay on KEEP (the KEEP edges the rollback retires become ``held``), tombstones stay, KEEP keeps the
aliases and MENTIONS, DROP stays merged (its name still stages onto KEEP). Merging DROP into KEEP
again moves the restored promoted edges back to KEEP; so does a promotion round that promotes a
held KEEP edge: it retires the restored DROP instance it lists in ``merged_from`` in the same
version (``retire_merged_instances``), so a fact is never current on both entities.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import edge_key, normalise_entity_key
from kgr.store.connection import Graph, Tx
from kgr.store.staging import MAX_ALIASES, MAX_INLINE_VOTES
from kgr.store.versions import add_terms, close_version, open_version
from kgr.store.vote_lists import inline_votes, node_fields, overflow_votes, per_vote_lists, to_lists

__all__ = ["MergedEdge", "MergeResult", "merge_entities", "merge_in_tx", "STATUS_RANK"]


#: Which status a united pending edge keeps: the higher rank of the two edges' statuses.
STATUS_RANK = {"promoted": 5, "pending": 4, "held": 3, "rejected": 2, "expired": 1, "merged": 0}

#: Properties of a pending edge the merge recomputes (its votes) or that only a tombstone has: never copied.
_NOT_COPIED = ("key", "votes", "confidence", "sources", "source_confidence", "source_at", "source_span",
               "merged_into_key", "merged_at_version", "merged_votes")


class MergedEdge(BaseModel):
    """What the merge did with one edge of the dropped entity."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    old_key: str
    new_key: str | None = Field(description="the edge's key on the kept entity (None for a self-loop)")
    relation: str
    outcome: Literal["moved", "united", "self_loop", "promoted_only"] = Field(
        description="moved: a new pending edge on KEEP; united: votes joined KEEP's edge with that key; "
                    "self_loop: both ends became KEEP, rejected; promoted_only: a promoted edge without a "
                    "pending edge of its own on DROP (e.g. restored by a rollback after an earlier merge)")
    votes_before: int = Field(0, description="votes of KEEP's edge with the new key before the merge")
    votes_after: int = Field(0, description="votes of the edge with the new key after the merge")
    promoted: Literal["moved", "already_promoted", "retired"] | None = Field(
        None, description="the current promoted edge of DROP, if any: re-created on KEEP, retired because "
                          "KEEP already had it, or retired (self-loop)")


class MergeResult(BaseModel):
    """One merge, as ``kgr merge --json`` prints it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int
    keep: str
    drop: str
    pending_moved: int = Field(0, description="pending edges moved to a new edge on KEEP")
    pending_united: int = Field(0, description="pending edges whose votes joined an existing KEEP edge")
    votes_added: int = Field(0, description="votes KEEP's edges gained (distinct sources)")
    self_loops: int = Field(0, description="edges between KEEP and DROP: rejected, not moved")
    promoted_created: int = Field(0, description="promoted edges re-created on KEEP")
    promoted_retired: int = Field(0, description="promoted edges of DROP retired")
    mentions_moved: int = 0
    rerouted: int = Field(0, description="entities merged into DROP earlier, now pointing at KEEP")
    aliases: list[str] = Field(default_factory=list, description="KEEP's aliases after the merge")
    hash: str
    edges: list[MergedEdge] = Field(default_factory=list)


def _votes_of(edge: dict) -> list[dict]:
    """An edge's votes in order, each with every per-vote field (:mod:`kgr.store.vote_lists`):
    inline (arrival order), then overflow (by time, then source); ``vote_id`` names an overflow node."""
    props = edge["props"]
    out = [{**v, "confidence": 1.0 if v.get("confidence") is None else float(v["confidence"]),
            "at": props.get("last_seen") if v.get("at") is None else v["at"], "vote_id": None}
           for v in inline_votes(props)]
    seen = {v["source"] for v in out}
    for v in overflow_votes(edge["overflow"]):
        if v["source"] not in seen:  # never both inline and a node (staging's invariant); be safe
            seen.add(v["source"])
            out.append({**v, "confidence": float(v.get("confidence") or 0.0)})
    return out


def _unite(old: dict, target: dict | None, new_key: str, keep: str, drop: str, version: int, reason: str) -> dict:
    """The write row for moving pending edge ``old`` onto ``new_key`` (joining ``target`` if it exists)."""
    have = _votes_of(target) if target else []
    have_sources = {v["source"] for v in have}
    incoming = _votes_of(old)
    added = [v for v in incoming if v["source"] not in have_sources]
    duplicates = [v for v in incoming if v["source"] in have_sources]
    # overflow only ever follows a full inline list, so new votes go inline only while there is room
    room = 0 if any(v["vote_id"] for v in have) else max(0, MAX_INLINE_VOTES - len(have))
    to_inline, to_overflow = added[:room], added[room:]
    lists = list(dict.fromkeys([*per_vote_lists(old["props"]), *(per_vote_lists(target["props"]) if target else [])]))
    base = {k: v for k, v in (target or old)["props"].items() if k not in _NOT_COPIED and k not in lists}
    confidence = float(target["props"].get("confidence") or 0.0) if target else 0.0
    for v in added:
        confidence = 1.0 - (1.0 - confidence) * (1.0 - v["confidence"])
    seen = [x for x in (base.get("first_seen"), base.get("last_seen"),
                        old["props"].get("first_seen"), old["props"].get("last_seen")) if x is not None]
    props = {
        **base,
        "type": old["relation"],
        "votes": len(have) + len(added),
        "confidence": confidence,
        **to_lists([v for v in have if v["vote_id"] is None] + to_inline, lists),  # every per-vote list
        "first_seen": min(seen, default=None),
        "last_seen": max(seen, default=None),
        "merged_from": [*(base.get("merged_from") or []), old["key"]],
    }
    old_status = old["props"].get("status") or "pending"
    new_status = base.get("status") if target else old_status
    if target is None or STATUS_RANK.get(old_status, 0) > STATUS_RANK.get(new_status or "", 0):
        props["status"] = old_status if old_status != "merged" else "pending"
        for k in ("reason", "decided_version", "decided_votes"):
            props[k] = old["props"].get(k)
    return {
        "old_key": old["key"], "old_s": old["s_key"], "old_o": old["o_key"],
        "key": new_key, "s_key": old["new_s"], "o_key": old["new_o"], "props": props,
        "tombstone": {"status": "merged", "merged_into_key": new_key, "merged_at_version": version,
                      "votes": 0, "confidence": 0.0, **{name: [] for name in lists},
                      "merged_votes": len(incoming), "reason": reason},
        "delete_votes": [v["vote_id"] for v in duplicates + to_inline if v["vote_id"] is not None],
        "rekey_votes": [{"old_id": v["vote_id"], "new_id": f"{new_key}|{v['source']}"}
                        for v in to_overflow if v["vote_id"] is not None],
        "new_votes": [node_fields(v) for v in to_overflow if v["vote_id"] is None],
        "_before": len(have), "_added": len(added),
    }


def _check_pair(ents: dict[str, dict], keep: str, drop: str) -> None:
    """Both entities exist, share a type, KEEP is not merged away, DROP is not merged elsewhere."""
    for key, role in ((keep, "keep"), (drop, "drop")):
        if key not in ents:
            raise KgrNotFound(f"no entity with key {key!r} ({role})")
    k, d = ents[keep], ents[drop]
    if k["type"] != d["type"]:
        raise KgrValidationError(f"cannot merge {drop!r} ({d['type']}) into {keep!r} ({k['type']}): "
                                 "entity types differ", field="drop")
    if k["merged_into"] is not None:
        raise KgrValidationError(f"{keep!r} is merged into {k['merged_into']!r}: merge into that entity",
                                 field="keep")
    if d["merged_into"] not in (None, keep):
        raise KgrValidationError(f"{drop!r} is already merged into {d['merged_into']!r}", field="drop")


class _Moves:
    """What one merge read and wrote, step by step (all inside its transaction)."""

    def __init__(self, keep: str, drop: str, version: int, reason: str):
        self.keep, self.drop, self.version, self.reason = keep, drop, version, reason
        self.loops: list[dict] = []
        self.movers: list[dict] = []
        self.targets: dict[str, dict] = {}
        self.rows: list[dict] = []
        self.prom: list[dict] = []
        self.prow: list[dict] = []
        self.done: list[dict] = []

    def ends(self, e: dict) -> tuple[str, str]:
        """An edge's endpoints with DROP replaced by KEEP."""
        return ((self.keep if e["s_key"] == self.drop else e["s_key"]),
                (self.keep if e["o_key"] == self.drop else e["o_key"]))

    def move_pending(self, tx: Tx) -> None:
        """Pending edges of DROP (locked) onto KEEP; self-loops rejected in place."""
        self.classify(tx.run("merge_read_edges", {"drop": self.drop}, targets=False))
        if self.movers:
            self.targets = {t["key"]: t for t in tx.run("merge_read_edges", {"rows": self.wanted()}, targets=True)}
        self.build_rows()
        if self.rows:
            moved = tx.run("merge_move_pending", {"rows": self.write_rows()})[0]["moved"]
            if moved != len(self.rows):
                raise RuntimeError(f"merge moved {moved} of {len(self.rows)} pending edges")  # locked: cannot happen
        if self.loops:
            tx.run("merge_self_loops", {"rows": self.loop_rows(), "version": self.version})

    def classify(self, edges: list[dict]) -> None:
        """DROP's live pending edges, read and locked: self-loops apart, the others with their new keys."""
        olds = [e for e in edges
                if not (e["props"].get("status") == "merged" and not e["props"].get("votes"))
                and not (e["props"].get("merge_self_loop") and e["props"].get("status") == "rejected")]
        for e in olds:
            e["new_s"], e["new_o"] = self.ends(e)
            (self.loops if e["new_s"] == e["new_o"] else self.movers).append(e)
            e["new_key"] = None if e["new_s"] == e["new_o"] else edge_key(e["new_s"], e["relation"], e["new_o"])

    def wanted(self) -> list[dict]:
        """The KEEP edges the moved edges will join (to read and lock)."""
        return [{"key": e["new_key"], "s_key": e["new_s"], "o_key": e["new_o"]} for e in self.movers]

    def build_rows(self) -> None:
        self.rows = [_unite(e, self.targets.get(e["new_key"]), e["new_key"], self.keep, self.drop, self.version,
                            self.reason) for e in self.movers]

    def write_rows(self) -> list[dict]:
        return [{k: v for k, v in r.items() if not k.startswith("_")} for r in self.rows]

    def loop_rows(self) -> list[dict]:
        return [{"key": e["key"], "s_key": e["s_key"], "o_key": e["o_key"], "reason": f"self-loop after {self.reason}"}
                for e in self.loops]

    def move_promoted(self, tx: Tx) -> None:
        """Current promoted edges of DROP: retired, and re-created on KEEP unless it has them or they loop."""
        self.plan_promoted(tx.run("merge_drop_promoted", {"drop": self.drop}))
        self.done = tx.run("merge_promoted_edges", {"rows": self.prow, "version": self.version}) if self.prow else []

    def promoted_key(self, p: dict) -> tuple[str, str, str | None]:
        """A promoted edge's ends with DROP replaced by KEEP, and its key there (None: a self-loop)."""
        s, o = self.ends(p)
        return s, o, (None if s == o else edge_key(s, p["relation"], o))

    def plan_promoted(self, promoted: list[dict]) -> None:
        united = {r["key"]: r["props"] for r in self.rows}
        self.prom = promoted
        for p in self.prom:
            p["new_s"], p["new_o"], new_key = self.promoted_key(p)
            loop = new_key is None
            u = united.get(new_key or "")
            self.prow.append({"old_key": p["key"], "old_s": p["s_key"], "old_o": p["o_key"], "key": new_key or p["key"],
                              "s_key": p["new_s"], "o_key": p["new_o"], "recreate": not loop,
                              "votes": u["votes"] if u else None, "confidence": u["confidence"] if u else None})

    def drop_sources(self) -> list[str]:
        """The sources of DROP's live pending edges that this merge moves or rejects (recorded on DROP
        as ``merged_sources``: what an unmerge moves back, :mod:`kgr.store.unmerge`)."""
        return sorted({src for e in [*self.movers, *self.loops]
                       for src in [*(e["props"].get("sources") or []), *(n["source"] for n in e["overflow"])]})

    def entity_row(self, keep: dict, drop: dict, *, record: bool = True) -> dict:
        """The ``merge_*entities_write`` row of this merge, from the locked entity rows: KEEP's new
        aliases (:func:`_merged_aliases`), and with ``record`` what an unmerge needs (the sources
        moved, the aliases KEEP gained); without it ``sources`` is None (a hand merge)."""
        aliases = _merged_aliases(keep, drop)
        return {"keep": self.keep, "drop": self.drop, "aliases": aliases,
                "sources": self.drop_sources() if record else None,
                "added": [a for a in aliases if a not in keep["aliases"]]}

    def report(self) -> list[MergedEdge]:
        """One :class:`MergedEdge` per edge of DROP the merge touched, by old key."""
        fate = {r["old_key"]: ("moved" if r["created"] else "retired" if r["key"] == r["old_key"]
                               else "already_promoted") for r in self.done}
        out = [MergedEdge(old_key=e["key"], new_key=None, relation=e["relation"], outcome="self_loop",
                          votes_after=int(e["props"].get("votes") or 0), promoted=fate.get(e["key"]))
               for e in self.loops]
        out += [MergedEdge(old_key=e["key"], new_key=e["new_key"], relation=e["relation"],
                           outcome="united" if e["new_key"] in self.targets else "moved",
                           votes_before=r["_before"], votes_after=r["props"]["votes"], promoted=fate.get(e["key"]))
                for e, r in zip(self.movers, self.rows)]
        listed = {m.old_key for m in out}
        out += [MergedEdge(old_key=p["key"], new_key=pr["key"] if pr["recreate"] else None, relation=p["relation"],
                           outcome="promoted_only" if pr["recreate"] else "self_loop", promoted=fate.get(p["key"]))
                for p, pr in zip(self.prom, self.prow) if p["key"] not in listed]
        return sorted(out, key=lambda m: m.old_key)

    def decisions(self, report: list[MergedEdge]) -> list[dict]:
        """One ``merge`` decision per moved edge, about its old key and the new key it moved to."""
        rows = []
        for m in report:
            inputs = json.dumps({"merge": {"keep": self.keep, "drop": self.drop}, **m.model_dump()}, sort_keys=True)
            if m.new_key is None:
                rows.append({"id": uuid.uuid4().hex, "key": m.old_key, "action": "merge", "round": self.version,
                             "reason": f"self-loop after {self.reason}: rejected, not moved", "inputs": inputs})
                continue
            rows.append({"id": uuid.uuid4().hex, "key": m.old_key, "new_key": m.new_key, "action": "merge",
                         "round": self.version, "reason": f"{self.reason}: moved to {m.new_key} ({m.outcome})",
                         "received": f"{self.reason}: received {m.old_key} ({m.outcome})", "inputs": inputs})
        return rows


def _merged_aliases(k: dict, d: dict) -> list[str]:
    """KEEP's aliases, then DROP's name and aliases, bounded like staging's."""
    aliases = list(k["aliases"])
    for a in [d["name"], *d["aliases"]]:
        if a is not None and a not in aliases:
            aliases.append(a)
    return aliases[:MAX_ALIASES] if len(k["aliases"]) < MAX_ALIASES else list(k["aliases"])


def merge_in_tx(tx: Tx, keep: str, drop: str, *, version: int, now: float, reason: str,
                record: bool = True) -> tuple[MergeResult, list[str], list[str]]:
    """The merge of ``drop`` into ``keep`` inside an open write unit whose version is ``version``
    (several merges and splits share one version in ``kgr resolve``). Returns the result (``hash``
    empty: the caller closes the version) and the promoted edge keys created and retired. With
    ``record`` (resolution's merges), DROP records what an unmerge needs (:mod:`kgr.store.unmerge`);
    a hand merge (``kgr merge``) does not, so a forget never undoes it."""
    ents = {r["key"]: r for r in tx.run("merge_lock_entities", {"keys": sorted((keep, drop))})}
    _check_pair(ents, keep, drop)
    moves = _Moves(keep, drop, version, reason)
    moves.move_pending(tx)
    moves.move_promoted(tx)
    row = moves.entity_row(ents[keep], ents[drop], record=record)
    ent = tx.run("merge_entities_write", {**row, "version": version})[0]
    report = moves.report()
    decisions = moves.decisions(report)
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": now})
    created = [r["key"] for r in moves.done if r["created"]]
    retired = [r["old_key"] for r in moves.done]
    return MergeResult(
        version=version, keep=keep, drop=drop,
        pending_moved=sum(1 for m in report if m.outcome == "moved"),
        pending_united=sum(1 for m in report if m.outcome == "united"),
        votes_added=sum(r["_added"] for r in moves.rows),
        self_loops=sum(1 for m in report if m.outcome == "self_loop"),
        promoted_created=len(created), promoted_retired=len(retired),
        mentions_moved=ent["mentions"], rerouted=ent["rerouted"], aliases=row["aliases"],
        hash="", edges=report,
    ), created, retired


def merge_entities(graph: Graph, keep: str, drop: str, *, now: float | None = None) -> MergeResult:
    """Merge entity ``drop`` into entity ``keep`` as one version (semantics in the module docstring).

    Raises
    ------
    KgrNotFound
        If either key names no entity.
    KgrValidationError
        Same key twice, different types, KEEP already merged, DROP merged into another entity.
    """
    keep, drop = normalise_entity_key(keep), normalise_entity_key(drop)
    if keep == drop:
        raise KgrValidationError(f"cannot merge {keep!r} into itself", field="drop")
    ts = time.time() if now is None else now
    reason = f"merged {drop} into {keep}"

    def unit(tx: Tx) -> MergeResult:
        version, old_hash = open_version(tx)
        res, created, retired = merge_in_tx(tx, keep, drop, version=version, now=ts, reason=reason, record=False)
        new_hash = add_terms(old_hash, added=created, removed=retired)
        close_version(tx, version, new_hash, kind="merge", now=ts, note=reason,
                      promoted=len(created), retired=len(retired))
        return res.model_copy(update={"hash": new_hash})

    return graph.write_unit(unit)
