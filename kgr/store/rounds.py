"""Promotion rounds on the store: read what a policy asks for, write what it decided. No decisions here.

A round is::

    context   = read_context(graph, policy.name)           # version, hash, counts, the policy's state
    request   = policy.plan(context, state)                # what to read (candidates, graph, labels ...)
    inputs    = read_round(graph, request, context)        # typed rows: RoundInputs
    decisions = policy.decide(inputs, state)               # pure (kgr.promotion.policies)
    summary   = write_round(graph, decisions, inputs)      # one version, one transaction

:func:`run_round` does all of it for any policy of :mod:`kgr.promotion.policies` (the seam: the geDIG,
quorum and calibrated policies run through the same function).

**One transaction, checked.** :func:`write_round` opens the version under the state lock and first
checks that the store is still at the version the round read: a concurrent round (or merge,
rollback, label, forget) that committed in between makes the write fail with :class:`RoundConflict`,
nothing is written, and :func:`run_round` reads and decides again after a jittered backoff; past
its bound it takes the store's promotion lock, which holds every other versioned writer back until
the round has written, so a round finishes however busy the store is
(:mod:`kgr.store.promotion_lock`). The round's decisions, the policy's new state, refitted scores
and the version record are written in that one transaction. Promotions, rejections and expiries
are ``(:Decision)`` nodes; a hold, which changes nothing in the promoted graph and is most of a
round's decisions, is recorded on its edge (``held_version``, ``held_reason``, ``held_inputs``) and
tallied on the version (``holds``, :mod:`kgr.store.decision_tally`): a node and two index entries
per held edge were 24–35 % of a cold round's write (measured on the 100k bench, 27 Nov 2026).

**Grace-period audit, inside the transaction.** After its promotions are written, and before it
commits, the round checks that no subject now has two current objects on a functional relation.
If one does, the transaction is abandoned (nothing is written) and the round is written again with
those promotions held (``hold = audit``: decided again next round), so a round never commits a conflict.

**What is read.** Candidates (``round_candidates_read``) carry every piece of evidence the store
holds: votes, independent documents (a chunk's document, or the part of a source before ``#``),
confidences, the mean extraction quality of the source chunks, verifier answers, a reviewer's
label. The promoted graph (``round_promoted_read``: parallel lists, O(edges)) is kept
in a per-process cache keyed by the store's (version, hash) and updated with the round's own
promotions, so ``kgr promote --until-done`` reads it once.
"""

from __future__ import annotations

import functools
import json
import random
import time
import uuid
from collections.abc import Callable

from kgr.errors import KgrConflict, KgrNotFound, KgrValidationError
from kgr.model.decisions import CutReport, EdgeDecision, RoundSummary
from kgr.model.promotion import (
    CandidateRow,
    EdgeList,
    LabelRow,
    RoundContext,
    RoundDecisions,
    RoundInputs,
    RoundRequest,
    ScoredEdge,
)
from kgr.model.schema import KGSchema
from kgr.store.connection import Graph, Tx
from kgr.store.decision_tally import tally_holds
from kgr.store.promoted_cache import PROMOTED_CACHE, PromotedGraphCache
from kgr.store.promotion_lock import PromotionLocked, retry_then_lock
from kgr.store.settle import read_settle
from kgr.store.versions import add_terms, close_version, open_version

__all__ = ["RoundConflict", "read_context", "read_round", "write_round", "run_round", "policy_state",
           "PromotedGraphCache"]

_STATUS = {"hold": "held", "reject": "rejected", "expire": "expired"}
#: Rows per statement when a round writes many (one transaction, several statements).
_BATCH = 10_000
#: Labelled edges (newest first) whose features a round recomputes for the scorer's refit.
MAX_LABELLED_READ = 5000


class RoundConflict(KgrConflict):
    """The store moved on (another round, merge, rollback or label committed) after the round read it."""


class _AuditFailed(Exception):
    """Inside a write unit: the round's promotions break a functional relation (the unit is abandoned)."""

    def __init__(self, conflicts: list[tuple[str, str, list[str]]]):
        super().__init__(f"{len(conflicts)} functional conflicts")
        self.conflicts = conflicts


def policy_state(graph: Graph, policy: str) -> str | None:
    """The persisted state (JSON) of ``policy``, or None."""
    rows = graph.read("policy_state_read", {"policy": policy})
    return rows[0]["state"] if rows else None


