"""The pure resolution package: units, blocking, comparisons, the EM model, constrained clustering,
operations (no database)."""

from __future__ import annotations

import numpy as np
import pytest

from kgr.resolution import (EdgeView, EntityView, FellegiSunter, Link, block, build_units, constrained_clusters,
                            name_level, operations, split_key, values_differ)
from kgr.resolution.plan import merge_cut, plan_type


def view(key, *edges):
    return EntityView(key=key, type="Person", edges=tuple(EdgeView(r, True, o, tuple(s)) for r, o, s in edges))


def test_units_are_source_groups_by_signature():
    v = view("Person:jacob green", ("BORN_ON", "Date:1950 03 01", ["s1", "s2"]), ("BORN_ON", "Date:1962 07 11", ["s3"]),
             ("LIVES_IN", "Place:bondi", ["s1", "s3", "s4"]))
    units = build_units([v], ["BORN_ON"])
    got = {u.sources: dict(u.functional) for u in units}
    # sources are grouped by everything they assert (s1 and s2 differ in LIVES_IN), not the functional values alone
    assert got == {frozenset({"s1"}): {"BORN_ON": frozenset({"1950 03 01"})},
                   frozenset({"s2"}): {"BORN_ON": frozenset({"1950 03 01"})},
                   frozenset({"s3"}): {"BORN_ON": frozenset({"1962 07 11"})},
                   frozenset({"s4"}): {}}
    same = build_units([view("Person:ann lee", ("BORN_ON", "Date:1950 03 01", ["s1", "s2"]))], ["BORN_ON"])
    assert [u.sources for u in same] == [frozenset({"s1", "s2"})]  # same signature: one unit
    assert [u.uid for u in units] == sorted(u.uid for u in units)
    assert all(u.name == "jacob green" for u in units)
    # a unit's neighbours are those its own sources voted for
    s4 = next(u for u in units if u.sources == {"s4"})
    assert dict(s4.neighbours) == {"LIVES_IN>": frozenset({"Place:bondi"})}


def test_blocking_finds_word_order_typos_and_shared_neighbours_without_all_pairs():
    names = ["lowe alyssa", "alyssa lowe", "jacob green", "jacbo green", "mia walsh", "zed quux"]
    vs = [view(f"Person:{n}", ("BORN_ON", f"Date:19{i:02d} 01 01" if i != 5 else "Date:1904 01 01", [f"s{i}"]))
          for i, n in enumerate(names)]
    units = build_units(vs, ["BORN_ON"])
    idx = {u.name: i for i, u in enumerate(units)}
    pairs = block(units, window=2)

    def rules(a, b):
        row = pairs.row(idx[a], idx[b])
        return set(pairs.rules_of(row)) if row is not None else set()

    assert {"phonetic", "tokens"} <= rules("lowe alyssa", "alyssa lowe")
    assert "phonetic" in rules("jacob green", "jacbo green") or "tokens" in rules("jacob green", "jacbo green")
    assert any(r.startswith("graph:") for r in rules("zed quux", "mia walsh"))  # same birth date
    assert len(pairs) < len(units) * (len(units) - 1) // 2


def test_comparisons_and_cannot_link_values():
    assert name_level("lowe alyssa", "alyssa lowe") == 4 and name_level("paper 12", "paper 13") == 0
    assert values_differ("1950 03 01", "1962 07 11") and not values_differ("1950 03 01", "1950 07 11")
    assert values_differ("bondi", "hobart") and not values_differ("devon", "west devon")


def test_fellegi_sunter_em_recovers_m_and_u():
    rng = np.random.default_rng(0)
    n = 4000
    match = rng.random(n) < 0.3
    m, u = np.array([0.05, 0.15, 0.8]), np.array([0.85, 0.1, 0.05])
    X = np.column_stack([np.where(match, rng.choice(3, n, p=m), rng.choice(3, n, p=u)) for _ in range(3)])
    R = np.column_stack([rng.choice(3, 20000, p=u) for _ in range(3)])
    fs = FellegiSunter([3, 3, 3]).fit(X, X_random=R)
    np.testing.assert_allclose(fs.m_[0], m, atol=0.04)
    np.testing.assert_allclose(fs.u_[0], u, atol=0.02)
    assert fs.lambda_ == pytest.approx(0.3, abs=0.03)
    acc = ((fs.predict_proba(X)[:, 1] >= 0.5) == match).mean()
    assert acc > 0.9
    # term-frequency adjustment: a common value at the exact level is weaker evidence
    fs2 = FellegiSunter([3, 3, 3], [2, None, None]).fit(X, X_random=R)
    x = np.array([[2, 0, 0], [2, 0, 0]])
    w = fs2.match_weight(x, tf=np.array([0.001, 0.2]))
    assert w[0] > w[1] + 5


