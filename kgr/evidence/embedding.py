r"""Knowledge-graph embeddings (ComplEx, DistMult) as cross-fitted plausibility evidence.

The promotion scorer asks of a candidate :math:`(h, r, t)`: *does the graph itself make this
triple plausible?* This module answers with a bilinear knowledge-graph embedding trained on the
:class:`~kgr.evidence.facts.FactTable`, each candidate scored by a model that did **not** see it
(cross-fitting, :func:`crossfit_scores`), so that a candidate's own votes never vouch for it a
second time. :class:`CrossFitter` repeats this round after round, warm-starting each fold.

.. math::

    s_{\text{ComplEx}}(h, r, t) = \operatorname{Re}\langle e_h, w_r, \bar e_t\rangle
        = \operatorname{Re}\sum_k e_{h,k}\, w_{r,k}\, \overline{e_{t,k}}, \qquad
    s_{\text{DistMult}}(h, r, t) = \langle e_h, w_r, e_t\rangle

Conventions
-----------
* ``dim`` counts **real** parameters per entity and per relation. DistMult uses them as they
  are; ComplEx reads them as ``dim // 2`` complex numbers stored as interleaved ``(re, im)``
  pairs (``model.entity.view(np.complex128)``), so ``dim`` must be even. Both models cost the
  same at the same ``dim`` (LibKGE's convention; PyKEEN counts complex coordinates, so its
  ComplEx with 16 is ``dim=32`` here).
* Scores are logits of the training distribution (facts against type-consistent corruptions).
  Relations differ in how sharply they separate, so the feature to compare across relations is
  the **rank quantile**: the share of a query's type-consistent corruptions scoring below it.
* Self loops :math:`h = t` are never trained on (as in every evidence module of
  :mod:`kgr.evidence.facts`); a self-loop query is still scored.
* An entity or relation in no training fact keeps a zero embedding (or its warm-start one): a
  query about an entity its model never saw scores 0 against every corruption that keeps that
  entity, so its rank quantile is 0.5, "no evidence", not a random number.
* Known facts are the rows of the table, queries included: never a negative, never a
  corruption. A query is a candidate, not a known-false triple.
* Randomness is hashed, not streamed: a triple's negatives, corruptions and fold are functions
  of the triple's stable code (from its ids, or from ``entity_keys``/``relation_keys``) and the
  seed, so they stay put when other rows come and go. Only the spectral start of a cold fit
  and the start of new rows in a warm one use a seeded generator.

Optimisation
------------
Full batch: the negatives are drawn once, then L-BFGS-B (``scipy.optimize.minimize``, analytic
gradient) minimises the fixed objective of :func:`fit_kge`. A cold fit starts from the top
eigenvectors of the normalised adjacency (:math:`\hat A = D^{-1/2}(A + A^\top)D^{-1/2}`,
randomised subspace iteration), which already separates communities; on the benchmark below it
is worth about 40 iterations from a random start. The inner arithmetic runs in float32 on
preallocated buffers; the optimiser state is float64.

Notes
-----
*Cost* of one objective evaluation: :math:`O(m (k + 2)\, d)` for :math:`m` training facts,
:math:`k` negatives per fact and width :math:`d`, plus about 40 ms of L-BFGS-B bookkeeping per
iteration per million parameters (:math:`(n + R) d`). Memory: about :math:`m (k + 12) d`
float32 work values and :math:`15 (n + R) d` float64 values of optimiser state per fit.

*Defaults* (``max_iter=None``): an iteration budget of :math:`2.4 \cdot 10^6 / (m + n)`
clipped to [18, 200] for a cold fit and :math:`0.65 \cdot 10^6 / (m + n)` clipped to [5, 50]
for a warm one, so that small graphs are fitted to convergence and the benchmark below meets its
time budget.

*Measured* (one core, ``OPENBLAS_NUM_THREADS=1``, the other core busy; a synthetic graph of
105,000 rows of which 5,000 queries, 30,000 entities in 4 types, 12 relations; ComplEx,
``dim=32``, two folds, defaults): cold :func:`crossfit_scores` 5.8-6.2 s (18 iterations per
fold, about 0.14 s each, of which 0.04 s L-BFGS-B bookkeeping; 0.5 s setup: spectral start,
negatives, corruptions); a warm :meth:`CrossFitter.scores` after adding 1,000 facts 2.0 s (5
iterations per fold). Peak memory about 0.45 GB above the table.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.linalg import solve_triangular
from scipy.optimize import minimize
from scipy.special import expit

from kgr.errors import KgrValidationError
from kgr.gauge.validate import integer, real
from kgr.evidence.facts import FactTable

__all__ = [
    "KGE_MODELS",
    "KGEModel",
    "KGEScores",
    "fit_kge",
    "crossfit_scores",
    "CrossFitter",
]

#: The model names :func:`fit_kge` accepts.
KGE_MODELS: tuple[str, ...] = ("complex", "distmult")

_DEFAULT_DIM = 32
_DEFAULT_NEG = 4
_DEFAULT_L2 = 0.2
#: Automatic iteration counts (``max_iter=None``): a budget of work units divided by the size of
#: the fit, ``m + n`` (training facts plus entities), clipped to ``[lo, hi]``. The cold budget
#: gives 18 iterations at 100,000 facts on 30,000 entities (about 6 s for two folds, see Notes).
_ITER_BUDGET, _ITER_LO, _ITER_HI = 2.4e6, 18, 200
_WARM_ITER_BUDGET, _WARM_ITER_LO, _WARM_ITER_HI = 0.65e6, 5, 50
_MAXCOR = 5
_RESAMPLE_ROUNDS = 3
_REPLICAS = 4
_CHUNK = 1 << 16


# --------------------------------------------------------------------------------------------
# bilinear algebra on packed real rows
# --------------------------------------------------------------------------------------------


def _as_field(kind: str, x: np.ndarray) -> np.ndarray:
    """Packed real rows as the model's number field: complex pairs for ComplEx (a view)."""
    return x.view(np.complex64 if x.dtype == np.float32 else np.complex128) if kind == "complex" else x


