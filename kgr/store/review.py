"""The review loop on the store: the queue people answer, and the labels they give.

**Queue** (:func:`review_queue`). Candidates whose label would teach the scorer most: scored
staged edges without a label, held (escalated or below the cut) or promoted. The pool nearest the
calibrated policy's cut :math:`\\tau` is read and ranked by :func:`kgr.gauge.review.review_priority`
(uncertainty about the cut × impact); a quarter of the queue (``audit_share``) is instead drawn
at random from every scored, unlabelled edge, each topped up to one common inclusion level so that
the audits stay a uniform sample while edges arrive (:mod:`kgr.store.audit_frame`), and spread
through it (``why = audit``):
labels taken only near the cut would teach the ranking but bias the calibration that the FMR
target rests on. The queue records its audit picks ((:AuditDraw)), so that a label given to one
of them is recorded as an *audit* label, the others as *active* ones: the cut's certificate
(:mod:`kgr.promotion.certificate`) counts only the audits, the scorer learns from both with
their selection weighed (:mod:`kgr.evidence.scorer`). The items come back with their evidence chain: sources → chunks → documents
with a short quote, and the verifier answers so far.

**Labels** (:func:`record_labels`), one version per call, in one transaction:

- every label is recorded as a ``(:ReviewLabel {edge_key})`` (a new label replaces the old one)
  and as a decision (``action: label``, the reviewer in its inputs);
- a staged edge labelled ``false`` is rejected; a **promoted edge labelled false is retired** in
  this version (its ``valid_to`` set, the content hash updated, a ``retire`` decision recorded);
- a promoted edge labelled ``true`` gets :math:`\\hat p = 1`;
- every labelled edge's evidence revision moves, so the next round decides it again and the
  scorer refits on the labels (:mod:`kgr.evidence.scorer`).

Unknown keys fail the whole call with their list: nothing is written.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence

import numpy as np

from kgr.errors import KgrConflict, KgrNotFound, KgrValidationError
from kgr.model.review import EdgeLabel, EvidenceLink, LabelReport, ReviewItem, ReviewQueue
from kgr.store.audit_frame import draw_audits, inclusion
from kgr.store.connection import Graph, Tx
from kgr.store.edge_locks import lock_staged_edges
from kgr.store.rounds import policy_state
from kgr.store.versions import add_terms, close_version, open_version

__all__ = ["review_queue", "record_labels", "current_tau", "POOL", "AUDIT_SHARE"]

#: Scored edges nearest the cut read to rank the queue from.
POOL = 5000
#: Share of the queue drawn uniformly at random from every scored, unlabelled edge ("audit" items):
#: labels picked only near the cut are a biased sample, and the scorer's calibration (which the
#: FMR target rests on) needs some that are not.
AUDIT_SHARE = 0.25


def current_tau(graph: Graph) -> float | None:
    """The calibrated policy's last promotion cut, or None before its first round."""
    raw = policy_state(graph, "calibrated")
    if not raw:
        return None
    try:
        tau = json.loads(raw).get("last_tau")
    except ValueError:
        return None
    return float(tau) if isinstance(tau, (int, float)) else None


