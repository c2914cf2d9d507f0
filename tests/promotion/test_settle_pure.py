"""The calibrated policy's settle without a database: what it decides, what it records, when it does nothing."""

from __future__ import annotations

import dataclasses
import json
import warnings

from kgr.evidence.features import FEATURES
from kgr.model.decisions import CutReport
from kgr.model.promotion import CandidateRow, EdgeList, RoundContext, RoundInputs
from kgr.model.schema import KGSchema
from kgr.promotion.config import CalibratedConfig
from kgr.promotion.settle import CalibratedPolicy

SCHEMA = KGSchema.model_validate({
    "entity_types": {"P": {}, "O": {}, "C": {}},
    "relation_types": {"WORKS_AT": {"domain": ["P"], "range": ["O"]}, "KNOWS": {"domain": ["P"], "range": ["P"]}},
})
FAST = CalibratedConfig(embedding=False)


def row(s, r, o, *, votes=2, docs=2, st="P", ot="P", **kw) -> CandidateRow:
    sk, ok = f"{st}:{s}", f"{ot}:{o}"
    return CandidateRow(key=f"{sk}|{r}|{ok}", relation=r, subject_key=sk, subject_type=st, object_key=ok,
                        object_type=ot, votes=votes, documents=docs, confidence=0.9, mean_confidence=0.7, **kw)


def office() -> list[CandidateRow]:
    """Forty colleagues at one organisation who know each other in a ring, plus doubtful and bad rows."""
    out = []
    for i in range(40):
        out.append(row(f"p{i}", "WORKS_AT", "acme", ot="O", votes=4, docs=4))
        out.append(row(f"p{i}", "KNOWS", f"p{(i + 1) % 40}", votes=3, docs=3))
    out += [row(f"q{i}", "KNOWS", f"p{i}", votes=1, docs=1) for i in range(10)]   # single-source strangers
    out += [row("p1", "WORKS_AT", "paris", ot="C", votes=5, docs=5),              # range violation
            row("p2", "KNOWS", "p2", votes=2, docs=2),                             # self loop
            row("p3", "KNOWS", "p30", votes=2, docs=2, label=False, label_kind="active")]
    return sorted(out, key=lambda c: c.key)


def inputs(rows, version=1) -> RoundInputs:
    return RoundInputs(candidates=tuple(rows), schema=SCHEMA, context=RoundContext(version=version, hash="h"))


def test_a_settle_rejects_hard_violations_and_false_labels_and_promotes_a_top_slice():
    out = CalibratedPolicy(FAST).decide(inputs(office()), None)
    by = {d.key: d for d in out.decisions}
    assert by["P:p2|KNOWS|P:p2"].action == "reject" and "self-loop" in by["P:p2|KNOWS|P:p2"].reason
    assert by["P:p1|WORKS_AT|C:paris"].action == "reject" and "range" in by["P:p1|WORKS_AT|C:paris"].reason
    assert by["P:p3|KNOWS|P:p30"].reason == "labelled false by a reviewer"
    promoted = [by[k].p_hat for k in out.promoted_order]
    held = [d.p_hat for d in out.decisions if d.action == "hold"]
    assert promoted and held and min(promoted) >= max(held)            # a top slice by p_hat
    assert all(d.features is not None and len(d.features) == len(FEATURES) for d in out.decisions)
    assert all(by[k].inputs["gate"] == "DG" for k in out.promoted_order)
    rep = out.report
    assert rep["promoted"] == len(out.promoted_order) and rep["bound"] <= FAST.target_fmr
    assert rep["expected_fmr"] < rep["bound"] and rep["certified"] is False and rep["advice"] is None
    assert json.loads(out.state)["settled_version"] == 2 and json.loads(out.state)["last_tau"] is not None


