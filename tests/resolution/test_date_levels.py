"""The array form of the date comparison (``compare._date_levels``, the hot path of a functional
date relation) gives exactly :func:`kgr.resolution.values.value_level`'s levels, its reference."""

from __future__ import annotations

import itertools

import numpy as np

from kgr.resolution.compare import _date_levels, _single_dates
from kgr.resolution.values import value_level

YEARS = ("1630", "1631", "1603", "1640", "1730", "6130", "1360", "630", "16300")  # swaps: 1603, 6130, 1360
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
    # a year with two adjacent digits swapped is a typo, like one digit changed; two swaps are not
    assert value_level("1630 08 01", "1603 08 01") == 2 == value_level("1630 08 01", "6130 08 01")
    assert value_level("1630 08 01", "6103 08 01") == 0
    # close across a year boundary (level 1, no cannot-link), unless either is no calendar date
    assert value_level("1630 12 31", "1631 01 01") == 1 and value_level("1630 13 05", "1631 01 01") == 0


def test_a_date_is_read_in_the_forms_record_data_writes_it():
    """A birth date written ``YYYYMMDD`` ("17860511", as record-linkage data often has it) or day first
    ("11 05 1786", from 11/05/1786) compares as the ISO form does: read as a number it was a
    cannot-link against its own one-digit typo, and cost ``dev`` 0.24 F1 (scripts/bench_resolve.py
    --dates compact)."""
    forms = {"iso": "{y} {m} {d}", "compact": "{y}{m}{d}", "dmy": "{d} {m} {y}"}
    for form in forms.values():
        one = [form.format(y=y, m=m, d=d) for y in ("1630", "1631", "1640") for m, d in MONTH_DAYS[:7]]
        sets = [frozenset({v}) for v in one]
        dates = _single_dates(sets)
        assert dates[0].all()  # every value is read as one date
        a, b = (np.array(x) for x in zip(*itertools.product(range(len(one)), repeat=2)))
        got = _date_levels(dates, a, b).tolist()
        # the same levels as the ISO form's, pair for pair
        iso = [forms["iso"].format(y=y, m=m, d=d) for y in ("1630", "1631", "1640") for m, d in MONTH_DAYS[:7]]
        assert got == [value_level(iso[x], iso[y]) for x, y in zip(a.tolist(), b.tolist())]
    # a month-first date is read so when only that reading is a date; across forms one date agrees
    assert value_level("08 31 1630", "1630 08 31") == 3 == value_level("16300801", "1630 08 01")
    assert value_level("16300801", "16310801") == 2  # a one-digit year typo, as in the ISO form
    assert value_level("16301801", "16300801") == 3  # a typo'd month, no calendar day: same year and day
    assert value_level("16301801", "17400801") == 0
    assert value_level("36301801", "36300801") == 1  # no date (year 3630): a number a typo apart


def test_numbers_a_typo_apart_are_no_cannot_link():
    """Two numbers of four digits or more (a postcode, an id) one digit apart or with two adjacent digits
    swapped are level 1; more than that, other lengths or shorter numbers, level 0 (a cannot-link)."""
    assert [value_level("2615", x) for x in ("2615", "2614", "2651", "2156", "26150", "3714")] == [4, 1, 1, 0, 0, 0]
    # short numbers differ, they do not misspell each other (versions, counts)
    assert value_level("2", "3") == 0 == value_level("100", "109") and value_level("1000", "1009") == 1
