r"""Typed facts as integer arrays: the common input of the learned-plausibility evidence.

The relational evidence of the promotion scorer (path and inverse rules :mod:`kgr.evidence.rules`,
role profiles :mod:`kgr.evidence.roles`, knowledge-graph embeddings :mod:`kgr.evidence.embedding`)
works on the same table of facts: entity ids :math:`0..n-1` with a type each, relation ids
:math:`0..R-1`, and one row :math:`(h, r, t, w)` per directed fact with a weight :math:`w > 0`
(1 for a promoted edge; the vote weight for a staged one). A *query* is a triple to score
with the same ids, given as three parallel arrays.

Conventions: ids are ``int64`` numpy arrays; a fact table holds each ``(h, r, t)`` at most once
(:func:`FactTable.from_triples` sums the weights of repeats); self loops are allowed in the
table but every evidence module ignores them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgr.errors import KgrValidationError

__all__ = ["FactTable", "Vocabulary", "check_queries", "check_key_space", "lookup", "INT64_MAX"]


@dataclass(frozen=True)
class Vocabulary:
    """Names of the integer ids: entity keys and their types, relation names.

    Attributes
    ----------
    entities : tuple of str
        Entity keys; the position is the entity id.
    entity_types : numpy.ndarray of int64, shape (n,)
        Type id of each entity (index into ``types``).
    types : tuple of str
        Entity type names.
    relations : tuple of str
        Relation names; the position is the relation id.
    """

    entities: tuple[str, ...]
    entity_types: np.ndarray
    types: tuple[str, ...]
    relations: tuple[str, ...]

    @classmethod
    def build(cls, entities: Iterable[tuple[str, str]], relations: Iterable[str]) -> "Vocabulary":
        """From ``(key, type)`` pairs and relation names; ids follow sorted order (deterministic)."""
        ents = dict(entities)
        keys = tuple(sorted(ents))
        types = tuple(sorted(set(ents.values())))
        tid = {t: i for i, t in enumerate(types)}
        return cls(entities=keys, entity_types=np.array([tid[ents[k]] for k in keys], dtype=np.int64),
                   types=types, relations=tuple(sorted(set(relations))))

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        return len(self.relations)

    def entity_index(self) -> dict[str, int]:
        """Entity key → id.

        Returns
        -------
        dict of str to int
        """
        return {k: i for i, k in enumerate(self.entities)}

    def relation_index(self) -> dict[str, int]:
        """Relation name → id.

        Returns
        -------
        dict of str to int
        """
        return {r: i for i, r in enumerate(self.relations)}


@dataclass(frozen=True)
class FactTable:
    """Directed weighted facts :math:`(h, r, t, w)` over ``n_entities`` entities and ``n_relations`` relations.

    Attributes
    ----------
    head, rel, tail : numpy.ndarray of int64, shape (m,)
        The facts, each ``(h, r, t)`` once.
    weight : numpy.ndarray of float64, shape (m,)
        Positive weights.
    n_entities, n_relations : int
        Sizes of the id spaces (ids may be unused).
    """

    head: np.ndarray
    rel: np.ndarray
    tail: np.ndarray
    weight: np.ndarray
    n_entities: int
    n_relations: int

    def __post_init__(self) -> None:
        m = len(self.head)
        if not (len(self.rel) == len(self.tail) == len(self.weight) == m):
            raise KgrValidationError("head, rel, tail and weight must have one entry per fact", field="facts")
        if m and (self.head.min() < 0 or self.tail.min() < 0 or max(self.head.max(), self.tail.max()) >= self.n_entities):
            raise KgrValidationError("entity id out of range", field="facts")
        if m and (self.rel.min() < 0 or self.rel.max() >= self.n_relations):
            raise KgrValidationError("relation id out of range", field="facts")
        if m and not np.all(self.weight > 0):
            raise KgrValidationError("weights must be > 0", field="facts.weight")

    @classmethod
    def from_triples(cls, triples: Sequence[tuple[int, int, int]] | np.ndarray, *, n_entities: int, n_relations: int,
                     weights: Sequence[float] | np.ndarray | None = None) -> "FactTable":
        """From ``(h, r, t)`` rows (repeats merged, their weights summed; default weight 1)."""
        arr = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        w = np.ones(len(arr)) if weights is None else np.asarray(weights, dtype=np.float64)
        if len(w) != len(arr):
            raise KgrValidationError("one weight per triple", field="weights")
        if len(arr) == 0:
            e = np.zeros(0, dtype=np.int64)
            return cls(e, e.copy(), e.copy(), np.zeros(0), n_entities, n_relations)
        uniq, inv = np.unique(arr, axis=0, return_inverse=True)
        ws = np.bincount(inv.ravel(), weights=w, minlength=len(uniq))
        return cls(uniq[:, 0].copy(), uniq[:, 1].copy(), uniq[:, 2].copy(), ws, n_entities, n_relations)

    def __len__(self) -> int:
        return len(self.head)

    def subset(self, mask: np.ndarray) -> "FactTable":
        """The facts where ``mask`` is true (same id spaces).

        Parameters
        ----------
        mask : numpy.ndarray of bool, shape (m,)
            Which facts to keep.

        Returns
        -------
        FactTable
        """
        return FactTable(self.head[mask], self.rel[mask], self.tail[mask], self.weight[mask],
                         self.n_entities, self.n_relations)


#: Largest int64: pair keys ``(r*n + h)*n + t`` must stay below half of it.
INT64_MAX = np.iinfo(np.int64).max


def check_queries(facts: FactTable, h: Any, r: Any, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries as three int64 arrays of one length, ids inside the table's id spaces.

    Parameters
    ----------
    facts : FactTable
        Gives the id spaces.
    h, r, t : array_like of int
        Head, relation and tail ids of the queries.

    Returns
    -------
    h, r, t : numpy.ndarray of int64, shape (q,)

    Raises
    ------
    KgrValidationError
        Arrays of different lengths, non-integer ids, or ids outside the id spaces.
    """
    out = []
    for name, a in (("h", h), ("r", r), ("t", t)):
        arr = np.asarray(a)
        if arr.ndim != 1:
            arr = arr.reshape(-1)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
                raise KgrValidationError(f"query ids must be integers, got dtype {arr.dtype}", field=name)
        out.append(arr.astype(np.int64, copy=False))
    hq, rq, tq = out
    if not (len(hq) == len(rq) == len(tq)):
        raise KgrValidationError(
            f"h, r and t must have one entry per query, got {len(hq)}, {len(rq)}, {len(tq)}", field="queries")
    if len(hq):
        if min(hq.min(), tq.min()) < 0 or max(hq.max(), tq.max()) >= facts.n_entities:
            raise KgrValidationError(f"entity id outside 0..{facts.n_entities - 1}", field="queries")
        if rq.min() < 0 or rq.max() >= facts.n_relations:
            raise KgrValidationError(f"relation id outside 0..{facts.n_relations - 1}", field="queries")
    return hq, rq, tq


def check_key_space(n: int, R: int) -> None:
    """Raise :class:`KgrValidationError` unless the keys ``(r*n + h)*n + t`` fit in int64 with room to spare.

    Parameters
    ----------
    n : int
        Number of entities.
    R : int
        Number of relations.

    Returns
    -------
    None

    Raises
    ------
    KgrValidationError
        :math:`R n^2` exceeds half the int64 range.
    """
    if n and R and R * n * n > INT64_MAX // 2:
        raise KgrValidationError(
            f"n_relations * n_entities**2 = {R * n * n} exceeds the int64 key space", field="facts")


def lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``keys`` in ``sorted_keys`` and whether each is present.

    Parameters
    ----------
    sorted_keys : numpy.ndarray of int64
        Sorted, without repeats.
    keys : numpy.ndarray of int64
        The keys looked up.

    Returns
    -------
    pos : numpy.ndarray of int64
        Position of each key (0 where absent).
    found : numpy.ndarray of bool
    """
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
    pos = np.searchsorted(sorted_keys, keys)
    pos[pos == len(sorted_keys)] = 0
    return pos, sorted_keys[pos] == keys