def _as_real(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_as_field` (a view)."""
    if x.dtype == np.complex64:
        return x.view(np.float32)
    if x.dtype == np.complex128:
        return x.view(np.float64)
    return x


def _softplus(x: np.ndarray) -> np.ndarray:
    """:math:`\\log(1 + e^x)`, stable, in the dtype of ``x``."""
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0)
    return out


# --------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class KGEModel:
    r"""Entity and relation embeddings of a bilinear model, with its training record.

    .. math::

        s_{\text{ComplEx}}(h, r, t) = \operatorname{Re}\Bigl(\sum_{k=1}^{d/2}
            e_{h,k}\, w_{r,k}\, \overline{e_{t,k}}\Bigr), \qquad
        s_{\text{DistMult}}(h, r, t) = \sum_{k=1}^{d} e_{h,k}\, w_{r,k}\, e_{t,k}

    Attributes
    ----------
    kind : {"complex", "distmult"}
        The scoring function.
    entity : numpy.ndarray of float64, shape (n_entities, dim)
        Entity embeddings. ComplEx stores ``dim // 2`` complex numbers as interleaved
        ``(re, im)`` pairs: ``entity.view(np.complex128)`` is the complex matrix.
    relation : numpy.ndarray of float64, shape (n_relations, dim)
        Relation embeddings, same layout.
    n_iter : int
        L-BFGS-B iterations of the fit that produced the model (0 when untrained).
    n_eval : int
        Objective evaluations of that fit.
    loss : float
        Final value of the training objective (NaN when untrained).
    """

    kind: str
    entity: np.ndarray
    relation: np.ndarray
    n_iter: int = 0
    n_eval: int = 0
    loss: float = math.nan

    def __post_init__(self) -> None:
        _check_kind(self.kind)
        if self.entity.ndim != 2 or self.relation.ndim != 2 or self.entity.shape[1] != self.relation.shape[1]:
            raise KgrValidationError("entity and relation embeddings must be 2-d with the same width",
                                     field="model")
        _check_dim(self.kind, self.entity.shape[1])

    @property
    def dim(self) -> int:
        """Real parameters per embedding."""
        return int(self.entity.shape[1])

    @property
    def n_entities(self) -> int:
        return int(self.entity.shape[0])

    @property
    def n_relations(self) -> int:
        return int(self.relation.shape[0])

    def score(self, head: Any, rel: Any, tail: Any) -> np.ndarray:
        r"""Logits :math:`s(h, r, t)` of triples, vectorised with numpy broadcasting.

        .. math::

            s(h, r, t) = \sum_{j=1}^{d} (e_h \circ w_r)_j\, (e_t)_j

        with :math:`\circ` the complex product on rows of interleaved ``(re, im)`` pairs
        (ComplEx) or the plain product (DistMult); the real dot product of two packed rows is
        :math:`\operatorname{Re}\sum_k a_k \bar b_k`.

        Parameters
        ----------
        head, rel, tail : array_like of int
            Ids, broadcast against each other.

        Returns
        -------
        logit : numpy.ndarray of float64
            One score per broadcast triple, of the broadcast shape.

        Raises
        ------
        KgrValidationError
            When an id is out of range or not an integer.

        Notes
        -----
        :math:`O(q\, d)` for :math:`q` triples, computed in chunks of 65,536.

        References
        ----------
        .. [1] T. Trouillon et al., "Complex Embeddings for Simple Link Prediction", ICML 2016.
        .. [2] B. Yang et al., "Embedding Entities and Relations for Learning and Inference in
           Knowledge Bases", ICLR 2015.

        Examples
        --------
        >>> import numpy as np
        >>> m = KGEModel("distmult", np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([[1.0, -1.0]]))
        >>> m.score(0, 0, [0, 1]).tolist()
        [-3.0, 1.0]
        """
        h, r, t = np.broadcast_arrays(*(_as_ids(x, name) for x, name in
                                        ((head, "head"), (rel, "rel"), (tail, "tail"))))
        for ids, bound, name in ((h, self.n_entities, "head"), (r, self.n_relations, "rel"),
                                 (t, self.n_entities, "tail")):
            if ids.size and (ids.min() < 0 or ids.max() >= bound):
                raise KgrValidationError(f"id out of range [0, {bound})", field=name)
        shape = h.shape
        h, r, t = h.ravel(), r.ravel(), t.ravel()
        out = np.empty(h.size)
        E, W = _as_field(self.kind, self.entity), _as_field(self.kind, self.relation)
        for s in range(0, h.size, _CHUNK):
            sl = slice(s, s + _CHUNK)
            a = np.take(E, h[sl], axis=0) * np.take(W, r[sl], axis=0)
            out[sl] = np.einsum("ij,ij->i", _as_real(a), self.entity[t[sl]])
        return out.reshape(shape)


def _as_ids(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise KgrValidationError("ids must be integers", field=name)
    return a.astype(np.int64, copy=False)


def _check_kind(kind: Any) -> str:
    if kind not in KGE_MODELS:
        raise KgrValidationError(f"model must be one of {', '.join(KGE_MODELS)}, got {kind!r}", field="model")
    return kind


def _check_dim(kind: str, dim: Any) -> int:
    d = integer("dim", dim, ge=1)
    if kind == "complex" and d % 2:
        raise KgrValidationError(f"dim must be even for complex ((re, im) pairs), got {d}", field="dim")
    return d


# --------------------------------------------------------------------------------------------
# known facts, type pools, hashing
# --------------------------------------------------------------------------------------------


class _Known:
    """Sorted int64 codes :math:`(h R + r) n + t` of the known triples, for membership tests."""

    def __init__(self, facts: FactTable) -> None:
        n, R = max(facts.n_entities, 1), max(facts.n_relations, 1)
        if n * n * R >= 2**63:
            raise KgrValidationError("id spaces too large to encode a triple in 64 bits", field="facts")
        self.n, self.R = n, R
        self.codes = np.unique(self._code(facts.head, facts.rel, facts.tail))

    def _code(self, h: np.ndarray, r: np.ndarray, t: np.ndarray) -> np.ndarray:
        return (h.astype(np.int64) * self.R + r) * self.n + t

    def contains(self, h: np.ndarray, r: np.ndarray, t: np.ndarray) -> np.ndarray:
        c = self._code(h, r, t)
        if self.codes.size == 0:
            return np.zeros(c.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self.codes, c), self.codes.size - 1)
        return self.codes[pos] == c


class _Pools:
    """Entities grouped by type, to draw a replacement of the same type as a given entity.

    Draws use consistent hashing: each member stands at ``_REPLICAS`` points of a ring of 64-bit
    hashes (from its stable code), and a hash value ``x`` draws the member at the first point
    at or after ``x`` among those of the wanted type. A pool that gains or loses a member changes
    only the draws that land on that member's arcs (about ``1 / count`` of them), so the
    corruptions of a triple stay put from one round to the next. Members are drawn with
    probability proportional to their arcs (within a factor of about 2 of uniform).
    """

    def __init__(self, members: np.ndarray, types: np.ndarray, ent_code: np.ndarray) -> None:
        self.types = types
        n_types = int(types.max()) + 1 if types.size else 1
        rep = np.arange(_REPLICAS, dtype=np.uint64)
        pts = _mix(ent_code[members][:, None] ^ _mix(rep + _GOLDEN)[None, :]).ravel()
        mt = np.repeat(types[members], _REPLICAS)
        key = mt.astype(np.float64) + _unit(pts)                # type + position on the ring
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        self.member = np.repeat(members, _REPLICAS)[order]
        self.counts = np.bincount(mt, minlength=n_types)
        self.starts = np.cumsum(self.counts) - self.counts
        # bucket table (2 buckets per point of a type): where a search for a key in that
        # bucket starts; the search then steps forward over about half a point on average
        self.n_buckets = np.maximum(2 * self.counts, 1)
        self.bucket0 = np.cumsum(self.n_buckets) - self.n_buckets
        bt = np.repeat(np.arange(n_types), self.n_buckets)
        lower = bt + (np.arange(len(bt)) - self.bucket0[bt]) / self.n_buckets[bt]
        self.table = np.searchsorted(self.key, lower)

    def draw(self, like: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Member of the type of ``like`` at hash ``x`` (uint64) on that type's ring."""
        tau = self.types[like].ravel()
        u = _unit(np.broadcast_to(x, like.shape).ravel())
        want = tau + u
        b = self.bucket0[tau] + np.minimum((u * self.n_buckets[tau]).astype(np.int64), self.n_buckets[tau] - 1)
        pos = self.table[b]
        end = self.starts[tau] + self.counts[tau]
        last = len(self.key) - 1
        todo = np.flatnonzero((pos < end) & (self.key[np.minimum(pos, last)] < want))
        while todo.size:
            pos[todo] += 1
            p = pos[todo]
            todo = todo[(p < end[todo]) & (self.key[np.minimum(p, last)] < want[todo])]
        pos = np.where(pos >= end, self.starts[tau], pos)          # wrap around the ring
        return self.member[np.minimum(pos, last)].reshape(like.shape)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, vectorised on uint64 (wrap-around arithmetic)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def _key_codes(keys: Sequence[str]) -> np.ndarray:
    return np.array([int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(), "little")
                     for k in keys], dtype=np.uint64)


def _id_codes(n: int, salt: int) -> np.ndarray:
    return _mix(np.arange(n, dtype=np.uint64) ^ np.uint64(salt))


def _triple_codes(h: np.ndarray, r: np.ndarray, t: np.ndarray, ent_code: np.ndarray,
                  rel_code: np.ndarray) -> np.ndarray:
    """Order-sensitive 64-bit code of each triple, from per-entity and per-relation codes."""
    with np.errstate(over="ignore"):
        return _mix(ent_code[h] ^ _mix(rel_code[r] ^ _mix(ent_code[t] + _GOLDEN)))


def _unit(code: np.ndarray) -> np.ndarray:
    """uint64 codes to floats in [0, 1) (their top 40 bits: exact next to a dense type id < 2**12)."""
    return (code >> np.uint64(24)).astype(np.float64) * (1.0 / 1099511627776.0)


# --------------------------------------------------------------------------------------------
# the training objective
# --------------------------------------------------------------------------------------------


class _Objective:
    r"""Loss and gradient over packed parameters ``x = [E.ravel(), W.ravel()]``.

    Positives ``(h, r, t)`` with weights ``omega``; for each positive ``kt`` tail corruptions
    ``tneg`` and ``kh`` head corruptions ``hneg`` with 0/1 masks ``tnu``/``hnu``. Ids are local
    (active) ids. Every work array is allocated once here and reused by each evaluation
    (``out=`` everywhere): fresh 10-100 MB temporaries per call cost more in page faults than the
    arithmetic. Complex products run on complex views of the packed real rows.
    """

    def __init__(self, kind: str, dim: int, n_ent: int, n_rel: int, h: np.ndarray, r: np.ndarray,
                 t: np.ndarray, omega: np.ndarray, tneg: np.ndarray, tnu: np.ndarray, hneg: np.ndarray,
                 hnu: np.ndarray, k: int, l2: float, dtype: Any = np.float32) -> None:
        self.kind, self.dim, self.n_ent, self.n_rel = kind, dim, n_ent, n_rel
        dt = self.dtype = np.dtype(dtype)
        m = self.m = len(h)
        self.h, self.r, self.t = h, r, t
        self.tneg, self.hneg = tneg, hneg
        kt, kh = self.kt, self.kh = tneg.shape[1], hneg.shape[1]
        self.w0, self.wt, self.wh = omega / m, (tnu / (k * m)).ravel(), (hnu / (k * m)).ravel()
        self.omega = (omega / m).astype(dt)
        self.omega_neg = -self.omega
        self.tnu = (tnu / (k * m)).astype(dt)
        self.hnu = (hnu / (k * m)).astype(dt)
        # L2 weighted by occurrences: each fact penalises the three embeddings it uses
        f_ent = np.bincount(np.concatenate([h, t]), minlength=n_ent).astype(np.float64)
        f_rel = np.full(n_rel, 2.0 * m / max(n_ent, 1))    # a relation weighs as a mean entity
        self.reg = np.repeat(np.concatenate([f_ent, f_rel]) * (l2 / m), dim)
        # scatters of the entity gradient, as sparse (n_ent x m) matrices: rows of d/d e_h and
        # d/d e_t go to h and t (fixed 0/1 matrices); c_ij * A_i goes to tneg_ij and c_ij * B_i to
        # hneg_ij (fixed pattern, values refreshed per evaluation through ``order``)
        ar = np.arange(m)
        self.to_head = sparse.csr_matrix((np.ones(m, dtype=dt), (h, ar)), shape=(n_ent, m))
        self.to_tail = sparse.csr_matrix((np.ones(m, dtype=dt), (t, ar)), shape=(n_ent, m))
        self.to_tneg, self.tneg_order = self._pattern(tneg, n_ent, dt)
        self.to_hneg, self.hneg_order = self._pattern(hneg, n_ent, dt)
        self.rel_sum = sparse.csr_matrix((np.ones(m, dtype=dt), (r, ar)), shape=(n_rel, m))
        z = lambda *shape: np.zeros(shape, dtype=dt)  # noqa: E731
        self.E, self.W = z(n_ent, dim), z(n_rel, dim)
        self.H, self.T, self.Wp, self.A, self.B = z(m, dim), z(m, dim), z(m, dim), z(m, dim), z(m, dim)
        self.gA, self.gB, self.gw, self.tmp = z(m, dim), z(m, dim), z(m, dim), z(m, dim)
        self.Tn, self.Hn = z(m, kt, dim), z(m, kh, dim)
        self.G0, self.G1 = z(m, dim), z(m, dim)
        self.Wc = z(m, dim) if kind == "complex" else self.Wp       # conj(w_r) per fact
        self.s0, self.st, self.sh = z(m), z(m, kt), z(m, kh)
        self.grad = np.zeros(n_ent * dim + n_rel * dim)
        self.n_eval = 0

    @staticmethod
    def _pattern(ent: np.ndarray, n_ent: int, dt: np.dtype) -> tuple[sparse.csr_matrix, np.ndarray]:
        """CSR (n_ent x m) with a slot per ``ent[i, j]`` in column ``i``, and the slots' order."""
        m, k = ent.shape
        rows, cols = ent.ravel(), np.repeat(np.arange(m), k)
        order = np.argsort(rows, kind="stable")        # cols ascend already: (row, col) order
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_ent))])
        return sparse.csr_matrix((np.zeros(m * k, dtype=dt), cols[order], indptr), shape=(n_ent, m)), order

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_eval += 1
        kind = self.kind
        f = lambda a: _as_field(kind, a)  # noqa: E731
        ne = self.n_ent * self.dim
        E, W, H, T, Wp, A, B = self.E, self.W, self.H, self.T, self.Wp, self.A, self.B
        gA, gB, gw, tmp, Tn, Hn = self.gA, self.gB, self.gw, self.tmp, self.Tn, self.Hn
        np.copyto(E, x[:ne].reshape(E.shape), casting="same_kind")
        np.copyto(W, x[ne:].reshape(W.shape), casting="same_kind")
        np.take(E, self.h, axis=0, out=H, mode="clip")
        np.take(E, self.t, axis=0, out=T, mode="clip")
        np.take(W, self.r, axis=0, out=Wp, mode="clip")
        np.take(E, self.tneg, axis=0, out=Tn, mode="clip")
        np.take(E, self.hneg, axis=0, out=Hn, mode="clip")
        Wc = self.Wc
        if kind == "complex":
            np.conjugate(f(Wp), out=f(Wc))
        np.multiply(f(H), f(Wp), out=f(A))                 # s(h, r, t') = <A, e_t'>
        np.multiply(f(T), f(Wc), out=f(B))                 # s(h', r, t) = <e_h', B>
        s0, st, sh = self.s0, self.st, self.sh
        np.einsum("md,md->m", A, T, out=s0)
        np.einsum("mkd,md->mk", Tn, A, out=st)
        np.einsum("mkd,md->mk", Hn, B, out=sh)
        # loss and dL/ds in the working precision; sums accumulate in float64
        np.negative(s0, out=s0)
        loss = (np.dot(self.w0, _softplus(s0).astype(np.float64, copy=False))
                + np.dot(self.wt, _softplus(st).astype(np.float64, copy=False).ravel())
                + np.dot(self.wh, _softplus(sh).astype(np.float64, copy=False).ravel()))
        c0 = expit(s0)
        c0 *= self.omega_neg
        c0 = c0[:, None]
        ct = expit(st)
        ct *= self.tnu
        ch = expit(sh)
        ch *= self.hnu
        np.einsum("mk,mkd->md", ct, Tn, out=gA)            # d loss / d A
        np.multiply(c0, T, out=tmp)
        gA += tmp
        np.einsum("mk,mkd->md", ch, Hn, out=gB)            # d loss / d B
        G0, G1 = self.G0, self.G1
        np.multiply(f(gA), f(Wc), out=f(G0))               # d/d e_h = gA o conj(w)
        np.multiply(f(gB), f(Wp), out=f(G1))               # d/d e_t = gB o w + c0 A
        np.multiply(c0, A, out=tmp)
        G1 += tmp
        self.to_tneg.data[:] = ct.ravel()[self.tneg_order]  # d/d e_t' = c A
        self.to_hneg.data[:] = ch.ravel()[self.hneg_order]  # d/d e_h' = c B
        gE = self.to_head @ G0
        gE += self.to_tail @ G1
        gE += self.to_tneg @ A
        gE += self.to_hneg @ B
        if kind == "complex":                              # d/d w = conj(e_h) o gA + conj(gB) o e_t
            np.conjugate(f(H), out=f(tmp))
            np.multiply(f(tmp), f(gA), out=f(gw))
            np.conjugate(f(gB), out=f(tmp))
            np.multiply(f(tmp), f(T), out=f(tmp))
        else:
            np.multiply(H, gA, out=gw)
            np.multiply(gB, T, out=tmp)
        gw += tmp
        gW = self.rel_sum @ gw
        grad = self.grad
        grad[:ne] = gE.ravel()
        grad[ne:] = gW.ravel()
        rx = self.reg * x
        grad += rx
        return float(loss) + 0.5 * float(np.dot(rx, x)), grad.copy()


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Params:
    kind: str
    dim: int
    neg_per_pos: int
    l2: float
    max_iter: int | None


def _check_iter(name: str, x: Any) -> int | None:
    return None if x is None else integer(name, x, ge=1)


def _auto_iter(fixed: int | None, size: int, warm: bool, cap: int | None = None) -> int:
    """``fixed``, or the automatic count for a fit of ``size = m + n`` (see ``_ITER_BUDGET``),
    at most ``cap``."""
    if fixed is not None:
        return fixed
    budget, lo, hi = ((_WARM_ITER_BUDGET, _WARM_ITER_LO, _WARM_ITER_HI) if warm
                      else (_ITER_BUDGET, _ITER_LO, _ITER_HI))
    n = int(min(hi, max(lo, round(budget / max(size, 1)))))
    return n if cap is None else min(n, cap)


def _check_params(model: Any = "complex", dim: Any = _DEFAULT_DIM, neg_per_pos: Any = _DEFAULT_NEG,
                  l2: Any = _DEFAULT_L2, max_iter: Any = None) -> _Params:
    kind = _check_kind(model)
    return _Params(kind, _check_dim(kind, dim), integer("neg_per_pos", neg_per_pos, ge=1),
                   real("l2", l2, ge=0.0), _check_iter("max_iter", max_iter))


def _check_facts(facts: Any) -> FactTable:
    if not isinstance(facts, FactTable):
        raise KgrValidationError(f"facts must be a FactTable, got {type(facts).__name__}", field="facts")
    return facts


def _check_types(entity_types: Any, n: int) -> np.ndarray:
    """Type ids as int64 of shape (n,); all zeros (one type) when not given."""
    if entity_types is None:
        return np.zeros(n, dtype=np.int64)
    a = np.asarray(entity_types)
    if a.shape != (n,):
        raise KgrValidationError(f"entity_types must have shape ({n},), got {a.shape}", field="entity_types")
    if n and (a.dtype == bool or not np.issubdtype(a.dtype, np.integer) or a.min() < 0):
        raise KgrValidationError("entity_types must be integer type ids >= 0", field="entity_types")
    return np.unique(a, return_inverse=True)[1].astype(np.int64).reshape(n)  # dense ids 0..T-1


def _check_seed(seed: Any) -> int:
    return integer("seed", seed, ge=0)


def _corruptions(pools: _Pools, known: _Known, h: np.ndarray, r: np.ndarray, t: np.ndarray,
                 codes: np.ndarray, n: int, side: str, seed: int, stream: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` corruptions of each triple's ``side`` ("head" or "tail"): same type, not known facts.

    Slot ``j`` of triple ``i`` draws from a uniform that hashes ``(codes[i], seed, stream, side, j,
    round)``, so a triple's corruptions do not depend on the other rows (adding facts leaves the
    others' negatives in place, up to the pools' growth). A draw that is a known fact is redrawn
    up to ``_RESAMPLE_ROUNDS`` times. Returns the entities ``(q, n)`` and which slots are usable;
    an unusable slot holds the triple's own entity.
    """
    q = len(h)
    key = (np.uint64(seed) << np.uint64(3)) | np.uint64(2 * stream + (side == "tail"))
    salt = _mix(_mix(np.array([key], dtype=np.uint64)) ^ np.arange(n * (_RESAMPLE_ROUNDS + 1), dtype=np.uint64))
    like = np.broadcast_to((h if side == "head" else t)[:, None], (q, n))
    hh, rr, tt = (np.broadcast_to(x[:, None], (q, n)) for x in (h, r, t))

    ent = pools.draw(like, _mix(codes[:, None] ^ salt[None, :n]))
    bad = known.contains(ent, rr, tt) if side == "head" else known.contains(hh, rr, ent)
    for rnd in range(1, _RESAMPLE_ROUNDS + 1):
        i, j = np.nonzero(bad)
        if i.size == 0:
            break
        e = pools.draw(like[i, j], _mix(codes[i] ^ salt[rnd * n + j]))
        ent[i, j] = e
        bad[i, j] = known.contains(e, r[i], t[i]) if side == "head" else known.contains(h[i], r[i], e)
    ent = np.where(bad, like, ent)
    return ent, ~bad


def _orth(Y: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the columns of a tall ``Y``: Cholesky QR, Householder when ill-conditioned."""
    G = Y.T @ Y
    try:
        L = np.linalg.cholesky(G)
        if np.min(np.diag(L)) > 1e-6 * np.max(np.diag(L)):
            return solve_triangular(L, Y.T, lower=True).T
    except np.linalg.LinAlgError:
        pass
    return np.linalg.qr(Y)[0]