def review_queue(graph: Graph, *, limit: int = 20, audit_share: float = AUDIT_SHARE) -> ReviewQueue:
    """The ``limit`` candidates whose label would teach most, best first (see the module docstring)."""
    if not 1 <= limit <= 1000:
        raise KgrValidationError("limit must be between 1 and 1000", field="limit")
    if not 0.0 <= audit_share <= 1.0:
        raise KgrValidationError("audit_share must be between 0 and 1", field="audit_share")
    tau = current_tau(graph)
    rows = graph.read("review_pool", {"tau": 0.5 if tau is None else tau, "pool": POOL})[0]["rows"]
    if not rows:
        return ReviewQueue(tau=tau, items=[])
    keys = [r[0] for r in rows]
    p_hat = [float(r[7]) for r in rows]
    relations = [r[2] for r in rows]
    from kgr.gauge.review import review_priority  # here: kgr.gauge pulls scipy/networkx (~1-2 s at start-up)

    prio = review_priority(p_hat, relations, tau=0.5 if tau is None else tau)
    n_audit = int(limit * audit_share)
    requested = [i for i in range(len(rows)) if rows[i][12]]  # after repeated negative outcomes: first
    ranked = sorted((i for i in range(len(rows)) if not rows[i][12]), key=lambda i: (-prio[i], keys[i]))
    top = (sorted(requested, key=lambda i: keys[i]) + ranked)[:limit - n_audit]
    kinds = {keys[i]: "outcome" if rows[i][12] else "priority" for i in top}
    if n_audit:
        picked, q = _draw_audits(graph, set(kinds), n_audit)
        for r in picked:
            kinds[r[0]] = "audit"
            rows.append(r)
            keys.append(r[0])
            prio = np.append(prio, 0.0)
            top.append(len(rows) - 1)
        top = _interleave([i for i in top if kinds[keys[i]] != "audit"], [i for i in top if kinds[keys[i]] == "audit"])
        drawn = [k for k, kind in kinds.items() if kind == "audit"]
        if drawn:  # a label given to one of them later is an audit label (labels_write)
            graph.write("review_audit_record", {"keys": drawn, "now": time.time(), "level": q})
    ev = {r["key"]: r for r in graph.read("review_evidence", {"rows": [
        {"key": rows[i][0], "s_key": rows[i][4], "o_key": rows[i][5]} for i in top]})}
    items = []
    for i in top:
        key, s, rel, o, s_key, o_key, status, p, votes, _sup, _con, _sil = rows[i][:12]
        e = ev.get(key, {"links": [], "verdicts": []})
        links = [EvidenceLink(source=src, chunk_id=cid, document=doc, quote=quote) for src, cid, doc, quote in e["links"]]
        items.append(ReviewItem(key=key, subject=s, relation=rel, object=o, subject_key=s_key, object_key=o_key,
                                status=status, p_hat=float(p), priority=float(prio[i]), votes=int(votes),
                                why=kinds[key],
                                documents=len({lk.document or lk.source.split("#")[0] for lk in links}) or int(votes),
                                verdicts=sorted(e["verdicts"]), evidence=links))
    return ReviewQueue(tau=tau, items=items)


def _draw_audits(graph: Graph, chosen: set[str], n: int) -> tuple[list[list], float]:
    """``n`` audit picks among the reviewable edges not in ``chosen``, topped up to one inclusion
    level (:mod:`kgr.store.audit_frame`; salted by the frame's size and the labels so far), as the
    queue's rows, and the draw's level."""
    frame = graph.read_value("review_audit_frame") or [[], [], [], []]
    keep = [i for i, k in enumerate(frame[0]) if k not in chosen]
    if not keep:
        return [], 0.0
    draws = [(float(r["at"]), float(r["level"])) for r in graph.read("review_audit_levels")]
    pi = inclusion(np.array([frame[3][i] for i in keep], dtype=np.float64), draws)
    labels = graph.read("round_state", {"policy": "calibrated"})[0]["labels"]
    idx, q = draw_audits([frame[0][i] for i in keep], pi, n, f"audit|{len(frame[0])}|{labels}")
    rows = [{"key": frame[0][keep[i]], "s_key": frame[1][keep[i]], "o_key": frame[2][keep[i]]} for i in idx]
    return (graph.read("review_audit_pool", {"rows": rows})[0]["rows"] if rows else []), q


def _interleave(first: list[int], second: list[int]) -> list[int]:
    """``first`` with the items of ``second`` spread evenly through it."""
    if not second:
        return first
    out: list[int] = []
    step = (len(first) + len(second)) / len(second)
    slots = {int(step * (j + 1)) - 1 for j in range(len(second))}
    a, b = iter(first), iter(second)
    for pos in range(len(first) + len(second)):
        out.append(next(b) if pos in slots else next(a))
    return out


