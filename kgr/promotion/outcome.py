"""From a settle's outcome per edge to what is written: decision records, refreshed scores, the report.

An edge gets a **decision record** only when its outcome changes (promoted, retired, held for
another reason, rejected) or when its evidence changed since its last decision (it was weighed
again). Every other edge whose recorded :math:`\\hat p` moved by more than ``write_tolerance`` is
*refreshed* (its score written, no record): a held edge whose evidence did not change is not
decided again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kgr.evidence.features import FEATURE_SET
from kgr.model.decisions import EdgeDecision
from kgr.model.promotion import CandidateRow, RoundInputs
from kgr.promotion.config import CalibratedConfig

__all__ = ["Outcome", "assemble", "advice", "certified"]


@dataclass
class Outcome:
    """What :func:`assemble` returns for :class:`~kgr.model.promotion.RoundDecisions`."""

    decisions: list[EdgeDecision] = field(default_factory=list)
    promoted_order: tuple[str, ...] = ()
    refreshed: tuple[tuple[str, str, str, float | None, bool], ...] = ()
    escalated: tuple[str, ...] = ()
    report: dict = field(default_factory=dict)


def advice(inputs: RoundInputs, scored, cfg: CalibratedConfig) -> str:  # noqa: ANN001 - a Scored
    """Why nothing is promoted, and what to do about it."""
    rows = inputs.candidates
    if not rows:
        return "nothing is staged: stage triples (kgr stage FILE.jsonl) or ingest documents (kgr ingest PATH --schema S)"
    pop = [a != "reject" for a in scored.action]
    if not any(pop):
        return ("every staged edge breaks a hard constraint (declared domain or range, a self loop, a near-duplicate "
                "entity) or is labelled false: see kgr promote --explain KEY")
    best = max(float(p) for p, ok in zip(scored.p, pop) if ok)
    want = max(cfg.min_labels - scored.labels, 0) or 20
    return (f"no candidate has evidence that separates it from the others (the highest p_hat is {best:.3f}, and no "
            f"top slice has a {cfg.level:.0%} bound on its FMR within the target {cfg.target_fmr:g}): label {want} "
            f"edges with `kgr review queue` and `kgr review label`, or re-read the corpus with a verifier model "
            f"(`kgr promote --verify llm --model NAME`)")


def certified(ct, target_fmr: float) -> bool:  # noqa: ANN001 - a Cut
    """Whether the audit labels alone bound the cut's FMR within ``target_fmr``: a cut that promotes
    something, with at least one audit label in it (no label certifies nothing, even where every
    promoted edge is labelled true and the plain bound is 0), whose audits' own bound is within the target."""
    return bool(ct.k and ct.audits > 0 and ct.audit_bound <= target_fmr + 1e-12)


def _report(inputs: RoundInputs, scored, cfg: CalibratedConfig, promoted: int) -> dict:  # noqa: ANN001
    ct = scored.cut
    return {"target_fmr": cfg.target_fmr, "promoted": promoted, "held": scored.action.count("hold"),
            "rejected": scored.action.count("reject"), "expected_fmr": ct.expected_fmr, "bound": ct.bound,
            "level": cfg.level, "audit_labels": ct.audits, "audits_needed": cfg.prior_audits,
            "audit_bound": ct.audit_bound, "certified": certified(ct, cfg.target_fmr),
            "labels": scored.labels,
            "advice": None if promoted else advice(inputs, scored, cfg)}