def _spectral_init(kind: str, dim: int, n: int, h: np.ndarray, t: np.ndarray, omega: np.ndarray,
                   n_rel: int, rng: np.random.Generator, power: int = 3) -> tuple[np.ndarray, np.ndarray]:
    r"""Cold-start embeddings from the top eigenvectors of the normalised adjacency.

    With :math:`\hat A = D^{-1/2}(A + A^\top)D^{-1/2}` of the facts (weights
    :math:`\omega`) and its ``dim`` eigenpairs of largest :math:`|\lambda_j|` (randomised
    subspace iteration), entity :math:`v` starts at :math:`c\,\sqrt{|\lambda_j|}\,u_{vj}` and
    every relation at :math:`\operatorname{sign}\lambda_j`, so that the first scores are
    :math:`s(h, r, t) \approx c^2 \hat A_{ht}`, scaled (:math:`c`) to average 1 on the facts.
    ComplEx pairs eigenvectors of equal sign into the real and imaginary part of one coordinate.
    """
    A = sparse.csr_matrix((np.concatenate([omega, omega]), (np.concatenate([h, t]), np.concatenate([t, h]))),
                          shape=(n, n))
    deg = np.asarray(A.sum(axis=1)).ravel()
    dinv = sparse.diags(1.0 / np.sqrt(np.maximum(deg, 1e-12)))
    A = (dinv @ A @ dinv).tocsr()
    k = min(n, dim + 8)
    Q = _orth(A @ rng.standard_normal((n, k)))
    for _ in range(power):
        Q = _orth(A @ Q)
    lam, V = np.linalg.eigh(Q.T @ (A @ Q))
    top = np.argsort(-np.abs(lam), kind="stable")[:dim]
    top = top[np.lexsort((-np.abs(lam[top]), lam[top] < 0))]          # positives first, by size
    lam = lam[top]
    U = (Q @ V[:, top]) * np.sqrt(np.abs(lam))
    if U.shape[1] < dim:                                               # fewer entities than dim
        U = np.concatenate([U, np.zeros((n, dim - U.shape[1]))], axis=1)
        lam = np.concatenate([lam, np.ones(dim - len(lam))])
    sign = np.where(lam < 0, -1.0, 1.0)
    if kind == "complex":                                              # one sign per complex pair
        pair = np.where(np.abs(lam[0::2]) >= np.abs(lam[1::2]), sign[0::2], sign[1::2])
        sign = np.repeat(pair, 2)
    mean = float(np.mean(np.einsum("ij,ij->i", U[h] * sign, U[t])))
    if mean > 1e-12:
        c = 1.0 / math.sqrt(mean)
    else:                                                              # no usable spectrum: unit rows
        c = 1.0 / max(math.sqrt(float(np.mean(U ** 2)) * dim), 1e-12)
    return U * c, np.tile(sign, (n_rel, 1))