def read_context(graph: Graph, policy: str, *, cache: PromotedGraphCache | None = None,
                 counts: bool = True) -> tuple[RoundContext, str | None]:
    """The store's version, hash and counts, and ``policy``'s persisted state.

    With ``counts`` (the default), the promoted graph's size and its predicted false promotions (:math:`\\sum (1 - \\hat p)` over
    edges that carry a score) come from the promoted edges, which the round reads anyway (cached).
    """
    rows = graph.read("round_state", {"policy": policy})
    if not rows:
        raise KgrNotFound("the store is not initialised: run `kgr init`")
    r = rows[0]
    created = r.get("created_at")
    ctx = RoundContext(version=int(r["version"]), hash=r["hash"], labels=int(r["labels"]),
                       created_at=None if created is None else float(created))
    if not counts:
        return ctx, r["state"]
    edges, _, _ = (cache or PROMOTED_CACHE).get(graph, ctx)
    scores = [x for x in edges.score if x is not None]
    ctx = RoundContext(version=ctx.version, hash=ctx.hash, labels=ctx.labels, promoted=len(edges),
                       promoted_scored=len(scores), promoted_expected_false=float(sum(1.0 - x for x in scores)),
                       created_at=ctx.created_at)
    return ctx, r["state"]


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

def _candidate(row: list) -> CandidateRow:
    (key, rel, s_key, s_type, o_key, o_type, votes, documents, conf, mean_conf, quality, sup, con, sil, label,
     status, decided_votes, hold, first_seen, last_seen, chunked) = row
    votes = int(votes or 0)
    return CandidateRow(
        key=key, relation=rel, subject_key=s_key, subject_type=s_type, object_key=o_key, object_type=o_type,
        votes=votes, documents=max(1, min(int(documents or 0), votes)) if votes else 0,
        confidence=min(1.0, max(0.0, float(conf or 0.0))), mean_confidence=min(1.0, max(0.0, float(mean_conf or 0.0))),
        quality=None if quality is None else float(quality), supports=int(sup), contradicts=int(con), silent=int(sil),
        label=label, status=status, decided_votes=decided_votes, hold=hold,
        first_seen=float(first_seen or 0.0), last_seen=float(last_seen or 0.0), chunked=bool(chunked))


def _background(graph: Graph, n: int, salt: int, skip: set[str], pool: list[tuple[str, str, str]],
                labelled: list[tuple[str, str, str]] = ()) -> tuple[CandidateRow, ...]:
    """A uniform sample of ``n`` decided edges (promoted or held, not this round's candidates), read
    by their endpoints (seeded by the version: another sample every round, the same on a re-run),
    plus every ``labelled`` edge that is not a candidate: a scorer refit on labels must see their
    features computed now, like the candidates', not as they were at some earlier decision (features
    of another time, or missing the embedding, would leak into what the labels teach)."""
    lab = [e for e in labelled if e[0] not in skip]
    taken = skip | {e[0] for e in lab}
    pool = [e for e in pool if e[0] not in taken]
    rank = lab + (random.Random(salt).sample(pool, min(n, len(pool))) if pool else [])
    if not rank:
        return ()
    rows = graph.read("round_candidates_read", {"rows": [{"key": k, "s_key": s, "o_key": o} for k, s, o in rank]},
                      by_ends=True)[0]["rows"]
    return tuple(_candidate(r) for r in rows)


