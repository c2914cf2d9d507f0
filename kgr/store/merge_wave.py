"""Many entity merges in one transaction, a few statements for all of them (``kgr resolve``).

A resolution merges hundreds of entities; :func:`kgr.store.merge.merge_in_tx` spends about eight
round trips on each. Here the merges are applied in **waves**: a wave holds at most one merge per
kept entity (KEEP), so its merges touch disjoint entities, and each step of a merge (lock, read
edges, read KEEP's edges, move pending edges, reject self-loops, move promoted edges, write the
entities, record decisions) runs once for the whole wave with ``UNWIND``. What each merge computes
and writes is exactly what :mod:`kgr.store.merge` computes and writes for it alone (the same
``_Moves`` steps); a merge whose DROP has an edge to another entity of its wave (whose key the other
merge rewrites at the same time) is deferred to a one-by-one merge after the waves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from kgr.store.connection import Tx
from kgr.store.merge import _check_pair, _merged_aliases, _Moves, merge_in_tx

__all__ = ["merge_waves"]


def _waves(pairs: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    by_keep: dict[str, list[str]] = defaultdict(list)
    for keep, drop in pairs:
        by_keep[keep].append(drop)
    depth = max((len(d) for d in by_keep.values()), default=0)
    return [[(k, ds[w]) for k, ds in sorted(by_keep.items()) if w < len(ds)] for w in range(depth)]


def _wave(tx: Tx, pairs: list[tuple[str, str]], version: int, now: float,
          reasons: dict[tuple[str, str], str]) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    ents = {r["key"]: r for r in tx.run("merge_lock_entities", {"keys": sorted({k for p in pairs for k in p})})}
    for keep, drop in pairs:
        _check_pair(ents, keep, drop)
    edges: dict[str, list[dict]] = defaultdict(list)
    for e in tx.run("merge_wave_read_edges", {"drops": [d for _, d in pairs]}):
        edges[e.pop("drop")].append(e)
    members = {k for p in pairs for k in p}
    ready, deferred = [], []
    for keep, drop in pairs:
        others = members - {keep, drop}
        if any(e["s_key"] in others or e["o_key"] in others for e in edges[drop]):
            deferred.append((keep, drop))
        else:
            ready.append((keep, drop))
    moves = [_Moves(keep, drop, version, reasons[(keep, drop)]) for keep, drop in ready]
    for mv in moves:
        mv.classify(edges[mv.drop])
    wanted = [w for mv in moves for w in mv.wanted()]
    targets = {t["key"]: t for t in tx.run("merge_read_edges", {"rows": wanted}, targets=True)} if wanted else {}
    for mv in moves:
        mv.targets = {k: targets[k] for k in (w["key"] for w in mv.wanted()) if k in targets}
        mv.build_rows()
    rows = [r for mv in moves for r in mv.write_rows()]
    if rows:
        tx.run("merge_move_pending", {"rows": rows})
    loops = [r for mv in moves for r in mv.loop_rows()]
    if loops:
        tx.run("merge_self_loops", {"rows": loops, "version": version})
    promoted: dict[str, list[dict]] = defaultdict(list)
    for p in tx.run("merge_wave_drop_promoted", {"drops": [mv.drop for mv in moves]}) if moves else []:
        promoted[p.pop("drop")].append(p)
    for mv in moves:
        mv.plan_promoted(promoted[mv.drop])
    prow = [r for mv in moves for r in mv.prow]
    done = {d["old_key"]: d for d in tx.run("merge_promoted_edges", {"rows": prow, "version": version})} if prow else {}
    for mv in moves:
        mv.done = [done[r["old_key"]] for r in mv.prow if r["old_key"] in done]
    if moves:
        tx.run("merge_wave_entities_write", {"rows": [mv.entity_row(ents[mv.keep], ents[mv.drop]) for mv in moves],
                                             "version": version})
        ents_after_aliases(ents, moves)
    decisions = [d for mv in moves for d in mv.decisions(mv.report())]
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": now})
    created = [d["key"] for mv in moves for d in mv.done if d["created"]]
    retired = [d["old_key"] for mv in moves for d in mv.done]
    return created, retired, deferred


def ents_after_aliases(ents: dict[str, dict], moves: list[_Moves]) -> None:
    """Keep the locked entity rows current for the next wave's alias lists."""
    for mv in moves:
        ents[mv.keep] = {**ents[mv.keep], "aliases": _merged_aliases(ents[mv.keep], ents[mv.drop])}


def merge_waves(tx: Tx, pairs: Sequence[tuple[str, str]], *, version: int, now: float,
                reasons: dict[tuple[str, str], str]) -> tuple[list[str], list[str]]:
    """Apply the merges ``pairs`` (KEEP, DROP) in waves inside an open write unit (module docstring);
    the promoted edge keys created and retired (for the content hash)."""
    created: list[str] = []
    retired: list[str] = []
    later: list[tuple[str, str]] = []
    for wave in _waves(pairs):
        c, r, deferred = _wave(tx, wave, version, now, reasons)
        created += c
        retired += r
        later += deferred
    for keep, drop in later:
        _, c, r = merge_in_tx(tx, keep, drop, version=version, now=now, reason=reasons[(keep, drop)])
        created += c
        retired += r
    return created, retired