@dataclass
class _Warm:
    """Warm-start rows: embeddings for the current id spaces and which rows they cover."""

    entity: np.ndarray
    has_entity: np.ndarray
    relation: np.ndarray
    has_relation: np.ndarray


def _warm_by_ids(init: KGEModel, n_ent: int, n_rel: int) -> _Warm:
    def rows(src: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros((n, src.shape[1]))
        k = min(n, src.shape[0])
        out[:k] = src[:k]
        return out, np.arange(n) < k

    e, he = rows(init.entity, n_ent)
    w, hw = rows(init.relation, n_rel)
    return _Warm(e, he, w, hw)


def _train(facts: FactTable, rows: np.ndarray, p: _Params, *, types: np.ndarray, known: _Known,
           codes: _Codes, seed: int, rng: np.random.Generator, warm: _Warm | None, max_iter: int | None,
           iter_cap: int | None = None, dtype: Any = np.float32) -> KGEModel:
    """Fit on the rows ``rows`` (bool mask) of ``facts``; see :func:`fit_kge` for the objective."""
    n_ent, n_rel, dim, kind = facts.n_entities, facts.n_relations, p.dim, p.kind
    h, r, t, w, tcode = (x[rows] for x in (facts.head, facts.rel, facts.tail, facts.weight, codes.rows))
    keep = np.flatnonzero(h != t)
    keep = keep[np.argsort(h[keep], kind="stable")]     # facts by head: one scatter reads in order
    h, r, t, w, tcode = h[keep], r[keep], t[keep], w[keep], tcode[keep]
    E = warm.entity.copy() if warm is not None else np.zeros((n_ent, dim))
    W = warm.relation.copy() if warm is not None else np.zeros((n_rel, dim))
    m = len(h)
    if m == 0:
        return KGEModel(kind, E, W)
    ents, rels = np.unique(np.concatenate([h, t])), np.unique(r)
    pools = _Pools(ents, types, codes.ent)
    kt, kh = (p.neg_per_pos + 1) // 2, p.neg_per_pos // 2
    tneg, tok = _corruptions(pools, known, h, r, t, tcode, kt, "tail", seed, 0)
    hneg, hok = _corruptions(pools, known, h, r, t, tcode, kh, "head", seed, 0)
    tnu, hnu = tok.astype(np.float64), hok.astype(np.float64)
    omega = np.log2(1.0 + w)
    e_loc = np.full(n_ent, -1, dtype=np.int64)
    e_loc[ents] = np.arange(len(ents))
    r_loc = np.full(n_rel, -1, dtype=np.int64)
    r_loc[rels] = np.arange(len(rels))
    he = warm.has_entity[ents] if warm is not None else np.zeros(len(ents), dtype=bool)
    hw = warm.has_relation[rels] if warm is not None else np.zeros(len(rels), dtype=bool)
    if he.any():
        # warm: known rows carry over; new rows start small (a tenth of the known rows' RMS),
        # so their first gradient steps move them towards their neighbours
        E0, W0 = np.empty((len(ents), dim)), np.empty((len(rels), dim))
        E0[he], W0[hw] = warm.entity[ents[he]], warm.relation[rels[hw]]
        rms_e = math.sqrt(float(np.mean(E0[he] ** 2))) or 1.0
        rms_w = math.sqrt(float(np.mean(W0[hw] ** 2))) if hw.any() else 1.0
        E0[~he] = rng.standard_normal((int((~he).sum()), dim)) * (0.1 * rms_e)
        W0[~hw] = rng.standard_normal((int((~hw).sum()), dim)) * (0.1 * (rms_w or 1.0))
    else:
        E0, W0 = _spectral_init(kind, dim, len(ents), e_loc[h], e_loc[t], omega, len(rels), rng)
    ob = _Objective(kind, dim, len(ents), len(rels), e_loc[h], r_loc[r], e_loc[t], omega,
                    e_loc[tneg], tnu, e_loc[hneg], hnu, p.neg_per_pos, p.l2, dtype=dtype)
    x0 = np.concatenate([E0.ravel(), W0.ravel()])
    max_iter = _auto_iter(max_iter, m + len(ents), warm=bool(he.any()), cap=iter_cap)
    res = minimize(ob, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "maxfun": 2 * max_iter + 10, "maxcor": _MAXCOR,
                            # the loss is a mean over facts: an entity's gradient is O(f_v / m),
                            # so the stopping tolerance scales with 1 / n
                            "gtol": 2e-3 / len(ents)})
    ne = len(ents) * dim
    E[ents] = res.x[:ne].reshape(-1, dim)
    W[rels] = res.x[ne:].reshape(-1, dim)
    return KGEModel(kind, E, W, n_iter=int(res.nit), n_eval=ob.n_eval, loss=float(res.fun))