def read_round(graph: Graph, request: RoundRequest, context: RoundContext, *, schema: KGSchema | None = None,
               cache: PromotedGraphCache | None = None, now: float | None = None,
               prepare: Callable[[], None] | None = None) -> RoundInputs:
    """Read what ``request`` asks for (see the module docstring); typed rows, no dicts. A settle runs
    ``prepare`` (the policy's imports) in a thread while it waits for the database."""
    if request.settle:
        return read_settle(graph, request, context, schema=schema, cache=cache, now=now, prepare=prepare)
    if request.limit < 1:
        raise KgrValidationError("limit must be >= 1", field="max_candidates_per_round")
    params = {"limit": request.limit, "epoch": request.epoch}
    rows = graph.read("round_candidates_read", params)[0]["rows"]
    cands = tuple(_candidate(r) for r in rows)
    total = graph.read("round_undecided_count", {"epoch": request.epoch})[0]["n"]
    types: dict[str, str] = {}
    promoted = EdgeList()
    if request.graph:
        promoted, ptypes, _ = (cache or PROMOTED_CACHE).get(graph, context)
        types.update(ptypes)
    pending = EdgeList()
    held: list[tuple[str, str, str]] = []
    if request.pending or request.background:
        r = graph.read("round_pending_read")[0]
        pending = EdgeList(r["subject"], r["relation"], r["object"], [float(w) for w in r["weight"]], r["key"])
        types.update(zip(r["subject"], r["subject_type"]))
        types.update(zip(r["object"], r["object_type"]))
        held = [(k, s_, o_) for k, st, s_, o_ in zip(r["key"], r["status"], r["subject"], r["object"]) if st == "held"]
    labels: tuple[LabelRow, ...] = ()
    labelled_ends: list[tuple[str, str, str]] = []
    if request.labels:
        rows_ = graph.read("round_labels_read")[0]["rows"]
        labels = tuple(LabelRow(key=k, label=bool(lab), reviewer=rev or "",
                                features=None if f is None else tuple(float(x) for x in f), feature_set=fs)
                       for k, lab, rev, f, fs, _s, _o in rows_)
        labelled_ends = [(k, s_, o_) for k, _l, _r, _f, _fs, s_, o_ in rows_ if s_ and o_][:MAX_LABELLED_READ]
    background: tuple[CandidateRow, ...] = ()
    if request.background:
        background = _background(graph, request.background, context.version, {c.key for c in cands},
                                 list(zip(promoted.key, promoted.subject, promoted.object)) + held,
                                 labelled_ends)
    for c in cands + background:
        types[c.subject_key] = c.subject_type
        types[c.object_key] = c.object_type
    scored: tuple[ScoredEdge, ...] = ()
    if request.promoted_features:
        scored = tuple(ScoredEdge(key=k, subject_key=s, object_key=o, features=tuple(float(x) for x in f),
                                  feature_set=fs)
                       for k, s, o, f, fs in graph.read("round_promoted_features")[0]["rows"])
    return RoundInputs(candidates=cands, promoted=promoted, pending=pending, entity_types=types, labels=labels,
                       promoted_features=scored, background=background, schema=schema, context=context,
                       epoch=request.epoch,
                       deferred=max(0, total - len(cands)), now=time.time() if now is None else now)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

def _inputs_json(d: EdgeDecision) -> str:
    return json.dumps(d.inputs, default=float, sort_keys=True)


def write_round(graph: Graph, decisions: RoundDecisions, inputs: RoundInputs, *, policy: str,
                functional: frozenset[str] = frozenset(), cache: PromotedGraphCache | None = None) -> RoundSummary:
    """Write one round as one version in one transaction (see the module docstring).

    Raises
    ------
    RoundConflict
        The store is no longer at ``inputs.context.version``; nothing was written.
    """
    ds = decisions.decisions
    keys = [d.key for d in ds]
    if len(set(keys)) != len(keys):
        raise KgrValidationError("a round may decide each edge once", field="decisions")
    base = inputs.context
    summary = RoundSummary(candidates=len(inputs.candidates), deferred=inputs.deferred, policy=policy)
    held_unchanged = decisions.unchanged
    if not ds and not decisions.rescored and not decisions.refreshed:  # nothing to version; keep what it learnt
        if decisions.state is not None:
            graph.write("policy_state_write", {"policy": policy, "state": decisions.state, "now": inputs.now or time.time()})
        summary.held = held_unchanged
        return summary
    by_key = {c.key: c for c in inputs.candidates}
    demoted: dict[str, str] = {}
    for _attempt in range(3):
        try:
            summary = graph.write_unit(lambda tx: _write_unit(tx, decisions, inputs, policy, functional, demoted))
            break
        except _AuditFailed as exc:
            for subject, rel, objects in exc.conflicts:
                for d in ds:
                    if d.action == "promote" and d.subject_key == subject and by_key.get(d.key) is not None \
                            and by_key[d.key].relation == rel:
                        demoted[d.key] = (f"grace-period audit: functional relation {rel} would give {subject} "
                                          f"{len(objects)} objects")
    else:  # pragma: no cover - three audits in a row would need a concurrent writer each time
        raise RoundConflict("the grace-period audit kept failing; try again")
    summary.held += held_unchanged
    summary.candidates = len(inputs.candidates) or len(ds)
    summary.deferred = inputs.deferred
    summary.policy = policy
    if summary.version is not None:
        store = cache or PROMOTED_CACHE
        promoted = [d for d in ds if d.action == "promote" and d.key not in demoted]
        if all(d.key in by_key for d in promoted) and len(promoted) == summary.promoted and not summary.retired \
                and not decisions.rescored and not decisions.refreshed:
            added = [(d.key, d.subject_key, by_key[d.key].relation, d.object_key, float(by_key[d.key].votes), d.p_hat)
                     for d in promoted]
            store.advance(graph, base, summary.version, summary.hash, added, inputs.entity_types)
        else:  # promotions of edges the round did not read: re-read next time
            store.advance(graph, RoundContext(version=-1, hash=""), summary.version, summary.hash, [], {})
    return summary


