"""Unmerge: the entities merged into some kept entities restored with their own sources' votes, as one version.

A merge (:mod:`kgr.store.merge`) records on the dropped entity DROP what undoing it needs:
``merged_sources`` (the sources of the votes it moved to KEEP) and ``merged_aliases`` (the aliases
KEEP gained). When a forget (:mod:`kgr.store.forget`) removes votes at KEEP or the chunks that
mentioned it, the merges into KEEP lose evidence that motivated them; :func:`unmerge` then undoes
**every** merge into each such KEEP, so that the next resolution (``kgr resolve``, the step at the end
of ``kgr ingest``, or :meth:`kgr.engine.Engine.forget`) re-decides them on the remaining evidence,
as a fresh resolution of the remaining corpus would:

- a source belongs to the DROP whose ``merged_sources`` hold it, the earliest-merged one when
  several do (an entity merged into DROP before DROP was merged carries its sources into DROP's list);
  the others stay with KEEP;
- each DROP is no longer merged (``merged_into`` removed, ``unmerged_at_version`` set), KEEP loses
  the aliases DROP's merges gave it, DROP's merge tombstones are deleted and its rejected self-loops
  are pending again;
- the votes of DROP's sources move from KEEP's edges back to DROP, exactly as a split moves them
  (:func:`kgr.store.split.move_sources_many`: every per-vote field carried, promoted edges moved
  when all their votes move, the content hash updated term by term); a KEEP edge left with no vote
  is deleted (a fresh staging would not have it);
- a DROP whose every source was forgotten gets no vote back: it is gone with its evidence (an
  orphan is deleted like a forget's);
- a promoted edge that the moves leave below ``quorum`` votes (default 2, a forget's own ``quorum``)
  is retired as a forget retires one (held, with a ``retract`` decision): a KEEP edge that kept some
  of its votes, or one that moved whole to a DROP (its last votes went back to one DROP after others
  had taken theirs). Its promotion counted votes a fresh staging would not give that edge.

The version (kind ``unmerge``) is reversible like any: a rollback to the version before restores
the promoted edge set (the pending edges stay where the unmerge put them, like a merge's).

**Not undone.** A hand merge (``kgr merge``: a person's decision, kept like a label) and a merge
made before merges recorded their sources have no ``merged_sources``: they stay.

A source staged under DROP's name *after* the merge lands on KEEP (staging follows ``merged_into``)
and joins DROP's ``merged_sources`` (:func:`kgr.store.stage_rows.redirected_sources`), so it goes back
to DROP too.

**Not recovered.** A source that voted on both DROP's and KEEP's edges (it named both) is DROP's
only: its votes on KEEP's own edges move with it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Collection

from kgr.store.connection import Graph, Tx
from kgr.store.quorum_retire import promoted_below_quorum, retire_below_quorum
from kgr.store.split import Move, move_sources_many
from kgr.store.versions import add_terms, close_version, open_version

__all__ = ["unmerge", "unmerge_after", "origins", "resolution_due"]


def origins(drops: list[dict]) -> dict[str, list[str]]:
    """The sources each DROP gets back: those in its ``sources``, the earliest-merged DROP (by ``at``,
    then key) winning a source several hold.

    >>> origins([{"key": "P:b", "sources": ["s1", "s2"], "at": 7}, {"key": "P:a", "sources": ["s1"], "at": 3}])
    {'P:a': ['s1'], 'P:b': ['s2']}
    """
    owner: dict[str, str] = {}
    for d in sorted(drops, key=lambda d: (d["at"], d["key"])):
        for s in d["sources"]:
            owner.setdefault(s, d["key"])
    out: dict[str, list[str]] = {d["key"]: [] for d in sorted(drops, key=lambda d: d["key"])}
    for s, k in sorted(owner.items()):
        out[k].append(s)
    return out


def unmerge(graph: Graph, keeps: Collection[str] = (), *, types: Collection[str] = (), reason: str = "",
            now: float | None = None, quorum: int = 2) -> tuple[int | None, list[str]]:
    """Undo every merge into the entities ``keeps``, or with ``types`` every merge of an entity of
    those types, as one version (module docstring); returns the version (None when there was no
    such merge) and the keys of the entities unmerged."""
    ts = time.time() if now is None else now
    keeps, types = sorted(set(keeps)), sorted(set(types))
    if not keeps and not types:
        return None, []
    try:
        return graph.write_unit(lambda tx: _unmerge_unit(tx, keeps, types, reason, ts, quorum))
    except _Nothing:
        return None, []


def unmerge_after(tx: Tx, *, types: Collection[str], reason: str, now: float,
                  quorum: int = 2) -> tuple[int | None, list[str]]:
    """:func:`unmerge` of every recorded merge of ``types`` inside a write unit that already holds
    the version lock (a forget's, :func:`kgr.store.forget.forget`): its own version, committed with
    the caller's or not at all, so no crash can leave a forget without its unmerge."""
    drops = tx.run("unmerge_read", {"keeps": [], "types": sorted(set(types))}, by_type=True) if types else []
    if not drops:
        return None, []
    version, old_hash = open_version(tx)  # the lock is held: this only numbers the second version
    return _undo(tx, drops, version, old_hash, reason, now, quorum)


class _Nothing(Exception):
    """Nothing is merged into the given entities: the unit rolls back (no version is spent)."""


def _unmerge_unit(tx: Tx, keeps: list[str], types: list[str], reason: str, now: float,
                  quorum: int) -> tuple[int | None, list[str]]:
    version, old_hash = open_version(tx)  # the version lock first, then entities, as a merge takes them
    drops = tx.run("unmerge_read", {"keeps": keeps, "types": types}, by_type=bool(types))
    if not drops:
        raise _Nothing()
    return _undo(tx, drops, version, old_hash, reason, now, quorum)


def _undo(tx: Tx, drops: list[dict], version: int, old_hash: str, reason: str, now: float,
          quorum: int) -> tuple[int, list[str]]:
    """Undo the merges ``drops`` (rows of ``unmerge_read``) as version ``version`` (module docstring),
    and record that a resolution of their types is due (:func:`resolution_due`)."""
    kept = sorted({d["keep"] for d in drops})
    tx.run("merge_lock_entities", {"keys": kept})
    live = [{"key": e["key"], "s_key": e["s_key"], "o_key": e["o_key"]}
            for e in tx.run("merge_wave_read_edges", {"drops": kept})
            if e["props"].get("status") != "merged"]
    tx.run("unmerge_entities", {"rows": [{"drop": d["key"], "keep": d["keep"], "aliases": d["aliases"]}
                                         for d in drops], "version": version})
    why = reason or "unmerge"
    keep_of = {d["key"]: d["keep"] for d in drops}
    own = origins(drops)
    moves = [Move(keep_of[k], k, tuple(sources), f"{why}: {k} unmerged from {keep_of[k]}")
             for k, sources in own.items() if sources]
    moved = move_sources_many(tx, moves, version=version, now=now)
    if live:
        tx.run("unmerge_drop_emptied", {"rows": live})
    below = _retire_below_quorum(tx, sorted({*kept, *keep_of}), quorum, version, now, why)
    tx.run("forget_orphans", {"keys": sorted({*keep_of, *keep_of.values()})})
    tx.run("resolve_due_add", {"types": sorted({k.partition(":")[0] for k in keep_of})})
    new_hash = add_terms(old_hash, added=moved.created, removed=[*moved.retired, *below])
    close_version(tx, version, new_hash, kind="unmerge", now=now,
                  note=f"{why}: {len(drops)} entities unmerged from {len(set(keep_of.values()))}",
                  promoted=len(moved.created), retired=len(moved.retired) + len(below))
    return version, sorted(keep_of)


def _retire_below_quorum(tx: Tx, entities: list[str], quorum: int, version: int, now: float, why: str) -> list[str]:
    """Retire the promoted edges at ``entities`` that the moves left with fewer than ``quorum`` votes (held,
    each with a ``retract`` decision, as :func:`kgr.store.forget.forget` does); their keys."""
    rows = promoted_below_quorum(tx, entities, quorum)
    gone = retire_below_quorum(tx, rows, quorum=quorum, version=version, why=why)
    if gone:
        tx.run("record_decisions", {"rows": [
            {"id": uuid.uuid4().hex, "key": r["key"], "action": "retract", "round": version,
             "reason": f"{why}: {r['votes']} vote(s) left, quorum {quorum}; retired",
             "inputs": json.dumps({"votes_after": r["votes"], "retired": True, "quorum": quorum})}
            for r in rows if r["key"] in gone], "version": version, "now": now})
    return sorted(gone)


def resolution_due(graph: Graph) -> list[str]:
    """The entity types an unmerge left for a resolution to re-decide (``(:KgrState).resolve_due``):
    written in the unmerge's own transaction and cleared by the next resolution of the type
    (:func:`kgr.store.resolve.resolve`), so a process that stops between the two leaves the debt
    recorded, and the next ``kgr ingest``, ``kgr resolve`` or forget pays it."""
    rows = graph.read("resolve_due_read")
    return list(rows[0]["types"]) if rows else []
