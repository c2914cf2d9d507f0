"""Comparison vectors: how alike two units are, comparison by comparison, in discrete levels.

Each comparison is a named function of two units returning a **level** (higher = more alike) or
``-1`` when either side has nothing to compare (a missing value contributes no evidence in the
Fellegi–Sunter model, :mod:`kgr.resolution.model`). The comparisons of one entity type:

``name``
    on the canonical names (word order ignored by comparing sorted tokens too; names whose digit runs
    differ are 0, as disambiguation treats numbered items): 4 exact; 3 the same
    words in another order, or Jaro–Winkler ≥ 0.95; 2 Jaro–Winkler ≥ 0.88; 1 Jaro–Winkler ≥ 0.75 or
    one name's words a subset of the other's; 0 otherwise. Level 4 is term-frequency adjusted (a
    common name is weaker evidence).
``f:<REL>``
    per functional relation, on the values the units assert (:func:`value_level`): 3 equal; 2 a typo
    apart (a date with one differing component, Jaro–Winkler ≥ 0.92, or words a subset); 1 closer
    than not (two date components, Jaro–Winkler ≥ 0.8); 0 different.
``n:<REL><dir>``
    per other relation and direction (the most common ones of the type): 2 a shared neighbour
    entity; 1 neighbours with names a typo apart (Jaro–Winkler ≥ 0.88); 0 none alike.
``documents``
    1 when a source of each unit comes from one document; 0 otherwise.

String similarity is rapidfuzz's Jaro–Winkler. :func:`values_differ` is the stricter test behind
cannot-links: two values of a functional relation *clearly* differ (a typo apart is not enough).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import JaroWinkler

from kgr.resolution.units import Unit, key_name

__all__ = ["Comparison", "ComparisonSet", "comparison_set", "value_level", "values_differ", "name_level",
           "MAX_NEIGHBOUR_RELATIONS"]

#: Non-functional relations (with direction) compared per entity type, the most common first.
MAX_NEIGHBOUR_RELATIONS = 8
#: Neighbours per side compared by name for the "near" level (the rest by key only).
_NEAR_LIMIT = 6
_DIGITS = re.compile(r"^\d+$")
_RUNS = re.compile(r"\d+")


def _jw(a: str, b: str) -> float:
    return JaroWinkler.similarity(a, b)


def _date(v: str) -> tuple[str, str, str] | None:
    """A canonical value made of three digit runs (``"1630 08 01"``, from ``1630-08-01``), or None."""
    toks = v.split(" ")
    if len(toks) == 3 and all(_DIGITS.match(t) for t in toks):
        return toks[0].lstrip("0") or "0", toks[1].lstrip("0") or "0", toks[2].lstrip("0") or "0"
    return None


@functools.lru_cache(maxsize=1 << 18)
def value_level(a: str, b: str) -> int:
    """How alike two functional values (canonical names) are: 3 equal … 0 different (module docstring).

    >>> value_level("1630 08 01", "1630 05 01"), value_level("1630 08 01", "1631 05 01")
    (2, 1)
    >>> value_level("devon", "west devon"), value_level("devon", "kent")
    (2, 0)
    """
    if a == b:
        return 3
    da, db = _date(a), _date(b)
    if da is not None and db is not None:
        same = sum(x == y for x, y in zip(da, db))
        return same
    if _DIGITS.match(a) and _DIGITS.match(b):
        return 0
    sim = _jw(a, b)
    ta, tb = set(a.split(" ")), set(b.split(" "))
    if sim >= 0.92 or ta <= tb or tb <= ta:
        return 2
    return 1 if sim >= 0.8 else 0


def values_differ(a: str, b: str) -> bool:
    """Whether two values of a functional relation clearly differ (a cannot-link): dates that share no
    component (year, month, day), different numbers, other values with Jaro–Winkler below 0.8 and
    neither's words a subset of the other's.

    >>> values_differ("1950 03 01", "1962 07 11"), values_differ("1950 03 01", "1950 07 11")
    (True, False)
    """
    if a == b:
        return False
    da, db = _date(a), _date(b)
    if da is not None and db is not None:
        return all(x != y for x, y in zip(da, db))
    return value_level(a, b) == 0


@functools.lru_cache(maxsize=1 << 18)
def name_level(a: str, b: str) -> int:
    """The ``name`` comparison's level for two canonical names (module docstring).

    >>> name_level("lowe alyssa", "alyssa lowe"), name_level("jacob green", "jacob greene")
    (3, 3)
    """
    if a == b:
        return 4
    if _RUNS.findall(a) != _RUNS.findall(b):
        return 0  # numbered items (dates, "paper 12" / "paper 13"): never fuzzy, as disambiguation rules
    sa, sb = " ".join(sorted(a.split(" "))), " ".join(sorted(b.split(" ")))
    if sa == sb:
        return 3
    sim = max(_jw(a, b), _jw(sa, sb))
    if sim >= 0.95:
        return 3
    if sim >= 0.88:
        return 2
    ta, tb = set(a.split(" ")), set(b.split(" "))
    return 1 if sim >= 0.75 or ta <= tb or tb <= ta else 0


@functools.lru_cache(maxsize=1 << 18)
def _set_level(xs: frozenset[str] | None, ys: frozenset[str] | None) -> int:
    if not xs or not ys:
        return -1
    return max(value_level(x, y) for x in xs for y in ys)


@functools.lru_cache(maxsize=1 << 18)
def _neighbour_level(xs: frozenset[str] | None, ys: frozenset[str] | None) -> int:
    if not xs or not ys:
        return -1
    if not xs.isdisjoint(ys):
        return 2
    return 1 if any(_near(x, y) for x in _names(xs) for y in _names(ys)) else 0


@functools.lru_cache(maxsize=1 << 16)
def _names(keys: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(key_name(k) for k in keys))[:_NEAR_LIMIT]


@functools.lru_cache(maxsize=1 << 18)
def _near(a: str, b: str) -> bool:
    return _jw(a, b) >= 0.88


@dataclass(frozen=True)
class Comparison:
    """One comparison: its name, how many levels (0 … levels-1), and which level TF adjusts (or None)."""

    name: str
    levels: int
    tf_level: int | None = None

    def level(self, a: Unit, b: Unit) -> int:
        kind, _, rel = self.name.partition(":")
        if kind == "name":
            return name_level(a.name, b.name)
        if kind == "f":
            return _set_level(a.functional.get(rel), b.functional.get(rel))
        if kind == "n":
            return _neighbour_level(a.neighbours.get(rel), b.neighbours.get(rel))
        if not a.documents or not b.documents:
            return -1
        return 0 if a.documents.isdisjoint(b.documents) else 1


@dataclass(frozen=True)
class ComparisonSet:
    """The comparisons of one entity type, and each name's term frequency among its units."""

    comparisons: tuple[Comparison, ...]
    name_tf: dict[str, float]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.comparisons]

    def vectors(self, units: Sequence[Unit], pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Levels (pairs × comparisons, int8, -1 missing) and each pair's name term frequency
        (the share of units with that canonical name; NaN unless the names are equal)."""
        g = np.empty((len(pairs), len(self.comparisons)), dtype=np.int8)
        left = [i for i, _ in pairs]
        right = [j for _, j in pairs]
        for c, comp in enumerate(self.comparisons):
            kind, _, rel = comp.name.partition(":")
            if kind == "name":
                names = [u.name for u in units]
                col = [name_level(names[i], names[j]) for i, j in pairs]
            elif kind == "f":
                vals = [u.functional.get(rel) for u in units]
                col = [_set_level(vals[i], vals[j]) for i, j in pairs]
            elif kind == "n":
                vals = [u.neighbours.get(rel) for u in units]
                col = [_neighbour_level(vals[i], vals[j]) for i, j in pairs]
            else:
                col = [comp.level(units[i], units[j]) for i, j in pairs]
            g[:, c] = col
        names = [u.name for u in units]
        tf = np.array([self.name_tf.get(names[i], 0.0) if names[i] == names[j] else np.nan
                       for i, j in zip(left, right)], dtype=float) if pairs else np.zeros(0)
        return g, tf


def comparison_set(units: Sequence[Unit], functional: Sequence[str]) -> ComparisonSet:
    """The comparisons for ``units`` (one entity type): name, each functional relation some unit has,
    the :data:`MAX_NEIGHBOUR_RELATIONS` commonest other relations, and documents when any unit has one."""
    func = sorted({r for u in units for r in u.functional if r in set(functional)})
    counts = Counter(r for u in units for r in u.neighbours if r.rstrip("<>") not in set(functional) or r.endswith("<"))
    other = sorted(counts, key=lambda r: (-counts[r], r))[:MAX_NEIGHBOUR_RELATIONS]
    comps = [Comparison("name", 5, tf_level=4), *(Comparison(f"f:{r}", 4) for r in func),
             *(Comparison(f"n:{r}", 3) for r in sorted(other))]
    if any(u.documents for u in units):
        comps.append(Comparison("documents", 2))
    names = Counter(u.name for u in units)
    total = max(1, len(units))
    return ComparisonSet(tuple(comps), {n: c / total for n, c in names.items()})