def test_labels_anchor_em():
    X = np.array([[1], [1], [0], [0]] * 50)
    y = np.array([1, -1, 0, -1] * 50)
    fs = FellegiSunter([2]).fit(X, y)
    assert fs.predict_proba(np.array([[1]]))[0, 1] > fs.predict_proba(np.array([[0]]))[0, 1]


def test_merge_cut_is_the_longest_prefix_within_the_target_by_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = rng.random(50) ** 0.3
        ranked = sorted(p, reverse=True)
        for t in (0.01, 0.05, 0.2):
            ks = [k for k in range(1, 51) if ranked[k - 1] >= 0.5 and sum(1 - x for x in ranked[:k]) / k <= t + 1e-12]
            assert merge_cut(p, target=t) == (ranked[max(ks) - 1] if ks else float("inf"))


def test_constrained_clustering_stops_a_chain_and_keeps_order():
    a = view("Person:jacob green", ("BORN_ON", "Date:1950 03 01", ["a"]))
    b = view("Person:jacob grene", ("LIVES_IN", "Place:bondi", ["b"]))
    c = view("Person:jakob green", ("BORN_ON", "Date:1962 07 11", ["c"]))
    units = build_units([a, b, c], ["BORN_ON"])
    ia, ib, ic = (next(i for i, u in enumerate(units) if u.entity == k.key) for k in (a, b, c))
    links = [Link(ia, ib, 0.95), Link(ib, ic, 0.97)]
    labels, blocked = constrained_clusters(units, links)
    assert labels[ib] == labels[ic] and labels[ia] != labels[ic]  # the better link wins, the chain stops
    assert len(blocked) == 1 and "BORN_ON" in blocked[0].reason
    # transitive closure would have joined all three
    closure, _ = constrained_clusters(build_units([a, view("Person:jacob grene", ("LIVES_IN", "Place:bondi", ["b"])),
                                                    view("Person:jakob green", ("LIVES_IN", "Place:x", ["c"]))],
                                                   ["BORN_ON"]), links)
    assert len(set(closure)) == 1
    # declared names never join
    labels, blocked = constrained_clusters(units, links, declared={"jacob grene", "jakob green"})
    assert labels[ib] != labels[ic]


def test_operations_split_and_merge_keys():
    v = view("Person:jacob green", ("BORN_ON", "Date:1950 03 01", ["s1", "s2"]), ("BORN_ON", "Date:1962 07 11", ["s3"]))
    w = view("Person:jacob grene", ("BORN_ON", "Date:1962 07 11", ["s9"]))
    units = build_units([v, w], ["BORN_ON"])
    cl = [0 if u.sources == {"s1", "s2"} else 1 for u in units]
    labels = [min(i for i in range(len(units)) if cl[i] == cl[k]) for k in range(len(units))]
    merges, splits = operations(units, labels)
    # jacob green keeps its home (two sources); s3 moves to the cluster of jacob grene, which stays at home there
    assert [(s.entity, s.into, s.sources) for s in splits] == [("Person:jacob green", "Person:jacob grene", ["s3"])]
    assert merges == []
    # a group with no entity at home gets a split key
    units2 = build_units([v], ["BORN_ON"])
    labels2 = list(range(len(units2)))
    _, splits2 = operations(units2, labels2)
    assert splits2[0].into == split_key("Person:jacob green", "Person", ["s3"]) and splits2[0].new_entity


def test_plan_is_independent_of_input_order():
    import random

    from tests.support.people import people_records

    recs = people_records(15, 3, seed=5)
    views = {}
    for r in recs:
        key = "Person:" + " ".join(r["name"].split())
        views.setdefault(key, []).append(("BORN_ON", f"Date:{r['dob'].replace('-', ' ')}", [r["id"]]))
        views[key].append(("LIVES_IN", f"Place:{r['place']}", [r["id"]]))
    results = []
    for seed in (1, 2):
        items = list(views.items())
        random.Random(seed).shuffle(items)
        units = build_units([view(k, *e) for k, e in items], ["BORN_ON"])
        plan = plan_type(units, functional=["BORN_ON"])
        results.append((sorted((m.keep, m.drop) for m in plan.merges), sorted((s.entity, s.into) for s in plan.splits)))
    assert results[0] == results[1] and results[0][0]