def _reason(c: CandidateRow, i: int, scored, cfg: CalibratedConfig, rank: dict[int, int]) -> str:  # noqa: ANN001
    ct, p = scored.cut, float(scored.p[i])
    tau = "none" if math.isinf(ct.tau) else f"{ct.tau:.4f}"
    action, kind = scored.action[i], scored.hold[i]
    head = f"p_hat={p:.4f}" + (" (labelled true by a reviewer)" if c.label is True else "")
    if action == "promote":
        return (f"DG: {head} >= tau={tau}, rank {rank[i] + 1} of the cut's {ct.k}: the cut's {cfg.level:.0%} bound on "
                f"its FMR is {ct.bound:.4f} <= target {cfg.target_fmr}")
    if action == "reject":
        if c.label is False:
            return "labelled false by a reviewer"
        if scored.checks.self_loop[i]:
            return "self-loop: subject and object are the same node"
        ch = scored.checks
        note = f"; {ch.notes[i]}" if i in ch.notes else ""
        return (f"constraint penalty R_contr={ch.r_contr[i]:.4f} > max_contr={cfg.max_contr:.4f} "
                f"({', '.join(ch.violated(i))}){note}")
    if kind == "quorum":
        return f"votes {c.votes} < quorum {cfg.quorum}"
    if kind == "functional":
        return ct.losers[i]
    if kind == "escalated":
        return (f"AG: {head}, tau={tau}: no verifier has read it, and one reading would move it across the cut: "
                "escalated for corpus re-reading or review")
    return f"{head} < tau={tau}: below the cut (target FMR {cfg.target_fmr})"


def _needs_record(c: CandidateRow, action: str, kind: str | None) -> bool:
    if c.status == "promoted":
        return action != "promote"
    if action == "promote":
        return True
    if action == "hold":
        return c.dirty or c.status != "held" or c.hold != kind
    return c.dirty or c.status != "rejected"


def assemble(inputs: RoundInputs, scored, cfg: CalibratedConfig) -> Outcome:  # noqa: ANN001 - a Scored
    """Decision records, refreshed scores, promotion order, escalations and the report of one settle."""
    rows = inputs.candidates
    ct = scored.cut
    rank = {int(i): r for r, i in enumerate(ct.order[:ct.k])}
    record = [_needs_record(c, scored.action[i], scored.hold[i]) for i, c in enumerate(rows)]
    idx = [i for i, r in enumerate(record) if r and scored.action[i] != "reject" or r and rows[i].label is False]
    moved = scored.scorer.contributions(scored.X[idx]) if idx else []
    evidence = dict(zip(idx, moved))
    out = Outcome()
    refreshed = []
    tau = None if math.isinf(ct.tau) else ct.tau
    p_all, r_contr = scored.p.tolist(), scored.checks.r_contr.tolist()  # python floats, once (not per row)
    violated = scored.checks.violations()
    for i, c in enumerate(rows):
        action, kind, p = scored.action[i], scored.hold[i], p_all[i]
        if not record[i]:
            if c.dirty or c.p_hat is None or abs(p - c.p_hat) > cfg.write_tolerance:
                refreshed.append((c.key, c.subject_key, c.object_key, p, c.dirty))
            continue
        info = {"votes": c.votes, "quorum": cfg.quorum, "documents": c.documents, "p_hat": p, "tau": tau,
                "target_fmr": cfg.target_fmr,
                "bound": ct.bound, "r_contr": r_contr[i], "violated": violated[i],
                "gate": scored.gate[i], "evidence": evidence.get(i, [])}
        reason = _reason(c, i, scored, cfg, rank)
        extra = {"p_hat": p, "features": scored.X[i].tolist(), "feature_set": FEATURE_SET}
        if c.status == "promoted":
            info["status"] = "rejected" if action == "reject" else "held"
            out.decisions.append(EdgeDecision.model_construct(
                key=c.key, subject_key=c.subject_key, object_key=c.object_key, action="retire", p_hat=p,
                reason=f"fell out of the cut: {reason}", inputs=info, hold=kind, features=None, feature_set=None))
            refreshed.append((c.key, c.subject_key, c.object_key, p, True))
            continue
        out.decisions.append(EdgeDecision.model_construct(
            key=c.key, subject_key=c.subject_key, object_key=c.object_key, action=action, reason=reason, inputs=info,
            hold=kind if action == "hold" else None, **extra))
    out.refreshed = tuple(refreshed)
    out.promoted_order = tuple(rows[int(i)].key for i in ct.order[:ct.k]
                               if scored.action[int(i)] == "promote" and rows[int(i)].status != "promoted")
    out.escalated = tuple(c.key for i, c in enumerate(rows) if scored.hold[i] == "escalated")
    out.report = _report(inputs, scored, cfg, int(np.sum([a == "promote" for a in scored.action])))
    return out
