"""Many entity merges in one transaction, a few statements for all of them (``kgr resolve``).

A resolution merges hundreds of entities; :func:`kgr.store.merge.merge_in_tx` spends about eight
round trips on each. Here they are applied in **one wave**: every merge into every kept entity
(KEEP) at once, each step (lock, read the dropped entities' edges and promoted edges, read KEEP's
edges, move pending edges, reject self-loops, move promoted edges, write the entities, record
decisions) one statement for the whole wave.

The merges into one KEEP are **folded** in Python in their order (:class:`~kgr.store.merge_fold.KeepFold`):
KEEP's edges are read once (every key a merge moves an edge to), each merge unites its edges with
them as the merges before it left them (the same ``_Moves`` steps as a merge alone: its rows, its
promoted edges, its report and decisions with its own votes before and after), and each changed
edge is written once with its final properties. Different KEEPs touch disjoint entities, so the
wave leaves what the merges one by one (:func:`~kgr.store.merge.merge_in_tx`) leave: those of the
wave in the order given, then the deferred ones.

**Deferred** to a one-by-one merge after the wave, in the order given, is a merge the fold cannot
reproduce: its DROP has an edge to another entity of the wave that is not its own KEEP (an entity
another merge rewrites at the same time: another cluster's, or another DROP of its own KEEP, whose
edge the earlier merge would move onto KEEP first), or an entity of it takes part in another
cluster too (a KEEP that is also a DROP, a DROP listed twice, KEEP = DROP).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from kgr.gc_freeze import cycle_collector_paused
from kgr.store.connection import Tx
from kgr.store.merge import _check_pair, _Moves, merge_in_tx
from kgr.store.merge_fold import KeepFold

__all__ = ["merge_waves"]

Pair = tuple[str, str]


def _tangled(pairs: Sequence[Pair]) -> set[str]:
    """Entities that are in more than one cluster: a KEEP that is also a DROP, a DROP listed twice."""
    keeps = {k for k, _ in pairs}
    drops = Counter(d for _, d in pairs)
    return {d for d, n in drops.items() if n > 1 or d in keeps}


def _ready(pairs: Sequence[Pair], edges: dict[str, list[dict]]) -> tuple[list[Pair], list[Pair]]:
    """The pairs the wave folds and those deferred (module docstring), each in the order given."""
    members = {k for p in pairs for k in p}
    tangled = _tangled(pairs)
    ready: list[Pair] = []
    deferred: list[Pair] = []
    for keep, drop in pairs:
        others = members - {keep, drop}
        late = (keep == drop or keep in tangled or drop in tangled
                or any(e["s_key"] in others or e["o_key"] in others for e in edges[drop]))
        (deferred if late else ready).append((keep, drop))
    return ready, deferred


def _check_in_order(ents: dict[str, dict], pairs: Sequence[Pair]) -> None:
    """Each pair checked (:func:`~kgr.store.merge._check_pair`) on the entities as the merges before it
    leave them (DROP merged into KEEP, entities merged into DROP re-pointed to KEEP)."""
    state = {k: dict(v) for k, v in ents.items()}
    into: dict[str, list[str]] = defaultdict(list)
    for k, row in state.items():
        if row["merged_into"] is not None:
            into[row["merged_into"]].append(k)
    for keep, drop in pairs:
        _check_pair(state, keep, drop)
        for x in [*into.pop(drop, []), drop]:
            state[x]["merged_into"] = keep
            into[keep].append(x)


def _promoted_targets(mv: _Moves, promoted: list[dict]) -> list[dict]:
    """Where DROP's promoted edges would be re-created on KEEP (not the self-loops)."""
    ends = [mv.promoted_key(p) for p in promoted]
    return [{"key": key, "s_key": s, "o_key": o} for s, o, key in ends if key is not None]


def _asked(mvs: list[_Moves], promoted: dict[str, list[dict]]) -> tuple[dict[str, dict], dict[str, dict]]:
    """The KEEP edges (by key, ``{key, s_key, o_key}``) one cluster's merges move pending edges to, and
    those where they re-create promoted edges."""
    pending = {w["key"]: w for mv in mvs for w in mv.wanted()}
    return pending, {w["key"]: w for mv in mvs for w in _promoted_targets(mv, promoted[mv.drop])}


def _read_targets(tx: Tx, asked: list[tuple[dict[str, dict], dict[str, dict]]]) -> tuple[dict[str, dict], set[str]]:
    """KEEP's edges at every key asked (read and locked, as ``merge_read_edges`` reads them), and the
    keys among those asked for promoted edges that are current promoted edges already."""
    rows = list({k: w for pending, prom in asked for k, w in [*pending.items(), *prom.items()]}.values())
    prom = [w for _, p in asked for w in p.values()]
    targets = {t["key"]: t for t in tx.run("merge_read_edges", {"rows": rows}, targets=True)} if rows else {}
    current = {r["key"] for r in tx.run("merge_fold_promoted_current", {"rows": prom})} if prom else set()
    return targets, current


def _fold(fold: KeepFold, mv: _Moves, promoted: list[dict]) -> None:
    """One merge on the folded edges of its KEEP: its rows against them as they are now, then its
    promoted edges (``create``: whether this merge re-creates the edge, :meth:`KeepFold.promote`)."""
    mv.targets = fold.targets_for(e["new_key"] for e in mv.movers)
    mv.build_rows()
    for e, row in zip(mv.movers, mv.rows):
        fold.unite(e, row)
    mv.plan_promoted(promoted)
    for pr in mv.prow:
        pr["create"] = fold.promote(pr["key"]) if pr["recreate"] else False