def fit_kge(facts: FactTable, *, entity_types: Any = None, model: str = "complex", dim: int = _DEFAULT_DIM,
            neg_per_pos: int = _DEFAULT_NEG, l2: float = _DEFAULT_L2, max_iter: int | None = None,
            seed: int = 0, init: KGEModel | None = None) -> KGEModel:
    r"""Train a ComplEx or DistMult model on every fact of the table, full batch, with L-BFGS-B.

    For the :math:`m` facts :math:`(h_i, r_i, t_i, w_i)` (self loops dropped) and their
    corruptions :math:`\tilde x_{ij}`, :math:`j = 1..k`, the objective is

    .. math::

        \mathcal{L}(\Theta) = \frac{1}{m}\Bigl[\sum_{i=1}^{m} \omega_i\,
            \operatorname{softplus}(-s_i)
          + \frac{1}{k}\sum_{i=1}^{m}\sum_{j=1}^{k} \nu_{ij}\,\operatorname{softplus}(\tilde s_{ij})
          + \frac{\lambda}{2}\Bigl(\sum_v f_v \lVert e_v\rVert^2
            + \bar f \sum_r \lVert w_r\rVert^2\Bigr)\Bigr],
        \qquad \omega_i = \log_2(1 + w_i)

    with :math:`\operatorname{softplus}(x) = \log(1 + e^x)`, :math:`\nu_{ij} \in \{0, 1\}` dropping
    a corruption that is a known fact, :math:`f_v` the number of facts entity :math:`v` occurs
    in, :math:`\bar f = 2m/n` its mean, and the sums over the entities and relations that occur
    in the facts. With :math:`s = \operatorname{Re}\langle e_h \circ w_r,
    \bar e_t\rangle` and :math:`c = \partial\mathcal{L}/\partial s` of a triple
    (:math:`-\omega\sigma(-s)/m` for a fact, :math:`\nu\sigma(s)/(km)` for a corruption), the
    gradient in complex form (:math:`\partial/\partial\operatorname{Re} + i\,
    \partial/\partial\operatorname{Im}`) is

    .. math::

        \frac{\partial \mathcal{L}}{\partial e_h} = \sum c\; \bar w_r \circ e_t, \qquad
        \frac{\partial \mathcal{L}}{\partial e_t} = \sum c\; e_h \circ w_r, \qquad
        \frac{\partial \mathcal{L}}{\partial w_r} = \sum c\; \bar e_h \circ e_t,

    each sum running over the triples (facts and corruptions) where the embedding takes that
    role, plus :math:`\lambda f_v e_v / m` (:math:`\lambda \bar f w_r / m`); DistMult is the
    same with real vectors and no conjugates.

    Parameters
    ----------
    facts : FactTable
        The training facts; ``weight`` is the vote weight (1 for a promoted edge).
    entity_types : array_like of int, shape (n_entities,), optional
        Type id per entity. When given, a corruption replaces the head (tail) by an entity of the
        head's (tail's) type (type-constrained negatives); otherwise by any entity. Either way
        the replacement is drawn among the entities that occur in ``facts``.
    model : {"complex", "distmult"}, default "complex"
        ComplEx models antisymmetric relations (``works_for``); DistMult scores
        :math:`s(h,r,t) = s(t,r,h)`, so it suits symmetric ones only.
    dim : int, default 32
        Real parameters per embedding (even for ComplEx: ``dim // 2`` complex coordinates).
    neg_per_pos : int, default 4
        Corruptions per fact: ``ceil(k/2)`` of the tail and ``floor(k/2)`` of the head.
    l2 : float, default 0.2
        :math:`\lambda`: the L2 penalty each fact puts on the embeddings of its two entities
        (the per-triple regularisation of [1]_), so data and prior weigh the same for a hub and
        a leaf; relations are penalised as an entity of mean degree. From about 0.5 (DistMult)
        or 1 (ComplEx) every embedding collapses to zero, the trivial optimum of a trilinear
        model; 0.2 was the best compromise of 0.03-0.6 on the community graphs of the tests.
    max_iter : int, optional
        L-BFGS-B iterations (at most ``2 * max_iter + 10`` objective evaluations). By default
        :math:`2.4 \cdot 10^6 / (m + n)` clipped to [18, 200] for a cold fit and
        :math:`0.65 \cdot 10^6 / (m + n)` clipped to [5, 50] for a warm one: small graphs are
        fitted to convergence, 100,000 facts stay within the time budget of the module Notes.
    seed : int, default 0
        Seeds the negatives (hashed with each fact's ids) and the spectral start.
    init : KGEModel, optional
        Warm start: the rows of ids below ``init``'s sizes start from ``init`` (the id spaces
        may have grown since; extra rows of a larger ``init`` are ignored), new rows from small
        random values (a tenth of the RMS of the carried rows). Without it the fit starts from
        the spectral embedding of the module docstring. Must have the same ``model`` and ``dim``.

    Returns
    -------
    model : KGEModel
        Embeddings for every id; entities and relations absent from ``facts`` keep their
        ``init`` row, else zero. ``n_iter``, ``n_eval`` and ``loss`` record the fit.

    Raises
    ------
    KgrValidationError
        On ``facts`` not a :class:`FactTable`, an unknown ``model``, ``dim < 1`` (or odd for
        ComplEx), ``neg_per_pos < 1``, ``l2 < 0``, ``max_iter < 1``, a negative ``seed``,
        ``entity_types`` of the wrong shape or with negative ids, or an ``init`` of another
        model or width.

    Notes
    -----
    *Weights*: :math:`\omega = \log_2(1 + w)` gives a promoted edge (:math:`w = 1`) weight 1,
    grows slowly with votes (three votes weigh 2, not 3) and shrinks a decayed vote weight
    smoothly towards 0.

    *Negatives* are drawn once, before the fit (a fixed full-batch objective, as L-BFGS needs),
    each from a hash of its fact and ``seed`` (so a fact keeps its negatives when other facts
    are added); a corruption that is a known fact (any row of ``facts``) is redrawn up to
    three times, then dropped. A fact's corruptions together weigh as much as the fact. With
    few, fixed negatives a weakly regularised model memorises them; the L2 term is what keeps
    it general.

    *Cost*: :math:`O(m (k + 2) d)` time per evaluation plus :math:`O((n + R) d)` per L-BFGS-B
    iteration; memory about :math:`m (k + 12) d` float32 values. Stops early when the
    projected gradient falls below :math:`2 \cdot 10^{-3} / n` (the loss is a mean over facts).

    *Determinism*: the same inputs and ``seed`` give bit-identical embeddings on one machine
    with the same BLAS threading. No state is shared between calls.

    References
    ----------
    .. [1] T. Trouillon, J. Welbl, S. Riedel, É. Gaussier, G. Bouchard, "Complex Embeddings for
       Simple Link Prediction", ICML 2016 (the score, and the logistic loss with per-triple L2).
    .. [2] B. Yang, W. Yih, X. He, J. Gao, L. Deng, "Embedding Entities and Relations for
       Learning and Inference in Knowledge Bases", ICLR 2015 (DistMult).

    Examples
    --------
    >>> import numpy as np
    >>> from kgr.evidence.facts import FactTable
    >>> f = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (2, 0, 3), (3, 0, 0)], n_entities=4, n_relations=1)
    >>> m = fit_kge(f, dim=4, max_iter=50)
    >>> (m.entity.shape, m.relation.shape)
    ((4, 4), (1, 4))
    >>> bool(m.score(0, 0, 1) > m.score(0, 0, 2))
    True
    """
    facts = _check_facts(facts)
    p = _check_params(model, dim, neg_per_pos, l2, max_iter)
    seed = _check_seed(seed)
    types = _check_types(entity_types, facts.n_entities)
    warm = None
    if init is not None:
        if not isinstance(init, KGEModel):
            raise KgrValidationError(f"init must be a KGEModel, got {type(init).__name__}", field="init")
        if init.kind != p.kind or init.dim != p.dim:
            raise KgrValidationError(f"init is a {init.kind} model of dim {init.dim}, not {p.kind} of dim {p.dim}",
                                     field="init")
        warm = _warm_by_ids(init, facts.n_entities, facts.n_relations)
    rng = np.random.default_rng(seed)
    return _train(facts, np.ones(len(facts), dtype=bool), p, types=types, known=_Known(facts),
                  codes=_codes(facts, None, None), seed=seed, rng=rng,
                  warm=warm, max_iter=p.max_iter)


