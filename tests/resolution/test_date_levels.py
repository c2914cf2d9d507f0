"""The array form of the date comparison (``compare._date_levels``, the hot path of a functional
date relation) gives exactly :func:`kgr.resolution.compare.value_level`'s levels, its reference."""

from __future__ import annotations

import itertools

import numpy as np

from kgr.resolution.compare import _date_levels, _single_dates, value_level

YEARS = ("1630", "1631", "1603", "1640", "1730", "630", "16300")
MONTH_DAYS = (("08", "01"), ("01", "08"), ("08", "07"), ("05", "01"), ("05", "07"), ("01", "01"), ("12", "31"),
              ("13", "01"))  # a year boundary (close dates), and no calendar date
DATES = [f"{y} {m} {d}" for y in YEARS for m, d in MONTH_DAYS]


def test_the_date_levels_in_arrays_equal_value_level_on_every_pair():
    sets = [frozenset({d}) for d in DATES]
    dates = _single_dates(sets)
    assert dates[0].all()  # every set is one date
    a, b = (np.array(x) for x in zip(*itertools.product(range(len(DATES)), repeat=2)))
    got = _date_levels(dates, a, b).tolist()
    want = [value_level(DATES[x], DATES[y]) for x, y in zip(a.tolist(), b.tolist())]
    assert got == want
    assert set(want) == {0, 1, 2, 3, 4}  # every level is met
    # close across a year boundary (level 1, no cannot-link), unless either is no calendar date
    assert value_level("1630 12 31", "1631 01 01") == 1 and value_level("1630 13 05", "1631 01 01") == 0
