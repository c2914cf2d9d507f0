"""The steps of :func:`kgr.evidence.rules.mine_rules`: checked settings, length-1 and length-2 bodies.

Conventions as in :mod:`kgr.evidence.rules` (atoms, pair keys, the thresholds) and
:mod:`kgr.evidence.adjacency` (the per-relation matrices and the head index the bodies are matched on).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from kgr.errors import KgrValidationError
from kgr.evidence.adjacency import Adjacency, HeadIndex, excluded_middles
from kgr.evidence.facts import FactTable
from kgr.gauge.validate import integer, real

__all__ = ["CONFIDENCE_MEASURES", "mining_settings", "RuleEmitter", "mine_length1", "mine_length2"]

#: Confidence measures a :class:`~kgr.evidence.rules.RuleSet` can rank and filter by.
CONFIDENCE_MEASURES = ("pca", "std")


def mining_settings(facts: FactTable, *, min_support: Any, min_head_coverage: Any, min_confidence: Any,
                    confidence: Any, min_weight: Any, max_body_paths: Any, relation_names: Any) -> dict[str, Any]:
    """The checked settings of :func:`mine_rules`, as :class:`RuleSet` keeps them.

    Parameters
    ----------
    facts : FactTable
    min_support, min_head_coverage, min_confidence, confidence, min_weight, max_body_paths, relation_names
        As :func:`~kgr.evidence.rules.mine_rules` takes them.

    Returns
    -------
    dict
        The checked settings.
    """
    checked = dict(min_support=integer("min_support", min_support, ge=1),
                   min_head_coverage=real("min_head_coverage", min_head_coverage, ge=0.0, le=1.0),
                   min_confidence=real("min_confidence", min_confidence, ge=0.0, le=1.0),
                   min_weight=real("min_weight", min_weight, ge=0.0),
                   max_body_paths=integer("max_body_paths", max_body_paths, ge=1))
    if confidence not in CONFIDENCE_MEASURES:
        raise KgrValidationError(f"confidence must be one of {CONFIDENCE_MEASURES}, got {confidence!r}",
                                 field="confidence")
    if relation_names is not None:
        relation_names = tuple(relation_names)
        if len(relation_names) != facts.n_relations:
            raise KgrValidationError(
                f"relation_names has {len(relation_names)} names for {facts.n_relations} relations",
                field="relation_names")
    return dict(confidence=confidence, **checked, relation_names=relation_names)


class RuleEmitter:
    """Collects, body by body, the rules whose statistics pass the thresholds, for every head at once.

    ``rules`` holds ``(head, body, support, body_size, pca_body_size, head_size, excluded)`` tuples,
    the fields of :class:`kgr.evidence.rules.Rule` but its names.
    """

    def __init__(self, head_size: np.ndarray, settings: dict[str, Any]) -> None:
        self.head_size, self.s, self.rules = head_size, settings, []

    def __call__(self, body: tuple[tuple[int, bool], ...], sup: np.ndarray, bsize: int, pca: np.ndarray,
                 excluded: tuple[int, ...], forbid_head: int | None = None) -> None:
        if bsize == 0:
            return
        s, head_size = self.s, self.head_size
        den = pca if s["confidence"] == "pca" else np.full(len(head_size), bsize)
        with np.errstate(divide="ignore", invalid="ignore"):
            conf = np.where(den > 0, sup / np.maximum(den, 1), 0.0)
            hc = np.where(head_size > 0, sup / np.maximum(head_size, 1), 0.0)
        ok = (sup >= s["min_support"]) & (hc >= s["min_head_coverage"]) & (conf >= s["min_confidence"])
        if forbid_head is not None:
            ok[forbid_head] = False
        for head in np.flatnonzero(ok):
            self.rules.append((int(head), body, int(sup[head]), int(bsize), int(pca[head]), int(head_size[head]),
                               excluded))


def mine_length1(adj: Adjacency, index: HeadIndex, emit: RuleEmitter) -> None:
    """Length-1 bodies: :math:`B = A_{r'}` (forward) and :math:`A_{r'}^\\top` (via the reversed look-up).

    Parameters
    ----------
    adj : Adjacency
    index : HeadIndex
    emit : RuleEmitter
        Collects the rules.

    Returns
    -------
    None
    """
    R, n = adj.R, adj.n
    for rel in range(R):
        size = len(adj.keys[rel])
        if size == 0:
            continue
        a, a_rows = adj.fwd[rel], adj.keys[rel] // n
        emit(((rel, False),), index.support(a, a_rows, False, R), size, index.pca(adj.outdeg[rel]), (),
             forbid_head=rel)
        emit(((rel, True),), index.support(a, a_rows, True, R), size, index.pca(adj.indeg[rel]), ())


def mine_length2(adj: Adjacency, index: HeadIndex, emit: RuleEmitter, min_support: int, max_body_paths: int) -> None:
    """Length-2 bodies: atoms 0..R-1 forward, R..2R-1 inverse; (i, j) and (inv j, inv i) share B / B^T.

    Parameters
    ----------
    adj : Adjacency
    index : HeadIndex
    emit : RuleEmitter
        Collects the rules.
    min_support : int
    max_body_paths : int

    Returns
    -------
    None
    """
    R, n = adj.R, adj.n

    def inv(a: int) -> int:
        return (a + R) % (2 * R)

    def atom(a: int) -> tuple[int, bool]:
        return (a % R, a >= R)

    rows_all = np.arange(n, dtype=np.int64)
    for i in range(2 * R):
        if adj.sizes[i % R] == 0:
            continue
        for j in range(2 * R):
            if adj.sizes[j % R] == 0:
                continue
            mate = (inv(j), inv(i))
            if (i, j) > mate:
                continue
            c = adj.colcount(i).astype(np.float64) * adj.rowcount(j)
            if c.sum() < min_support:
                continue
            excl = excluded_middles(c, max_body_paths)
            m2 = adj.matrix(j)
            if len(excl):
                keep = np.ones(n)
                keep[excl] = 0.0
                m2 = sp.diags(keep, format="csr") @ m2
            b = (adj.matrix(i) @ m2).tocsr()
            b.eliminate_zeros()
            rows = np.repeat(rows_all, np.diff(b.indptr))
            cols = b.indices
            off = rows != cols
            size = int(off.sum())
            if size < min_support:
                continue
            b.data = np.ones(len(b.data))  # path counts -> 0/1; the diagonal never meets a fact
            excluded = tuple(int(z) for z in excl)
            rc = np.bincount(rows[off], minlength=n)
            emit((atom(i), atom(j)), index.support(b, rows, False, R), size, index.pca(rc), excluded)
            if mate != (i, j):
                cc = np.bincount(cols[off], minlength=n)
                emit((atom(mate[0]), atom(mate[1])), index.support(b, rows, True, R), size, index.pca(cc), excluded)
