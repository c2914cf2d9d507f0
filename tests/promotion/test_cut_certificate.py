"""The cut and its certificate, pure: Clopper-Pearson, the audit bound deciding the cut, functional groups, ties."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.stats import binom

from kgr.promotion.certificate import calibration_ratio, clopper_pearson_upper, slice_bounds
from kgr.promotion.cut import cut


def test_clopper_pearson_upper_is_the_exact_binomial_bound():
    for f, m in ((0, 22), (2, 100), (7, 40)):
        u = clopper_pearson_upper(f, m, 0.9)
        assert binom.cdf(f, m, u) == pytest.approx(0.1, abs=1e-9)  # P(X <= f | rate u) = 1 - level
    assert clopper_pearson_upper(0, 22) < 0.1 < clopper_pearson_upper(0, 21)
    assert clopper_pearson_upper(5, 5) == 1.0 and clopper_pearson_upper(0, 0) == 1.0


def test_without_audits_the_bound_counts_the_model_expectation_as_prior_audits():
    p = np.array([0.99, 0.97, 0.95, 0.9])
    sb = slice_bounds(p, np.zeros(4, bool), np.zeros(0), np.zeros(0, bool), prior_audits=200)
    expected = np.cumsum(1 - p) / np.arange(1, 5)
    assert sb.expected == pytest.approx(expected)
    assert sb.bound == pytest.approx(clopper_pearson_upper(200 * expected, 200))
    assert np.all(sb.bound > sb.expected)   # more conservative than the expectation
    # labelled-true rows are known: a slice of them alone has bound 0, and they dilute the rest
    sb = slice_bounds(np.array([1.0, 1.0, 0.9]), np.array([True, True, False]), np.zeros(0), np.zeros(0, bool),
                      prior_audits=200)
    assert sb.bound[:2].tolist() == [0.0, 0.0]
    assert sb.bound[2] == pytest.approx(clopper_pearson_upper(200 * 0.1, 200) / 3)


def test_from_prior_audits_on_the_bound_rests_on_the_audits_alone():
    p = np.linspace(0.999, 0.9, 100)
    scores = np.linspace(0.999, 0.9, 50)            # 50 audits spread over the ranking
    false = np.zeros(50, bool)
    false[[10, 30]] = True
    sb = slice_bounds(p, np.zeros(100, bool), scores, false, prior_audits=20)
    k = 99                                          # the whole ranking: all 50 audits, 2 false
    assert (sb.audits[k], sb.audit_false[k]) == (50, 2)
    assert sb.bound[k] == pytest.approx(clopper_pearson_upper(2, 50))   # certified: the model plays no part


def test_the_audit_bound_not_the_model_decides_the_cut():
    """A hand-built case: the model is confident (expected FMR 0.015 on the whole ranking, far within
    the 0.1 target), but the uniform audits the cut is certified on find a false edge in five among
    the lower half: the cut stops where their bound leaves the target."""
    n = 400
    keys = [f"k{i:03d}" for i in range(n)]
    p = np.concatenate([np.full(200, 0.99), np.full(200, 0.98)])
    scores = np.concatenate([np.full(60, 0.99), np.full(60, 0.98)])   # 60 audits in the top half, 60 below
    audit_false = np.concatenate([np.zeros(60, bool), np.arange(60) % 5 == 0])
    model_only = cut(p, keys, target=0.1, prior_audits=50)
    assert model_only.k == n                                            # the model alone promotes everything
    certified = cut(p, keys, target=0.1, prior_audits=50, audit_scores=scores, audit_false=audit_false)
    assert certified.k == 200 and certified.audits == 60               # the audits stop it at the top half
    assert certified.bound == pytest.approx(clopper_pearson_upper(0, 60)) and certified.bound <= 0.1
    assert certified.bounds.bound[n - 1] > 0.1                         # 12 false in 120: 0.14 > 0.1


def test_the_cut_stops_at_the_first_slice_that_fails_and_never_below_min_p():
    p = np.array([0.99, 0.98, 0.6, 0.55, 0.45])
    c = cut(p, list("abcde"), target=0.5, prior_audits=20, min_p=0.5)
    assert c.k == 4 and c.tau == 0.55                                  # 0.45 < min_p
    c = cut(np.array([0.9, 0.99]), ["a", "b"], target=0.01, prior_audits=20)
    assert c.k == 0 and math.isinf(c.tau) and c.expected_fmr is None and c.bound is None


def test_ties_are_broken_by_key_and_the_cut_does_not_depend_on_the_row_order():
    rng = random.Random(4)
    p = np.round(np.array([rng.choice([0.99, 0.97, 0.95, 0.9, 0.8]) for _ in range(300)]), 2)
    keys = [f"{rng.getrandbits(64):016x}" for _ in range(300)]
    base = cut(p, keys, target=0.06, prior_audits=100)
    chosen = {keys[i] for i in base.order[:base.k]}
    for seed in range(3):
        perm = list(range(300))
        random.Random(seed).shuffle(perm)
        other = cut(p[perm], [keys[i] for i in perm], target=0.06, prior_audits=100)
        assert {keys[perm[i]] for i in other.order[:other.k]} == chosen and other.tau == base.tau
    ranked = [(-p[i], keys[i]) for i in base.order]
    assert ranked == sorted(ranked)


def test_one_object_per_subject_on_a_functional_relation_and_none_after_a_pinned_one():
    p = np.array([0.95, 0.97, 0.99, 0.9])
    keys = ["a", "b", "c", "d"]
    groups = ["s1|R", "s1|R", None, "s2|R"]
    c = cut(p, keys, target=0.5, prior_audits=20, groups=groups, blocked=np.array([False, False, False, True]))
    assert sorted(keys[i] for i in c.order[:c.k]) == ["b", "c"]
    assert set(c.losers) == {0, 3} and "better supported object" in c.losers[0] and "promoted object" in c.losers[3]


def test_the_calibration_check_raises_the_models_pseudo_failures_by_the_labels_ratio():
    """Hand-computed: ten unlabelled rows at 0.95 (E = 0.05), M = 20 pseudo-audits: 1 pseudo-failure.
    Four labelled rows score 0.95 out of fold (e = 0.2 expected false) and two are false: the ratio is
    (1 + 2) / (1 + 0.2) = 2.5, so the bound counts 2.5 pseudo-failures in 20 instead of 1."""
    p = np.full(10, 0.95)
    plain = slice_bounds(p, np.zeros(10, bool), np.zeros(0), np.zeros(0, bool), prior_audits=20)
    checked = slice_bounds(p, np.zeros(10, bool), np.zeros(0), np.zeros(0, bool), prior_audits=20,
                           label_scores=np.full(4, 0.95), label_false=np.array([True, True, False, False]))
    assert plain.bound[9] == pytest.approx(clopper_pearson_upper(1.0, 20))
    assert checked.bound[9] == pytest.approx(clopper_pearson_upper(2.5, 20))
    assert calibration_ratio(np.array([1.0]), np.array([2]), np.array([0.2]))[0] == pytest.approx(2.5)
    # never lowered: labels that are all true leave the model's expectation as it was
    calm = slice_bounds(p, np.zeros(10, bool), np.zeros(0), np.zeros(0, bool), prior_audits=20,
                        label_scores=np.full(4, 0.95), label_false=np.zeros(4, bool))
    assert calm.bound == pytest.approx(plain.bound)
    # labels whose score does not reach a slice's lowest p_hat do not count in it
    low = slice_bounds(p, np.zeros(10, bool), np.zeros(0), np.zeros(0, bool), prior_audits=20,
                       label_scores=np.full(4, 0.6), label_false=np.ones(4, bool))
    assert low.bound == pytest.approx(plain.bound)


def test_the_calibration_check_stops_a_cut_where_the_labels_show_the_model_overconfident():
    """100 rows at 0.97 and 100 at 0.90, target 0.1, M = 200: the model alone promotes all 200. Twenty
    labelled rows score 0.90 out of fold and half of them are false (two expected): below 0.97 the
    check raises the expectation and the cut stops inside the lower half; the top half, which no
    label reaches, is untouched; twenty labels that are as false as predicted change nothing."""
    n = 200
    keys = [f"k{i:03d}" for i in range(n)]
    p = np.concatenate([np.full(100, 0.97), np.full(100, 0.90)])
    scores = np.full(20, 0.90)
    plain = cut(p, keys, target=0.1, prior_audits=200)
    assert plain.k == n
    checked = cut(p, keys, target=0.1, prior_audits=200, label_scores=scores, label_false=np.arange(20) % 2 == 0)
    assert 100 < checked.k < n
    assert checked.bound <= 0.1 < checked.bounds.bound[checked.k]
    calibrated = cut(p, keys, target=0.1, prior_audits=200, label_scores=scores, label_false=np.arange(20) % 10 == 0)
    assert calibrated.k == n
