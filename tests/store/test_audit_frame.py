"""Audit draws topped up to one inclusion level (kgr.store.audit_frame): pure, no database."""

import numpy as np
import pytest

from kgr.store.audit_frame import draw_audits, inclusion, level, pick_probabilities


def test_inclusion_is_the_highest_level_of_a_draw_made_after_the_edge_was_seen():
    first_seen = np.array([0.0, 5.0, 9.0, 20.0])
    assert inclusion(first_seen, [(6.0, 0.1), (10.0, 0.25), (12.0, 0.2)]).tolist() == [0.25, 0.25, 0.25, 0.0]
    assert inclusion(first_seen, []).tolist() == [0.0] * 4


def test_the_level_solves_the_expected_number_of_picks():
    pi = np.array([0.0] * 100 + [0.1] * 100 + [1.0] * 3)
    q = level(pi, 25)
    assert pick_probabilities(pi, q).sum() == pytest.approx(25, abs=1e-6)
    assert pick_probabilities(pi, q)[-1] == 0.0  # an edge at level 1 was certainly drawn: never again
    assert level(pi, 10_000) == 1.0 and level(pi, 0) == 0.0


def test_a_second_draw_after_arrivals_leaves_old_and_new_edges_equally_likely_audited():
    """500 edges, a draw of 50; 250 more arrive; a draw of 40. Over many salts, an old edge and a new
    one end audited with the same probability (the level of the second draw); a plain uniform second
    draw would audit the old ones almost twice as often."""
    old, new = [f"o{i}" for i in range(500)], [f"n{i}" for i in range(250)]
    ever_old, ever_new, plain_old, plain_new, runs = 0, 0, 0, 0, 300
    for s in range(runs):
        first, q1 = draw_audits(old, np.zeros(500), 50, f"a{s}")
        assert len(first) == 50 and q1 == pytest.approx(0.1)
        left = [k for i, k in enumerate(old) if i not in set(first)] + new
        seen = np.array([0.0] * (len(left) - 250) + [2.0] * 250)
        pi = inclusion(seen, [(1.0, q1)])
        second, q2 = draw_audits(left, pi, 40, f"b{s}")
        assert len(second) == 40
        picked = {left[i] for i in second}
        ever_old += 50 + sum(k.startswith("o") for k in picked)
        ever_new += sum(k.startswith("n") for k in picked)
        plain = {left[i] for i in draw_audits(left, np.zeros(len(left)), 40, f"b{s}")[0]}
        plain_old += 50 + sum(k.startswith("o") for k in plain)
        plain_new += sum(k.startswith("n") for k in plain)
    q = (50 + 40) / 750  # every edge ends at the second draw's level
    assert ever_old / (500 * runs) == pytest.approx(q, rel=0.06)
    assert ever_new / (250 * runs) == pytest.approx(q, rel=0.06)
    assert plain_old / (500 * runs) > 1.5 * plain_new / (250 * runs)


def test_a_draw_is_a_function_of_its_salt_and_keys():
    keys = [f"k{i}" for i in range(200)]
    a = draw_audits(keys, np.zeros(200), 7, "salt")
    assert a == draw_audits(keys, np.zeros(200), 7, "salt") and a != draw_audits(keys, np.zeros(200), 7, "other")
    assert draw_audits([], np.zeros(0), 5, "s") == ([], 0.0)
