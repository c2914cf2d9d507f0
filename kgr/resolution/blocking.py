"""Blocking: the unit pairs a scorer should see, without comparing all pairs.

Units (of one entity type, sorted by unit id) are paired when any rule puts them together; each
pair records the rules that found it (evidence for ``--dry-run``, and the EM sessions of
:mod:`kgr.resolution.plan`, which must not read the comparison a pair was blocked on). Every rule
is bounded: a block larger than ``max_block`` units is skipped (it says nothing specific), a window
is ``window`` wide, so the pairs grow linearly with the units, not quadratically.

``entity``
    units of one entity (its source groups) are always compared: that is how a split is found.
``phonetic``
    the sorted Metaphone codes of the name's words (jellyfish): ``"lowe alyssa"`` = ``"alyssa lowe"``,
    ``"jacob grene"`` = ``"jacob green"``.
``tokens``
    the same set of words; and any word that at most ``max_block`` units' names contain (a rare
    surname pairs its bearers whatever their first names).
``sorted``
    sorted neighbourhood: units sorted by name, by name with its words sorted, and by the reversed
    name (typos at the start), each unit paired with the next ``window - 1``.
``graph:<REL><dir>``
    units that share a neighbour entity over that relation (the same birth date, the same employer)
    held by at most ``max_block`` units.
``graph+word:<REL><dir>``
    a neighbour held by more units than that (a common birth date) still pairs those of its units
    whose names share a word's Metaphone code, block by block up to ``max_block``.
``embedding``
    with name embeddings (a configured model), each unit and its ``k`` nearest names by cosine.

All pair arithmetic is numpy: a pair ``(i, j)`` is the code ``i * n + j``; the rules are a boolean
matrix (pairs × rules).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import jellyfish
import numpy as np

from kgr.resolution.units import Unit

__all__ = ["block", "Candidates", "BLOCKING_RULES", "NAME_RULES"]

BLOCKING_RULES = ("entity", "phonetic", "tokens", "sorted", "graph", "graph+word", "embedding")
#: Rules that pair units by their names (or entity) only, not by a neighbour.
NAME_RULES = frozenset({"entity", "phonetic", "tokens", "sorted", "embedding"})


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs ``(i[k], j[k])`` (``i < j``, sorted) and the rules that found each."""

    i: np.ndarray
    j: np.ndarray
    found: np.ndarray  #: bool, pairs × rules
    rules: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.i)

    def rules_of(self, row: int) -> list[str]:
        """The rules that found pair ``row``, sorted."""
        return sorted(r for r, hit in zip(self.rules, self.found[row].tolist()) if hit)

    def row(self, i: int, j: int) -> int | None:
        """The row of pair ``{i, j}``, or None when no rule found it."""
        a, b = min(i, j), max(i, j)
        k = int(np.searchsorted(self.i * (self.j.max(initial=0) + 1) + self.j, a * (self.j.max(initial=0) + 1) + b))
        return k if k < len(self.i) and self.i[k] == a and self.j[k] == b else None

    def by(self, prefix: str) -> np.ndarray:
        """Rows found by a rule named ``prefix`` or starting with ``prefix + ':'``."""
        cols = [c for c, r in enumerate(self.rules) if r == prefix or r.startswith(prefix + ":")]
        return self.found[:, cols].any(axis=1) if cols else np.zeros(len(self.i), dtype=bool)


