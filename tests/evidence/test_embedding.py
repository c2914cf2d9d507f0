"""Knowledge-graph embeddings (kgr.evidence.embedding): gradients, model properties, cross-fitting,
warm starts and argument checks. Pure and fast (small graphs, no database)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.metrics import roc_auc_score

from kgr.errors import KgrValidationError
from kgr.evidence import kge_train
from kgr.evidence.embedding import CrossFitter, KGEModel, KGEScores, crossfit_scores, fit_kge
from kgr.evidence.facts import FactTable

# --------------------------------------------------------------------------------------------
# small graphs
# --------------------------------------------------------------------------------------------


def _rows(ft: FactTable) -> list[tuple[int, int, int]]:
    return list(zip(ft.head.tolist(), ft.rel.tolist(), ft.tail.tolist()))


def community_kg(seed: int = 0, n_comm: int = 5, size: int = 30, p_same: float = 0.25, p_next: float = 0.15,
                 holdout: float = 0.15):
    """Relation 0 links entities of one community, relation 1 a community to the next (antisymmetric).

    Returns the table (facts + held-out true triples + as many random false ones, the last two
    being the queries), the query mask and the labels of the queries in row order.
    """
    rng = np.random.default_rng(seed)
    n = n_comm * size
    comm = np.repeat(np.arange(n_comm), size)
    true = []
    for h in range(n):
        for t in range(n):
            if h == t:
                continue
            if comm[h] == comm[t] and rng.random() < p_same:
                true.append((h, 0, t))
            if comm[t] == (comm[h] + 1) % n_comm and rng.random() < p_next:
                true.append((h, 1, t))
    true = np.array(true)
    rng.shuffle(true)
    n_hold = int(holdout * len(true))
    held, facts = true[:n_hold], true[n_hold:]
    seen = set(map(tuple, true.tolist()))
    false = []
    while len(false) < n_hold:
        h, r, t = int(rng.integers(0, n)), int(rng.integers(0, 2)), int(rng.integers(0, n))
        if h != t and (h, r, t) not in seen:
            false.append((h, r, t))
            seen.add((h, r, t))
    ft = FactTable.from_triples(np.concatenate([facts, held, np.array(false)]), n_entities=n, n_relations=2)
    queries = set(map(tuple, held.tolist())) | set(false)
    positive = set(map(tuple, held.tolist()))
    mask = np.array([x in queries for x in _rows(ft)])
    labels = np.array([x in positive for x in _rows(ft) if x in queries])
    return ft, mask, labels


def random_kg(seed: int = 1, n: int = 60, m: int = 400, n_rel: int = 3) -> FactTable:
    rng = np.random.default_rng(seed)
    trip = np.c_[rng.integers(0, n, m), rng.integers(0, n_rel, m), rng.integers(0, n, m)]
    trip = trip[trip[:, 0] != trip[:, 2]]
    return FactTable.from_triples(trip, n_entities=n, n_relations=n_rel)


def with_facts(ft: FactTable, extra: list[tuple[int, int, int]], n_entities: int | None = None) -> FactTable:
    trip = np.concatenate([np.c_[ft.head, ft.rel, ft.tail], np.array(extra, dtype=np.int64).reshape(-1, 3)])
    w = np.concatenate([ft.weight, np.ones(len(extra))])
    return FactTable.from_triples(trip, n_entities=n_entities or ft.n_entities, n_relations=ft.n_relations,
                                  weights=w)


def mask_of(ft: FactTable, triples: set[tuple[int, int, int]]) -> np.ndarray:
    return np.array([x in triples for x in _rows(ft)])


# --------------------------------------------------------------------------------------------
# gradient and model properties
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["complex", "distmult"])
def test_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(3)
    n, R, d, m = 7, 3, 4, 12
    h, r, t = rng.integers(0, n, m), rng.integers(0, R, m), rng.integers(0, n, m)
    ob = kge_train.Objective(kind, d, n, R, h, r, t, rng.random(m) + 0.5,
                        rng.integers(0, n, (m, 2)), (rng.random((m, 2)) < 0.8).astype(float),
                        rng.integers(0, n, (m, 2)), np.ones((m, 2)), 4, 0.3, dtype=np.float64)
    for _ in range(3):
        x = rng.standard_normal((n + R) * d)
        analytic = ob(x)[1]
        numeric = approx_fprime(x, lambda z: ob(z)[0], 1e-7)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


def test_score_formulas_written_out():
    # ComplEx rows are interleaved (re, im) pairs: e_0 = 1 + 2i, w = 0 + 1i, e_1 = 3 - 1i
    E = np.array([[1.0, 2.0], [3.0, -1.0]])
    W = np.array([[0.0, 1.0]])
    m = KGEModel("complex", E, W)
    # Re((1+2i) * i * conj(3-i)) = Re((-2+i)(3+i)) = Re(-7 - i) = -7
    np.testing.assert_allclose(m.score(0, 0, 1), -7.0)
    # Re((3-i) * i * conj(1+2i)) = Re((1+3i)(1-2i)) = Re(7 + i) = 7: antisymmetric
    np.testing.assert_allclose(m.score(1, 0, 0), 7.0)
    d = KGEModel("distmult", E, W)
    np.testing.assert_allclose(d.score([0, 1], 0, [1, 0]), [-2.0, -2.0])  # 1*0*3 + 2*1*(-1)
    assert m.score(np.zeros((2, 3), dtype=int), 0, 1).shape == (2, 3)


def test_distmult_is_symmetric_in_head_and_tail():
    ft = random_kg()
    m = fit_kge(ft, model="distmult", dim=8, max_iter=30)
    h, r, t = ft.head, ft.rel, ft.tail
    np.testing.assert_allclose(m.score(h, r, t), m.score(t, r, h), rtol=1e-12, atol=1e-12)


def test_complex_learns_an_antisymmetric_relation():
    n = 40  # "precedes": i -> j for i < j <= i + 3
    pairs = np.array([(i, 0, j) for i in range(n) for j in range(i + 1, min(n, i + 4))])
    np.random.default_rng(0).shuffle(pairs)
    held, train = pairs[:15], pairs[15:]
    ft = FactTable.from_triples(train, n_entities=n, n_relations=1)
    fwd_share = {}
    for kind in ("complex", "distmult"):
        m = fit_kge(ft, model=kind, dim=16, max_iter=200)
        fwd = m.score(held[:, 0], 0, held[:, 2])
        bwd = m.score(held[:, 2], 0, held[:, 0])
        fwd_share[kind] = float(np.mean(fwd > bwd + 1e-9))
    assert fwd_share["complex"] >= 0.9
    assert fwd_share["distmult"] == 0.0  # it cannot tell the directions apart


def test_fit_is_deterministic_and_seeded():
    ft = random_kg()
    a, b = fit_kge(ft, dim=8, max_iter=20, seed=4), fit_kge(ft, dim=8, max_iter=20, seed=4)
    np.testing.assert_array_equal(a.entity, b.entity)
    np.testing.assert_array_equal(a.relation, b.relation)
    assert (a.n_iter, a.n_eval, a.loss) == (b.n_iter, b.n_eval, b.loss)
    c = fit_kge(ft, dim=8, max_iter=20, seed=5)
    assert not np.array_equal(a.entity, c.entity)


def test_self_loops_are_not_trained_and_unseen_entities_stay_zero():
    ft = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (2, 0, 0), (3, 0, 3)], n_entities=5, n_relations=1)
    m = fit_kge(ft, dim=4, max_iter=10)
    np.testing.assert_array_equal(m.entity[3], 0.0)  # only in a self loop
    np.testing.assert_array_equal(m.entity[4], 0.0)  # in no fact
    assert m.score(4, 0, 0) == 0.0


def test_empty_table_gives_an_untrained_zero_model():
    m = fit_kge(FactTable.from_triples([], n_entities=3, n_relations=2), dim=4)
    assert (m.n_iter, m.entity.shape, m.relation.shape) == (0, (3, 4), (2, 4))
    assert np.isnan(m.loss) and not m.entity.any()


def test_warm_start_over_a_grown_id_space():
    ft = random_kg(n=30, m=150)
    first = fit_kge(ft, dim=8, max_iter=40)
    grown = with_facts(ft, [(30, 0, 1), (31, 1, 30)], n_entities=32)
    warm = fit_kge(grown, dim=8, max_iter=40, init=first)
    cold = fit_kge(grown, dim=8, max_iter=40)
    assert warm.entity.shape == (32, 8)
    assert warm.entity[30].any() and warm.entity[31].any()
    assert warm.n_iter < cold.n_iter or warm.loss <= cold.loss
    # an init over more ids than the table is cut to the table
    small = FactTable.from_triples([(0, 0, 1)], n_entities=2, n_relations=1)
    assert fit_kge(small, dim=8, max_iter=2, init=first).entity.shape == (2, 8)


# --------------------------------------------------------------------------------------------
# cross-fitting
# --------------------------------------------------------------------------------------------


def test_crossfit_hides_the_query_from_its_model():
    # no structure at all: a triple can only score high by being memorised
    ft = random_kg()
    rng = np.random.default_rng(2)
    mask = np.zeros(len(ft), dtype=bool)
    mask[rng.choice(len(ft), 40, replace=False)] = True
    sc = crossfit_scores(ft, mask, l2=0.01, max_iter=200)
    full = fit_kge(ft, l2=0.01, max_iter=200).score(ft.head[mask], ft.rel[mask], ft.tail[mask])
    assert np.mean(sc.logit < full) >= 0.85
    assert full.mean() - sc.logit.mean() > 3.0
    assert abs(sc.rank_quantile.mean() - 0.5) < 0.15  # unseen random triples: no better than chance


def test_crossfit_output_shape_and_order():
    ft, mask, _ = community_kg()
    sc = crossfit_scores(ft, mask, folds=3, n_corruptions=10)
    assert isinstance(sc, KGEScores)
    np.testing.assert_array_equal(sc.index, np.flatnonzero(mask))
    q = int(mask.sum())
    assert sc.logit.shape == sc.rank_quantile.shape == sc.fold.shape == sc.n_compared.shape == (q,)
    assert set(np.unique(sc.fold)) == {0, 1, 2} and len(sc.n_iter) == len(sc.warm) == 3
    assert np.all((sc.rank_quantile >= 0) & (sc.rank_quantile <= 1))
    assert np.all(sc.n_compared <= 10) and sc.n_compared.mean() > 9
    # rank quantiles are multiples of 1 / (2 * compared)
    np.testing.assert_allclose((sc.rank_quantile * 2 * sc.n_compared) % 1, 0, atol=1e-9)


def test_fold_assignment_is_stable_across_calls_and_renumberings():
    ft, mask, _ = community_kg()
    a = crossfit_scores(ft, mask, max_iter=3)
    fold_of = {tuple(x): f for x, f in zip(np.array(_rows(ft))[mask].tolist(), a.fold)}
    # more facts, fewer queries: the common queries keep their folds
    queries = set(map(tuple, np.array(_rows(ft))[mask][::2].tolist()))
    grown = with_facts(ft, [(0, 0, 149), (149, 1, 0)])
    b = crossfit_scores(grown, mask_of(grown, queries), max_iter=3, seed=9)
    for x, f in zip(np.array(_rows(grown))[mask_of(grown, queries)].tolist(), b.fold):
        assert fold_of[tuple(x)] == f
    # with keys, renumbering the entities does not move a triple
    keys = [f"e{i:03d}" for i in range(ft.n_entities)]
    perm = np.random.default_rng(0).permutation(ft.n_entities)  # new id of old id i is perm[i]
    new_keys = [""] * ft.n_entities
    for old, new in enumerate(perm):
        new_keys[new] = keys[old]
    moved = FactTable(perm[ft.head], ft.rel.copy(), perm[ft.tail], ft.weight.copy(), ft.n_entities, ft.n_relations)
    k1 = crossfit_scores(ft, mask, max_iter=3, entity_keys=keys, relation_keys=["same", "next"])
    k2 = crossfit_scores(moved, mask, max_iter=3, entity_keys=new_keys, relation_keys=["same", "next"])
    np.testing.assert_array_equal(k1.fold, k2.fold)


def test_crossfit_is_deterministic():
    ft, mask, _ = community_kg()
    a = crossfit_scores(ft, mask, seed=3)
    b = crossfit_scores(ft, mask, seed=3)
    np.testing.assert_array_equal(a.logit, b.logit)
    np.testing.assert_array_equal(a.rank_quantile, b.rank_quantile)
    assert a.n_iter == b.n_iter
    c = crossfit_scores(ft, mask, seed=4)
    assert not np.array_equal(a.logit, c.logit)


@pytest.mark.parametrize("kind", ["complex", "distmult"])
def test_held_out_true_triples_outrank_random_false_ones(kind):
    ft, mask, labels = community_kg()
    sc = crossfit_scores(ft, mask, model=kind)
    assert roc_auc_score(labels, sc.rank_quantile) > 0.8
    if kind == "complex":
        assert roc_auc_score(labels, sc.logit) > 0.8


def test_type_constrained_corruptions():
    # two types; each query's head type has just one entity, so only its tail can be corrupted
    trip = [(0, 0, t) for t in range(1, 6)] + [(0, 0, 6)]
    ft = FactTable.from_triples(trip, n_entities=7, n_relations=1)
    types = np.array([0, 1, 1, 1, 1, 1, 1])
    mask = ft.tail == 6
    sc = crossfit_scores(ft, mask, entity_types=types, n_corruptions=8, max_iter=5)
    # head corruptions: entity 0 is alone in its type, so each is the query itself (a known fact);
    # tail corruptions: every other entity of type 1 makes a known fact. Nothing to compare.
    assert sc.n_compared.tolist() == [0] and sc.rank_quantile.tolist() == [0.5]
    # type ids are labels: any non-negative integers give the same result
    same = crossfit_scores(ft, mask, entity_types=types * 10**12 + 3, n_corruptions=8, max_iter=5)
    np.testing.assert_array_equal(same.logit, sc.logit)
    # without types the head may be replaced by any entity that occurs
    sc = crossfit_scores(ft, mask, n_corruptions=8, max_iter=5)
    assert sc.n_compared[0] > 0


# --------------------------------------------------------------------------------------------
# warm starts over rounds
# --------------------------------------------------------------------------------------------


def _round_two(ft: FactTable, mask: np.ndarray, n_new: int = 10):
    rng = np.random.default_rng(5)
    comm = np.repeat(np.arange(5), 30)
    rows = set(_rows(ft))
    extra = []
    while len(extra) < n_new:
        h, t = (int(x) for x in rng.integers(0, 150, 2))
        if h != t and comm[h] == comm[t] and (h, 0, t) not in rows:
            extra.append((h, 0, t))
            rows.add((h, 0, t))
    grown = with_facts(ft, extra)
    queries = set(map(tuple, np.array(_rows(ft))[mask].tolist()))
    return grown, mask_of(grown, queries)


def test_crossfitter_warm_round_is_cheaper_and_agrees():
    ft, mask, labels = community_kg()
    cf = CrossFitter(max_iter=300, warm_max_iter=300)  # same cap: fewer iterations come from the start
    first = cf.scores(ft, mask)
    grown, mask2 = _round_two(ft, mask)
    second = cf.scores(grown, mask2)
    assert first.warm == (False, False) and second.warm == (True, True)
    assert sum(second.n_iter) < 0.6 * sum(first.n_iter)
    assert all(w < c for w, c in zip(second.n_iter, first.n_iter))
    assert np.corrcoef(first.rank_quantile, second.rank_quantile)[0, 1] > 0.95
    assert roc_auc_score(labels, second.rank_quantile) > 0.8
    assert all(isinstance(m, KGEModel) for m in cf.models)
    # defaults: the warm cap is lower than the cold one
    cf = CrossFitter()
    cold = cf.scores(ft, mask)
    warm = cf.scores(grown, mask2)
    assert max(warm.n_iter) < max(cold.n_iter)
    cf.reset()
    assert cf.models == (None, None) and cf.scores(grown, mask2).warm == (False, False)


def test_crossfitter_remaps_embeddings_by_key():
    ft, mask, _ = community_kg()
    keys = [f"e{i:03d}" for i in range(150)]
    cf = CrossFitter(max_iter=40)
    first = cf.scores(ft, mask, entity_keys=keys)
    # a new entity sorts first: every old id shifts by one
    new_keys = ["a-new"] + keys
    shifted = FactTable(ft.head + 1, ft.rel.copy(), ft.tail + 1, ft.weight.copy(), 151, 2)
    grown = with_facts(shifted, [(0, 0, 1), (2, 0, 0)])
    queries = {(h + 1, r, t + 1) for h, r, t in np.array(_rows(ft))[mask].tolist()}
    second = cf.scores(grown, mask_of(grown, queries), entity_keys=new_keys)
    assert second.warm == (True, True)
    np.testing.assert_array_equal(first.fold, second.fold)
    assert np.corrcoef(first.rank_quantile, second.rank_quantile)[0, 1] > 0.9
    # switching to ids only starts cold
    assert cf.scores(grown, mask_of(grown, queries)).warm == (False, False)


def test_crossfitter_refits_a_fold_whose_query_it_has_trained_on():
    ft, mask, _ = community_kg()
    cf = CrossFitter(max_iter=30)
    cf.scores(ft, mask)
    # round two: a former (non-query) fact becomes a query; its fold's warm model has seen it
    fact = next(x for x, q in zip(_rows(ft), mask) if not q)
    queries = set(map(tuple, np.array(_rows(ft))[mask].tolist())) | {fact}
    sc = cf.scores(ft, mask_of(ft, queries))
    fold = int(sc.fold[np.flatnonzero(mask_of(ft, queries)).tolist().index(_rows(ft).index(fact))])
    assert sc.warm[fold] is False and sc.warm[1 - fold] is True


# --------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "transe"}, "model must be one of complex, distmult"),
        ({"dim": 0}, "dim must be an integer >= 1"),
        ({"dim": 5}, "dim must be even for complex"),
        ({"neg_per_pos": 0}, "neg_per_pos must be an integer >= 1"),
        ({"l2": -1.0}, "l2 must be a finite number >= 0"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"entity_types": np.zeros(3, dtype=int)}, r"entity_types must have shape \(4,\)"),
        ({"entity_types": np.full(4, -1)}, "entity_types must be integer type ids >= 0"),
        ({"init": "model"}, "init must be a KGEModel"),
        ({"init": KGEModel("distmult", np.zeros((4, 4)), np.zeros((1, 4)))}, "init is a distmult model of dim 4"),
    ],
)
def test_fit_kge_validation(kwargs, match):
    ft = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (2, 0, 3)], n_entities=4, n_relations=1)
    with pytest.raises(KgrValidationError, match=match):
        fit_kge(ft, **{"dim": 4, **kwargs})


def test_fit_kge_needs_a_fact_table():
    with pytest.raises(KgrValidationError, match="facts must be a FactTable, got list"):
        fit_kge([(0, 0, 1)])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"query_mask": np.ones(2, dtype=bool)}, r"query_mask must be a bool array of shape \(3,\)"),
        ({"query_mask": np.ones(3, dtype=int)}, "query_mask must be a bool array"),
        ({"folds": 1}, "folds must be an integer >= 2"),
        ({"n_corruptions": 1}, "n_corruptions must be an integer >= 2"),
        ({"lr": 0.1}, "unknown keyword 'lr'"),
        ({"init": None}, "unknown keyword 'init'"),
        ({"model": "rescal"}, "model must be one of"),
        ({"entity_keys": ["a", "b"]}, r"entity_keys must have one key per id \(4\), got 2"),
        ({"entity_keys": ["a", "a", "b", "c"]}, "entity_keys must be distinct strings"),
        ({"relation_keys": [1]}, "relation_keys must be distinct strings"),
    ],
)
def test_crossfit_validation(kwargs, match):
    ft = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (2, 0, 3)], n_entities=4, n_relations=1)
    args = {"query_mask": ft.head == 1, "dim": 4, **kwargs}
    mask = args.pop("query_mask")
    with pytest.raises(KgrValidationError, match=match):
        crossfit_scores(ft, mask, **args)


def test_crossfitter_and_model_validation():
    with pytest.raises(KgrValidationError, match="warm_max_iter must be an integer >= 1"):
        CrossFitter(warm_max_iter=0)
    with pytest.raises(KgrValidationError, match="folds must be an integer >= 2"):
        CrossFitter(folds=1)
    with pytest.raises(KgrValidationError, match="dim must be even for complex"):
        KGEModel("complex", np.zeros((2, 3)), np.zeros((1, 3)))
    with pytest.raises(KgrValidationError, match="same width"):
        KGEModel("distmult", np.zeros((2, 3)), np.zeros((1, 4)))
    m = KGEModel("distmult", np.zeros((2, 3)), np.zeros((1, 3)))
    with pytest.raises(KgrValidationError, match=r"tail: id out of range \[0, 2\)"):
        m.score(0, 0, 2)
    with pytest.raises(KgrValidationError, match="rel: ids must be integers"):
        m.score(0, 0.5, 1)
    ft = FactTable.from_triples([(0, 0, 1)], n_entities=2, n_relations=1)
    with pytest.raises(KgrValidationError, match="entity_keys must have one key per id"):
        CrossFitter(dim=2).scores(ft, ft.head == 0, entity_keys=["a"])
