"""The over-seeds summary of the promotion benchmark (``scripts/bench_promotion_seeds.py``): pure, no Neo4j."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import bench_promotion_seeds as bs  # noqa: E402 - after the path set-up


def _run(results: list[tuple[str, float, float]]) -> dict:
    return {"streams": {"s": {"results": [{"policy": p, "label": p, "acceptance": a, "fmr": f} for p, a, f in results]}}}


def test_breaches_medians_and_the_largest_drop_over_budgets():
    runs = {
        7: _run([("c10b0", 0.1, 0.00), ("c10b2", 0.9, 0.16), ("c10b5", 0.5, 0.05)]),
        8: _run([("c10b0", 0.1, 0.01), ("c10b2", 0.1, 0.02), ("c10b5", 0.6, 0.11)]),
        9: _run([("c10b0", 0.2, 0.02), ("c10b2", 0.3, 0.03), ("c10b5", 0.2, 0.04)]),
    }
    out = bs.summarise(runs)
    b2, b5 = out["rows"]["s/c10b2"], out["rows"]["s/c10b5"]
    assert (b2["acceptance_median"], b2["acceptance_min"], b2["acceptance_max"]) == (0.3, 0.1, 0.9)
    assert (b2["breaches"], b2["breaches_plus_002"], b2["fmr_max"]) == (1, 1, 0.16)
    assert (b5["breaches"], b5["breaches_plus_002"]) == (1, 0)  # 0.11 is above 0.1, not above 0.12
    mono = out["monotonicity"]["s@0.1"]
    assert mono["ladder"] == [(0, 0.1), (2, 0.3), (5, 0.5)]
    assert mono["worst_drop"][2] <= 0  # the medians grow: no drop with more labels


def test_the_largest_drop_of_the_median_is_over_every_pair_of_budgets():
    runs = {7: _run([("c05b0", 0.9, 0.0), ("c05b2", 0.6, 0.0), ("c05b10", 0.4, 0.0), ("c05b20", 0.7, 0.0)])}
    w = bs.summarise(runs)["monotonicity"]["s@0.05"]["worst_drop"]
    assert (w[0], w[1]) == (0, 10) and abs(w[2] - 0.5) < 1e-12  # not only neighbours: 0 % -> 10 %