def record_labels(graph: Graph, labels: Sequence[EdgeLabel], *, now: float | None = None) -> LabelReport:
    """Record reviewer labels as one version (see the module docstring).

    The edges' status is read inside the write transaction, after the version lock and after
    each edge's write lock (:mod:`kgr.store.edge_locks`): a round that promoted an edge before the
    label commits is seen, and the promoted edge labelled false is retired in the label's version;
    a round that commits after the label has read the store before it, and its version check
    fails (:class:`~kgr.store.rounds.RoundConflict`), so it decides again with the label.

    Raises
    ------
    KgrNotFound
        Some keys name no staged edge (listed; nothing is written).
    KgrConflict
        One key labelled twice with different answers in the same call.
    """
    if not labels:
        return LabelReport()
    keys = sorted({lab.key for lab in labels})
    # where the edges are (a key never changes endpoints); their status is read under the locks below
    ends = {r[0]: {"key": r[0], "s_key": r[1], "o_key": r[2]}
            for r in graph.read("labels_find_edges", {"keys": keys})[0]["rows"]}
    _check_found(keys, ends)
    by_key: dict[str, EdgeLabel] = {}
    for lab in labels:
        old = by_key.get(lab.key)
        if old is not None and old.label != lab.label:
            raise KgrConflict(f"edge {lab.key} is labelled both true and false in one call: nothing was recorded")
        by_key[lab.key] = lab
    ts = time.time() if now is None else now
    return graph.write_unit(lambda tx: _label_unit(tx, by_key, ends, ts))


def _check_found(keys: Sequence[str], found: Mapping[str, object]) -> None:
    missing = sorted(set(keys) - set(found))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise KgrNotFound(f"no staged edge with key {shown}: nothing was recorded")


def _label_unit(tx: Tx, by_key: dict[str, EdgeLabel], ends: dict[str, dict], ts: float) -> LabelReport:
    """Inside the write unit: version lock, edge locks, then read and write (see :func:`record_labels`)."""
    version, old_hash = open_version(tx)
    lock_staged_edges(tx, ends.values())
    found = {r["key"]: r for r in tx.run("labels_read_edges", {"rows": sorted(ends.values(), key=lambda r: r["key"])})}
    _check_found(sorted(by_key), found)
    rows = [{"key": k, "s_key": ends[k]["s_key"], "o_key": ends[k]["o_key"], "label": lab.label,
             "reviewer": lab.reviewer} for k, lab in sorted(by_key.items())]
    tx.run("labels_write", {"rows": rows, "now": ts, "version": version})
    retire = [{"key": r["key"], "s_key": r["s_key"], "o_key": r["o_key"],
               "reason": f"labelled false by {r['reviewer']}"} for r in rows
              if not r["label"] and found[r["key"]]["promoted"]]
    gone = tx.run("retire_edges", {"rows": retire, "version": version, "status": "rejected"}) if retire else []
    sure = [r for r in rows if r["label"] and found[r["key"]]["promoted"]]
    if sure:
        tx.run("label_promoted_p_hat", {"rows": sure})
    decisions = [{"id": uuid.uuid4().hex, "key": r["key"], "action": "label", "round": version,
                  "reason": f"labelled {'true' if r['label'] else 'false'} by {r['reviewer']}",
                  "inputs": json.dumps({"label": r["label"], "reviewer": r["reviewer"],
                                        "status_before": found[r["key"]]["status"]})} for r in rows]
    decisions += [{"id": uuid.uuid4().hex, "key": g["key"], "action": "retire", "round": version,
                   "reason": next(r["reason"] for r in retire if r["key"] == g["key"]),
                   "inputs": json.dumps({"label": False})} for g in gone]
    tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
    new_hash = add_terms(old_hash, removed=[g["key"] for g in gone])
    close_version(tx, version, new_hash, kind="label", now=ts, note=f"{len(rows)} labels", retired=len(gone))
    rejected = sum(1 for r in rows if not r["label"] and found[r["key"]]["status"] in ("pending", "held", "expired"))
    reopened = sum(1 for r in rows if r["label"] and found[r["key"]]["status"] == "rejected")
    return LabelReport(version=version, labelled=len(rows),
                       relabelled=sum(1 for r in rows if found[r["key"]]["label"] is not None),
                       retired=len(gone), rejected=rejected, reopened=reopened, hash=new_hash)