def test_embedding_neighbours_are_a_blocking_rule():
    names = ["international business machines", "ibm corp", "zeta", "omega"]
    units = build_units([view(f"Person:{n}", ("LIVES_IN", f"Place:p{i}", [f"s{i}"])) for i, n in enumerate(names)], [])
    idx = {u.name: i for i, u in enumerate(units)}
    vectors = np.zeros((len(units), 3))
    for u_i, u in enumerate(units):  # the two IBM names point the same way, the others elsewhere
        vectors[u_i] = [1, 0.1, 0] if "ibm" in u.name or "business" in u.name else [0, 1, u_i]
    pairs = block(units, window=1, vectors=vectors, k=1)
    i, j = sorted((idx["international business machines"], idx["ibm corp"]))
    assert "embedding" in pairs.rules_of(pairs.row(i, j))
    without = block(units, window=1)
    assert without.row(i, j) is None  # nothing but the embeddings pairs them


def test_own_links_rejoin_a_homeless_unit_but_do_not_chain_two_people():
    from kgr.resolution.cluster import Link, constrained_clusters
    from kgr.resolution.units import Unit

    def u(uid, entity, born=None):
        return Unit(uid=uid, entity=entity, type="Person", name=entity.partition(":")[2], sources=frozenset({uid}),
                    functional={"BORN_ON": frozenset({born})} if born else {}, neighbours={}, documents=frozenset())

    # 0,1: one entity's two units the model scores apart; 2: another spelling accepted with unit 0
    units = [u("a", "Person:x"), u("b", "Person:x"), u("c", "Person:y")]
    labels, _ = constrained_clusters(units, [Link(0, 2, 0.99), Link(0, 1, 0.01, own=True)], support=0.3,
                                     scores={(0, 2): 0.99, (0, 1): 0.01, (1, 2): 0.01})
    assert labels == [0, 0, 0]  # unit 1 had no other home: staging's grouping stands
    # two units of x each placed with another person: the own link may not chain them (low support)
    units = [u("a", "Person:x"), u("b", "Person:x"), u("c", "Person:y"), u("d", "Person:z")]
    links = [Link(0, 2, 0.99), Link(1, 3, 0.99), Link(0, 1, 0.01, own=True)]
    labels, blocked = constrained_clusters(units, links, support=0.3,
                                           scores={(0, 2): 0.99, (1, 3): 0.99, (0, 1): 0.01, (0, 3): 0.0, (1, 2): 0.0})
    assert labels == [0, 1, 0, 1] and not blocked
    # with clearly different birth dates the own link is refused and reported
    units = [u("a", "Person:x", "1950 03 01"), u("b", "Person:x", "1962 07 11")]
    labels, blocked = constrained_clusters(units, [Link(0, 1, 0.01, own=True)], scores={(0, 1): 0.01})
    assert labels == [0, 1] and "BORN_ON" in blocked[0].reason


def _listing_population(seed: int) -> list[EntityView]:
    """150 unrelated Software names (one SUPPORTS edge each, one document each) and 8 packages whose one
    document each makes them depend on two libraries named ``lib<word> java``: siblings that share a
    word, a neighbour and a document, and nothing else."""
    import random
    import string

    rng = random.Random(seed)
    edges: dict[str, list[EdgeView]] = {}
    docs: dict[str, str] = {}

    def add(s: str, rel: str, o: str, src: str, doc: str) -> None:
        docs[src] = doc
        edges.setdefault(s, []).append(EdgeView(rel, True, o, (src,)))
        edges.setdefault(o, []).append(EdgeView(rel, False, s, (src,)))

    def word() -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 8)))

    for k in range(150):
        add(f"Software:{word()}", "SUPPORTS", f"Language:{rng.choice(['python', 'c', 'java', 'perl'])}", f"o{k}",
            f"odoc{k}")
    for k in range(8):
        pkg = f"Software:{word()}"
        for j in range(2):
            add(pkg, "DEPENDS_ON", f"Software:lib{word()} java", f"doc{k}#c{j}", f"doc{k}")
    return [EntityView(key=k, type="Software", edges=tuple(v), documents={s: docs[s] for e in v for s in e.sources})
            for k, v in sorted(edges.items()) if k.startswith("Software:")]


