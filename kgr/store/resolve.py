"""Entity resolution on the store: read the units, plan with :mod:`kgr.resolution`, apply as one version.

:func:`resolve` reads every live entity (of one type, or all) with its staged edges and their vote
sources (pages of :data:`PAGE` entities, in key order), cuts them into units
(:func:`kgr.resolution.units.build_units`; functional relations from the KG schema), plans each
entity type (:func:`kgr.resolution.plan.plan_type`: blocking, comparison vectors, Fellegi–Sunter with
EM and term-frequency adjustment, the target-FMR cut, constrained clustering) and, unless
``dry_run``, applies the plan in **one write transaction and one version** (kind ``resolve``):

1. splits first: the sources of each entity's units away from home move, with their votes, to their
   cluster's kept entity, a new split entity where none is at home (:func:`kgr.store.split.move_sources_many`: waves of
   independent moves, a few statements each);
2. then merges, each exactly as ``kgr merge`` records it (``merged_into``, aliases, votes united by
   source, promoted edges moved, decisions), many at a time (:mod:`kgr.store.merge_wave`);
3. the uncertain band is written as ``(:MatchCandidate)`` nodes: the queue of ``kgr review pairs``.

The content hash moves by the promoted edges created and retired, so a rollback to a version before
the resolution restores the promoted edge set exactly (like a merge's: pending edges stay where the
resolution put them). Reviewer labels (``(:MatchLabel)``, :func:`record_pair_labels`) are read back
at the next resolution: a merge label is a must-link and a no-merge label a cannot-link, and both
anchor the EM fit (supervised). The plan is computed from a read before the write; staging that runs
meanwhile is not lost (a merge moves whatever DROP holds when it runs; a split moves only the listed
sources).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

import numpy as np

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import canonical_name, normalise_entity_key
from kgr.model.resolution import (MergeProposal, PairEvidence, PairLabel, PairLabelReport, ResolveReport,
                                  SplitProposal, SplitReport)
from kgr.model.schema import KGSchema
from kgr.resolution.operations import split_key
from kgr.resolution.plan import TieBreak, TypePlan, plan_type
from kgr.resolution.units import EdgeView, EntityView, Unit, build_units
from kgr.store.connection import Graph, Tx
from kgr.store.merge_wave import merge_waves
from kgr.store.split import Move, create_split_entity, move_sources_many
from kgr.store.versions import add_terms, close_version, open_version

__all__ = ["resolve", "split_entity", "read_entities", "record_pair_labels", "review_pairs", "pair_labels",
           "PAGE", "MAX_LISTED"]

#: Entities read per query.
PAGE = 5000
#: Review and blocked pairs kept in a report (the most likely first); the counts are exact.
MAX_LISTED = 500
#: A function from texts to vectors (name embeddings for blocking).
Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def read_entities(graph: Graph, etype: str | None = None) -> list[EntityView]:
    """Every live entity (of ``etype``) with its staged edges, vote sources and their documents."""
    out: list[EntityView] = []
    after = ""
    while True:
        rows = graph.read("resolve_read_entities", {"type": etype, "after": after, "page": PAGE})
        if not rows:
            return out
        sources = sorted({s for r in rows for e in r["edges"] for s in e[3]})
        docs = {d["source"]: d["document"] for d in graph.read("resolve_source_documents", {"sources": sources})}
        for r in rows:
            edges = tuple(EdgeView(relation=e[0], outgoing=bool(e[1]), other=e[2], sources=tuple(e[3]))
                          for e in sorted(r["edges"], key=lambda e: (e[0], not e[1], e[2])))
            mine = {s: docs[s] for e in edges for s in e.sources if s in docs}
            out.append(EntityView(key=r["key"], type=r["type"], edges=edges, documents=mine))
        after = rows[-1]["key"]


def pair_labels(graph: Graph) -> dict[tuple[str, str], bool]:
    """Every reviewer label, by sorted entity-key pair."""
    return {(min(r["a"], r["b"]), max(r["a"], r["b"])): bool(r["label"]) for r in graph.read("resolve_labels_read")}


def _functional(schema: KGSchema | None) -> list[str]:
    return sorted(r for r, spec in (schema.relation_types.items() if schema else []) if spec.functional)


def _declared(schema: KGSchema | None, etype: str) -> set[str]:
    spec = schema.entity_types.get(etype) if schema is not None else None
    out: set[str] = set()
    for n in [*(spec.names if spec else []), *(spec.aliases if spec else {})]:
        try:
            out.add(canonical_name(n))
        except KgrValidationError:
            continue
    return out


def _plans(graph: Graph, schema: KGSchema | None, etype: str | None, *, target_fmr: float,
           embed: Embed | None, tie_break: TieBreak | None) -> list[TypePlan]:
    views = read_entities(graph, etype)
    units = build_units(views, _functional(schema))
    labels = pair_labels(graph)
    by_type: dict[str, list[Unit]] = {}
    for u in units:
        by_type.setdefault(u.type, []).append(u)
    plans = []
    for t in sorted(by_type):
        us = by_type[t]
        vectors = np.asarray(embed([u.name for u in us]), dtype=np.float32) if embed is not None and len(us) > 1 else None
        plans.append(plan_type(us, functional=_functional(schema), declared=_declared(schema, t), labels=labels,
                               target_fmr=target_fmr, vectors=vectors, tie_break=tie_break))
    return plans


def resolve(graph: Graph, schema: KGSchema | None = None, *, etype: str | None = None, dry_run: bool = False,
            target_fmr: float = 0.02, embed: Embed | None = None, tie_break: TieBreak | None = None,
            now: float | None = None, apply_splits: bool = True) -> ResolveReport:
    """Resolve the entities (of ``etype``) and apply the result as one version (module docstring).

    With ``apply_splits=False`` the splits are proposed (listed in the report, ``splits_applied``
    False) but not applied: the merges alone make the version.

    Raises
    ------
    KgrValidationError
        ``target_fmr`` outside (0, 1).
    KgrNotFound
        The store is not initialised.
    """
    if not 0.0 < target_fmr < 1.0:
        raise KgrValidationError("target_fmr must be between 0 and 1", field="target_fmr")
    started = time.perf_counter()
    plans = _plans(graph, schema, etype, target_fmr=target_fmr, embed=embed, tie_break=tie_break)
    rep = ResolveReport(dry_run=dry_run, target_fmr=target_fmr, types=[p.model for p in plans],
                        merges=[m for p in plans for m in p.merges], splits=[s for p in plans for s in p.splits],
                        review=_top([r for p in plans for r in p.review]),
                        blocked=_top([b for p in plans for b in p.blocked]),
                        accepted_pairs=sum(p.accepted for p in plans),
                        expected_wrong_merges=round(sum(p.expected_wrong for p in plans), 6),
                        llm_decisions=sum(p.llm_decisions for p in plans))
    rep.splits_applied = apply_splits and not dry_run
    splits = rep.splits if apply_splits else []
    if not dry_run and (rep.merges or splits):
        version, new_hash = apply(graph, rep.merges, splits, [r for p in plans for r in p.review],
                                  now=time.time() if now is None else now, decided=(etype,))
        rep.version, rep.hash = version, new_hash
    elif not dry_run:  # nothing to merge or split: only the review queue is brought up to date

        def review_only(tx: Tx) -> None:
            _write_review(tx, [r for p in plans for r in p.review], None)
            tx.run("resolve_due_clear", {"type": etype})

        graph.write_unit(review_only)
    rep.seconds = round(time.perf_counter() - started, 3)
    return rep


def _top(items: list[PairEvidence]) -> list[PairEvidence]:
    return sorted(items, key=lambda e: (-e.probability, e.a_unit, e.b_unit))[:MAX_LISTED]


def apply(graph: Graph, merges: Sequence[MergeProposal], splits: Sequence[SplitProposal],
          review: Sequence[PairEvidence] = (), *, now: float, note: str = "",
          decided: Sequence[str | None] = ()) -> tuple[int, str]:
    """Apply splits, then merges, and write the review candidates, as one version; ``(version, hash)``.
    ``decided``: the entity types (None: every type) this resolution re-decided, whose debt an unmerge
    recorded is paid in the same transaction (:func:`kgr.store.unmerge.resolution_due`)."""

    def unit(tx: Tx) -> tuple[int, str]:
        version, old_hash = open_version(tx)
        created: list[str] = []
        retired: list[str] = []
        for sp in splits:  # the new entities first (a split entity's row reads only its parent's node)
            if sp.new_entity:
                create_split_entity(tx, sp.entity, sp.into, version=version, now=now)
        moved = move_sources_many(tx, [Move(sp.entity, sp.into, tuple(sp.sources),
                                            f"resolve: split {len(sp.sources)} sources of {sp.entity} to {sp.into}")
                                       for sp in splits], version=version, now=now)
        created += moved.created
        retired += moved.retired
        reasons = {(mg.keep, mg.drop): f"resolve: merged {mg.drop} into {mg.keep} (p = {mg.probability:.4f})"
                   for mg in merges}
        c, r = merge_waves(tx, [(mg.keep, mg.drop) for mg in merges], version=version, now=now, reasons=reasons)
        created += c
        retired += r
        _write_review(tx, review, version)
        for etype in decided:
            tx.run("resolve_due_clear", {"type": etype})
        new_hash = add_terms(old_hash, added=created, removed=retired)
        close_version(tx, version, new_hash, kind="resolve", now=now,
                      note=note or f"resolve: {len(merges)} merges, {len(splits)} splits",
                      promoted=len(created), retired=len(retired))
        return version, new_hash

    return graph.write_unit(unit)


def _write_review(tx: Tx, review: Sequence[PairEvidence], version: int | None) -> None:
    best: dict[str, PairEvidence] = {}
    for r in review:
        if r.decision != "review" or r.a == r.b:
            continue
        pid = "|".join(sorted((r.a, r.b)))
        if pid not in best or r.probability > best[pid].probability:
            best[pid] = r
    rows = [{"id": pid, "a": min(r.a, r.b), "b": max(r.a, r.b), "probability": r.probability,
             "evidence": r.model_dump_json()} for pid, r in sorted(best.items())]
    tx.run("resolve_review_write", {"rows": rows, "version": version})


def review_pairs(graph: Graph, *, limit: int = 20) -> list[PairEvidence]:
    """The queue of ``kgr review pairs``: entity pairs in the uncertain band, most uncertain first."""
    if not 1 <= limit <= 1000:
        raise KgrValidationError("limit must be between 1 and 1000", field="limit")
    return [PairEvidence.model_validate(json.loads(r["evidence"]))
            for r in graph.read("resolve_review_read", {"limit": limit})]


def record_pair_labels(graph: Graph, labels: Sequence[PairLabel], *, now: float | None = None) -> PairLabelReport:
    """Record merge / no-merge labels on entity pairs (read by the next :func:`resolve`)."""
    rows = []
    for lab in labels:
        a, b = _known_key(lab.a), _known_key(lab.b)
        if a == b:  # an entity is itself: nothing to learn
            continue
        rows.append({"id": "|".join(sorted((a, b))), "a": min(a, b), "b": max(a, b), "label": lab.label,
                     "reviewer": lab.reviewer})
    if not rows:
        return PairLabelReport()
    keys = sorted({r[k] for r in rows for k in ("a", "b")})
    missing = sorted(set(keys) - {r["key"] for r in graph.read("resolve_entities_exist", {"keys": keys})})
    if missing:
        raise KgrNotFound(f"no entity with key {missing[0]!r}" + (f" and {len(missing) - 1} more" if len(missing) > 1
                                                                   else "") + ": nothing was recorded")
    out = graph.write("resolve_labels_write", {"rows": rows, "now": time.time() if now is None else now})[0]
    return PairLabelReport(labelled=out["labelled"], relabelled=out["relabelled"])


def _known_key(key: str) -> str:
    """``key`` normalised; a key no entity can have (its name invalid) is not found."""
    try:
        return normalise_entity_key(key)
    except KgrValidationError:
        raise KgrNotFound(f"no entity with key {key[:80]!r}") from None


def split_entity(graph: Graph, schema: KGSchema | None, key: str, *, dry_run: bool = False,
                 now: float | None = None) -> SplitReport:
    """``kgr split KEY``: split entity ``key`` where its sources' functional values conflict (its type's
    model places the neutral sources), as one version; no merges."""
    key = _known_key(key)
    ent_type = key.partition(":")[0]
    plans = _plans(graph, schema, ent_type, target_fmr=0.02, embed=None, tie_break=None)
    if not any(key in p.entities for p in plans):
        raise KgrNotFound(f"no live entity with key {key!r}")
    splits = [s for p in plans for s in _own_splits(p, key)]
    rep = SplitReport(entity=key, splits=splits)
    if splits and not dry_run:
        rep.version, rep.hash = apply(graph, [], splits, now=time.time() if now is None else now,
                                      note=f"split {key}: {len(splits)} groups")
    return rep


def _own_splits(plan: TypePlan, key: str) -> list[SplitProposal]:
    """The split moves of ``key`` alone, each to a new entity of its own (no merges with others)."""
    out = []
    for s in plan.splits:
        if s.entity != key:
            continue
        new = split_key(key, key.partition(":")[0], s.sources)
        out.append(s.model_copy(update={"into": new, "new_entity": True}))
    return out
