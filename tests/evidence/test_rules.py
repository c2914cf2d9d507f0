"""Rule mining and rule evidence: hand-computed statistics on a family graph, self-support,
hub exclusion, degenerate inputs, and the vectorised code against a slow reference."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from kgr.errors import KgrValidationError
from kgr.evidence.facts import FactTable
from kgr.evidence.rules import Rule, RuleSet, mine_rules

P, GP, SP, HU, WI = range(5)
NAMES = ("PARENT", "GRANDPARENT", "SPOUSE", "HUSBAND", "WIFE")
#            0    1    2    3    4    5    6    7
# entities: Ann, Bob, Cat, Dan, Eve, Fay, Gus, Hal
FAMILY = [
    # PARENT: Ann, Bob -> Cat -> Eve, Fay; Dan -> Gus -> Hal
    (0, P, 2), (1, P, 2), (2, P, 4), (2, P, 5), (3, P, 6), (6, P, 7),
    # GRANDPARENT: three of the five parent-of-parent pairs (Bob->Fay and Dan->Hal missing),
    # plus one unexplained fact (Gus -> Bob)
    (0, GP, 4), (0, GP, 5), (1, GP, 4), (6, GP, 1),
    # SPOUSE: Ann<->Bob, Cat<->Dan both ways, Hal->Gus one way
    (0, SP, 1), (1, SP, 0), (2, SP, 3), (3, SP, 2), (7, SP, 6),
    # HUSBAND: Bob of Ann, Dan of Cat, Gus of Hal; WIFE: Ann of Bob, Cat of Dan
    (1, HU, 0), (3, HU, 2), (6, HU, 7),
    (0, WI, 1), (2, WI, 3),
]


def family(rows=FAMILY) -> FactTable:
    return FactTable.from_triples(rows, n_entities=8, n_relations=5)


def find(rs: RuleSet, head: int, *body: tuple[int, bool]) -> Rule:
    hits = [r for r in rs.rules if r.head == head and r.body == tuple(body)]
    assert len(hits) == 1, f"no rule {NAMES[head]} <- {body}"
    return hits[0]


@pytest.fixture(scope="module")
def rs() -> RuleSet:
    return mine_rules(family(), min_support=2, min_head_coverage=0.0, min_confidence=0.0, relation_names=NAMES)


# ------------------------------------------------------------------------------------------
# Statistics by hand
# ------------------------------------------------------------------------------------------


def test_grandparent_from_parent_of_parent(rs):
    rule = find(rs, GP, (P, False), (P, False))
    assert str(rule) == "GRANDPARENT(x,y) <- PARENT(x,z) & PARENT(z,y)"
    # body pairs: (Ann,Eve) (Ann,Fay) (Bob,Eve) (Bob,Fay) (Dan,Hal) = 5
    # support: (Ann,Eve) (Ann,Fay) (Bob,Eve) = 3; |GRANDPARENT| = 4
    # PCA: body pairs whose x has a GRANDPARENT fact: Ann, Bob yes, Dan no -> 4
    assert (rule.support, rule.body_size, rule.pca_body_size, rule.head_size) == (3, 5, 4, 4)
    assert rule.std_confidence == pytest.approx(3 / 5)
    assert rule.pca_confidence == pytest.approx(3 / 4)
    assert rule.head_coverage == pytest.approx(3 / 4)
    assert rule.excluded_middles == ()


def test_spouse_is_symmetric(rs):
    rule = find(rs, SP, (SP, True))
    assert str(rule) == "SPOUSE(x,y) <- SPOUSE(y,x)"
    # body = reversed spouse pairs: (Bob,Ann) (Ann,Bob) (Dan,Cat) (Cat,Dan) (Gus,Hal) = 5;
    # support 4 (all but Gus->Hal); PCA: Gus has no SPOUSE fact -> 4; |SPOUSE| = 5
    assert (rule.support, rule.body_size, rule.pca_body_size, rule.head_size) == (4, 5, 4, 5)
    assert rule.std_confidence == pytest.approx(0.8)
    assert rule.pca_confidence == pytest.approx(1.0)
    assert rule.head_coverage == pytest.approx(0.8)


def test_husband_wife_inverse_and_spouse_from_husband(rs):
    wife = find(rs, WI, (HU, True))
    assert str(wife) == "WIFE(x,y) <- HUSBAND(y,x)"
    # body: (Ann,Bob) (Cat,Dan) (Hal,Gus); support 2; PCA: Hal has no WIFE fact -> 2
    assert (wife.support, wife.body_size, wife.pca_body_size, wife.head_size) == (2, 3, 2, 2)
    assert (wife.std_confidence, wife.pca_confidence, wife.head_coverage) == pytest.approx((2 / 3, 1.0, 1.0))

    husband = find(rs, HU, (WI, True))
    assert (husband.support, husband.body_size, husband.pca_body_size, husband.head_size) == (2, 2, 2, 3)
    assert husband.head_coverage == pytest.approx(2 / 3)

    spouse = find(rs, SP, (HU, False))
    assert str(spouse) == "SPOUSE(x,y) <- HUSBAND(x,y)"
    # body: (Bob,Ann) (Dan,Cat) (Gus,Hal); support 2; Gus has no SPOUSE fact -> PCA 2
    assert (spouse.support, spouse.body_size, spouse.pca_body_size) == (2, 3, 2)
    assert spouse.head_coverage == pytest.approx(2 / 5)


def test_no_rule_uses_its_own_head_atom(rs):
    assert all(r.body != ((r.head, False),) for r in rs.rules)


def test_thresholds_filter_and_order(rs):
    strict = mine_rules(family(), min_support=3, min_head_coverage=0.5, min_confidence=0.7, relation_names=NAMES)
    for r in strict.rules:
        assert r.support >= 3 and r.head_coverage >= 0.5 and r.pca_confidence >= 0.7
    assert {str(r) for r in strict.rules} >= {"GRANDPARENT(x,y) <- PARENT(x,z) & PARENT(z,y)",
                                              "SPOUSE(x,y) <- SPOUSE(y,x)"}
    std = mine_rules(family(), min_support=3, min_head_coverage=0.5, min_confidence=0.7, confidence="std")
    assert all(r.std_confidence >= 0.7 for r in std.rules)
    assert not any(r.head == GP for r in std.rules)  # std confidence 0.6
    # sorted by head, then decreasing confidence
    keys = [(r.head, -r.pca_confidence) for r in rs.rules]
    assert keys == sorted(keys)


def test_str_without_names_and_ruleset_str():
    rs = mine_rules(family(), min_head_coverage=0.0, min_confidence=0.0)
    assert "r1(x,y) <- r0(x,z) & r0(z,y)" in [str(r) for r in rs.rules]
    assert str(rs).splitlines()[0] == f"{len(rs)} rules (pca confidence)"


# ------------------------------------------------------------------------------------------
# Evidence
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gp_rules() -> RuleSet:
    # PARENT and GRANDPARENT only: GRANDPARENT's one rule is PARENT o PARENT
    rows = [f for f in FAMILY if f[1] in (P, GP)]
    return mine_rules(family(rows), min_support=2, relation_names=NAMES)


def test_only_parent_of_parent_predicts_grandparent(gp_rules):
    assert [str(r) for r in gp_rules.rules if r.head == GP] == ["GRANDPARENT(x,y) <- PARENT(x,z) & PARENT(z,y)"]


def test_evidence_on_matching_and_other_queries(gp_rules):
    # (Dan,Hal) and (Bob,Fay): body holds, not facts -> PCA confidence 3/4, support 3
    # (Ann,Eve): a fact; leave-one-out: support 2, PCA 2/4, hc 2/3 -> still fires with 0.5
    # (Gus,Bob): a fact without body; (Eve,Ann): nothing; (Ann,Ann): self loop
    h, r, t = [3, 1, 0, 6, 4, 0], [GP] * 6, [7, 5, 4, 1, 0, 0]
    ev = gp_rules.evidence(h, r, t)
    np.testing.assert_allclose(ev.best_confidence, [0.75, 0.75, 0.5, 0, 0, 0])
    np.testing.assert_allclose(ev.noisy_or, [0.75, 0.75, 0.5, 0, 0, 0])
    np.testing.assert_array_equal(ev.n_fired, [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(ev.best_support, [3, 3, 2, 0, 0, 0])
    raw = gp_rules.evidence(h, r, t, leave_one_out=False)
    np.testing.assert_allclose(raw.best_confidence, [0.75, 0.75, 0.75, 0, 0, 0])
    np.testing.assert_array_equal(raw.best_support, [3, 3, 3, 0, 0, 0])


def test_leave_one_out_rechecks_min_support():
    rows = [f for f in FAMILY if f[1] in (P, GP)]
    rs = mine_rules(family(rows), min_support=3)
    assert find(rs, GP, (P, False), (P, False)).support == 3
    ev = rs.evidence([0, 3], [GP, GP], [4, 7])
    # (Ann,Eve) would leave support 2 < 3: the rule does not fire for it
    np.testing.assert_array_equal(ev.n_fired, [0, 1])


def test_std_confidence_evidence():
    rows = [f for f in FAMILY if f[1] in (P, GP)]
    rs = mine_rules(family(rows), confidence="std")
    ev = rs.evidence([3], [GP], [7])
    assert ev.best_confidence[0] == pytest.approx(0.6)


def test_noisy_or_combines_rules(rs):
    # SPOUSE(Hal, Gus) is a fact; SPOUSE(Gus, Hal) is not. Its firing rules: SPOUSE(y,x) and HUSBAND(x,y)
    # and any others; noisy-or = 1 - prod(1 - c_i) over exactly the firing ones
    ev = rs.evidence([6], [SP], [7])
    confs = [r.pca_confidence for r in rs.rules if r.head == SP and _holds_ref(family(), r, 6, 7)]
    assert ev.n_fired[0] == len(confs) >= 2
    assert ev.best_confidence[0] == pytest.approx(max(confs))
    assert ev.noisy_or[0] == pytest.approx(1 - np.prod([1 - c for c in confs]))


def test_evidence_on_another_body_table(gp_rules):
    rows = [f for f in FAMILY if f[1] in (P, GP)]
    # a staged parent edge Eve -> Ivy(7) makes Cat -> Hal(7) a grandparent candidate
    more = family(rows + [(4, P, 7)])
    assert gp_rules.evidence([2], [GP], [7]).n_fired[0] == 0
    ev = gp_rules.evidence([2], [GP], [7], facts=more)
    assert ev.best_confidence[0] == pytest.approx(0.75)
    # leave-one-out is decided on the mining table: (Ann,Eve) still loses its own support instance
    assert gp_rules.evidence([0], [GP], [4], facts=more).best_confidence[0] == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------
# A fact never supports itself
# ------------------------------------------------------------------------------------------


def test_one_way_fact_gets_no_support_from_itself():
    ft = FactTable.from_triples([(0, 0, 1), (2, 0, 3), (3, 0, 2), (4, 0, 5), (5, 0, 4)], n_entities=6, n_relations=1)
    rs = mine_rules(ft)
    assert [str(r) for r in rs.rules] == ["r0(x,y) <- r0(y,x)"]
    ev = rs.evidence([0, 2], [0, 0], [1, 3], leave_one_out=False)
    np.testing.assert_array_equal(ev.n_fired, [0, 1])  # 0->1 has no 1->0; it is not its own body


def test_self_loops_cannot_turn_the_query_edge_into_a_body_atom():
    # transitive relation: r(x,y) <- r(x,z) & r(z,y)
    ft = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (0, 0, 2), (3, 0, 4), (4, 0, 5), (3, 0, 5)],
                                n_entities=9, n_relations=1)
    rs = mine_rules(ft)
    assert "r0(x,y) <- r0(x,z) & r0(z,y)" in [str(r) for r in rs.rules]
    # body table: the query edge 7->8 and a loop 8->8; z = 8 would be 7->8, 8->8
    body = FactTable.from_triples([(7, 0, 8), (8, 0, 8), (7, 0, 7)], n_entities=9, n_relations=1)
    ev = rs.evidence([7], [0], [8], facts=body, leave_one_out=False)
    assert ev.n_fired[0] == 0


def test_removing_the_queried_fact_does_not_change_which_bodies_hold():
    ft, _ = random_table(np.random.default_rng(3), n=80, R=3, m=600)
    rs = mine_rules(ft, min_support=1, min_head_coverage=0.0, min_confidence=0.0)
    for i in range(0, len(ft), 40):
        q = ([ft.head[i]], [ft.rel[i]], [ft.tail[i]])
        without = ft.subset(np.arange(len(ft)) != i)
        a = rs.evidence(*q, leave_one_out=False)
        b = rs.evidence(*q, facts=without, leave_one_out=False)
        np.testing.assert_array_equal(a.n_fired, b.n_fired)
        np.testing.assert_array_equal(a.noisy_or, b.noisy_or)


# ------------------------------------------------------------------------------------------
# Hubs
# ------------------------------------------------------------------------------------------


def hub_table() -> FactTable:
    # A = 0: 1..40 -> hub 0 (2 of them, 1 and 2, are co-workers via C = 1);
    #        50, 51, 52 -> 60 (a small office: C among them)
    rows = [(i, 0, 0) for i in range(1, 41)] + [(50, 0, 60), (51, 0, 60), (52, 0, 60)]
    rows += [(1, 1, 2), (2, 1, 1), (50, 1, 51), (51, 1, 50), (51, 1, 52)]
    return FactTable.from_triples(rows, n_entities=61, n_relations=2)


def test_hub_middles_are_excluded_deterministically():
    full = mine_rules(hub_table(), min_confidence=0.0, min_head_coverage=0.0)
    r_full = find(full, 1, (0, False), (0, True))  # C(x,y) <- A(x,z) & A(y,z)
    # through the hub: 40*39 ordered pairs, through 60: 3*2; support 2 + 3
    assert (r_full.support, r_full.body_size, r_full.excluded_middles) == (5, 40 * 39 + 6, ())
    capped = mine_rules(hub_table(), min_confidence=0.0, min_head_coverage=0.0, max_body_paths=100)
    rule = find(capped, 1, (0, False), (0, True))
    # paths: hub 40*40 = 1600, entity 60: 3*3 = 9 -> the hub goes, 9 <= 100 stays
    assert rule.excluded_middles == (0,)
    assert (rule.support, rule.body_size) == (3, 6)
    assert rule.std_confidence == pytest.approx(0.5)
    # evidence applies the same exclusion: co-workers through the hub get nothing from this rule
    ev = capped.evidence([3, 52], [1, 1], [4, 50])
    holds = [_holds_ref(hub_table(), rule, 3, 4), _holds_ref(hub_table(), rule, 52, 50)]
    assert holds == [False, True]
    assert ev.best_confidence[0] < rule.pca_confidence <= ev.best_confidence[1] + 1e-12
    assert mine_rules(hub_table(), max_body_paths=100) == mine_rules(hub_table(), max_body_paths=100)


# ------------------------------------------------------------------------------------------
# Degenerate inputs and validation
# ------------------------------------------------------------------------------------------


def test_empty_table_and_unknown_relation():
    empty = FactTable.from_triples([], n_entities=3, n_relations=2)
    rs = mine_rules(empty)
    assert len(rs) == 0
    ev = rs.evidence([0, 1], [0, 1], [1, 2])
    assert ev.n_fired.tolist() == [0, 0] and ev.noisy_or.tolist() == [0.0, 0.0]
    assert rs.evidence([], [], []).best_confidence.shape == (0,)
    # relation 1 has no facts: no rule predicts it
    ft = FactTable.from_triples([(0, 0, 1), (1, 0, 0)], n_entities=3, n_relations=2)
    ev = mine_rules(ft, min_support=1).evidence([2], [1], [0])
    assert ev.n_fired[0] == 0 and ev.best_confidence[0] == 0.0


def test_self_loops_and_light_facts_are_ignored():
    loops = FactTable.from_triples([(0, 0, 0), (1, 0, 1)], n_entities=2, n_relations=1)
    assert len(mine_rules(loops, min_support=1)) == 0
    light = FactTable.from_triples([(0, 0, 1), (1, 0, 0)], n_entities=2, n_relations=1, weights=[0.2, 1.0])
    assert len(mine_rules(light, min_support=1)) == 1
    assert len(mine_rules(light, min_support=1, min_weight=0.5)) == 0


def test_validation_errors(rs):
    ft = family()
    with pytest.raises(KgrValidationError, match="confidence"):
        mine_rules(ft, confidence="amie")
    with pytest.raises(KgrValidationError, match="min_support"):
        mine_rules(ft, min_support=0)
    with pytest.raises(KgrValidationError, match="min_head_coverage"):
        mine_rules(ft, min_head_coverage=1.5)
    with pytest.raises(KgrValidationError, match="relation_names"):
        mine_rules(ft, relation_names=("A",))
    with pytest.raises(KgrValidationError, match="one entry per query"):
        rs.evidence([0, 1], [0], [1])
    with pytest.raises(KgrValidationError, match="entity id"):
        rs.evidence([8], [0], [1])
    with pytest.raises(KgrValidationError, match="relation id"):
        rs.evidence([0], [5], [1])
    with pytest.raises(KgrValidationError, match="integers"):
        rs.evidence([0.5], [0], [1])
    with pytest.raises(KgrValidationError, match="n_entities"):
        rs.evidence([0], [0], [1], facts=FactTable.from_triples([], n_entities=9, n_relations=5))


# ------------------------------------------------------------------------------------------
# The vectorised code against a slow reference
# ------------------------------------------------------------------------------------------


def random_table(rng, *, n, R, m, hubs=()):
    h = rng.integers(0, n, m)
    r = rng.integers(0, R, m)
    t = rng.integers(0, n, m)
    # some structure: relation 2 often composes 0 and 1, relation 1 often inverts 0
    k = m // 6
    t[:k] = h[k:2 * k]
    r[:k], r[k:2 * k] = 0, 1
    h[2 * k:3 * k], t[2 * k:3 * k], r[2 * k:3 * k] = h[:k], t[k:2 * k], 2
    h[3 * k:4 * k], t[3 * k:4 * k], r[3 * k:4 * k] = t[4 * k:5 * k], h[4 * k:5 * k], 1
    r[4 * k:5 * k] = 0
    for i, hub in enumerate(hubs):  # a hub in and out of relation i
        h[5 * k + 40 * i: 5 * k + 40 * i + 20] = hub
        t[5 * k + 40 * i + 20: 5 * k + 40 * i + 40] = hub
    return FactTable.from_triples(np.stack([h, r, t], 1), n_entities=n, n_relations=R), rng


def _adj_ref(ft: FactTable, min_weight: float = 0.0):
    out = defaultdict(set)  # (r, x) -> {y}
    inn = defaultdict(set)  # (r, y) -> {x}
    facts = set()
    for h, r, t, w in zip(ft.head.tolist(), ft.rel.tolist(), ft.tail.tolist(), ft.weight.tolist()):
        if h != t and w >= min_weight:
            out[(r, h)].add(t)
            inn[(r, t)].add(h)
            facts.add((h, r, t))
    return out, inn, facts


def _step(adj, atom, x):
    out, inn, _ = adj
    rel, inv = atom
    return inn[(rel, x)] if inv else out[(rel, x)]


def _body_pairs_ref(adj, n, body, excluded=()):
    pairs = set()
    for x in range(n):
        if len(body) == 1:
            pairs.update((x, y) for y in _step(adj, body[0], x) if y != x)
        else:
            for z in _step(adj, body[0], x):
                if z in excluded:
                    continue
                pairs.update((x, y) for y in _step(adj, body[1], z) if y != x)
    return pairs


def _holds_ref(ft, rule, x, y):
    adj = _adj_ref(ft)
    if x == y:
        return False
    if len(rule.body) == 1:
        return y in _step(adj, rule.body[0], x)
    return any(y in _step(adj, rule.body[1], z) for z in _step(adj, rule.body[0], x) if z not in rule.excluded_middles)


def _mine_ref(ft, *, min_support, min_hc, min_conf, cap):
    n, R = ft.n_entities, ft.n_relations
    adj = _adj_ref(ft)
    out, inn, facts = adj
    head_size = [sum(1 for f in facts if f[1] == r) for r in range(R)]
    has_out = {(r, x) for (x, r, _) in facts}
    atoms = [(r, inv) for inv in (False, True) for r in range(R)]
    bodies = [((a,), ()) for a in atoms]
    for a1, a2 in itertools.product(atoms, atoms):
        deg_in = {z: sum(1 for x in range(n) if z in _step(adj, a1, x)) for z in range(n)}
        paths = {z: deg_in[z] * len(_step(adj, a2, z)) for z in range(n)}
        total, excluded = sum(paths.values()), []
        for z in sorted(range(n), key=lambda z: (-paths[z], z)):
            if total <= cap:
                break
            excluded.append(z)
            total -= paths[z]
        bodies.append(((a1, a2), tuple(sorted(excluded))))
    rules = {}
    for body, excl in bodies:
        pairs = _body_pairs_ref(adj, n, body, set(excl))
        for r in range(R):
            if body == ((r, False),):
                continue
            s = sum(1 for (x, y) in pairs if (x, r, y) in facts)
            pca = sum(1 for (x, y) in pairs if (r, x) in has_out)
            if s >= min_support and head_size[r] and s / head_size[r] >= min_hc and pca and s / pca >= min_conf:
                rules[(r, body)] = (s, len(pairs), pca, head_size[r], excl)
    return rules


@pytest.mark.parametrize("cap", [10**9, 60])
def test_mining_matches_reference(cap):
    ft, _ = random_table(np.random.default_rng(0), n=120, R=3, m=2500, hubs=(5, 6))
    rs = mine_rules(ft, min_support=2, min_head_coverage=0.0, min_confidence=0.02, max_body_paths=cap)
    got = {(r.head, r.body): (r.support, r.body_size, r.pca_body_size, r.head_size, r.excluded_middles)
           for r in rs.rules}
    want = _mine_ref(ft, min_support=2, min_hc=0.0, min_conf=0.02, cap=cap)
    assert got == want
    assert len(got) > 20
    if cap == 60:
        assert any(r.excluded_middles for r in rs.rules)


def test_evidence_matches_reference():
    rng = np.random.default_rng(1)
    ft, _ = random_table(rng, n=120, R=3, m=2500, hubs=(7,))
    rs = mine_rules(ft, min_support=3, min_head_coverage=0.01, min_confidence=0.05, max_body_paths=400)
    assert any(r.excluded_middles for r in rs.rules)
    idx = rng.choice(len(ft), 150, replace=False)
    h = np.concatenate([ft.head[idx], rng.integers(0, 120, 250), [7, 7]])
    r = np.concatenate([ft.rel[idx], rng.integers(0, 3, 250), [0, 1]])
    t = np.concatenate([ft.tail[idx], rng.integers(0, 120, 250), [7, 3]])
    ev = rs.evidence(h, r, t)

    adj = _adj_ref(ft)
    facts = adj[2]
    body_pairs = {(ru.body, ru.excluded_middles): _body_pairs_ref(adj, 120, ru.body, set(ru.excluded_middles))
                  for ru in rs.rules}
    for i, (x, rel, y) in enumerate(zip(h.tolist(), r.tolist(), t.tolist())):
        confs, sups = [], []
        for ru in rs.rules:
            if ru.head != rel or (x, y) not in body_pairs[(ru.body, ru.excluded_middles)]:
                continue
            d = int((x, rel, y) in facts)
            s, hs = ru.support - d, ru.head_size - d
            c = s / ru.pca_body_size
            if s >= 3 and s / hs >= 0.01 and c >= 0.05:
                confs.append(c)
                sups.append(s)
        assert ev.n_fired[i] == len(confs), i
        assert ev.best_confidence[i] == pytest.approx(max(confs, default=0.0))
        assert ev.noisy_or[i] == pytest.approx(1 - np.prod([1 - c for c in confs]))
        assert ev.best_support[i] == max(sups, default=0)
    assert (ev.n_fired > 0).sum() > 50