def test_two_names_one_document_lists_side_by_side_are_not_merged():
    import dataclasses

    units = build_units(_listing_population(seed=1), [])
    lib = next(u for u in units if u.name.startswith("lib") and u.name.endswith(" java"))
    slot = next(iter(lib.listed))
    assert slot[0] == "DEPENDS_ON<" and slot[2].startswith("doc")  # (relation and direction, other end, document)
    # without the listing the model pairs siblings (a shared word, neighbour and document) and merges them
    plain = plan_type([dataclasses.replace(u, listed=frozenset()) for u in units], functional=[])
    assert plain.merges and all(m.keep.endswith(" java") and m.drop.endswith(" java") for m in plain.merges)
    plan = plan_type(units, functional=[])
    assert plan.merges == [] and plan.splits == []
    assert plan.blocked and all("listed apart in one document" in b.reason for b in plan.blocked)


def test_a_listing_in_one_document_keeps_apart_the_entity_whose_units_came_from_others():
    # libasm java is named in two documents (two units); d2 lists it beside libguava java: the unit from
    # d1 carries the listing too, so libguava java cannot join libasm java through it
    views = [EntityView(key="Software:libasm java", type="Software",
                        edges=(EdgeView("DEPENDS_ON", False, "Software:maven", ("d1#0",)),
                               EdgeView("DEPENDS_ON", False, "Software:guice", ("d2#0",))),
                        documents={"d1#0": "d1", "d2#0": "d2"}),
             EntityView(key="Software:libguava java", type="Software",
                        edges=(EdgeView("DEPENDS_ON", False, "Software:guice", ("d2#1",)),), documents={"d2#1": "d2"})]
    units = build_units(views, [])
    assert len(units) == 3
    i1, i2 = (i for i, u in enumerate(units) if u.entity == "Software:libasm java")
    f = next(i for i, u in enumerate(units) if u.entity == "Software:libguava java")
    labels, blocked = constrained_clusters(units, [Link(min(i1, f), max(i1, f), 0.95), Link(min(i2, f), max(i2, f), 0.95),
                                                   Link(min(i1, i2), max(i1, i2), 0.9)])
    assert labels[f] != labels[i1] and labels[f] != labels[i2] and labels[i1] == labels[i2]
    assert len(blocked) == 2


def test_a_short_form_or_a_merge_label_joins_names_listed_side_by_side():
    def listing(*names, doc="d1", other="Software:maven"):
        return [EntityView(key=f"Software:{n}", type="Software",
                           edges=(EdgeView("DEPENDS_ON", False, other, (f"{doc}#{k}",)),),
                           documents={f"{doc}#{k}": doc}) for k, n in enumerate(names)]

    def joined(views, **link):
        units = build_units(views, [])
        labels, blocked = constrained_clusters(units, [Link(0, 1, 0.99, **link)])
        return labels[0] == labels[1], [b.reason for b in blocked]

    assert joined(listing("libasm java", "libguava java")) == (False, [
        "listed apart in one document: 'libasm java' and 'libguava java' (DEPENDS_ON< Software:maven, document d1)"])
    assert joined(listing("babbage", "charles babbage"))[0]  # a short form of the other name
    assert joined(listing("ibm", "international business machines"))[0]  # its initials
    assert joined(listing("libasm java", "libasm jaav"))[0]  # a near-identical spelling
    assert joined(listing("python3", "python 3"))[0]  # the same letters, spaced otherwise
    assert not joined(listing("libasm java", "libasm4 java"))[0]  # other numbers: another package
    assert joined(listing("libasm java", "libguava java"), must=True)[0]  # a reviewer's merge label
    # the same two names in two documents, or related to two different packages, are not a listing
    assert joined(listing("libasm java", doc="d1") + listing("libguava java", doc="d2"))[0]
    assert joined(listing("libasm java", other="Software:ant")[:1] + listing("x", "libguava java")[1:])[0]


