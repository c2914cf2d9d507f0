"""The calibrated policy's pure parts: the scorer, the promotion cut, features, the review order, the seam."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgr.errors import KgrValidationError
from kgr.gauge.calibrated import CalibratedConfig, CalibratedPolicy, promotion_cut
from kgr.gauge.features import FEATURES, evidence_graph, feature_index, source_features
from kgr.gauge.policies import QuorumPolicy, growth_epoch, make_policy
from kgr.gauge.review import review_priority
from kgr.gauge.scorer import VIEWS, ScorerConfig, _monotone, explain, fit_scorer, predict, view_codes
from kgr.model.promotion import CandidateRow, EdgeList, LabelRow, RoundContext, RoundInputs

IX = feature_index()


# -- the promotion cut -------------------------------------------------------------------------------

def test_promotion_cut_is_the_longest_prefix_within_the_target():
    p = np.array([0.6, 0.99, 0.9, 0.97])
    # sorted 0.99, 0.97, 0.90, 0.60: running FMR 0.01, 0.02, 0.0467, 0.135
    assert promotion_cut(p, target=0.05) == 0.9
    assert promotion_cut(p, target=0.02) == 0.97
    assert promotion_cut(p, target=0.2) == 0.6
    assert promotion_cut(p, target=0.2, min_p=0.7) == 0.9          # never below min_p
    # 100 certain edges already promoted leave room for more doubtful ones: (0.01+0.03+0.1+0.4)/104 = 0.0052
    assert promotion_cut(p, target=0.01, base_n=100) == 0.6
    assert math.isinf(promotion_cut(np.array([0.8]), target=0.05))  # nothing fits
    assert math.isinf(promotion_cut(np.array([]), target=0.05))


# -- the latent-class scorer -------------------------------------------------------------------------

def _synthetic(n: int, seed: int, prior: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """Candidates drawn from a latent-class model with conditionally independent views."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < prior
    X = np.zeros((n, len(FEATURES)))
    docs = np.where(y, rng.choice([1, 2, 3, 4], n, p=[0.15, 0.3, 0.3, 0.25]), rng.choice([1, 2, 3, 4], n, p=[0.6, 0.3, 0.08, 0.02]))
    X[:, IX["log_documents"]] = np.log(docs)
    X[:, IX["rule_noisy_or"]] = np.where(y, rng.choice([0.0, 0.2, 0.5, 0.9], n, p=[0.2, 0.3, 0.3, 0.2]),
                                         rng.choice([0.0, 0.2, 0.5, 0.9], n, p=[0.7, 0.2, 0.08, 0.02]))
    sup = rng.random(n) < np.where(y, 0.5, 0.05)
    sil = ~sup & (rng.random(n) < np.where(y, 0.1, 0.6))
    X[:, IX["supports"]], X[:, IX["silent"]] = sup, sil
    X[:, IX["has_quality"]] = 1.0
    X[:, IX["quality"]] = np.where(y, rng.choice([0.3, 0.6, 0.9], n, p=[0.1, 0.3, 0.6]), rng.choice([0.3, 0.6, 0.9], n, p=[0.5, 0.3, 0.2]))
    return X, y


def test_latent_class_model_recovers_the_prior_and_is_calibrated_without_labels():
    X, y = _synthetic(6000, seed=1)
    model = fit_scorer(X)
    assert abs(model.latent.prior - y.mean()) < 0.05
    p = predict(model, X)
    for lo, hi in ((0.0, 0.3), (0.3, 0.7), (0.7, 0.9), (0.9, 1.0)):
        sel = (p >= lo) & (p < hi)
        assert sel.sum() > 100
        assert abs(p[sel].mean() - y[sel].mean()) < 0.06, (lo, hi, p[sel].mean(), y[sel].mean())
    # every view's likelihood ratio is non-decreasing in its level (least favourable level first)
    for v, (t0, t1) in model.latent.views.items():
        lr = np.log(np.asarray(t1)) - np.log(np.asarray(t0))
        assert np.all(np.diff(lr) >= -1e-9), v


def test_monotone_pools_adjacent_violators_and_keeps_each_class_mass():
    c0 = np.array([10.0, 20.0, 30.0, 40.0])
    c1 = np.array([5.0, 30.0, 10.0, 55.0])     # ratios 0.5, 1.5, 0.33, 1.375: levels 1 and 2 violate
    t0, t1 = _monotone(c0, c1)
    assert t0.sum() == pytest.approx(1.0) and t1.sum() == pytest.approx(1.0)
    r = t1 / t0
    assert np.all(np.diff(r) >= -1e-12)
    assert r[1] == pytest.approx(r[2]) == pytest.approx((0.3 + 0.1) / (0.2 + 0.3))  # pooled: (30+10)/100 over (20+30)/100