# --------------------------------------------------------------------------------------------
# cross-fitting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class KGEScores:
    """Cross-fitted embedding scores of the query rows, in row order.

    Attributes
    ----------
    index : numpy.ndarray of int64, shape (q,)
        Row numbers of the queries in the fact table (``np.flatnonzero(query_mask)``).
    logit : numpy.ndarray of float64, shape (q,)
        :math:`s(h, r, t)` from the model of the query's fold.
    rank_quantile : numpy.ndarray of float64, shape (q,)
        Share of the compared corruptions scoring strictly below the query, ties counted half;
        0.5 when no corruption could be compared.
    fold : numpy.ndarray of int64, shape (q,)
        The query's fold (a hash of the triple, stable across calls).
    n_compared : numpy.ndarray of int64, shape (q,)
        Corruptions the quantile compares against (``n_corruptions`` less the known facts that
        could not be redrawn).
    n_iter : tuple of int
        L-BFGS-B iterations of each fold's model (0 for a fold without queries, not trained).
    warm : tuple of bool
        Whether each fold's model was warm-started.
    """

    index: np.ndarray
    logit: np.ndarray
    rank_quantile: np.ndarray
    fold: np.ndarray
    n_compared: np.ndarray
    n_iter: tuple[int, ...]
    warm: tuple[bool, ...]


def _check_mask(query_mask: Any, m: int) -> np.ndarray:
    a = np.asarray(query_mask)
    if a.shape != (m,) or a.dtype != bool:
        raise KgrValidationError(f"query_mask must be a bool array of shape ({m},), got {a.dtype} {a.shape}",
                                 field="query_mask")
    return a


def _check_keys(keys: Any, n: int, name: str) -> tuple[str, ...] | None:
    if keys is None:
        return None
    keys = tuple(keys)
    if len(keys) != n:
        raise KgrValidationError(f"{name} must have one key per id ({n}), got {len(keys)}", field=name)
    if not all(isinstance(k, str) for k in keys) or len(set(keys)) != n:
        raise KgrValidationError(f"{name} must be distinct strings", field=name)
    return keys


@dataclass(frozen=True)
class _Codes:
    """Stable 64-bit codes: of every row of the table and of every entity."""

    rows: np.ndarray
    ent: np.ndarray


def _codes(facts: FactTable, entity_keys: tuple[str, ...] | None,
           relation_keys: tuple[str, ...] | None) -> _Codes:
    """Codes from the keys when given, else from the ids."""
    ec = _key_codes(entity_keys) if entity_keys is not None else _id_codes(facts.n_entities, 0x5EED)
    rc = _key_codes(relation_keys) if relation_keys is not None else _id_codes(facts.n_relations, 0xBEEF)
    return _Codes(_triple_codes(facts.head, facts.rel, facts.tail, ec, rc), ec)


