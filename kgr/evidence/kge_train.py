"""Training a :class:`~kgr.evidence.kge_model.KGEModel`: type-consistent corruptions, the objective,
the spectral start, warm starts and the L-BFGS fit.

Conventions as in :mod:`kgr.evidence.embedding` (whose module docstring states the objective and the
sampling); facts and corruptions are identified by 64-bit hash codes of their keys (:func:`fact_codes`),
so a resampled corruption never equals a known fact.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import expit

from kgr.errors import KgrValidationError
from kgr.evidence.facts import FactTable
from kgr.evidence.kge_init import WarmStart, spectral_init
from kgr.evidence.kge_model import MAXCOR, REPLICAS, RESAMPLE_ROUNDS, FitParams, KGEModel, as_field, auto_iter, softplus

__all__ = ["KnownFacts", "TypePools", "FactCodes", "fact_codes", "key_codes", "id_codes", "triple_codes", "Objective",
           "corruptions", "train_model"]


class KnownFacts:
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
        """Whether each triple is a known fact (by its hash code).

        Parameters
        ----------
        h, r, t : numpy.ndarray of int64
            Broadcastable id arrays.

        Returns
        -------
        numpy.ndarray of bool
        """
        c = self._code(h, r, t)
        if self.codes.size == 0:
            return np.zeros(c.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self.codes, c), self.codes.size - 1)
        return self.codes[pos] == c


class TypePools:
    """Entities grouped by type, to draw a replacement of the same type as a given entity.

    Draws use consistent hashing: each member stands at ``REPLICAS`` points of a ring of 64-bit
    hashes (from its stable code), and a hash value ``x`` draws the member at the first point
    at or after ``x`` among those of the wanted type. A pool that gains or loses a member changes
    only the draws that land on that member's arcs (about ``1 / count`` of them), so the
    corruptions of a triple stay put from one round to the next. Members are drawn with
    probability proportional to their arcs (within a factor of about 2 of uniform).
    """

    def __init__(self, members: np.ndarray, types: np.ndarray, ent_code: np.ndarray) -> None:
        self.types = types
        n_types = int(types.max()) + 1 if types.size else 1
        rep = np.arange(REPLICAS, dtype=np.uint64)
        pts = _mix(ent_code[members][:, None] ^ _mix(rep + _GOLDEN)[None, :]).ravel()
        mt = np.repeat(types[members], REPLICAS)
        key = mt.astype(np.float64) + _unit(pts)                # type + position on the ring
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        self.member = np.repeat(members, REPLICAS)[order]
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
        """Member of the type of ``like`` at hash ``x`` (uint64) on that type's ring.

        Parameters
        ----------
        like : numpy.ndarray of int64
            Entities whose type the draw keeps.
        x : numpy.ndarray of uint64
            Hashes choosing the position on the ring.

        Returns
        -------
        numpy.ndarray of int64
            Drawn entities, shape of ``like``.
        """
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


def key_codes(keys: Sequence[str]) -> np.ndarray:
    """A 64-bit code of each key (BLAKE2b), stable across runs and id spaces.

    Parameters
    ----------
    keys : sequence of str

    Returns
    -------
    numpy.ndarray of uint64
    """
    return np.array([int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(), "little")
                     for k in keys], dtype=np.uint64)


def id_codes(n: int, salt: int) -> np.ndarray:
    """A 64-bit code of each id ``0..n-1`` (splitmix of the id and ``salt``).

    Parameters
    ----------
    n : int
    salt : int

    Returns
    -------
    numpy.ndarray of uint64, shape (n,)
    """
    return _mix(np.arange(n, dtype=np.uint64) ^ np.uint64(salt))


def triple_codes(h: np.ndarray, r: np.ndarray, t: np.ndarray, ent_code: np.ndarray,
                 rel_code: np.ndarray) -> np.ndarray:
    """Order-sensitive 64-bit code of each triple, from per-entity and per-relation codes.

    Parameters
    ----------
    h, r, t : numpy.ndarray of int64
        The triples.
    ent_code, rel_code : numpy.ndarray of uint64
        Codes of every entity and relation.

    Returns
    -------
    numpy.ndarray of uint64
    """
    with np.errstate(over="ignore"):
        return _mix(ent_code[h] ^ _mix(rel_code[r] ^ _mix(ent_code[t] + _GOLDEN)))


def _unit(code: np.ndarray) -> np.ndarray:
    """uint64 codes to floats in [0, 1) (their top 40 bits: exact next to a dense type id < 2**12)."""
    return (code >> np.uint64(24)).astype(np.float64) * (1.0 / 1099511627776.0)


class Objective:
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
        f = lambda a: as_field(kind, a)  # noqa: E731
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
        loss = (np.dot(self.w0, softplus(s0).astype(np.float64, copy=False))
                + np.dot(self.wt, softplus(st).astype(np.float64, copy=False).ravel())
                + np.dot(self.wh, softplus(sh).astype(np.float64, copy=False).ravel()))
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


def corruptions(pools: TypePools, known: KnownFacts, h: np.ndarray, r: np.ndarray, t: np.ndarray,
                codes: np.ndarray, n: int, side: str, seed: int, stream: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` corruptions of each triple's ``side`` ("head" or "tail"): same type, not known facts.

    Slot ``j`` of triple ``i`` draws from a uniform that hashes ``(codes[i], seed, stream, side, j,
    round)``, so a triple's corruptions do not depend on the other rows (adding facts leaves the
    others' negatives in place, up to the pools' growth). A draw that is a known fact is redrawn
    up to ``RESAMPLE_ROUNDS`` times. Returns the entities ``(q, n)`` and which slots are usable;
    an unusable slot holds the triple's own entity.

    Parameters
    ----------
    pools : TypePools
    known : KnownFacts
    h, r, t : numpy.ndarray of int64, shape (q,)
    codes : numpy.ndarray of uint64, shape (q,)
        The triples' codes.
    n : int
        Corruptions per triple.
    side : {"head", "tail"}
    seed, stream : int
        Hash inputs.

    Returns
    -------
    entities : numpy.ndarray of int64, shape (q, n)
    usable : numpy.ndarray of bool, shape (q, n)
    """
    q = len(h)
    key = (np.uint64(seed) << np.uint64(3)) | np.uint64(2 * stream + (side == "tail"))
    salt = _mix(_mix(np.array([key], dtype=np.uint64)) ^ np.arange(n * (RESAMPLE_ROUNDS + 1), dtype=np.uint64))
    like = np.broadcast_to((h if side == "head" else t)[:, None], (q, n))
    hh, rr, tt = (np.broadcast_to(x[:, None], (q, n)) for x in (h, r, t))

    ent = pools.draw(like, _mix(codes[:, None] ^ salt[None, :n]))
    bad = known.contains(ent, rr, tt) if side == "head" else known.contains(hh, rr, ent)
    for rnd in range(1, RESAMPLE_ROUNDS + 1):
        i, j = np.nonzero(bad)
        if i.size == 0:
            break
        e = pools.draw(like[i, j], _mix(codes[i] ^ salt[rnd * n + j]))
        ent[i, j] = e
        bad[i, j] = known.contains(e, r[i], t[i]) if side == "head" else known.contains(h[i], r[i], e)
    ent = np.where(bad, like, ent)
    return ent, ~bad