def _move_pending(tx: Tx, folds: list[KeepFold], moves: list[_Moves]) -> None:
    """Every changed KEEP edge once with its final properties; every moved edge's tombstone and votes."""
    edges = [w for f in folds for w in f.writes()]
    olds = [{k: v for k, v in r.items() if k not in ("props", "s_key", "o_key")}
            for mv in moves for r in mv.write_rows()]
    if not edges and not olds:
        return
    out = tx.run("merge_fold_move_pending", {"edges": edges, "olds": olds})[0]
    if (out["written"], out["moved"]) != (len(edges), len(olds)):  # locked: cannot happen
        raise RuntimeError(f"merge wave wrote {out['written']} of {len(edges)} edges, "
                           f"{out['moved']} of {len(olds)} moved")


def _move_promoted(tx: Tx, moves: list[_Moves], version: int) -> None:
    """Promoted edges of every DROP retired and re-created where the fold says (``mv.done`` as a merge alone has it)."""
    prow = [r for mv in moves for r in mv.prow]
    done = {d["old_key"]: d for d in tx.run("merge_promoted_edges", {"rows": prow, "version": version},
                                            fold=True)} if prow else {}
    for mv in moves:
        mv.done = [done[r["old_key"]] for r in mv.prow if r["old_key"] in done]
        if any(done.get(r["old_key"], {}).get("created", False) != r["create"] for r in mv.prow):
            raise RuntimeError(f"merge of {mv.drop} into {mv.keep}: promoted edges created otherwise than folded")


def _entity_rows(ents: dict[str, dict], clusters: dict[str, list[_Moves]]) -> list[dict[str, Any]]:
    """One ``merge_fold_entities_write`` row per KEEP: its aliases after its last merge, and per DROP
    in order the sources moved and the aliases KEEP gained at that merge (as ``entity_row`` has them)."""
    rows = []
    for keep, mvs in clusters.items():
        k = ents[keep]
        drops = []
        for mv in mvs:
            row = mv.entity_row(k, ents[mv.drop])
            drops.append({"drop": mv.drop, "sources": row["sources"], "added": row["added"]})
            k = {**k, "aliases": row["aliases"]}
        rows.append({"keep": keep, "aliases": k["aliases"], "drops": drops})
    return rows


def _wave(tx: Tx, pairs: Sequence[Pair], version: int, now: float,
          reasons: dict[Pair, str]) -> tuple[list[str], list[str], list[Pair]]:
    """Fold and apply the merges ``pairs`` that can be (module docstring); the promoted edge keys
    created and retired, and the pairs deferred."""
    ents = {r["key"]: r for r in tx.run("merge_lock_entities", {"keys": sorted({k for p in pairs for k in p})})}
    edges: dict[str, list[dict]] = defaultdict(list)
    for e in tx.run("merge_wave_read_edges", {"drops": sorted({d for _, d in pairs})}):
        edges[e.pop("drop")].append(e)
    ready, deferred = _ready(pairs, edges)
    _check_in_order(ents, ready)
    clusters: dict[str, list[_Moves]] = defaultdict(list)
    for keep, drop in ready:
        mv = _Moves(keep, drop, version, reasons[(keep, drop)])
        mv.classify(edges[drop])
        clusters[keep].append(mv)
    moves = [mv for mvs in clusters.values() for mv in mvs]
    if not moves:
        return [], [], deferred
    promoted: dict[str, list[dict]] = defaultdict(list)
    for p in tx.run("merge_wave_drop_promoted", {"drops": [mv.drop for mv in moves]}):
        promoted[p.pop("drop")].append(p)
    asked = [_asked(mvs, promoted) for mvs in clusters.values()]
    targets, current = _read_targets(tx, asked)
    folds = []
    for mvs, (pending, prom) in zip(clusters.values(), asked):
        fold = KeepFold(version, [targets[k] for k in {**pending, **prom} if k in targets], current & prom.keys())
        for mv in mvs:
            _fold(fold, mv, promoted[mv.drop])
        folds.append(fold)
    _move_pending(tx, folds, moves)
    loops = [r for mv in moves for r in mv.loop_rows()]
    if loops:
        tx.run("merge_self_loops", {"rows": loops, "version": version})
    _move_promoted(tx, moves, version)
    tx.run("merge_fold_entities_write", {"rows": _entity_rows(ents, clusters), "version": version})
    decisions = [d for mv in moves for d in mv.decisions(mv.report())]
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": now})
    created = [d["key"] for mv in moves for d in mv.done if d["created"]]
    retired = [d["old_key"] for mv in moves for d in mv.done]
    return created, retired, deferred


@cycle_collector_paused()
def merge_waves(tx: Tx, pairs: Sequence[Pair], *, version: int, now: float,
                reasons: dict[Pair, str]) -> tuple[list[str], list[str]]:
    """Apply the merges ``pairs`` (KEEP, DROP) inside an open write unit: one wave, then the deferred
    merges one by one (module docstring); the promoted edge keys created and retired (for the content hash).

    The cycle collector is paused meanwhile (:func:`~kgr.gc_freeze.cycle_collector_paused`): the wave
    makes ~100,000 short-lived dicts and lists and no cycles, and in a resolution's process a full
    collection rescans the plan's objects (0.2-0.4 s of a 1.5 s wave on 1,541 merges)."""
    created, retired, later = _wave(tx, pairs, version, now, reasons) if pairs else ([], [], [])
    for keep, drop in later:
        _, c, r = merge_in_tx(tx, keep, drop, version=version, now=now, reason=reasons[(keep, drop)])
        created += c
        retired += r
    return created, retired