class _Pairs:
    def __init__(self, n: int):
        self.n = n
        self.parts: list[tuple[np.ndarray, str]] = []

    def add(self, a: np.ndarray, b: np.ndarray, rule: str) -> None:
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        keep = a != b
        a, b = a[keep], b[keep]
        if len(a):
            self.parts.append((np.minimum(a, b) * self.n + np.maximum(a, b), rule))

    def group(self, members: Sequence[int], rule: str) -> None:
        """Every pair of ``members`` (ascending, distinct indexes)."""
        if len(members) > 1:
            m = np.asarray(members, dtype=np.int64)
            x, y = _upper_pairs(len(m))
            self.parts.append((m[x] * self.n + m[y], rule))

    def build(self) -> Candidates:
        rules = tuple(sorted({r for _, r in self.parts}))
        if not self.parts:
            z = np.zeros(0, dtype=np.int64)
            return Candidates(z, z.copy(), np.zeros((0, 0), dtype=bool), ())
        codes = np.concatenate([c for c, _ in self.parts])
        col = np.concatenate([np.full(len(c), rules.index(r)) for c, r in self.parts])
        uniq, inv = np.unique(codes, return_inverse=True)
        found = np.zeros((len(uniq), len(rules)), dtype=bool)
        found[inv.reshape(-1), col] = True
        return Candidates(uniq // self.n, uniq % self.n, found, rules)


@functools.lru_cache(maxsize=256)
def _upper_pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The index pairs ``x < y`` below ``k`` (``np.triu_indices(k, 1)``), read-only."""
    x, y = np.triu_indices(k, 1)
    x.flags.writeable = y.flags.writeable = False
    return x, y


def _groups(keys: Iterable[tuple[int, Hashable]]) -> dict[Hashable, list[int]]:
    out: dict[Hashable, list[int]] = defaultdict(list)
    for i, k in keys:
        out[k].append(i)
    return out


def _by_key(pairs: _Pairs, keys: Iterable[tuple[int, Hashable]], rule: str, max_block: int) -> None:
    for members in _groups(keys).values():
        members = sorted(set(members))
        if 1 < len(members) <= max_block:
            pairs.group(members, rule)


def _window(pairs: _Pairs, order: Sequence[int], window: int) -> None:
    o = np.asarray(order, dtype=np.int64)
    for k in range(1, window):
        pairs.add(o[:-k], o[k:], "sorted")


def _metaphone(word: str) -> str:
    return jellyfish.metaphone(word) or word


def _phonetic(name: str) -> tuple[str, ...]:
    return tuple(sorted(_metaphone(t) for t in name.split(" ")))


def _graph(pairs: _Pairs, units: Sequence[Unit], codes: Sequence[tuple[str, ...]], max_block: int) -> None:
    held = _groups((i, (rel, other)) for i, u in enumerate(units) for rel, others in u.neighbours.items()
                   for other in others)
    for (rel, _), members in sorted(held.items()):
        members = sorted(set(members))
        if len(members) <= 1:
            continue
        if len(members) <= max_block:
            pairs.group(members, f"graph:{rel}")
            continue
        for sub in _groups((i, c) for i in members for c in set(codes[i])).values():
            if 1 < len(sub) <= max_block:
                pairs.group(sorted(set(sub)), f"graph+word:{rel}")


def _embedding(pairs: _Pairs, vectors: np.ndarray, k: int, chunk: int = 2048) -> None:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms == 0, 1.0, norms)
    k = min(k, len(v) - 1)
    if k < 1:
        return
    for start in range(0, len(v), chunk):
        sims = v[start:start + chunk] @ v.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        pairs.add(np.repeat(start + rows, k), nearest.reshape(-1), "embedding")


def block(units: Sequence[Unit], *, window: int = 6, max_block: int = 40,
          vectors: np.ndarray | None = None, k: int = 5) -> Candidates:
    """Candidate pairs of ``units`` with the rules that found each (module docstring).

    Parameters
    ----------
    units:
        Units of one entity type, in a fixed order (sorted by unit id).
    window:
        Width of the sorted-neighbourhood windows.
    max_block:
        Largest block a key or a shared neighbour may form (larger ones are skipped or sub-blocked).
    vectors:
        Optional name embeddings, one row per unit (``embedding`` rule).
    k:
        Nearest names per unit for the ``embedding`` rule.
    """
    pairs = _Pairs(max(1, len(units)))
    names = [u.name for u in units]
    for members in _groups((i, u.entity) for i, u in enumerate(units)).values():
        if len(members) > 1:
            pairs.group(members, "entity")  # no size cap: an entity's own units must meet
    codes = [_phonetic(n) for n in names]
    _by_key(pairs, enumerate(codes), "phonetic", max_block)
    _by_key(pairs, ((i, frozenset(n.split(" "))) for i, n in enumerate(names)), "tokens", max_block)
    _by_key(pairs, ((i, t) for i, n in enumerate(names) for t in set(n.split(" ")) if len(t) > 2), "tokens",
            max_block)
    uids = [u.uid for u in units]
    for keys in (names, [" ".join(sorted(n.split(" "))) for n in names], [n[::-1] for n in names]):
        _window(pairs, sorted(range(len(units)), key=list(zip(keys, uids)).__getitem__), window)
    _graph(pairs, units, codes, max_block)
    if vectors is not None and len(units) > 1:
        _embedding(pairs, vectors, k)
    return pairs.build()