def _write_unit(tx: Tx, decisions: RoundDecisions, inputs: RoundInputs, policy: str, functional: frozenset[str],
                demoted: dict[str, str]) -> RoundSummary:
    try:
        version, old_hash = open_version(tx)
    except PromotionLocked as exc:  # another round holds the promotion lock: a conflict (run_round waits)
        raise RoundConflict(str(exc)) from None
    if version != inputs.context.version + 1 or old_hash != inputs.context.hash:
        raise RoundConflict(f"the store moved from version {inputs.context.version} to {version - 1} while the "
                            "round was deciding")
    ts = inputs.now or time.time()
    ds = [d if d.key not in demoted else d.model_copy(update={"action": "hold", "reason": demoted[d.key],
                                                              "hold": "audit"})
          for d in decisions.decisions]
    ids = {d.key: uuid.uuid4().hex for d in ds}
    promote = [{"key": d.key, "s_key": d.subject_key, "o_key": d.object_key, "reason": d.reason,
                "decision": ids[d.key], "p_hat": d.p_hat, "features": d.features, "feature_set": d.feature_set}
               for d in ds if d.action == "promote"]
    others = [{"key": d.key, "s_key": d.subject_key, "o_key": d.object_key, "status": _STATUS[d.action],
               "reason": d.reason, "votes": d.inputs.get("votes"), "hold": d.hold, "p_hat": d.p_hat,
               "features": d.features, "feature_set": d.feature_set,
               "held_inputs": _inputs_json(d) if d.action == "hold" else None}
              for d in ds if d.action in _STATUS]
    retire = [{"key": d.key, "s_key": d.subject_key, "o_key": d.object_key, "reason": d.reason,
               "status": d.inputs.get("status"), "hold": d.hold} for d in ds if d.action == "retire"]
    gone = tx.run("retire_edges", {"rows": retire, "version": version, "status": "held"}) if retire else []
    done = tx.run("promote_edges", {"rows": promote, "version": version, "now": ts, "epoch": inputs.epoch}) \
        if promote else []
    if others:
        tx.run("set_pending_status", {"rows": others, "version": version, "epoch": inputs.epoch})
    # a promoted edge moved by a merge supersedes its old instance, restored by a rollback to before the merge
    stale = tx.run("retire_merged_instances", {"rows": promote, "version": version}) if done else []
    by_key = {c.key: c for c in inputs.candidates}
    pairs = sorted({(d.subject_key, by_key[d.key].relation) for d in ds
                    if d.action == "promote" and d.key in by_key and by_key[d.key].relation in functional})
    if pairs:
        conflicts = tx.run("round_functional_conflicts",
                           {"pairs": [{"subject": s, "relation": r} for s, r in pairs]})
        if conflicts:
            raise _AuditFailed([(c["subject"], c["relation"], c["objects"]) for c in conflicts])
    # a hold is recorded on its edge (set_pending_status) and tallied on the version, not as a node
    records = [{"id": ids[d.key], "key": d.key, "action": d.action, "round": version, "reason": d.reason,
                "inputs": _inputs_json(d)} for d in ds if d.action != "hold"]
    records += [{"id": uuid.uuid4().hex, "key": r["key"], "action": "retire", "round": version,
                 "reason": f"superseded by {r['superseded_by']}, its instance on the entity it was merged into",
                 "inputs": json.dumps({"superseded_by": r["superseded_by"]})} for r in stale]
    gone = [*gone, *stale]
    if records:
        tx.run("record_decisions", {"rows": records, "version": version, "now": ts})
    if decisions.rescored:
        ends = {e.key: e for e in inputs.promoted_features}
        rows_ = [{"key": k, "s_key": ends[k].subject_key, "o_key": ends[k].object_key, "p_hat": p}
                 for k, p in decisions.rescored.items() if k in ends]
        if rows_:
            tx.run("rescore_promoted", {"rows": rows_})
    for i in range(0, len(decisions.refreshed), _BATCH):
        tx.run("settle_refresh", {"rows": [{"key": k, "s_key": s_, "o_key": o_, "p_hat": p, "decided": dec}
                                           for k, s_, o_, p, dec in decisions.refreshed[i:i + _BATCH]]})
    if decisions.state is not None:
        tx.run("policy_state_write", {"policy": policy, "state": decisions.state, "now": ts})
    new_hash = add_terms(old_hash, added=[r["key"] for r in done], removed=[r["key"] for r in gone])
    close_version(tx, version, new_hash, kind="promotion", now=ts, note=decisions.note, promoted=len(done),
                  retired=len(gone), decide_ms=decisions.decide_ms,
                  holds=tally_holds(d.inputs for d in ds if d.action == "hold"))
    counts = {a: sum(1 for d in ds if d.action == a) for a in ("hold", "reject", "expire")}
    budget = sum(1 for d in ds if d.action == "hold" and d.hold == "budget")
    escalated = sum(1 for d in ds if d.action == "hold" and d.hold == "escalated")
    return RoundSummary(version=version, candidates=len(ds), promoted=len(done), held=counts["hold"],
                        rejected=counts["reject"], expired=counts["expire"], retired=len(gone), hash=new_hash,
                        budget_held=budget, escalated=escalated)


