"""Role profiles: hand-computed cosines, exact leave-one-out, learned domain/range shares,
degenerate cases, and the vectorised code against a slow reference."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from kgr.errors import KgrValidationError
from kgr.evidence.facts import FactTable
from kgr.evidence.roles import role_evidence, role_profiles

W, B, L = range(3)  # WORKS_AT (person -> org), BASED_IN (org -> city), LIVES_IN (person -> city)
# persons 0, 1, 2; orgs 3, 4; city 5
ROWS = [(0, W, 3), (1, W, 3), (2, W, 4), (3, B, 5), (4, B, 5), (0, L, 5)]
TYPES = [0, 0, 0, 1, 1, 2]


def table(rows=ROWS, weights=None) -> FactTable:
    return FactTable.from_triples(rows, n_entities=6, n_relations=3, weights=weights)


def cos(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_profiles_by_hand():
    # columns: out W, out B, out L, in W, in B, in L
    want = [
        [1, 0, 1, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [0, 1, 0, 2, 0, 0],
        [0, 1, 0, 1, 0, 0],
        [0, 0, 0, 0, 2, 1],
    ]
    np.testing.assert_array_equal(role_profiles(table()).toarray(), want)
    weighted = role_profiles(table(weights=[2, 1, 1, 1, 1, 0.5]), weighted=True).toarray()
    np.testing.assert_array_equal(weighted[3], [0, 1, 0, 3, 0, 0])
    np.testing.assert_array_equal(weighted[5], [0, 0, 0, 0, 2, 0.5])


def test_cosines_by_hand_for_new_triples():
    s2 = math.sqrt(2)
    s5 = math.sqrt(5)
    # head centroid of W (sum of unit profiles of 0, 1, 2): (2 + 1/sqrt2, 0, 1/sqrt2, 0, 0, 0)
    head_w = [2 + 1 / s2, 0, 1 / s2, 0, 0, 0]
    # tail centroid of W (units of 3 and 4): (0, 1/sqrt5 + 1/sqrt2, 0, 2/sqrt5 + 1/sqrt2, 0, 0)
    tail_w = [0, 1 / s5 + 1 / s2, 0, 2 / s5 + 1 / s2, 0, 0]
    ev = role_evidence(table(), [0, 5, 1], [W, W, W], [4, 4, 5])
    np.testing.assert_allclose(ev.head_fit, [cos([1, 0, 1, 0, 0, 0], head_w), 0.0, cos([1, 0, 0, 0, 0, 0], head_w)])
    np.testing.assert_allclose(ev.tail_fit, [cos([0, 1, 0, 1, 0, 0], tail_w), cos([0, 1, 0, 1, 0, 0], tail_w),
                                             cos([0, 0, 0, 0, 2, 1], tail_w)])
    assert ev.tail_fit[2] == 0.0  # a city shares no role with employers
    np.testing.assert_allclose(ev.head_fit[0], (2 + 2 / s2) / (s2 * math.sqrt((2 + 1 / s2) ** 2 + 0.5)))
    np.testing.assert_array_equal(ev.head_seen, [1, 0, 1])
    np.testing.assert_array_equal(ev.tail_seen, [1, 1, 0])
    assert ev.known_relation.all() and not ev.in_table.any()
    assert ev.type_share_head is None and ev.type_share_tail is None


def test_leave_one_out_by_hand():
    # query (0, W, 3) is a fact. Without it: p0 = (0,0,1,0,0,0), p3 = (0,1,0,1,0,0);
    # heads of W: 1, 2 -> centroid direction (1,0,0,0,0,0): head_fit = cos(p0, e_W) = 0
    # tails of W: 3 (reduced) and 4: both (0,1,0,1,0,0)/sqrt2 -> tail_fit = 1
    ev = role_evidence(table(), [0], [W], [3])
    assert ev.in_table[0]
    assert ev.head_fit[0] == pytest.approx(0.0)
    assert ev.tail_fit[0] == pytest.approx(1.0)
    assert (ev.head_seen[0], ev.tail_seen[0]) == (0, 1)


def test_type_shares_are_the_learned_domain_and_range():
    ev = role_evidence(table(), [0, 3, 1, 0], [W, W, W, B], [3, 5, 4, 5], entity_types=TYPES)
    # W's three facts: heads all persons, tails all orgs
    # (0,W,3) is a fact: the other two W facts -> head share 1, tail share 1
    # (3,W,5): an org as head -> 0; a city as tail -> 0
    # (1,W,4): new -> 3/3 and 3/3
    # (0,B,5): a person as head of BASED_IN -> 0/2; city as tail -> 2/2
    np.testing.assert_allclose(ev.type_share_head, [1, 0, 1, 0])
    np.testing.assert_allclose(ev.type_share_tail, [1, 0, 1, 1])
    half = table(ROWS + [(5, W, 3)])
    ev = role_evidence(half, [2], [W], [4], entity_types=TYPES)  # 2 -> 4 left out: 3 of 4 W facts
    np.testing.assert_allclose([ev.type_share_head[0], ev.type_share_tail[0]], [2 / 3, 1.0])


def test_unknown_relation_and_only_fact_are_neutral():
    ft = FactTable.from_triples([(0, 0, 1), (2, 1, 3)], n_entities=4, n_relations=3)
    ev = role_evidence(ft, [0, 2, 0], [2, 1, 1], [1, 3, 3], entity_types=[0, 0, 1, 1])
    # relation 2 has no fact; (2, 1, 3) is relation 1's only fact; (0, 1, 3) new with one other fact
    np.testing.assert_array_equal(ev.known_relation, [False, False, True])
    np.testing.assert_array_equal(ev.in_table, [False, True, False])
    np.testing.assert_array_equal(ev.head_fit[:2], [0, 0])
    np.testing.assert_array_equal(ev.tail_fit[:2], [0, 0])
    np.testing.assert_array_equal(ev.type_share_head[:2], [0, 0])
    np.testing.assert_array_equal(ev.head_seen, [0, 0, 0])
    assert ev.type_share_head[2] == 0.0 and ev.type_share_tail[2] == 1.0


def test_empty_table_and_no_queries():
    empty = FactTable.from_triples([], n_entities=3, n_relations=2)
    ev = role_evidence(empty, [0, 1], [0, 1], [1, 2], entity_types=[0, 1, 2], weighted=True)
    assert not ev.known_relation.any() and not ev.in_table.any()
    assert ev.head_fit.tolist() == [0.0, 0.0] and ev.type_share_tail.tolist() == [0.0, 0.0]
    ev = role_evidence(table(), [], [], [])
    assert ev.head_fit.shape == (0,) and ev.head_seen.dtype == np.int64


def test_self_loops_are_ignored():
    ft = table(ROWS + [(3, W, 3)])
    np.testing.assert_array_equal(role_profiles(ft).toarray(), role_profiles(table()).toarray())
    ev = role_evidence(ft, [3], [W], [3])
    assert not ev.in_table[0]


def test_validation_errors():
    ft = table()
    with pytest.raises(KgrValidationError, match="one entry per query"):
        role_evidence(ft, [0, 1], [0], [1])
    with pytest.raises(KgrValidationError, match="entity id"):
        role_evidence(ft, [6], [0], [1])
    with pytest.raises(KgrValidationError, match="relation id"):
        role_evidence(ft, [0], [3], [1])
    with pytest.raises(KgrValidationError, match="entity_types"):
        role_evidence(ft, [0], [0], [1], entity_types=[0, 1])
    with pytest.raises(KgrValidationError, match="entity_types"):
        role_evidence(ft, [0], [0], [1], entity_types=[0, 0, 0, -1, 1, 2])


# ------------------------------------------------------------------------------------------
# Leave-one-out exactness and the slow reference
# ------------------------------------------------------------------------------------------


def random_table(seed, *, n=150, R=4, m=2500, weighted=False):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, n, m)
    r = rng.integers(0, R, m)
    t = rng.integers(0, n, m)
    # roles: relation 0 from [0, 50) to [50, 100); hub 7 heads many facts of relation 1
    h[: m // 4] = rng.integers(0, 50, m // 4)
    t[: m // 4] = rng.integers(50, 100, m // 4)
    r[: m // 4] = 0
    h[m // 4: m // 4 + 200], r[m // 4: m // 4 + 200] = 7, 1
    w = rng.uniform(0.1, 3.0, m) if weighted else None
    ft = FactTable.from_triples(np.stack([h, r, t], 1), n_entities=n, n_relations=R, weights=w)
    types = np.where(np.arange(n) < 50, 0, np.where(np.arange(n) < 100, 1, 2))
    return ft, types, rng


@pytest.mark.parametrize("weighted", [False, True])
def test_leave_one_out_equals_recomputation_without_the_fact(weighted):
    ft, types, rng = random_table(5, weighted=weighted)
    idx = rng.choice(len(ft), 40, replace=False)
    idx[0] = int(np.flatnonzero(ft.head == 7)[0])  # a hub's fact
    ev = role_evidence(ft, ft.head[idx], ft.rel[idx], ft.tail[idx], entity_types=types, weighted=weighted)
    assert ev.in_table.all()
    for k, i in enumerate(idx):
        without = ft.subset(np.arange(len(ft)) != i)
        ref = role_evidence(without, [ft.head[i]], [ft.rel[i]], [ft.tail[i]], entity_types=types, weighted=weighted)
        assert not ref.in_table[0]
        for name in ("head_fit", "tail_fit", "type_share_head", "type_share_tail"):
            np.testing.assert_allclose(getattr(ev, name)[k], getattr(ref, name)[0], rtol=1e-12, atol=1e-12)
        for name in ("head_seen", "tail_seen", "known_relation"):
            assert getattr(ev, name)[k] == getattr(ref, name)[0]


def _reference(ft: FactTable, queries, types, weighted):
    """The definitions, computed from scratch on F minus the query for every query."""
    n, R = ft.n_entities, ft.n_relations
    base = {}
    for h, r, t, w in zip(ft.head.tolist(), ft.rel.tolist(), ft.tail.tolist(), ft.weight.tolist()):
        if h != t:
            base[(h, r, t)] = base.get((h, r, t), 0.0) + w
    out = []
    for q in queries:
        facts = {f: w for f, w in base.items() if f != q}
        prof = defaultdict(lambda: np.zeros(2 * R))
        heads, tails = defaultdict(set), defaultdict(set)
        for (h, r, t), w in facts.items():
            prof[h][r] += w if weighted else 1
            prof[t][R + r] += w if weighted else 1
            heads[r].add(h)
            tails[r].add(t)
        h, r, t = q

        def fit(e, members):
            if not members or not prof[e].any():
                return 0.0
            c = sum(prof[m] / np.linalg.norm(prof[m]) for m in members) / len(members)
            return float(prof[e] @ c / (np.linalg.norm(prof[e]) * np.linalg.norm(c)))

        rf = [(x, y) for (x, rr, y) in facts if rr == r]
        share = (lambda pos, e: sum(types[f[pos]] == types[e] for f in rf) / len(rf) if rf else 0.0)
        out.append((fit(h, heads[r]), fit(t, tails[r]), sum(x == h for x, _ in rf), sum(y == t for _, y in rf),
                    share(0, h), share(1, t), bool(rf), q in base))
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_vectorised_matches_reference(weighted):
    ft, types, rng = random_table(11, n=110, m=1500, weighted=weighted)
    idx = rng.choice(len(ft), 40, replace=False)
    h = np.concatenate([ft.head[idx], rng.integers(0, 110, 40), [7, 3]])
    r = np.concatenate([ft.rel[idx], rng.integers(0, 4, 40), [1, 2]])
    t = np.concatenate([ft.tail[idx], rng.integers(0, 110, 40), [8, 3]])
    ev = role_evidence(ft, h, r, t, entity_types=types, weighted=weighted)
    ref = _reference(ft, list(zip(h.tolist(), r.tolist(), t.tolist())), types, weighted)
    got = list(zip(ev.head_fit, ev.tail_fit, ev.head_seen, ev.tail_seen, ev.type_share_head, ev.type_share_tail,
                   ev.known_relation, ev.in_table))
    for g, w in zip(got, ref):
        np.testing.assert_allclose(g[:6], w[:6], rtol=1e-12, atol=1e-12)
        assert tuple(map(bool, g[6:])) == w[6:]
    assert 0.0 < ev.head_fit.mean() < 1.0
