r"""Comparison vectors: how alike two units are, comparison by comparison, in discrete levels.

Each comparison gives a pair of units a **level** (higher = more alike) or ``-1`` when either side has
nothing to compare (a missing value contributes no evidence in the Fellegi–Sunter model,
:mod:`kgr.resolution.model`). Some levels are **term-frequency adjusted**: the pair also carries the
frequency :math:`f` of the value it agrees on, and the model uses :math:`u = f` there (splink's
term-frequency adjustment), so agreeing on "john smith" or "politician" is weaker evidence than
agreeing on "rhomas chudleigh" or a postcode. The comparisons of one entity type:

``name``
    on the canonical names, word by word (:func:`name_level`): 5 exact (TF: the name's frequency);
    4 as many words, each a typo apart at most from its best match in the other name (Jaro–Winkler
    ≥ 0.92 both ways: "lowe alyssa" / "alyssa lowe", "pickwick" / "pickwidk"); 3 the same, at 0.8
    ("jean haines" / "joan haines", "francis" / "frank"); 2 a shared word (TF: the rarest shared
    word's frequency: "marion rutland" / "violet rutland", "matthew" / "matthew ystwyth"); 1 the whole
    names at Jaro–Winkler ≥ 0.8; 0 otherwise. Words are compared one by one because Jaro–Winkler on
    whole names rewards a shared first word ("charles calvert" / "charles heathcote" score 0.88).
    Names whose digit runs differ (both have some) are 0, as disambiguation treats numbered items
    ("paper 12" / "paper 13"); a digit in one name only is a typo like any other ("hea6hcote").
``f:<REL>``
    per functional relation, on the values the units assert (:func:`value_level`, the best pair of
    values; the levels are :mod:`kgr.resolution.values`'s): dates — 4 equal (TF) … 1 the same year, a
    year one digit apart, or two calendar dates at most :data:`CLOSE_DAYS` (365) apart ("1859 12 31" /
    "1860 01 01": a year boundary is no evidence of two people); numbers — 4 equal (TF), 1 a typo
    apart; other values by Jaro–Winkler. Level 0 is a **cannot-link** (:func:`values_differ`).
``n:<REL><dir>``
    per other relation and direction (the :data:`MAX_NEIGHBOUR_RELATIONS` commonest of the type):
    2 a shared neighbour entity (TF: the rarest shared neighbour's frequency); 1 neighbours whose names
    are a typo apart (Jaro–Winkler ≥ 0.88: it forgives scrambled letters, "birmingham" /
    "birgmhniam" 0.95, and also rewards a shared prefix, "al9 5by" / "al9 5rb" 0.94; requiring few
    edits as well was measured and not kept, docs/resolve.md); 0 none alike.
``documents``
    1 when a source of each unit comes from one document; 0 otherwise.

Frequencies are shares of *groups*: of units by default, or — once a first clustering is known —
of clusters (:meth:`ComparisonSet.with_groups`), so that one person's many records do not make
their own name look common. String similarity is rapidfuzz's Jaro–Winkler; pairs are scored in
batches (``process.cpdist``) over the distinct value pairs, not pair by pair.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from kgr.resolution.units import Unit, key_name
from kgr.resolution.values import CLOSE_DAYS, NO_DAY, day_ordinal, read_date, value_level, values_differ

__all__ = ["Comparison", "ComparisonSet", "comparison_set", "value_level", "values_differ", "name_level",
           "MAX_NEIGHBOUR_RELATIONS", "NAME_LEVELS", "VALUE_LEVELS", "listed_apart"]

#: Non-functional relations (with direction) compared per entity type, the most common first.
MAX_NEIGHBOUR_RELATIONS = 8
#: Levels of the name comparison and of a functional comparison.
NAME_LEVELS, VALUE_LEVELS = 6, 5
#: Neighbours per side compared by name for the "near" level (the rest by key only).
_NEAR_LIMIT = 6
_RUNS = re.compile(r"\d+")


def _jw(a: str, b: str) -> float:
    return JaroWinkler.similarity(a, b)


@functools.lru_cache(maxsize=1 << 16)
def listed_apart(a: str, b: str) -> bool:
    """Whether two canonical names, listed side by side in one text as two things, name two entities.

    A text that relates two names to one entity in the same way ("Depend on x11proto-core-dev and
    libxext-dev", two packages one changelog makes a package depend on) means two things, unless one
    name is a short form of the other — its words a subset of the other's ("babbage" / "charles
    babbage"), its initials ("ibm" / "international business machines") or the same letters spaced
    otherwise ("python3" / "python 3") — or a near-identical spelling with the same numbers
    (:func:`name_level` 4: every word a typo apart, or the same words in another order). Different
    numbers are different things ("libasm java" / "libasm4 java", "openssl" / "openssl1.1").

    >>> listed_apart("libcglib java", "libguava java"), listed_apart("libxcb render0", "libxcb randr0")
    (True, True)
    >>> listed_apart("babbage", "charles babbage"), listed_apart("ibm", "international business machines")
    (False, False)
    >>> listed_apart("ada lovelace", "ada lovelance"), listed_apart("lowe alyssa", "alyssa lowe")
    (False, False)
    >>> listed_apart("libasm java", "libasm4 java"), listed_apart("python3", "python 3")
    (True, False)
    """
    if a == b or a.replace(" ", "") == b.replace(" ", ""):
        return False
    wa, wb = a.split(" "), b.split(" ")
    if set(wa) <= set(wb) or set(wb) <= set(wa):
        return False
    if (len(wa) == 1 and len(wb) >= 2 and a == "".join(w[:1] for w in wb)) or \
            (len(wb) == 1 and len(wa) >= 2 and b == "".join(w[:1] for w in wa)):
        return False
    return _RUNS.findall(a) != _RUNS.findall(b) or name_level(a, b) < 4


def name_level(a: str, b: str) -> int:
    """The ``name`` comparison's level for two canonical names (module docstring).

    >>> name_level("lowe alyssa", "alyssa lowe"), name_level("jean haines", "joan haines")
    (4, 3)
    >>> name_level("marion rutland", "violet rutland"), name_level("paper 12", "paper 13")
    (2, 0)
    >>> name_level("charles calvert", "charles heathcote"), name_level("john john", "john smith")
    (2, 2)
    """
    return int(_name_levels([a], [b], {})[0][0])


def _word_similarity(a: list[list[str]], b: list[list[str]]) -> np.ndarray:
    """Per pair of word lists of equal length, the smallest best-match Jaro–Winkler of a word, both
    ways: :math:`\\min(\\min_x \\max_y s(x, y), \\min_y \\max_x s(x, y))` (0 for lists of different lengths).
    Pairs of ``n`` words are scored together: one ``n × n`` grid of similarities per pair."""
    out = np.zeros(len(a))
    by_length: dict[int, list[int]] = {}
    for k, (wa, wb) in enumerate(zip(a, b)):
        if len(wa) == len(wb):
            by_length.setdefault(len(wa), []).append(k)
    for n, rows in by_length.items():
        grid = _word_grid([a[k] for k in rows], [b[k] for k in rows], n)
        out[rows] = np.minimum(grid.max(axis=2).min(axis=1), grid.max(axis=1).min(axis=1))
    return out


def _word_grid(a: list[list[str]], b: list[list[str]], n: int) -> np.ndarray:
    """Jaro–Winkler of word ``p`` of ``a[k]`` and word ``q`` of ``b[k]`` at ``[k, p, q]`` (lists of ``n`` words)."""
    xs = np.repeat(np.array(a, dtype=object).reshape(len(a), n), n, axis=1).ravel().tolist()
    ys = np.tile(np.array(b, dtype=object).reshape(len(b), n), (1, n)).ravel().tolist()
    return process.cpdist(xs, ys, scorer=JaroWinkler.normalized_similarity, workers=1).reshape(len(a), n, n)


def _name_levels(a: list[str], b: list[str], word_freq: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Levels and agreed values (the name at level 5, the rarest shared word at level 2) of name pairs."""
    ids, names = _codes([*a, *b])
    return _levels_of_names(names, ids[:len(a)], ids[len(a):], word_freq)


def _levels_of_names(names: list[str], ia: np.ndarray, ib: np.ndarray,
                     word_freq: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_name_levels` of the pairs ``(names[ia[k]], names[ib[k]])``, ``names`` distinct (equal ids:
    equal names); each name is split and its digit runs read once."""
    words_of = [n.split(" ") for n in names]
    runs = [tuple(_RUNS.findall(n)) for n in names]
    has_runs, run_id = np.array([bool(r) for r in runs], dtype=bool), _codes(runs)[0]
    same = ia == ib
    clash = has_runs[ia] & has_runs[ib] & (run_id[ia] != run_id[ib])  # numbered items: level 0
    level = np.zeros(len(ia), dtype=np.int8)
    agreed = np.full(len(ia), None, dtype=object)
    level[same], agreed[same] = 5, np.array(names, dtype=object)[ia[same]]
    rows = np.flatnonzero(~same & ~clash)
    words = _word_similarity([words_of[k] for k in ia[rows].tolist()], [words_of[k] for k in ib[rows].tolist()])
    level[rows[words >= 0.8]] = 3
    level[rows[words >= 0.92]] = 4
    _shared_or_whole(rows[words < 0.8], ia, ib, names, words_of, word_freq, level, agreed)
    return level, agreed


def _shared_or_whole(rows: np.ndarray, ia: np.ndarray, ib: np.ndarray, names: list[str], words_of: list[list[str]],
                     word_freq: dict[str, float], level: np.ndarray, agreed: np.ndarray) -> None:
    """Levels 2 (a shared word, agreed on the rarest: ties the first in order) and 1 (the whole names at
    Jaro–Winkler ≥ 0.8) of the name pairs ``(names[ia[k]], names[ib[k]])`` at ``rows``, in place."""
    sets = [set(w) for w in words_of]
    shared_rows, shared_words, other = [], [], []
    for k, x, y in zip(rows.tolist(), ia[rows].tolist(), ib[rows].tolist()):
        shared = sets[x] & sets[y]
        if shared:
            shared_rows.append(k)
            shared_words.append(min(sorted(shared), key=lambda w: word_freq.get(w, 0.0)))
        else:
            other.append(k)
    level[shared_rows] = 2
    agreed[shared_rows] = np.array(shared_words, dtype=object)
    if other:
        whole = process.cpdist([names[ia[k]] for k in other], [names[ib[k]] for k in other],
                               scorer=JaroWinkler.normalized_similarity, workers=1)
        level[np.asarray(other)[whole >= 0.8]] = 1


@dataclass(frozen=True)
class Comparison:
    """One comparison: its name, how many levels (0 … levels-1), and the term-frequency adjusted levels."""

    name: str
    levels: int
    tf_levels: tuple[int, ...] = ()


@dataclass(frozen=True)
class ComparisonSet:
    """The comparisons of one entity type, and the frequencies of names, words and values among the
    groups (units, or clusters of units)."""

    comparisons: tuple[Comparison, ...]
    freq: dict[str, dict[str, float]] = field(default_factory=dict)  #: comparison -> value -> frequency

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.comparisons]

    def with_groups(self, units: Sequence[Unit], groups: Sequence[int], *, alpha: float = 1.0) -> "ComparisonSet":
        """The same comparisons with frequencies counted over the groups ``groups`` (a label per unit):
        a value held by :math:`k` of :math:`K` groups has frequency :math:`(k - 1 + \\alpha) / K`, the
        chance that *another* group holds it (``alpha`` for the unseen ones)."""
        return ComparisonSet(self.comparisons, _frequencies(units, self.comparisons, groups, alpha=alpha))

    def vectors(self, units: Sequence[Unit], i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels (pairs × comparisons, int8, -1 missing) of the pairs ``(i[k], j[k])``, and what each
        agreed on at a term-frequency adjusted level (pairs × comparisons, object: the name, the
        rarest shared word, the equal value, the rarest shared neighbour; None elsewhere)."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        g = np.full((len(i), len(self.comparisons)), -1, dtype=np.int8)
        agreed = np.full(g.shape, None, dtype=object)
        for c, comp in enumerate(self.comparisons):
            kind, _, rel = comp.name.partition(":")
            if kind == "name":
                g[:, c], agreed[:, c] = _names(units, i, j, self.freq.get("name:words", {}))
            elif kind == "f":
                g[:, c], agreed[:, c] = _by_values(units, i, j, rel)
            elif kind == "n":
                g[:, c], agreed[:, c] = _neighbours(units, i, j, rel, self.freq.get(comp.name, {}))
            else:
                g[:, c] = _documents(units, i, j)
        return g, agreed

    def term_frequencies(self, levels: np.ndarray, agreed: np.ndarray) -> np.ndarray:
        """The frequency of what each pair agreed on (pairs × comparisons, NaN where none): a name's,
        a word's (the name comparison's shared-word level), a value's or a neighbour's share of groups."""
        tf = np.full(levels.shape, np.nan)
        for c, comp in enumerate(self.comparisons):
            for lv in comp.tf_levels:
                rows = np.nonzero((levels[:, c] == lv) & (agreed[:, c] != None))[0]  # noqa: E711 - elementwise
                table = self.freq.get("name:words" if comp.name == "name" and lv != NAME_LEVELS - 1 else comp.name, {})
                tf[rows, c] = [table.get(v, np.nan) for v in agreed[rows, c].tolist()]
        return tf


def _codes(keys: list) -> tuple[np.ndarray, list]:
    """Integer ids of ``keys`` (hashable, None allowed) and the distinct keys."""
    index: dict = {}
    ids = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    return ids, list(index)


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(a, b)`` id pairs and, per pair, the index of its distinct pair."""
    if len(a) == 0:
        return a, b, np.zeros(0, dtype=np.int64)
    width = int(max(a.max(), b.max())) + 1
    codes, inverse = np.unique(a * width + b, return_inverse=True)
    return codes // width, codes % width, inverse.reshape(-1)


def _names(units: Sequence[Unit], i: np.ndarray, j: np.ndarray,
           word_freq: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    ids, names = _codes([u.name for u in units])
    ua, ub, inv = _distinct_pairs(ids[i], ids[j])
    level, agreed = _levels_of_names(names, ua, ub, word_freq)
    return level[inv], agreed[inv]


@functools.lru_cache(maxsize=1 << 16)
def _value_set_level(xs: frozenset[str], ys: frozenset[str]) -> tuple[int, str | None]:
    best, agreed = -1, None
    for x in sorted(xs):
        for y in sorted(ys):
            lv = value_level(x, y)
            if lv > best:
                best, agreed = lv, x if x == y else None
    return best, agreed


def _by_values(units: Sequence[Unit], i: np.ndarray, j: np.ndarray, rel: str) -> tuple[np.ndarray, np.ndarray]:
    """Levels and agreed values of a functional relation: pairs of single dates in arrays
    (:func:`_date_levels`), the others value pair by value pair (:func:`_value_set_level`)."""
    ids, sets = _codes([u.functional.get(rel) or None for u in units])
    ua, ub, inv = _distinct_pairs(ids[i], ids[j])
    level = np.full(len(ua), -1, dtype=np.int8)
    agreed = np.full(len(ua), None, dtype=object)
    dates = _single_dates(sets)
    fast = dates[0][ua] & dates[0][ub]
    rows = np.flatnonzero(fast)
    level[rows] = _date_levels(dates, ua[rows], ub[rows])
    equal = rows[ua[rows] == ub[rows]]
    agreed[equal] = [next(iter(sets[x])) for x in ua[equal].tolist()]
    for k, x, y in zip(np.flatnonzero(~fast).tolist(), ua[~fast].tolist(), ub[~fast].tolist()):
        xs, ys = sets[x], sets[y]
        if xs is not None and ys is not None:
            level[k], agreed[k] = _value_set_level(xs, ys)
    return level[inv], agreed[inv]


def _single_dates(sets: list) -> tuple[np.ndarray, ...]:
    """Per value set: whether it is one date (:func:`~kgr.resolution.values.read_date`); its year's characters (code points, a row
    per set, padded with 0) and length; codes of its year, and of its month and day (one code space,
    so that a month compares with a day); its day ordinal (:func:`~kgr.resolution.values.day_ordinal`)."""
    dates = [read_date(next(iter(s))) if s is not None and len(s) == 1 else None for s in sets]
    one = np.array([d is not None for d in dates], dtype=bool)
    days = np.array([day_ordinal(next(iter(s))) if d is not None else NO_DAY for s, d in zip(sets, dates)], dtype=np.int64)
    years = [d[0] if d else "" for d in dates]
    chars = np.array([*years, "0"], dtype=str).view(np.uint32).reshape(len(years) + 1, -1)[:-1]  # "0": never empty
    month_day = _codes([d[k] if d else "" for d in dates for k in (1, 2)])[0].reshape(-1, 2)
    return one, chars, np.array([len(y) for y in years]), _codes(years)[0], month_day, days


def _date_levels(dates: tuple[np.ndarray, ...], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`value_level` of the single dates of sets ``a[k]`` and ``b[k]`` (:func:`_single_dates`), in arrays."""
    _, chars, length, year, month_day, days = dates
    (ma, da), (mb, db) = month_day[a].T, month_day[b].T
    month_or_day = (ma == mb) | (da == db) | ((ma == db) & (da == mb))
    ca, cb = chars[a], chars[b]
    diff = ca != cb
    n_diff = diff.sum(axis=1)
    # a year a typo apart: one digit changed, or two adjacent digits swapped ("1956" / "1965")
    k = diff.argmax(axis=1)
    nxt = np.minimum(k + 1, chars.shape[1] - 1)
    rows = np.arange(len(a))
    swapped = (n_diff == 2) & diff[rows, nxt] & (ca[rows, k] == cb[rows, nxt]) & (ca[rows, nxt] == cb[rows, k])
    typo = (length[a] == length[b]) & ((n_diff == 1) | swapped)
    close = (days[a] != NO_DAY) & (days[b] != NO_DAY) & (np.abs(days[a] - days[b]) <= CLOSE_DAYS)
    other_year = np.where(typo & (ma == mb) & (da == db), 2, np.where((typo & month_or_day) | close, 1, 0))
    level = np.where(year[a] == year[b], np.where(month_or_day, 3, 1), other_year)
    level[a == b] = 4  # one set, one value
    return level


def _neighbours(units: Sequence[Unit], i: np.ndarray, j: np.ndarray, rel: str,
                freq: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    ids, sets = _codes([u.neighbours.get(rel) or None for u in units])
    ua, ub, inv = _distinct_pairs(ids[i], ids[j])
    level = np.full(len(ua), -1, dtype=np.int8)
    agreed = np.full(len(ua), None, dtype=object)
    near_a: list[str] = []
    near_b: list[str] = []
    near_k: list[int] = []
    for k, (x, y) in enumerate(zip(ua.tolist(), ub.tolist())):
        xs, ys = sets[x], sets[y]
        if xs is None or ys is None:
            continue
        shared = xs & ys
        if shared:
            level[k] = 2
            agreed[k] = min(sorted(shared), key=lambda v: freq.get(v, 0.0))
            continue
        level[k] = 0
        for p in _names_of(xs):
            for q in _names_of(ys):
                near_a.append(p)
                near_b.append(q)
                near_k.append(k)
    if near_k:
        sim = process.cpdist(near_a, near_b, scorer=JaroWinkler.normalized_similarity, workers=1)
        hit = np.asarray(near_k)[sim >= 0.88]
        level[hit] = 1
    return level[inv], agreed[inv]


@functools.lru_cache(maxsize=1 << 16)
def _names_of(keys: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(key_name(k) for k in keys))[:_NEAR_LIMIT]


def _documents(units: Sequence[Unit], i: np.ndarray, j: np.ndarray) -> np.ndarray:
    out = np.full(len(i), -1, dtype=np.int8)
    for k, (x, y) in enumerate(zip(i.tolist(), j.tolist())):
        a, b = units[x].documents, units[y].documents
        if a and b:
            out[k] = 0 if a.isdisjoint(b) else 1
    return out


def _frequencies(units: Sequence[Unit], comps: Sequence[Comparison], groups: Sequence[int],
                 alpha: float | None = None) -> dict[str, dict[str, float]]:
    """Per comparison, each value's share of the groups holding it (a group counts a value once); with
    ``alpha``, :math:`(k - 1 + \\alpha) / K` (another group's chance)."""
    total = max(1, len(set(groups)))
    out: dict[str, dict[str, float]] = {}
    for comp in comps:
        kind, _, rel = comp.name.partition(":")
        held: set[tuple[int, str]] = set()
        if kind == "name":
            held = set(zip(groups, [u.name for u in units]))
        elif kind in ("f", "n"):
            held = {(grp, v) for u, grp in zip(units, groups)
                    for v in (u.functional if kind == "f" else u.neighbours).get(rel, ())}
        shift = 0.0 if alpha is None else alpha - 1.0
        counts = Counter(v for _, v in held)
        out[comp.name] = {v: (c + shift) / total for v, c in counts.items()}
        if kind == "name":
            words = Counter(w for _, n in held for w in set(n.split(" ")))
            out["name:words"] = {w: (c + shift) / total for w, c in words.items()}
    return out


def comparison_set(units: Sequence[Unit], functional: Sequence[str]) -> ComparisonSet:
    """The comparisons for ``units`` (one entity type): name, each functional relation some unit has,
    the :data:`MAX_NEIGHBOUR_RELATIONS` commonest other relations, and documents when any unit has one;
    frequencies counted over the units."""
    func = set(functional)
    frels = sorted({r for u in units for r in u.functional if r in func})
    counts = Counter(r for u in units for r in u.neighbours if r.rstrip("<>") not in func or r.endswith("<"))
    other = sorted(counts, key=lambda r: (-counts[r], r))[:MAX_NEIGHBOUR_RELATIONS]
    comps = [Comparison("name", NAME_LEVELS, (5, 2)), *(Comparison(f"f:{r}", VALUE_LEVELS, (4,)) for r in frels),
             *(Comparison(f"n:{r}", 3, (2,)) for r in sorted(other))]
    if any(u.documents for u in units):
        comps.append(Comparison("documents", 2))
    return ComparisonSet(tuple(comps), _frequencies(units, comps, list(range(len(units)))))