def run_round(graph: Graph, policy, *, schema: KGSchema | None = None, attempts: int = 3,
              cache: PromotedGraphCache | None = None, now: float | None = None) -> RoundSummary:
    """Run one round of ``policy`` (any :class:`kgr.promotion.policies.Policy`) and write it as one version.

    A :class:`RoundConflict` (the store moved while deciding) is retried from the read after a
    jittered backoff; past ``attempts`` conflicts the round takes the store's promotion lock and
    finishes under it (:func:`kgr.store.promotion_lock.retry_then_lock`). ``summary.timings`` has
    the seconds per phase.
    """
    return retry_then_lock(graph, lambda: _round_once(graph, policy, schema, cache, now), conflict=RoundConflict,
                           attempts=attempts)


def _round_once(graph: Graph, policy, schema: KGSchema | None, cache: PromotedGraphCache | None,
                now: float | None) -> RoundSummary:
    """One read, decide and write of ``policy``'s round; raises :class:`RoundConflict` if the store moved."""
    from kgr.promotion.constraints import functional_relations

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    context, state = read_context(graph, policy.name, cache=cache, counts=getattr(policy, "counts", True))
    request = policy.plan(context, state)
    prepare = getattr(policy, "prepare", None)
    inputs = read_round(graph, request, context, schema=schema, cache=cache, now=now,
                        prepare=None if prepare is None else functools.partial(prepare, context))
    timings["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    decisions = policy.decide(inputs, state)
    timings["decide"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = write_round(graph, decisions, inputs, policy=policy.name, functional=functional_relations(schema),
                          cache=cache)
    timings["write"] = time.perf_counter() - t0
    summary.timings = {k: round(v, 4) for k, v in timings.items()}
    n = len(inputs.candidates)
    summary.decision_latency_ms = {"mean": round(1000.0 * timings["decide"] / n, 3)} if n else {}
    summary.expected_fmr = decisions_expected_fmr(decisions, inputs)
    summary.escalated = len(decisions.escalated) if decisions.escalated else summary.escalated
    _report(summary, decisions)
    return summary


def _report(summary: RoundSummary, decisions: RoundDecisions) -> None:
    """What a settle reports about its cut (target, expected FMR, bound) goes on the summary."""
    if not decisions.report:
        return
    summary.settle = True
    summary.cut = CutReport(**decisions.report)
    summary.expected_fmr = summary.cut.expected_fmr


def decisions_expected_fmr(decisions: RoundDecisions, inputs: RoundInputs) -> float | None:
    """Predicted FMR of the promoted graph after the round: (Σ(1 − p̂) before + this round's) / scored edges."""
    scored = [d.p_hat for d in decisions.decisions if d.action == "promote" and d.p_hat is not None]
    ctx = inputs.context
    base_false = ctx.promoted_expected_false
    if decisions.rescored:
        base_false = sum(1.0 - p for p in decisions.rescored.values())
    n = ctx.promoted_scored + len(scored)
    if n == 0:
        return None
    return (base_false + sum(1.0 - p for p in scored)) / n