def train_model(facts: FactTable, rows: np.ndarray, p: FitParams, *, types: np.ndarray, known: KnownFacts,
           codes: FactCodes, seed: int, rng: np.random.Generator, warm: WarmStart | None, max_iter: int | None,
           iter_cap: int | None = None, dtype: Any = np.float32) -> KGEModel:
    """Fit on the rows ``rows`` (bool mask) of ``facts``; see :func:`fit_kge` for the objective.

    Parameters
    ----------
    facts : FactTable
    rows : numpy.ndarray of bool
        The training facts.
    p : FitParams
    types : numpy.ndarray of int64
        Entity types (corruptions keep them).
    known : KnownFacts
        Facts a corruption may not be.
    codes : FactCodes
    seed : int
    rng : numpy.random.Generator
    warm : WarmStart or None
    max_iter : int or None
    iter_cap : int, optional
    dtype : numpy dtype, default float32

    Returns
    -------
    KGEModel
    """
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
    pools = TypePools(ents, types, codes.ent)
    kt, kh = (p.neg_per_pos + 1) // 2, p.neg_per_pos // 2
    tneg, tok = corruptions(pools, known, h, r, t, tcode, kt, "tail", seed, 0)
    hneg, hok = corruptions(pools, known, h, r, t, tcode, kh, "head", seed, 0)
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
        E0, W0 = spectral_init(kind, dim, len(ents), e_loc[h], e_loc[t], omega, len(rels), rng)
    ob = Objective(kind, dim, len(ents), len(rels), e_loc[h], r_loc[r], e_loc[t], omega,
                    e_loc[tneg], tnu, e_loc[hneg], hnu, p.neg_per_pos, p.l2, dtype=dtype)
    x0 = np.concatenate([E0.ravel(), W0.ravel()])
    max_iter = auto_iter(max_iter, m + len(ents), warm=bool(he.any()), cap=iter_cap)
    res = minimize(ob, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "maxfun": 2 * max_iter + 10, "maxcor": MAXCOR,
                            # the loss is a mean over facts: an entity's gradient is O(f_v / m),
                            # so the stopping tolerance scales with 1 / n
                            "gtol": 2e-3 / len(ents)})
    ne = len(ents) * dim
    E[ents] = res.x[:ne].reshape(-1, dim)
    W[rels] = res.x[ne:].reshape(-1, dim)
    return KGEModel(kind, E, W, n_iter=int(res.nit), n_eval=ob.n_eval, loss=float(res.fun))


@dataclass(frozen=True)
class FactCodes:
    """Stable 64-bit codes: of every row of the table and of every entity."""

    rows: np.ndarray
    ent: np.ndarray


def fact_codes(facts: FactTable, entity_keys: tuple[str, ...] | None,
           relation_keys: tuple[str, ...] | None) -> FactCodes:
    """Codes from the keys when given, else from the ids.

    Parameters
    ----------
    facts : FactTable
    entity_keys, relation_keys : tuple of str or None
        Stable keys of the ids (so codes survive renumbering).

    Returns
    -------
    FactCodes
        Per-fact codes and per-entity codes.
    """
    ec = key_codes(entity_keys) if entity_keys is not None else id_codes(facts.n_entities, 0x5EED)
    rc = key_codes(relation_keys) if relation_keys is not None else id_codes(facts.n_relations, 0xBEEF)
    return FactCodes(triple_codes(facts.head, facts.rel, facts.tail, ec, rc), ec)