def _rank_quantiles(model: KGEModel, h: np.ndarray, r: np.ndarray, t: np.ndarray, codes: np.ndarray,
                    s: np.ndarray, pools: _Pools, known: _Known, n_corr: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Share of ``n_corr`` type-consistent corruptions (heads first, then tails) scoring below ``s``."""
    if len(h) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    jh = n_corr // 2
    ch, okh = _corruptions(pools, known, h, r, t, codes, jh, "head", seed, 1)
    ct, okt = _corruptions(pools, known, h, r, t, codes, n_corr - jh, "tail", seed, 1)
    sc = np.concatenate([model.score(ch, r[:, None], t[:, None]), model.score(h[:, None], r[:, None], ct)], axis=1)
    ok = np.concatenate([okh, okt], axis=1)
    below = ((sc < s[:, None]) & ok).sum(axis=1) + 0.5 * ((sc == s[:, None]) & ok).sum(axis=1)
    n_ok = ok.sum(axis=1)
    return np.where(n_ok > 0, below / np.maximum(n_ok, 1), 0.5), n_ok.astype(np.int64)


def _crossfit(facts: FactTable, mask: np.ndarray, codes: _Codes, p: _Params, *, folds: int,
              types: np.ndarray, n_corr: int, seed: int, warm: Sequence[_Warm | None],
              max_iters: Sequence[int | None], iter_cap: int | None = None
              ) -> tuple[KGEScores, list[KGEModel | None], list[np.ndarray]]:
    """Fit one model per non-empty fold and score that fold's queries; also each fold's training rows."""
    index = np.flatnonzero(mask)
    fold = (codes.rows[index] % np.uint64(folds)).astype(np.int64)
    known = _Known(facts)
    members = np.unique(np.concatenate([facts.head, facts.tail]))
    pools = _Pools(members, types, codes.ent)
    logit = np.zeros(len(index))
    quant = np.full(len(index), 0.5)
    n_cmp = np.zeros(len(index), dtype=np.int64)
    models: list[KGEModel | None] = []
    train_rows: list[np.ndarray] = []
    for k in range(folds):
        sel = fold == k
        rows = index[sel]
        if rows.size == 0:
            models.append(None)
            train_rows.append(np.zeros(0, dtype=np.int64))
            continue
        train = np.ones(len(facts), dtype=bool)
        train[rows] = False
        model = _train(facts, train, p, types=types, known=known, codes=codes, seed=seed,
                       rng=np.random.default_rng([seed, k]),
                       warm=warm[k], max_iter=max_iters[k], iter_cap=iter_cap)
        h, r, t = facts.head[rows], facts.rel[rows], facts.tail[rows]
        s = model.score(h, r, t)
        logit[sel] = s
        quant[sel], n_cmp[sel] = _rank_quantiles(model, h, r, t, codes.rows[rows], s, pools, known, n_corr,
                                                 seed)
        models.append(model)
        train_rows.append(np.flatnonzero(train))
    out = KGEScores(index=index, logit=logit, rank_quantile=quant, fold=fold, n_compared=n_cmp,
                    n_iter=tuple(0 if mdl is None else mdl.n_iter for mdl in models),
                    warm=tuple(w is not None and mdl is not None and bool(w.has_entity.any())
                               for w, mdl in zip(warm, models)))
    return out, models, train_rows


def _check_crossfit(facts: Any, query_mask: Any, folds: Any, entity_types: Any, n_corruptions: Any,
                    seed: Any) -> tuple[FactTable, np.ndarray, int, np.ndarray, int, int]:
    facts = _check_facts(facts)
    return (facts, _check_mask(query_mask, len(facts)), integer("folds", folds, ge=2),
            _check_types(entity_types, facts.n_entities), integer("n_corruptions", n_corruptions, ge=2),
            _check_seed(seed))


_FIT_KWARGS = ("model", "dim", "neg_per_pos", "l2", "max_iter")


def crossfit_scores(facts: FactTable, query_mask: Any, *, folds: int = 2, entity_types: Any = None,
                    n_corruptions: int = 32, seed: int = 0, entity_keys: Sequence[str] | None = None,
                    relation_keys: Sequence[str] | None = None, **fit_kwargs: Any) -> KGEScores:
    r"""Score the query rows of a fact table, each by a model trained without its fold.

    The queries :math:`Q` (rows where ``query_mask`` is true) are split into ``folds`` folds by a
    hash of each triple; model :math:`k` is trained on every row except the queries of fold
    :math:`k` and scores those. A query's rank quantile is

    .. math::

        \rho(q) = \frac{1}{|C_q|}\sum_{c \in C_q}\Bigl(\mathbb{1}[s_k(c) < s_k(q)]
            + \tfrac12\,\mathbb{1}[s_k(c) = s_k(q)]\Bigr)

    over :math:`C_q`: ``n_corruptions`` corruptions of :math:`q`, the first half replacing the
    head and the rest the tail by an entity of the same type that occurs in the table, none a
    known fact (a row of ``facts``).

    Parameters
    ----------
    facts : FactTable
        Known facts and queries together (a query is a candidate edge with its vote weight).
    query_mask : numpy.ndarray of bool, shape (len(facts),)
        Which rows are queries.
    folds : int, default 2
        Number of folds (>= 2), hence of fits. Model :math:`k` misses fold :math:`k`'s queries
        as training facts; with more folds each model misses fewer, at a higher cost.
    entity_types : array_like of int, shape (n_entities,), optional
        Type per entity, for type-consistent negatives and corruptions.
    n_corruptions : int, default 32
        Corruptions per query (>= 2; half heads, the rest tails): the quantile moves in steps
        of ``1 / (2 * n_corruptions)``.
    seed : int, default 0
        Seeds the spectral start of fold :math:`k`'s model (``[seed, k]``) and, hashed with
        each triple, its negatives and corruptions. The folds do not depend on it.
    entity_keys, relation_keys : sequence of str, optional
        Stable names of the ids. When given, folds and corruptions hash names instead of ids, so
        a triple keeps its fold when the vocabulary renumbers.
    **fit_kwargs
        ``model``, ``dim``, ``neg_per_pos``, ``l2``, ``max_iter`` of :func:`fit_kge`.

    Returns
    -------
    scores : KGEScores
        Per query, in the order of the masked rows: logit, rank quantile, fold, corruptions
        compared; per fold the iterations spent.

    Raises
    ------
    KgrValidationError
        On a ``query_mask`` of the wrong shape or type, ``folds < 2``, ``n_corruptions < 2``,
        key lists of the wrong length or with repeats, an unknown keyword, or any invalid
        :func:`fit_kge` argument.

    Notes
    -----
    *Folds*: ``fold = code(h, r, t) mod folds`` with a 64-bit SplitMix hash of the ids (or keys),
    independent of ``seed`` and of the other rows: the same triple lands in the same fold in
    every call.

    *What is hidden*: the query as a positive. The other folds' queries are training facts
    (with their vote weights) for model :math:`k`; all queries stay excluded from negatives and
    corruptions, so no model is pushed *against* a query either.

    *Cost*: ``folds`` fits of :func:`fit_kge` on about :math:`m - |Q|/\text{folds}` facts,
    plus :math:`O(|Q|\, n_c\, d)` for the corruptions. Deterministic for fixed inputs.

    References
    ----------
    .. [1] V. Chernozhukov et al., "Double/debiased machine learning for treatment and
       structural parameters", Econometrics Journal 21, 2018 (cross-fitting).
    .. [2] T. Trouillon et al., "Complex Embeddings for Simple Link Prediction", ICML 2016.
    .. [3] A. Bordes et al., "Translating Embeddings for Modeling Multi-relational Data",
       NIPS 2013 (corruption ranking, filtered setting).

    Examples
    --------
    >>> import numpy as np
    >>> from kgr.evidence.facts import FactTable
    >>> triples = [(i, 0, (i + 1) % 8) for i in range(8)] + [(0, 0, 4)]
    >>> f = FactTable.from_triples(triples, n_entities=8, n_relations=1)
    >>> q = (f.head == 0) & (f.tail == 4)
    >>> sc = crossfit_scores(f, q, dim=4, max_iter=20, n_corruptions=8)
    >>> sc.index.tolist(), sc.logit.shape, bool(0.0 <= sc.rank_quantile[0] <= 1.0)
    ([1], (1,), True)
    """
    facts, mask, folds, types, n_corr, seed = _check_crossfit(facts, query_mask, folds, entity_types,
                                                              n_corruptions, seed)
    unknown = sorted(set(fit_kwargs) - set(_FIT_KWARGS))
    if unknown:
        raise KgrValidationError(f"unknown keyword {unknown[0]!r}; expected one of {', '.join(_FIT_KWARGS)}",
                                 field="fit_kwargs")
    p = _check_params(**fit_kwargs)
    ek = _check_keys(entity_keys, facts.n_entities, "entity_keys")
    rk = _check_keys(relation_keys, facts.n_relations, "relation_keys")
    out, _, _ = _crossfit(facts, mask, _codes(facts, ek, rk), p, folds=folds, types=types, n_corr=n_corr,
                          seed=seed, warm=[None] * folds, max_iters=[p.max_iter] * folds)
    return out


class CrossFitter:
    r"""Cross-fitted scores over repeated promotion rounds, each fold's model warm-started.

    Call :meth:`scores` once per round with the current table; the model of fold :math:`k`
    starts from the previous round's model of fold :math:`k` and runs ``warm_max_iter``
    iterations instead of ``max_iter``. Folds are hashed from the triple (its keys when given),
    so a query stays in its fold from round to round and a warm model never saw it.

    .. math::

        \Theta_k^{(t)} = \operatorname{L-BFGS}^{\le T_{\text{warm}}}\bigl(
            \mathcal{L}_{D \setminus Q_k^{(t)}};\ \text{start} = \Theta_k^{(t-1)}\bigr)

    Parameters
    ----------
    folds : int, default 2
    model : {"complex", "distmult"}, default "complex"
    dim : int, default 32
    neg_per_pos : int, default 4
    l2 : float, default 0.2
        As in :func:`crossfit_scores` and :func:`fit_kge`.
    max_iter : int, optional
        Iterations of a cold fit (default: automatic, see :func:`fit_kge`).
    warm_max_iter : int, optional
        Iterations of a warm fit (default: automatic, a quarter of the cold budget: 5 at
        100,000 facts, up to 50 on small graphs, never more than ``max_iter``).
    n_corruptions : int, default 32
    seed : int, default 0
        As in :func:`crossfit_scores`.

    Raises
    ------
    KgrValidationError
        On any invalid argument (as :func:`crossfit_scores`), or ``warm_max_iter < 1``.

    Notes
    -----
    *The id contract*. Without keys, id :math:`i` must name the same entity (relation) in every
    call; ids may only be appended (``n_entities`` can grow; new ids start small, see
    :func:`fit_kge`). With ``entity_keys`` and/or ``relation_keys`` given on every call, ids may
    change freely between calls (e.g. a :class:`~kgr.evidence.facts.Vocabulary` rebuilt in sorted
    order): embeddings, folds, negatives and corruptions follow the keys. Switching between
    keyed and unkeyed calls starts cold.

    *Leak guard*. A warm model has seen every training row of its earlier rounds. If one of
    the current queries of fold :math:`k` was such a row (a fact that became a candidate again,
    say after a rollback), fold :math:`k` is refitted cold, so the query stays hidden.
    :attr:`KGEScores.warm` tells which folds were warm.

    *Cost*: a warm round runs about a quarter of the iterations of a cold one, from a start that
    is already good (the negatives of unchanged facts are unchanged, so the objective moved only
    by the new rows); the setup (negatives, corruptions) is the same. Memory: one model per fold
    and the 8-byte codes of the rows each fold has seen.

    References
    ----------
    .. [1] V. Chernozhukov et al., "Double/debiased machine learning for treatment and
       structural parameters", Econometrics Journal 21, 2018 (cross-fitting).
    .. [2] T. Trouillon et al., "Complex Embeddings for Simple Link Prediction", ICML 2016.

    Examples
    --------
    A ring with a second relation that skips one; round two adds an entity to the ring.

    >>> import numpy as np
    >>> from kgr.evidence.facts import FactTable
    >>> def ring(n):
    ...     triples = [(i, 0, (i + 1) % n) for i in range(n)] + [(i, 1, (i + 2) % 8) for i in range(8)]
    ...     return FactTable.from_triples(triples, n_entities=n, n_relations=2)
    >>> cf = CrossFitter(dim=4, n_corruptions=8)
    >>> first = cf.scores(ring(8), ring(8).rel == 1)
    >>> second = cf.scores(ring(9), ring(9).rel == 1)
    >>> first.fold.tolist() == second.fold.tolist(), first.warm, second.warm
    (True, (False, False), (True, True))
    """

    def __init__(self, *, folds: int = 2, model: str = "complex", dim: int = _DEFAULT_DIM,
                 neg_per_pos: int = _DEFAULT_NEG, l2: float = _DEFAULT_L2, max_iter: int | None = None,
                 warm_max_iter: int | None = None, n_corruptions: int = 32, seed: int = 0) -> None:
        self.folds = integer("folds", folds, ge=2)
        self.params = _check_params(model, dim, neg_per_pos, l2, max_iter)
        self.warm_max_iter = _check_iter("warm_max_iter", warm_max_iter)
        self.n_corruptions = integer("n_corruptions", n_corruptions, ge=2)
        self.seed = _check_seed(seed)
        self.reset()

    def reset(self) -> None:
        """Forget the previous rounds: the next call fits cold."""
        # per fold: the latest model with the entity and relation keys its rows follow
        self._state: list[tuple[KGEModel, tuple[str, ...] | None, tuple[str, ...] | None] | None] = \
            [None] * self.folds
        self._seen: list[np.ndarray] = [np.zeros(0, dtype=np.uint64) for _ in range(self.folds)]
        self._keyed: tuple[bool, bool] | None = None

    @property
    def models(self) -> tuple[KGEModel | None, ...]:
        """The latest model of each fold (``None`` before a fold was ever trained)."""
        return tuple(None if st is None else st[0] for st in self._state)

    def _warm_for(self, k: int, ek: tuple[str, ...] | None, rk: tuple[str, ...] | None,
                  n_ent: int, n_rel: int) -> _Warm | None:
        """Fold ``k``'s previous model laid out on the current ids (by key when keyed, else by id)."""
        if self._state[k] is None:
            return None
        prev, old_ek, old_rk = self._state[k]

        def rows(table: np.ndarray, keys: tuple[str, ...] | None, old: tuple[str, ...] | None,
                 n: int) -> tuple[np.ndarray, np.ndarray]:
            if keys is None or old is None:
                src = np.arange(n)
                src[src >= len(table)] = -1
            else:
                where = {key: i for i, key in enumerate(old)}
                src = np.array([where.get(key, -1) for key in keys], dtype=np.int64)
            has = src >= 0
            out = np.zeros((n, table.shape[1]))
            out[has] = table[src[has]]
            return out, has

        e, he = rows(prev.entity, ek, old_ek, n_ent)
        w, hw = rows(prev.relation, rk, old_rk, n_rel)
        return _Warm(e, he, w, hw)

    def scores(self, facts: FactTable, query_mask: Any, *, entity_types: Any = None,
               entity_keys: Sequence[str] | None = None,
               relation_keys: Sequence[str] | None = None) -> KGEScores:
        r"""Cross-fitted scores of this round's queries (see :func:`crossfit_scores`).

        .. math::

            \text{fold}(q) = \operatorname{hash}(h, r, t) \bmod K

        Parameters
        ----------
        facts : FactTable
            This round's facts and queries.
        query_mask : numpy.ndarray of bool, shape (len(facts),)
            Which rows are queries.
        entity_types : array_like of int, shape (n_entities,), optional
            Type per entity.
        entity_keys, relation_keys : sequence of str, optional
            Names of the ids, to carry embeddings and folds over renumberings (give them on every
            call or on none).

        Returns
        -------
        scores : KGEScores
            As :func:`crossfit_scores`; ``warm`` and ``n_iter`` tell how each fold was fitted.

        Raises
        ------
        KgrValidationError
            As :func:`crossfit_scores`.

        Notes
        -----
        Mutates the helper: the fitted models and the seen-row codes replace the previous ones
        (a fold without queries this round keeps its model).

        References
        ----------
        .. [1] V. Chernozhukov et al., "Double/debiased machine learning", Econometrics
           Journal 21, 2018 (cross-fitting).

        Examples
        --------
        >>> from kgr.evidence.facts import FactTable
        >>> f = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (2, 0, 0)], n_entities=3, n_relations=1)
        >>> CrossFitter(dim=2, max_iter=5, n_corruptions=2).scores(f, f.head == 1).index.tolist()
        [1]
        """
        facts, mask, _, types, _, _ = _check_crossfit(facts, query_mask, self.folds, entity_types,
                                                      self.n_corruptions, self.seed)
        ek = _check_keys(entity_keys, facts.n_entities, "entity_keys")
        rk = _check_keys(relation_keys, facts.n_relations, "relation_keys")
        keyed = (ek is not None, rk is not None)
        if self._keyed is not None and keyed != self._keyed:
            self.reset()
        codes = _codes(facts, ek, rk)
        index = np.flatnonzero(mask)
        qfold = (codes.rows[index] % np.uint64(self.folds)).astype(np.int64)
        warm: list[_Warm | None] = []
        for k in range(self.folds):
            seen = self._seen[k]
            qk = codes.rows[index[qfold == k]]
            leaked = seen.size > 0 and bool(np.isin(qk, seen, assume_unique=False).any())
            warm.append(None if leaked else self._warm_for(k, ek, rk, facts.n_entities, facts.n_relations))
        iters = [self.params.max_iter if w is None else self.warm_max_iter for w in warm]
        out, models, train_rows = _crossfit(facts, mask, codes, self.params, folds=self.folds, types=types,
                                            n_corr=self.n_corruptions, seed=self.seed, warm=warm,
                                            max_iters=iters, iter_cap=self.params.max_iter)
        for k, mdl in enumerate(models):
            if mdl is None:
                continue
            self._state[k] = (mdl, ek, rk)
            fresh = codes.rows[train_rows[k]]
            self._seen[k] = np.union1d(self._seen[k], fresh) if warm[k] is not None else np.unique(fresh)
        self._keyed = keyed
        return out