def test_view_codes_order_levels_from_least_to_most_favourable():
    X = np.zeros((4, len(FEATURES)))
    X[:, IX["log_documents"]] = np.log([1, 2, 3, 9])
    X[:, IX["contradicts"]] = [1, 0, 0, 0]
    X[:, IX["silent"]] = [0, 1, 0, 0]
    X[:, IX["supports"]] = [0, 0, 0, 1]
    X[:, IX["r_contr"]] = [0.6, 0.1, 0.0, 0.0]
    codes = view_codes(X)
    assert codes["sources"].tolist() == [0, 1, 2, 3]
    assert codes["verifier"].tolist() == [0, 1, 2, 3]       # contradicts < silent < not read < supports
    assert codes["constraints"].tolist() == [0, 1, 2, 2]    # hard < soft < none
    assert set(codes) == set(VIEWS)


def test_labels_refit_moves_the_scores_towards_what_people_answered():
    X, y = _synthetic(3000, seed=2)
    # the truth also depends on a feature the label-free model does not use (head_fit), strongly
    rng = np.random.default_rng(3)
    X[:, IX["head_fit"]] = np.where(y, rng.uniform(0.5, 1.0, len(y)), rng.uniform(0.0, 0.5, len(y)))
    base = fit_scorer(X)
    labels = np.full(len(y), -1.0)
    pick = rng.choice(len(y), 200, replace=False)
    labels[pick] = y[pick]
    refit = fit_scorer(X, labels, ScorerConfig(min_labels=20))
    assert refit.logistic is not None and refit.logistic.labels == 200
    held_out = np.setdiff1d(np.arange(len(y)), pick)

    def logloss(m) -> float:
        p = np.clip(predict(m, X[held_out]), 1e-6, 1 - 1e-6)
        return float(-np.mean(np.where(y[held_out], np.log(p), np.log1p(-p))))

    assert logloss(refit) < logloss(base) - 0.05
    w = dict(zip(["latent_class", *FEATURES], refit.logistic.coef))
    assert w["head_fit"] > 0.3  # the labels taught the refit a feature the label-free model ignored
    top = explain(refit, X[pick[0]])
    assert len(top) == 5 and all(isinstance(v, float) for _, v in top)


def test_scorer_rejects_the_wrong_width():
    with pytest.raises(KgrValidationError, match="features must be n x"):
        fit_scorer(np.zeros((3, 4)))
    with pytest.raises(KgrValidationError, match="one label"):
        fit_scorer(np.zeros((3, len(FEATURES))), np.zeros(2))


# -- features -------------------------------------------------------------------------------------------

def _cand(key, s, r, o, *, votes=2, docs=2, st="P", ot="P", **kw) -> CandidateRow:
    return CandidateRow(key=key, relation=r, subject_key=f"{st}:{s}", subject_type=st, object_key=f"{ot}:{o}",
                        object_type=ot, votes=votes, documents=docs, confidence=0.9, mean_confidence=0.7, **kw)


def test_source_features_count_documents_not_chunks():
    cands = [_cand("a", "x", "R", "y", votes=4, docs=1, quality=0.8, supports=5), _cand("b", "x", "R", "z", votes=2, docs=2)]
    X = np.zeros((2, len(FEATURES)))
    source_features(cands, X)
    assert X[:, IX["log_documents"]].tolist() == pytest.approx([0.0, math.log(2)])
    assert X[:, IX["log_repeats"]].tolist() == pytest.approx([math.log(4), 0.0])
    assert X[:, IX["quality"]].tolist() == [0.8, 0.5] and X[:, IX["has_quality"]].tolist() == [1.0, 0.0]
    assert X[:, IX["supports"]].tolist() == [3.0, 0.0]  # capped at 3


def test_evidence_graph_merges_promoted_and_staged_facts_and_finds_the_candidates():
    promoted = EdgeList(["P:x"], ["R"], ["P:y"], [3.0])
    pending = EdgeList(["P:x", "P:y"], ["R", "R"], ["P:y", "P:z"], [1.0, 2.0])
    cands = [_cand("c", "y", "R", "z", votes=2), _cand("d", "z", "S", "x", votes=1)]
    eg = evidence_graph(cands, promoted, pending, {"P:x": "P", "P:y": "P", "P:z": "P"})
    f = eg.facts
    ent = eg.vocab.entity_index()
    rel = eg.vocab.relation_index()
    rows = {(eg.vocab.entities[h], eg.vocab.relations[r], eg.vocab.entities[t]): (w, pr)
            for h, r, t, w, pr in zip(f.head, f.rel, f.tail, f.weight, eg.promoted)}
    assert rows == {("P:x", "R", "P:y"): (3.0, True), ("P:y", "R", "P:z"): (2.0, False), ("P:z", "S", "P:x"): (1.0, False)}
    for i, c in enumerate(cands):
        assert (f.head[eg.cand_row[i]], f.rel[eg.cand_row[i]], f.tail[eg.cand_row[i]]) == \
            (ent[c.subject_key], rel[c.relation], ent[c.object_key])


