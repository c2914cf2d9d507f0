r"""Functional values compared: dates, numbers and other values in levels (4 equal … 0 different).

A functional relation's values are compared pair by pair (:func:`value_level`); level 0 is a
**cannot-link** (:func:`values_differ`): two units whose values clearly differ are never one entity.
The levels (the ``f:<REL>`` comparison of :mod:`kgr.resolution.compare`, whose array form for single
dates must give exactly these levels):

- **dates** ``(year, month, day)`` (:func:`read_date`: year first, day first with the year last, or
  ``YYYYMMDD``) — 4 equal; 3 the same year and month or day (or the two swapped); 2 a year a typo
  apart (a digit changed or two adjacent digits swapped) with month and day equal; 1 the same year,
  or a year a typo apart with month or day equal, or two calendar dates at most :data:`CLOSE_DAYS`
  apart; 0 otherwise;
- **numbers** (digit strings) — 4 equal; 1 one digit apart or two adjacent digits swapped, at least
  four digits long (a postcode, an id); 0 otherwise;
- **other values** — 4 equal; 3 Jaro–Winkler ≥ 0.92 or one's words a subset of the other's; 1
  Jaro–Winkler ≥ 0.8; 0 otherwise.
"""

from __future__ import annotations

import datetime
import functools
import re

from rapidfuzz.distance import JaroWinkler

__all__ = ["CLOSE_DAYS", "NO_DAY", "read_date", "day_ordinal", "value_level", "values_differ"]

#: Two calendar dates at most this many days apart are close (level 1), never clearly different.
CLOSE_DAYS = 365
NO_DAY = -(10 ** 9)  #: the ordinal of a value that is no calendar date
_DIGITS = re.compile(r"^\d+$")


@functools.lru_cache(maxsize=1 << 16)
def read_date(v: str) -> tuple[str, str, str] | None:
    """A canonical value read as a date: ``(year, month, day)``, digit strings without leading zeros.

    Three forms: three digit runs year first (``"1630 08 01"``, from ``1630-08-01``); three runs with
    a four-digit year last (``"01 08 1630"``, from ``01/08/1630``: day first, unless only the month
    first can be a date, ``"08 31 1630"``); eight digits ``YYYYMMDD`` of a year 1000-2999
    (``"16300801"``, as record-linkage data often writes a birth date). As in the first form, a
    typo'd month or day (``"16301301"``) still reads as a date, one that is no calendar day
    (:func:`day_ordinal`). Anything else is no date.

    >>> read_date("1630 08 01"), read_date("01 08 1630"), read_date("08 31 1630")
    (('1630', '8', '1'), ('1630', '8', '1'), ('1630', '8', '31'))
    >>> read_date("16300801"), read_date("16301301")
    (('1630', '8', '1'), ('1630', '13', '1'))
    >>> read_date("36300801"), read_date("1630 08"), read_date("1 2 3")
    (None, None, None)
    """
    toks = v.split(" ")
    if len(toks) == 1 and len(v) == 8 and v.isdigit() and v[0] in "12":
        toks = [v[:4], v[4:6], v[6:]]
    if len(toks) != 3 or not all(_DIGITS.match(t) for t in toks):
        return None
    if len(toks[0]) < 3:
        if len(toks[2]) != 4 or len(toks[1]) > 2:
            return None
        d, m = (toks[1], toks[0]) if int(toks[1]) > 12 >= int(toks[0]) else (toks[0], toks[1])
        toks = [toks[2], m, d]
    return toks[0].lstrip("0") or "0", toks[1].lstrip("0") or "0", toks[2].lstrip("0") or "0"


#: The shortest number a typo is read in: shorter ones ("2" / "3", "100" / "109") differ, not misspell.
MIN_TYPO_DIGITS = 4


def _typo(a: str, b: str) -> bool:
    """Two strings of one length that differ in one character or by two adjacent characters swapped."""
    if len(a) != len(b):
        return False
    diff = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                              and a[diff[1]] == b[diff[0]])


def _digit_typo(a: str, b: str) -> bool:
    """Two digit strings at least :data:`MIN_TYPO_DIGITS` long a :func:`_typo` apart."""
    return len(a) >= MIN_TYPO_DIGITS and _typo(a, b)


@functools.lru_cache(maxsize=1 << 16)
def day_ordinal(v: str) -> int:
    """The proleptic Gregorian ordinal of a canonical date value, or ``NO_DAY`` (no calendar date:
    not three digit runs, month 13, year 0 …)."""
    d = read_date(v)
    if d is None:
        return NO_DAY
    try:
        return datetime.date(int(d[0]), int(d[1]), int(d[2])).toordinal()
    except (ValueError, OverflowError):
        return NO_DAY


def _close(x: int, y: int) -> bool:
    return x != NO_DAY and y != NO_DAY and abs(x - y) <= CLOSE_DAYS


@functools.lru_cache(maxsize=1 << 18)
def value_level(a: str, b: str) -> int:
    """How alike two functional values (canonical names) are: 4 equal … 0 different (module docstring).

    >>> value_level("1630 08 01", "1630 05 01"), value_level("1630 08 01", "1631 08 01")
    (3, 2)
    >>> value_level("1630 08 01", "1630 05 07"), value_level("1847 01 01", "1733 01 01")
    (1, 0)
    >>> value_level("1859 12 31", "1860 01 01"), value_level("1859 12 31", "1861 01 01")
    (1, 0)
    >>> value_level("devon", "west devon"), value_level("devon", "kent")
    (3, 0)
    >>> value_level("1956 04 12", "1965 04 12"), value_level("1956 04 12", "1965 11 30")
    (2, 0)
    """
    if a == b:
        return 4
    da, db = read_date(a), read_date(b)
    if da is not None and db is not None:
        (ya, ma, dda), (yb, mb, ddb) = da, db
        month_or_day = ma == mb or dda == ddb or (ma, dda) == (ddb, mb)
        if ya == yb:
            return 3 if month_or_day else 1
        typo = _typo(ya, yb)  # a digit changed or two adjacent digits swapped ("1956" / "1965")
        if typo and (ma, dda) == (mb, ddb):
            return 2
        return 1 if (typo and month_or_day) or _close(day_ordinal(a), day_ordinal(b)) else 0
    if _DIGITS.match(a) and _DIGITS.match(b):
        return 1 if _digit_typo(a, b) else 0
    sim = JaroWinkler.similarity(a, b)
    ta, tb = set(a.split(" ")), set(b.split(" "))
    if sim >= 0.92 or ta <= tb or tb <= ta:
        return 3
    return 1 if sim >= 0.8 else 0


def values_differ(a: str, b: str) -> bool:
    """Whether two values of a functional relation clearly differ (a cannot-link): their level is 0 —
    dates in different years (not a one-digit typo apart) more than :data:`CLOSE_DAYS` apart, numbers
    more than a typo apart, other values with Jaro–Winkler below 0.8 and neither's words a subset of
    the other's.

    >>> values_differ("1950 03 01", "1962 07 11"), values_differ("1950 03 01", "1950 07 11")
    (True, False)
    >>> values_differ("1847 01 01", "1733 01 01"), values_differ("1850 01 01", "1860 01 01")
    (True, False)
    >>> values_differ("2009 12 21", "2010 01 20"), values_differ("2009 12 21", "2011 01 21")
    (False, True)
    >>> values_differ("19500301", "1950 03 01"), values_differ("2615", "2651"), values_differ("2615", "2715 1")
    (False, False, True)
    """
    return a != b and value_level(a, b) == 0