def test_two_clusters_of_several_sources_join_only_on_average_more_likely_the_same():
    from kgr.resolution.cluster import Link, constrained_clusters
    from kgr.resolution.units import Unit

    def u(uid, entity, n):
        return Unit(uid=uid, entity=entity, type="Person", name=entity.partition(":")[2],
                    sources=frozenset(f"{uid}{k}" for k in range(n)), functional={}, neighbours={}, documents=frozenset())

    # x = units 0, 1 and y = units 2, 3; one good cross link (1, 2) among four cross pairs: mean 0.3125
    links = [Link(0, 1, 0.99), Link(2, 3, 0.99), Link(1, 2, 0.95)]
    scores = {(0, 1): 0.99, (2, 3): 0.99, (1, 2): 0.95, (0, 2): 0.1, (0, 3): 0.1, (1, 3): 0.1}
    for n, joined in ((1, True), (2, False)):  # clusters of 2 sources: the bar is 0.3; of 4 sources: 0.5
        units = [u("a", "Person:x", n), u("b", "Person:x2", n), u("c", "Person:y", n), u("d", "Person:y2", n)]
        labels, _ = constrained_clusters(units, links, support=0.3, support_large=0.5, scores=scores)
        assert (labels == [0, 0, 0, 0]) is joined and labels[0] == labels[1] and labels[2] == labels[3]
        same, _ = constrained_clusters(units, links, support=0.3, scores=scores)  # no large bar: the old rule
        assert same == [0, 0, 0, 0]
    # at a mean of 0.5 or more the large clusters join
    units = [u("a", "Person:x", 2), u("b", "Person:x2", 2), u("c", "Person:y", 2), u("d", "Person:y2", 2)]
    labels, _ = constrained_clusters(units, links, support=0.3, support_large=0.5,
                                     scores={**scores, (0, 2): 0.4, (0, 3): 0.4, (1, 3): 0.4})
    assert labels == [0, 0, 0, 0]


def test_an_entity_keeps_each_source_signature_as_a_unit_up_to_the_cap():
    from kgr.resolution.units import MAX_UNITS

    def entity(n_sources):  # one person's name used by many: each source its own birth place, half a birth date
        edges = [("BORN_IN", f"Place:p{k}", [f"s{k}"]) for k in range(n_sources)]
        edges += [("BORN_ON", "Date:1850 01 01", [f"s{k}" for k in range(0, n_sources, 2)])]
        return view("Person:sir baronet", *edges)

    units = build_units([entity(118)], ["BORN_ON"])
    assert len(units) == 118 and all(len(x.sources) == 1 for x in units)  # no pooled unit of many people
    over = build_units([entity(MAX_UNITS + 2)], ["BORN_ON"])
    # beyond the cap: one unit per functional signature, the sources without a birth date pooled
    assert sorted(len(x.sources) for x in over) == [(MAX_UNITS + 2) // 2] * 2


def test_a_short_form_of_several_names_does_not_hold_its_records_together_by_spelling():
    from kgr.resolution.units import short_forms
    from tests.support.people import people_records

    recs = people_records(40, 3, seed=5)  # every first name twice: "alyssa lowe" and another "alyssa"
    views: dict[str, list] = {}

    def add(name, rid, dob, place, job):
        key = f"Person:{name}"
        if dob:
            views.setdefault(key, []).append(("BORN_ON", f"Date:{dob.replace('-', ' ')}", [rid]))
        views.setdefault(key, []).append(("LIVES_IN", f"Place:{place}", [rid]))
        views[key].append(("WORKS_AS", f"Occupation:{job}", [rid]))

    for r in recs:
        add(" ".join(r["name"].split()), r["id"], r["dob"], r["place"], r["job"])
    first = recs[0]  # alyssa lowe: one more record of hers names her "alyssa" ...
    add("alyssa", "x-her", first["dob"], first["place"], first["job"])
    add("alyssa", "x-other", None, "nowhere", "astronaut")  # ... and so does one of somebody nobody else knows
    units = build_units([view(k, *e) for k, e in sorted(views.items())], ["BORN_ON"])
    assert "alyssa" in short_forms(u.name for u in units)

    def home(plan, source):
        return next(plan.labels[i] for i, u in enumerate(units) if source in u.sources)

    plan = plan_type(units, functional=["BORN_ON"])
    assert home(plan, "x-her") == home(plan, "r0-0")  # her short-named record joins her
    assert home(plan, "x-other") != home(plan, "r0-0")  # the other one is not carried along by the spelling
    assert any(s.entity == "Person:alyssa" for s in plan.splits)
    carried = plan_type(units, functional=["BORN_ON"], short_floor=0.0)  # staging's grouping alone
    assert home(carried, "x-other") == home(carried, "r0-0")
