"""Per-relation adjacency of a fact table, and the head index the rule miner matches bodies against.

Conventions: entity ids :math:`0..n-1`, relation ids :math:`0..R-1`; an *atom* :math:`a` is
relation :math:`a` read forward (:math:`a < R`) or relation :math:`a - R` read backward; pair keys
are ``x*n + y`` and global keys ``(r*n + h)*n + t`` (int64, checked by
:func:`kgr.evidence.facts.check_key_space`). Self loops and facts under ``min_weight`` are dropped.
Used by :mod:`kgr.evidence.rules`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from kgr.evidence.facts import FactTable, check_key_space, lookup

__all__ = ["Adjacency", "relation_adjacency", "csr_from_sorted", "body_holds", "HeadIndex", "excluded_middles"]


@dataclass(frozen=True)
class Adjacency:
    """Per-relation 0/1 adjacency without self loops, facts with weight >= min_weight.

    Built by :func:`relation_adjacency`; ``matrix``, ``rowcount`` and ``colcount`` take an atom.
    """

    n: int
    R: int
    fwd: tuple[sp.csr_matrix, ...]  # A_r
    bwd: tuple[sp.csr_matrix, ...]  # A_r^T, as CSR
    keys: tuple[np.ndarray, ...]  # sorted h*n + t per relation
    rkeys: tuple[np.ndarray, ...]  # sorted t*n + h per relation
    gkeys: np.ndarray  # sorted (r*n + h)*n + t over all relations
    outdeg: np.ndarray  # (R, n)
    indeg: np.ndarray  # (R, n)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(k) for k in self.keys], dtype=np.int64)

    def matrix(self, atom: int) -> sp.csr_matrix:
        """Atom index a = r (forward) or R + r (inverse).

        Parameters
        ----------
        atom : int
            ``r`` for relation ``r`` read forward, ``R + r`` for it read backward.

        Returns
        -------
        scipy.sparse.csr_matrix
            The ``n × n`` 0/1 matrix :math:`A_r` or :math:`A_r^\\top`.
        """
        return self.bwd[atom - self.R] if atom >= self.R else self.fwd[atom]

    def rowcount(self, atom: int) -> np.ndarray:
        """Facts per row entity of an atom's matrix (out-degree forward, in-degree backward).

        Parameters
        ----------
        atom : int
            As in :meth:`matrix`.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        return self.indeg[atom - self.R] if atom >= self.R else self.outdeg[atom]

    def colcount(self, atom: int) -> np.ndarray:
        """Facts per column entity of an atom's matrix (in-degree forward, out-degree backward).

        Parameters
        ----------
        atom : int
            As in :meth:`matrix`.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        return self.outdeg[atom - self.R] if atom >= self.R else self.indeg[atom]


def csr_from_sorted(rows: np.ndarray, cols: np.ndarray, n: int) -> sp.csr_matrix:
    """The ``n × n`` 0/1 CSR matrix of the pairs ``(rows, cols)``, sorted by row then column.

    Parameters
    ----------
    rows, cols : numpy.ndarray of int
        The pairs, sorted by ``(row, col)``, without repeats.
    n : int
        Matrix size.

    Returns
    -------
    scipy.sparse.csr_matrix
        Float64 ones at the pairs.
    """
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    data = np.ones(len(rows), dtype=np.float64)
    return sp.csr_matrix((data, cols.astype(np.int64, copy=True), indptr), shape=(n, n))


def relation_adjacency(facts: FactTable, min_weight: float) -> Adjacency:
    """The :class:`Adjacency` of ``facts``.

    Parameters
    ----------
    facts : FactTable
        The facts.
    min_weight : float
        Facts with a smaller weight are left out (as are self loops).

    Returns
    -------
    Adjacency
        One forward and one backward CSR matrix per relation, the sorted keys and the degrees.
    """
    n, R = facts.n_entities, facts.n_relations
    check_key_space(n, R)
    keep = (facts.weight >= min_weight) & (facts.head != facts.tail)
    h = facts.head[keep].astype(np.int64)
    r = facts.rel[keep].astype(np.int64)
    t = facts.tail[keep].astype(np.int64)
    g = np.unique((r * n + h) * n + t)  # sorted by (r, h, t), duplicates merged
    nn = np.int64(n) * np.int64(n)
    r, rest = np.divmod(g, nn) if len(g) else (g, g)
    h, t = np.divmod(rest, n) if len(g) else (g, g)
    bounds = np.searchsorted(r, np.arange(R + 1))
    fwd, bwd, keys, rkeys = [], [], [], []
    outdeg = np.zeros((R, n), dtype=np.int64)
    indeg = np.zeros((R, n), dtype=np.int64)
    for rel in range(R):
        lo, hi = bounds[rel], bounds[rel + 1]
        hh, tt = h[lo:hi], t[lo:hi]
        keys.append(hh * n + tt)  # sorted: g is sorted by (h, t) within r
        fwd.append(csr_from_sorted(hh, tt, n))
        order = np.lexsort((hh, tt))
        rk = tt[order] * n + hh[order]
        rkeys.append(rk)
        bwd.append(csr_from_sorted(tt[order], hh[order], n))
        outdeg[rel] = np.bincount(hh, minlength=n)
        indeg[rel] = np.bincount(tt, minlength=n)
    return Adjacency(n, R, tuple(fwd), tuple(bwd), tuple(keys), tuple(rkeys), g, outdeg, indeg)


def body_holds(adj: Adjacency, body: tuple[tuple[int, bool], ...], excluded: tuple[int, ...],
               h: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether ``body`` holds for each pair ``(h_i, t_i)`` in ``adj`` (vectorised).

    Parameters
    ----------
    adj : Adjacency
        The table the body is checked on.
    body : tuple of (int, bool)
        One or two atoms ``(relation, inverse)``.
    excluded : tuple of int
        Middle entities a length-2 body may not pass through (capped hubs).
    h, t : numpy.ndarray of int64, shape (q,)
        The query pairs.

    Returns
    -------
    numpy.ndarray of bool, shape (q,)
        True where the body joins ``h_i`` to ``t_i`` (never for ``h_i = t_i``).
    """
    if len(h) == 0:
        return np.zeros(0, dtype=bool)
    n = adj.n
    if len(body) == 1:
        (rel, inv), = body
        keys = t * n + h if inv else h * n + t
        _, hit = lookup(adj.keys[rel], keys)
        return hit & (h != t)
    (r1, i1), (r2, i2) = body
    m1 = adj.bwd[r1] if i1 else adj.fwd[r1]
    m2t = adj.fwd[r2] if i2 else adj.bwd[r2]  # M2^T as CSR: row y lists the z with M2[z, y]
    x = m1[h]
    y = m2t[t]
    both = x.multiply(y).tocsr()
    if excluded:
        keep = np.ones(n, dtype=bool)
        keep[list(excluded)] = False
        rows = np.repeat(np.arange(len(h)), np.diff(both.indptr))
        ok = keep[both.indices]
        hold = np.zeros(len(h), dtype=bool)
        hold[rows[ok]] = True
    else:
        both.eliminate_zeros()
        hold = np.diff(both.indptr) > 0
    return hold & (h != t)


