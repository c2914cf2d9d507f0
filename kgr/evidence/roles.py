r"""Role profiles: learned types for relations whose schema declares none.

An entity's *role profile* counts how it takes part in each relation, as head and as tail. A
relation's heads share a typical profile (people who ``WORKS_AT`` also ``LIVES_IN`` and are
``MEMBER_OF``; organisations are ``BASED_IN``); an entity that behaves like the heads of
:math:`r` is a plausible head of :math:`r`, one that behaves like its tails a plausible tail.

Conventions
-----------
For :math:`R` relations, entity :math:`e` has the profile :math:`p_e \in \mathbb{R}^{2R}`:

.. math::

    p_e[r] = \sum_{(e, r, t)} w, \qquad p_e[R + r] = \sum_{(h, r, e)} w

(:math:`w = 1` unless ``weighted``), and :math:`\hat p_e = p_e / \lVert p_e \rVert_2`
(:math:`0` for an entity without facts). The head and tail centroids of :math:`r` are the means
of :math:`\hat p_e` over the distinct heads :math:`H_r` and tails :math:`T_r` of :math:`r`-facts;
a fit is a cosine, so only the direction of a centroid matters. Self loops are ignored (as in
every evidence module); a table holding a triple twice counts it once with the summed weight,
as :meth:`~kgr.evidence.facts.FactTable.from_triples` would.

**Leave-one-out.** A query :math:`(h, r, t)` that is a fact of the table is scored against the
table *without it*: its weight is removed from :math:`p_h[r]` and :math:`p_t[R + r]`; :math:`h`
leaves :math:`H_r` if it has no other :math:`r`-fact as head, :math:`t` leaves :math:`T_r`
likewise; and every centroid term of :math:`h` and :math:`t` uses their reduced profiles. Only
:math:`h` and :math:`t` change, so the update is exact (equal, to rounding, to recomputing on the
table without the fact) and costs :math:`O(R)` per query. A fact is thus never its own evidence,
and a fact of the table scores exactly as it would as a new candidate.

Notes
-----
Cost: building profiles and centroids is :math:`O(m + nR)` for :math:`m` facts; each query
costs :math:`O(R)`. 100,000 facts, 30,000 entities, 12 relations, 5,000 queries: ≈ 0.05 s
on one core (``OPENBLAS_NUM_THREADS=1``).

References
----------
.. [1] H. Paulheim, C. Bizer, "Type Inference on Noisy RDF Data", ISWC 2013 (types from the
   relations an entity takes part in, per direction).
.. [2] L. Galárraga et al., "AMIE: Association Rule Mining under Incomplete Evidence",
   WWW 2013 (leave-one-out style confidence of learned regularities on the KB itself).

Examples
--------
>>> from kgr.evidence.facts import FactTable
>>> # WORKS_AT = 0 (person -> org), BASED_IN = 1 (org -> city); persons 0-2, orgs 3-4, city 5
>>> ft = FactTable.from_triples([(0, 0, 3), (1, 0, 3), (2, 0, 4), (3, 1, 5), (4, 1, 5)],
...                             n_entities=6, n_relations=2)
>>> ev = role_evidence(ft, [2, 5], [0, 0], [3, 3])   # a person vs a city as employee
>>> ev.head_fit.tolist()
[1.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from kgr.errors import KgrValidationError
from kgr.evidence.facts import FactTable, check_key_space, check_queries, lookup

__all__ = ["RoleEvidence", "role_evidence", "role_profiles"]


@dataclass(frozen=True)
class RoleEvidence:
    """Role-profile evidence per query (arrays of shape ``(q,)``).

    Attributes
    ----------
    head_fit, tail_fit : numpy.ndarray of float64
        Cosine in :math:`[0, 1]` between the (leave-one-out) profile of ``h`` (``t``) and the
        head (tail) centroid of ``r``; 0 when undefined (see :func:`role_evidence`).
    head_seen, tail_seen : numpy.ndarray of int64
        Other ``r``-facts with head ``h`` (tail ``t``).
    type_share_head, type_share_tail : numpy.ndarray of float64 or None
        Share of the other ``r``-facts whose head (tail) has the type of ``h`` (``t``);
        ``None`` without ``entity_types``.
    known_relation : numpy.ndarray of bool
        ``r`` has at least one other fact; when false every fit and share is 0.
    in_table : numpy.ndarray of bool
        The query was a fact of the table and was left out.
    """

    head_fit: np.ndarray
    tail_fit: np.ndarray
    head_seen: np.ndarray
    tail_seen: np.ndarray
    type_share_head: np.ndarray | None
    type_share_tail: np.ndarray | None
    known_relation: np.ndarray
    in_table: np.ndarray


@dataclass(frozen=True)
class _Facts:
    """Distinct non-loop facts sorted by key ``(r*n + h)*n + t``, weights summed."""

    keys: np.ndarray
    head: np.ndarray
    rel: np.ndarray
    tail: np.ndarray
    weight: np.ndarray


def _distinct(facts: FactTable) -> _Facts:
    n, R = facts.n_entities, facts.n_relations
    check_key_space(n, R)
    keep = facts.head != facts.tail
    h = facts.head[keep].astype(np.int64)
    r = facts.rel[keep].astype(np.int64)
    t = facts.tail[keep].astype(np.int64)
    keys, inv = np.unique((r * n + h) * n + t, return_inverse=True)
    w = np.bincount(inv.ravel(), weights=facts.weight[keep], minlength=len(keys))
    nn = np.int64(n) * np.int64(n)
    rr, rest = np.divmod(keys, nn)
    hh, tt = np.divmod(rest, n)
    return _Facts(keys, hh, rr, tt, w)


def _profiles(f: _Facts, n: int, R: int, weighted: bool) -> sp.csr_matrix:
    val = f.weight if weighted else np.ones(len(f.keys))
    rows = np.concatenate([f.head, f.tail])
    cols = np.concatenate([f.rel, R + f.rel])
    return sp.csr_matrix((np.concatenate([val, val]), (rows, cols)), shape=(n, 2 * R), dtype=np.float64)


def role_profiles(facts: FactTable, *, weighted: bool = False) -> sp.csr_matrix:
    r"""The role profiles :math:`p_e` of all entities, as a sparse ``(n, 2R)`` matrix.

    .. math::

        p_e[r] = \sum_{(e, r, t) \in F} w, \qquad p_e[R + r] = \sum_{(h, r, e) \in F} w

    Parameters
    ----------
    facts : FactTable
        The facts; self loops are ignored, repeated triples merged.
    weighted : bool, default False
        Sum fact weights instead of counting facts.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_entities, 2 * n_relations)
        Row :math:`e` is :math:`p_e`: columns :math:`0..R-1` out-edges (as head), columns
        :math:`R..2R-1` in-edges (as tail).

    Raises
    ------
    KgrValidationError
        When :math:`R n^2` overflows the int64 fact keys.

    Notes
    -----
    :math:`O(m)`. An entity without facts has an all-zero row.

    References
    ----------
    .. [1] H. Paulheim, C. Bizer, "Type Inference on Noisy RDF Data", ISWC 2013.

    Examples
    --------
    >>> ft = FactTable.from_triples([(0, 0, 1), (0, 1, 2), (2, 0, 1)], n_entities=3, n_relations=2)
    >>> role_profiles(ft).toarray().tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [1.0, 0.0, 0.0, 1.0]]
    """
    return _profiles(_distinct(facts), facts.n_entities, facts.n_relations, bool(weighted))


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def _cosine(a_unit: np.ndarray, b: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(b, axis=1)
    dot = np.einsum("ij,ij->i", a_unit, b)
    out = np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)
    return np.clip(out, 0.0, 1.0)


def role_evidence(
    facts: FactTable,
    h: Any,
    r: Any,
    t: Any,
    *,
    entity_types: Any = None,
    weighted: bool = False,
) -> RoleEvidence:
    r"""How well ``h`` fits as a head and ``t`` as a tail of ``r``, from the role profiles.

    With :math:`F' = F \setminus \{(h, r, t)\}` (leave-one-out; :math:`F' = F` for a new
    triple) and profiles, members and centroids computed on :math:`F'`:

    .. math::

        \text{head\_fit} &= \cos\Big(p_h,\ \textstyle\sum_{e \in H_r} \hat p_e\Big), \qquad
        \text{tail\_fit} = \cos\Big(p_t,\ \textstyle\sum_{e \in T_r} \hat p_e\Big) \\
        \text{head\_seen} &= \#\{(h, r, y) \in F'\}, \qquad
        \text{tail\_seen} = \#\{(x, r, t) \in F'\} \\
        \text{type\_share\_head} &= \frac{\#\{(x, r, y) \in F' : \tau(x) = \tau(h)\}}{\#\{(x, r, y) \in F'\}},
        \qquad \text{type\_share\_tail likewise with } \tau(y) = \tau(t)

    Parameters
    ----------
    facts : FactTable
        The facts the profiles are learned from (typically the promoted graph).
    h, r, t : array_like of int, shape (q,)
        Queries: head entity, relation, tail entity ids.
    entity_types : array_like of int, shape (n_entities,), optional
        Type id :math:`\tau(e) \ge 0` of each entity (e.g. ``Vocabulary.entity_types``); gives
        the learned domain and range shares.
    weighted : bool, default False
        Profiles sum fact weights instead of counting facts. Seen counts and type shares
        always count facts.

    Returns
    -------
    RoleEvidence
        ``head_fit``, ``tail_fit``, ``head_seen``, ``tail_seen``, ``type_share_head``,
        ``type_share_tail`` (``None`` without types), ``known_relation``, ``in_table``.

    Raises
    ------
    KgrValidationError
        Query arrays of different lengths, non-integer ids, ids outside the table's id
        spaces, or ``entity_types`` of the wrong shape or with negative or non-integer values.

    Notes
    -----
    **Neutral values.** When :math:`r` has no fact in :math:`F'` (an unknown relation, or the
    query is its only fact) there is nothing to compare with: both fits and both shares are
    0 and ``known_relation`` is false, so a scorer can tell "unknown" from "does not fit".
    An entity with no fact in :math:`F'` has a zero profile and fit 0. Cosines of
    non-negative vectors lie in :math:`[0, 1]`.

    The centroid keeps :math:`h` itself when :math:`h` heads other :math:`r`-facts; that
    is the same for a new candidate and (by leave-one-out) for a fact of the table.
    Self-loop queries are scored like any other but are never "in the table" (self loops are
    ignored). Cost: :math:`O(m + nR + qR)`.

    References
    ----------
    .. [1] H. Paulheim, C. Bizer, "Type Inference on Noisy RDF Data", ISWC 2013.
    .. [2] L. Galárraga et al., AMIE, WWW 2013; AMIE+, VLDB J. 24(6), 2015.

    Examples
    --------
    >>> # LIVES_IN = 0 (person -> city); persons 0, 1, 2 (type 0), cities 3, 4 (type 1)
    >>> ft = FactTable.from_triples([(0, 0, 3), (1, 0, 3), (2, 0, 4)], n_entities=5, n_relations=1)
    >>> ev = role_evidence(ft, [0, 3, 2], [0, 0, 0], [4, 4, 4], entity_types=[0, 0, 0, 1, 1])
    >>> ev.head_fit.tolist(), ev.tail_fit.tolist()   # a city as resident fits no head role
    ([1.0, 0.0, 0.0], [1.0, 1.0, 0.0])
    >>> ev.in_table.tolist(), ev.head_seen.tolist(), ev.type_share_head.tolist()
    ([False, False, True], [1, 0, 0], [1.0, 0.0, 1.0])

    The last query is a fact; without it, entities 2 and 4 have no facts at all, so both fit 0.
    """
    weighted = bool(weighted)
    hq, rq, tq = check_queries(facts, h, r, t)
    n, R = facts.n_entities, facts.n_relations
    f = _distinct(facts)
    types = _entity_types(entity_types, n)
    q = len(hq)

    # the query's own fact, if any
    pos, in_table = lookup(f.keys, (rq * n + hq) * n + tq)
    in_table &= hq != tq
    d = in_table.astype(np.int64)
    if weighted and len(f.keys):
        wq = np.where(in_table, f.weight[pos], 0.0)
    else:
        wq = in_table.astype(np.float64)

    # counts of distinct facts per (entity, relation), both directions
    ones = np.ones(len(f.keys))
    out_cnt = sp.csr_matrix((ones, (f.head, f.rel)), shape=(n, R), dtype=np.float64)
    in_cnt = sp.csr_matrix((ones, (f.tail, f.rel)), shape=(n, R), dtype=np.float64)
    rel_size = np.bincount(f.rel, minlength=R).astype(np.int64)

    def at(m: sp.csr_matrix, e: np.ndarray) -> np.ndarray:
        return np.rint(np.asarray(m[e, rq]).ravel()).astype(np.int64) if q else np.zeros(0, dtype=np.int64)

    h_out, h_in = at(out_cnt, hq), at(in_cnt, hq)
    t_out, t_in = at(out_cnt, tq), at(in_cnt, tq)
    head_seen = h_out - d
    tail_seen = t_in - d
    others = rel_size[rq] - d
    known = others > 0

    # profiles, unit profiles, centroid sums over the full table
    P = _profiles(f, n, R, weighted)
    norms = np.sqrt(np.asarray(P.multiply(P).sum(axis=1)).ravel())
    Pu = sp.diags(np.divide(1.0, norms, out=np.zeros(n), where=norms > 0)) @ P
    S_head = np.asarray(((out_cnt > 0).astype(np.float64).T @ Pu).todense()).reshape(R, 2 * R)
    S_tail = np.asarray(((in_cnt > 0).astype(np.float64).T @ Pu).todense()).reshape(R, 2 * R)

    # leave-one-out profiles of h and t
    rows = np.arange(q)
    ph = np.asarray(P[hq].todense()).reshape(q, 2 * R)
    pt = np.asarray(P[tq].todense()).reshape(q, 2 * R)
    ph_loo, pt_loo = ph.copy(), pt.copy()
    ph_loo[rows, rq] = np.where(h_out - d > 0, ph[rows, rq] - wq, 0.0)  # exact 0 when no r-fact is left
    pt_loo[rows, R + rq] = np.where(t_in - d > 0, pt[rows, R + rq] - wq, 0.0)
    uh, uh_loo, ut, ut_loo = _unit(ph), _unit(ph_loo), _unit(pt), _unit(pt_loo)

    def flag(x: np.ndarray) -> np.ndarray:
        return x[:, None].astype(np.float64)

    # centroid sums on F': swap the full-table terms of h and t for their reduced ones
    head_sum = (S_head[rq] - flag(h_out > 0) * uh + flag(h_out - d > 0) * uh_loo
                - flag(t_out > 0) * (ut - ut_loo))
    tail_sum = (S_tail[rq] - flag(t_in > 0) * ut + flag(t_in - d > 0) * ut_loo
                - flag(h_in > 0) * (uh - uh_loo))
    head_fit = np.where(known, _cosine(uh_loo, head_sum), 0.0)
    tail_fit = np.where(known, _cosine(ut_loo, tail_sum), 0.0)

    share_h, share_t = (None, None) if types is None else _type_shares(f, types, (hq, rq, tq), d, others, known, R)
    return RoleEvidence(head_fit, tail_fit, head_seen, tail_seen, share_h, share_t, known, in_table)


def _entity_types(entity_types: Any, n: int) -> np.ndarray | None:
    """``entity_types`` checked: ``n`` integer type ids >= 0 (None stays None)."""
    if entity_types is None:
        return None
    types = np.asarray(entity_types)
    if types.shape != (n,):
        raise KgrValidationError(f"entity_types must have shape ({n},), got {types.shape}", field="entity_types")
    if types.size and (not np.issubdtype(types.dtype, np.integer) or types.min() < 0):
        raise KgrValidationError("entity_types must be integer type ids >= 0", field="entity_types")
    return types.astype(np.int64)


def _type_shares(f: _Facts, types: np.ndarray, queries: tuple[np.ndarray, np.ndarray, np.ndarray], d: np.ndarray,
                 others: np.ndarray, known: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """``type_share_head`` and ``type_share_tail``: the share of the relation's other facts whose
    head (tail) has the query head's (tail's) type, leave-one-out (``d`` = the query's own fact)."""
    hq, rq, tq = queries
    ones = np.ones(len(f.keys))
    n_types = int(types.max()) + 1 if types.size else 1
    by_head = sp.csr_matrix((ones, (f.rel, types[f.head])), shape=(R, n_types), dtype=np.float64)
    by_tail = sp.csr_matrix((ones, (f.rel, types[f.tail])), shape=(R, n_types), dtype=np.float64)
    q = len(hq)
    same_h = np.rint(np.asarray(by_head[rq, types[hq]]).ravel()).astype(np.int64) - d if q else d
    same_t = np.rint(np.asarray(by_tail[rq, types[tq]]).ravel()).astype(np.int64) - d if q else d
    den = np.maximum(others, 1)
    return np.where(known, same_h / den, 0.0), np.where(known, same_t / den, 0.0)
