"""Blocking: the unit pairs a scorer should see, without comparing all pairs.

Units (of one entity type, sorted by unit id) are paired when any rule puts them together; each
pair records the rules that found it (evidence for ``--dry-run``). Every rule is bounded: a block
larger than ``max_block`` units is skipped (it says nothing specific), a window is ``window`` wide,
so the pairs grow linearly with the units, not quadratically.

``entity``
    units of one entity (its functional signatures) are always compared: that is how a split is found.
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
``embedding``
    with name embeddings (a configured model), each unit and its ``k`` nearest names by cosine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import jellyfish
import numpy as np

from kgr.resolution.units import Unit

__all__ = ["block", "Pairs", "BLOCKING_RULES"]

Pairs = dict[tuple[int, int], set[str]]
BLOCKING_RULES = ("entity", "phonetic", "tokens", "sorted", "graph", "embedding")


def _add(pairs: Pairs, members: Sequence[int], rule: str) -> None:
    for x in range(len(members)):
        for y in range(x + 1, len(members)):
            i, j = members[x], members[y]
            if i != j:
                pairs.setdefault((min(i, j), max(i, j)), set()).add(rule)


def _by_key(pairs: Pairs, keys: Iterable[tuple[int, object]], rule: str, max_block: int) -> None:
    groups: dict[object, list[int]] = defaultdict(list)
    for i, k in keys:
        groups[k].append(i)
    for k, members in groups.items():
        if 1 < len(members) <= max_block:
            _add(pairs, sorted(set(members)), f"graph:{k[0]}" if rule == "graph" else rule)


def _window(pairs: Pairs, order: Sequence[int], window: int) -> None:
    for x in range(len(order)):
        for y in range(x + 1, min(len(order), x + window)):
            i, j = order[x], order[y]
            pairs.setdefault((min(i, j), max(i, j)), set()).add("sorted")


def _phonetic(name: str) -> tuple[str, ...]:
    return tuple(sorted(jellyfish.metaphone(t) or t for t in name.split(" ")))


def _embedding(pairs: Pairs, vectors: np.ndarray, k: int, chunk: int = 2048) -> None:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms == 0, 1.0, norms)
    k = min(k, len(v) - 1)
    if k < 1:
        return
    for start in range(0, len(v), chunk):
        sims = v[start:start + chunk] @ v.T
        for r in range(sims.shape[0]):
            sims[r, start + r] = -np.inf
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, row in enumerate(nearest):
            i = start + r
            for j in row.tolist():
                pairs.setdefault((min(i, j), max(i, j)), set()).add("embedding")


def block(units: Sequence[Unit], *, window: int = 6, max_block: int = 40,
          vectors: np.ndarray | None = None, k: int = 5) -> Pairs:
    """Candidate pairs ``(i, j)``, ``i < j`` indexes into ``units``, with the rules that found each.

    Parameters
    ----------
    units:
        Units of one entity type, in a fixed order (sorted by unit id).
    window:
        Width of the sorted-neighbourhood windows.
    max_block:
        Largest block a key or a shared neighbour may form (larger ones are skipped).
    vectors:
        Optional name embeddings, one row per unit (``embedding`` rule).
    k:
        Nearest names per unit for the ``embedding`` rule.
    """
    pairs: Pairs = {}
    names = [u.name for u in units]
    by_entity: dict[str, list[int]] = defaultdict(list)
    for i, u in enumerate(units):
        by_entity[u.entity].append(i)
    for members in by_entity.values():
        _add(pairs, members, "entity")  # no size cap: an entity's own units must meet
    _by_key(pairs, ((i, _phonetic(n)) for i, n in enumerate(names)), "phonetic", max_block)
    _by_key(pairs, ((i, frozenset(n.split(" "))) for i, n in enumerate(names)), "tokens", max_block)
    _by_key(pairs, ((i, t) for i, n in enumerate(names) for t in set(n.split(" ")) if len(t) > 2), "tokens",
            max_block)
    for key in (lambda n: n, lambda n: " ".join(sorted(n.split(" "))), lambda n: n[::-1]):
        _window(pairs, sorted(range(len(units)), key=lambda i: (key(names[i]), units[i].uid)), window)
    _by_key(pairs, ((i, (rel, other)) for i, u in enumerate(units) for rel, others in u.neighbours.items()
                    for other in others), "graph", max_block)
    if vectors is not None and len(units) > 1:
        _embedding(pairs, vectors, k)
    return pairs