# -- the review order and the seam ------------------------------------------------------------------------

def test_review_priority_validates_its_inputs():
    with pytest.raises(KgrValidationError, match="one relation per p_hat"):
        review_priority([0.5], [], tau=0.9)
    with pytest.raises(KgrValidationError, match="tau must be in"):
        review_priority([0.5], ["R"], tau=1.0)


def test_registry_builds_each_policy_and_rejects_a_foreign_config():
    assert isinstance(make_policy("quorum", quorum=3), QuorumPolicy) and make_policy("quorum", quorum=3).config.quorum == 3
    assert make_policy("calibrated").name == "calibrated" and make_policy("gedig").name == "gedig"
    with pytest.raises(KgrValidationError, match="unknown policy 'vote'"):
        make_policy("vote")
    with pytest.raises(KgrValidationError, match="policy gedig takes a PromotionConfig, got CalibratedConfig"):
        make_policy("gedig", CalibratedConfig())


def test_growth_epoch_moves_on_after_a_quarter_more_promoted_edges():
    assert growth_epoch(3, 400, 499) == (3, 400)
    assert growth_epoch(3, 400, 500) == (4, 500)


def _world(n: int = 40) -> tuple[list[CandidateRow], EdgeList, dict]:
    """A promoted star of colleagues at O:acme, and candidates of every kind."""
    people = [f"p{i}" for i in range(n)]
    promoted = EdgeList([f"P:{p}" for p in people], ["WORKS_AT"] * n, ["O:acme"] * n, [3.0] * n,
                        [f"k{i}" for i in range(n)], [0.99] * n)
    types = {f"P:{p}": "P" for p in people} | {"O:acme": "O", "O:globex": "O"}
    return people, promoted, types


def test_calibrated_decide_rejects_labels_false_and_self_loops_and_promotes_a_top_slice():
    people, promoted, types = _world()
    cands = [_cand(f"new{i}", f"q{i}", "WORKS_AT", "acme", ot="O", votes=4, docs=4) for i in range(30)]
    cands += [_cand("loop", "q0", "WORKS_AT", "q0", ot="P"),
              _cand("nolabel", "q1", "WORKS_AT", "globex", ot="O", votes=1, docs=1, label=False)]
    inputs = RoundInputs(candidates=tuple(cands), promoted=promoted, entity_types=types,
                         context=RoundContext(version=1, hash="h", promoted=len(people), promoted_scored=len(people),
                                              promoted_expected_false=0.4))
    out = CalibratedPolicy(CalibratedConfig(embedding=False, background=0)).decide(inputs, None)
    by = {d.key: d for d in out.decisions}
    assert by["loop"].action == "reject" and "self-loop" in by["loop"].reason
    assert by["nolabel"].action == "reject" and by["nolabel"].reason == "labelled false by a reviewer"
    promoted_p = [by[k].p_hat for k in out.promoted_order]
    held_p = [d.p_hat for d in out.decisions if d.action == "hold" and d.p_hat is not None]
    assert promoted_p and min(promoted_p) >= max(held_p, default=0.0)   # a top slice by p_hat
    assert all(d.features is not None and len(d.features) == len(FEATURES) for d in out.decisions if d.p_hat is not None)
    tau = by[out.promoted_order[0]].inputs["tau"]
    assert all(by[k].inputs["gate"] == "DG" and by[k].p_hat >= tau for k in out.promoted_order)


def test_calibrated_budget_holds_are_marked_budget():
    people, promoted, types = _world()
    cands = [_cand(f"new{i}", f"q{i}", "WORKS_AT", "acme", ot="O", votes=4, docs=4) for i in range(30)]
    inputs = RoundInputs(candidates=tuple(cands), promoted=promoted, entity_types=types,
                         context=RoundContext(version=1, hash="h", promoted=len(people)))
    out = CalibratedPolicy(CalibratedConfig(embedding=False, background=0, max_promotions_per_round=5,
                                            target_fmr=0.5)).decide(inputs, None)
    assert len(out.promoted_order) == 5
    budget = [d for d in out.decisions if d.hold == "budget"]
    assert budget and all("round budget of 5 promotions used" in d.reason for d in budget)