def settled(rows, out) -> list[CandidateRow]:
    """The rows as the store holds them after ``out`` was written (statuses, holds, scores, nothing new)."""
    by = {d.key: d for d in out.decisions}
    fresh = {k: p for k, _, _, p, _ in out.refreshed}
    res = []
    for c in rows:
        d = by.get(c.key)
        status = c.status if d is None else {"promote": "promoted", "hold": "held", "reject": "rejected",
                                             "retire": d.inputs.get("status")}[d.action]
        res.append(dataclasses.replace(c, status=status, hold=c.hold if d is None else d.hold, dirty=False,
                                       p_hat=fresh.get(c.key, c.p_hat if d is None else d.p_hat)))
    return res


def test_an_edge_whose_outcome_and_evidence_did_not_change_is_not_decided_again():
    policy = CalibratedPolicy(FAST)
    rows = office()
    first = policy.decide(inputs(rows), None)
    after = settled(rows, first)
    again = policy.decide(inputs(after, version=2), first.state)
    assert again.decisions == [] and again.refreshed == ()
    # one edge gets a new vote: it alone is weighed again (a record only if its outcome changed)
    k = next(c.key for c in after if c.subject_key == "P:q4")
    moved = [dataclasses.replace(c, votes=c.votes + 3, documents=c.documents + 3, dirty=True) if c.key == k else c
             for c in after]
    third = policy.decide(inputs(moved, version=2), first.state)
    touched = {d.key for d in third.decisions} | {r[0] for r in third.refreshed if r[4]}
    assert touched == {k}


def test_a_promoted_edge_that_falls_out_of_the_cut_is_retired_in_the_same_settle():
    policy = CalibratedPolicy(FAST)
    rows = office()
    after = settled(rows, policy.decide(inputs(rows), None))
    victim = next(c for c in after if c.status == "promoted")
    labelled = [dataclasses.replace(c, label=False, label_kind="audit", dirty=True) if c.key == victim.key else c
                for c in after]
    out = policy.decide(inputs(labelled, version=2), None)
    d = next(d for d in out.decisions if d.key == victim.key)
    assert d.action == "retire" and d.inputs["status"] == "rejected" and "fell out of the cut" in d.reason
    assert victim.key in {r[0] for r in out.refreshed if r[4]}    # and marked decided on its new evidence


def test_nothing_new_is_a_no_op_that_reports_the_last_cut():
    policy = CalibratedPolicy(FAST)
    first = policy.decide(inputs(office()), None)
    out = policy.decide(RoundInputs(candidates=(), context=RoundContext(version=2, hash="h"), nothing_new=True),
                        first.state)
    assert out.decisions == [] and out.state is None and out.refreshed == ()
    assert out.report == first.report
    # another target is another cut: the plan no longer says where it settled
    assert policy.plan(RoundContext(version=2, hash="h"), first.state).settled_version == 2
    other = CalibratedPolicy(FAST.model_copy(update={"target_fmr": 0.05}))
    assert other.plan(RoundContext(version=2, hash="h"), first.state).settled_version is None