@dataclass(frozen=True)
class HeadIndex:
    """Distinct fact pairs → their relations, for matching a body's pairs against every head.

    ``pairs`` / ``rpairs`` are the sorted keys ``x*n + y`` of the pairs with a fact ``r(x, y)``
    (``rpairs``: with a fact ``r(y, x)``); ``fwd`` / ``rev`` hold the same pairs as sparse
    ``n × n`` matrices with value ``1 + pair id``; ``rels`` / ``rrels`` map a pair id to its
    relations. A small body is matched by binary search of its keys, a large one by one
    elementwise product ``B ∘ fwd`` (a linear merge, cache-friendly); both give the same counts.
    """

    pairs: np.ndarray
    fwd: sp.csr_matrix
    rels: sp.csr_matrix  # (n_pairs, R) 0/1
    rpairs: np.ndarray
    rev: sp.csr_matrix
    rrels: sp.csr_matrix
    has_out: sp.csr_matrix  # (n, R): entity has an r-fact as head

    @classmethod
    def build(cls, adj: Adjacency) -> "HeadIndex":
        R, n = adj.R, adj.n
        lab = np.repeat(np.arange(R), adj.sizes)

        def index(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, sp.csr_matrix, sp.csr_matrix]:
            k = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
            uniq, inv = np.unique(k, return_inverse=True)
            rels = sp.csr_matrix((np.ones(len(k)), (inv.ravel(), lab)), shape=(len(uniq), R))
            x, y = np.divmod(uniq, n)
            look = csr_from_sorted(x, y, n)  # uniq is sorted by (x, y)
            look.data = np.arange(1, len(uniq) + 1, dtype=np.float64)
            return uniq, look, rels

        pairs, fwd, rels = index(adj.keys)
        rpairs, rev, rrels = index(adj.rkeys)
        has_out = sp.csr_matrix((adj.outdeg.T > 0).astype(np.float64))
        return cls(pairs, fwd, rels, rpairs, rev, rrels, has_out)

    def support(self, body: sp.csr_matrix, rows: np.ndarray, reverse: bool, R: int) -> np.ndarray:
        """Per head relation: pairs of ``body`` (``body^T`` when reverse) that are head facts.

        ``body`` is a 0/1 CSR matrix, ``rows`` the row of each of its stored entries (its
        diagonal never matches: self loops are not facts).

        Parameters
        ----------
        body : scipy.sparse.csr_matrix
            The body's 0/1 pair matrix.
        rows : numpy.ndarray of int64
            Row of each stored entry of ``body``.
        reverse : bool
            Match ``body^T`` (the mate body) instead of ``body``.
        R : int
            Number of relations.

        Returns
        -------
        numpy.ndarray of int64, shape (R,)
            Support of the body for each head relation.
        """
        pairs, look, rels = (self.rpairs, self.rev, self.rrels) if reverse else (self.pairs, self.fwd, self.rels)
        n = body.shape[0]
        if 4 * body.nnz <= n + len(pairs):
            pos, hit = lookup(pairs, rows * n + body.indices)
            ids = pos[hit]
        else:
            both = body.multiply(look).tocsr()
            ids = np.rint(both.data[both.data > 0]).astype(np.int64) - 1
        if len(ids) == 0:
            return np.zeros(R, dtype=np.int64)
        return np.bincount(rels[ids].indices, minlength=R).astype(np.int64)

    def pca(self, rowcount: np.ndarray) -> np.ndarray:
        """PCA denominators: per head relation, the body pairs whose subject has a fact of that relation.

        Parameters
        ----------
        rowcount : numpy.ndarray of int, shape (n,)
            Body pairs per subject entity.

        Returns
        -------
        numpy.ndarray of int64, shape (R,)
        """
        nz = np.flatnonzero(rowcount)
        if len(nz) == 0:
            return np.zeros(self.has_out.shape[1], dtype=np.int64)
        return np.rint(self.has_out[nz].T @ rowcount[nz].astype(np.float64)).astype(np.int64)


def excluded_middles(c: np.ndarray, cap: int) -> np.ndarray:
    """Largest-contribution middles to drop until the remaining path count is ``<= cap``.

    Parameters
    ----------
    c : numpy.ndarray of float, shape (n,)
        Paths through each middle entity :math:`z` (:math:`\\operatorname{in}(z)\\operatorname{out}(z)`).
    cap : int
        ``max_body_paths``.

    Returns
    -------
    numpy.ndarray of int64
        The excluded middles, sorted (empty when the total is within the cap).
    """
    total = float(c.sum())
    if total <= cap:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(len(c)), -c))  # decreasing contribution, ties by id
    remaining = total - np.cumsum(c[order])
    k = int(np.searchsorted(-remaining, -cap)) + 1  # first k with remaining[k-1] <= cap
    return np.sort(order[:k])