def test_when_nothing_can_be_promoted_the_report_says_why_and_what_to_do():
    rows = [row(f"q{i}", "KNOWS", f"p{i}", votes=1, docs=1) for i in range(30)]
    out = CalibratedPolicy(FAST.model_copy(update={"target_fmr": 0.01})).decide(inputs(rows), None)
    assert out.promoted_order == () and out.report["promoted"] == 0
    assert "no candidate has evidence that separates it" in out.report["advice"]
    assert "label 20 edges with `kgr review queue`" in out.report["advice"] and "--verify llm" in out.report["advice"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                            # issue 29: numpy RuntimeWarnings on an empty store
        empty = CalibratedPolicy(FAST).decide(inputs([]), None)
    assert empty.report["advice"].startswith("nothing is staged") and empty.decisions == []


def test_the_report_counts_what_the_cut_promotes_holds_and_rejects():
    out = CalibratedPolicy(FAST).decide(inputs(office()), None)
    r = out.report
    assert r["promoted"] == len(out.promoted_order) > 0
    assert r["promoted"] + r["held"] + r["rejected"] == len(office())
    assert r["rejected"] >= 3                                     # range violation, self loop, labelled false


def test_pinned_edges_are_evidence_and_never_retired():
    rows = office()
    pinned = EdgeList(["P:z1"], ["KNOWS"], ["P:z2"], [1.0], ["pin"])
    out = CalibratedPolicy(FAST).decide(RoundInputs(candidates=tuple(rows), promoted=pinned, schema=SCHEMA,
                                                    context=RoundContext(version=1, hash="h")), None)
    assert "pin" not in {d.key for d in out.decisions}


def test_the_calibration_check_hands_the_cut_every_labelled_rows_out_of_fold_score_only_when_on(monkeypatch):
    import kgr.promotion.settle as settle

    seen = []

    def recording_cut(*args, **kw):
        seen.append(kw)
        return real_cut(*args, **kw)

    real_cut = settle.cut
    monkeypatch.setattr(settle, "cut", recording_cut)
    rows = [dataclasses.replace(c, label=True, label_kind="audit") if c.key.startswith("P:p1") and "KNOWS" in c.key
            else c for c in office()]
    labelled = [c for c in rows if c.label is not None and c.subject_key != c.object_key]
    for flag in (False, True):
        CalibratedPolicy(FAST.model_copy(update={"calibration_check": flag})).decide(inputs(rows), None)
    off, on = seen
    assert off["label_scores"] is None and off["label_false"] is None
    assert len(on["label_scores"]) == len(labelled) and 0 < len(on["audit_scores"]) < len(labelled)
    assert sorted(on["label_false"].tolist()) == sorted(c.label is False for c in labelled)
    assert ((on["label_scores"] >= 0) & (on["label_scores"] <= 1)).all()


def test_the_supervised_stage_waits_for_twenty_labels_of_each_class():
    """Fifteen false labels (of 40) are a handful: the latent-class score stands by default (a logistic
    regression fitted on 17 false labels ranked a 10 %-false slice at p_hat 0.99 on wordnet); with
    min_per_class = 10 the same labels fit the supervised stage."""
    rows = [c for c in office() if c.label is None]
    knows = [c.key for c in rows if c.relation == "KNOWS" and c.subject_key.startswith("P:p")][:15]
    works = [c.key for c in rows if c.relation == "WORKS_AT" and c.object_type == "O"][:25]
    rows = [dataclasses.replace(c, label=c.key in works, label_kind="active") if c.key in knows + works else c
            for c in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = CalibratedPolicy(FAST).score(inputs(rows)).scorer
        loose = CalibratedPolicy(FAST.model_copy(update={"min_per_class": 10})).score(inputs(rows)).scorer
    assert FAST.min_per_class == 20
    assert default.n_labels_ == 40 and default.model_ is None
    assert loose.n_labels_ == 40 and loose.model_ is not None


def test_a_cut_without_audit_labels_is_never_certified():
    """Every promoted edge labelled true by a reviewer (active labels, no audit among them): the plain
    bound of the audits is 0, yet no audit label falls in the cut, so nothing certifies it."""
    rows = sorted((row(f"p{i}", "KNOWS", f"p{(i + 1) % 30}", votes=3, docs=3, label=True, label_kind="active")
                   for i in range(30)), key=lambda c: c.key)
    out = CalibratedPolicy(FAST).decide(inputs(rows), None)
    rep = out.report
    assert rep["promoted"] == 30 and rep["audit_labels"] == 0 and rep["certified"] is False
    text = CutReport(**rep).describe()
    assert "not certified: no audit label" in text and "alone bound it" not in text


def test_a_report_flagged_certified_with_zero_audit_labels_does_not_say_certified():
    """A stored report (an older round's) with the flag set and no audit label is described as not certified."""
    rep = CutReport(target_fmr=0.1, promoted=5, expected_fmr=0.0, bound=0.0, audit_labels=0, audits_needed=200,
                    audit_bound=0.0, certified=True)
    text = rep.describe()
    assert "not certified" in text and "its 0 audit labels" not in text
    assert "certified: its 3 audit labels alone bound it" in rep.model_copy(update={"audit_labels": 3}).describe()
