"""The stacked numeric kernels of :func:`kgr.gauge.batch.gauge_batch`: twin quotients, path terms, entropies.

Conventions as in :mod:`kgr.gauge.batch`: a *group* is a set of candidates whose (quotient) balls have
the same size ``q``; its adjacency is one stacked ``(B, q, q)`` array, class weights and degrees are
``(B, q)`` arrays. Every kernel is exact against the per-candidate core (module Notes of
:mod:`kgr.gauge.batch`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack

from kgr.errors import KgrValidationError
from kgr.gauge.batch_balls import ragged

__all__ = ["Quotient", "twin_quotient", "dense_adjacency", "per_class", "path_group", "degree_entropy_rows", "vn_group"]


_HASH_MULT = 0x9E3779B97F4A7C15  # odd multiplier of the twin-detection hash (Fibonacci hashing)
_SMALL_EIG = 16  # below this ball size two stacked eigvalsh beat dsytrd + 2 dsterf


def dense_adjacency(
    grp: np.ndarray, k: int, e_off: np.ndarray, ei: np.ndarray, ej: np.ndarray, dtype: type
) -> np.ndarray:
    """Stacked (B, k, k) adjacency of the first ``k`` ball nodes of each candidate in ``grp``."""
    lengths = e_off[grp + 1] - e_off[grp]
    row, idx = ragged(e_off[grp], lengths)
    i, j = ei[idx], ej[idx]
    keep = j < k
    row, i, j = row[keep], i[keep], j[keep]
    A = np.zeros((grp.size, k, k), dtype=dtype)
    flat = A.reshape(-1)  # flat scatter: several times faster than a 3-index one
    base = row * (k * k)
    flat[base + i * k + j] = 1
    flat[base + j * k + i] = 1
    return A


def _bfs_distances(A: np.ndarray) -> np.ndarray:
    r"""All-pairs hop distances (float32, ``inf`` when unreachable) of stacked 0/1 adjacencies.

    With :math:`R_d = \min(1, (A + I)^d)` (reach within :math:`d` hops) and any :math:`T` at or
    beyond the eccentricity, :math:`\sum_{d=0}^{T} R_d = T + 1 - \mathrm{dist}`. Balls leave the
    stack once their reach stops growing, so one long ball does not slow the others.
    """
    B, k, _ = A.shape
    eye = np.eye(k, dtype=np.float32)
    out = np.empty((B, k, k), dtype=np.float32)
    A1 = A + eye
    R = A1.copy()  # R_1: within one hop
    Rn = np.empty_like(R)
    acc = A1 + eye  # R_0 + R_1
    idx = np.arange(B)
    prev = R.reshape(B, -1).sum(axis=1)  # 0/1 entries: exact counts
    full = k * k
    T = 1
    fin = prev == full
    while True:
        if fin.all() and idx.size == B:  # all done together: acc becomes the output in place
            np.subtract(T + 1, acc, out=acc)
            if prev.min() < full:
                acc[R == 0] = np.inf
            return acc
        if fin.all() or (fin.sum() * 4 >= fin.size):  # write the finished ones out, shrink the stack
            D = acc[fin]
            np.subtract(T + 1, D, out=D)
            D[R[fin] == 0] = np.inf
            out[idx[fin]] = D
            keep = ~fin
            if not keep.any():
                return out
            R, acc, A1, idx, prev = R[keep], acc[keep], A1[keep], idx[keep], prev[keep]
            Rn = np.empty_like(R)
        np.matmul(R, A1, out=Rn)
        np.minimum(Rn, 1.0, out=Rn)
        acc += Rn
        T += 1
        cnt = Rn.reshape(Rn.shape[0], -1).sum(axis=1)
        fin = (cnt == prev) | (cnt == full)
        R, Rn, prev = Rn, R, cnt


def path_group(A: np.ndarray, W: np.ndarray, deg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n_pairs, L_before, L_after) of stacked quotient balls (endpoints: nodes 0 and 1).

    ``W`` holds the class sizes; a pair of classes stands for ``W[a] * W[b]`` pairs at the same
    distance, and the ``W[a] (W[a] - 1) / 2`` pairs inside a class are at distance 2 before and
    after (two twins share a neighbour and neither is an endpoint).
    """
    k = A.shape[1]
    D = _bfs_distances(A)
    du, dv = D[:, 0, :], D[:, 1, :]
    DA = du[:, :, None] + dv[:, None, :]
    np.minimum(DA, dv[:, :, None] + du[:, None, :], out=DA)
    DA += 1.0
    np.minimum(DA, D, out=DA)  # the closed form of kgr.gauge.gedig
    far = np.isinf(D)
    D[far] = 0.0  # pairs not connected before are not counted, before or after
    DA[far] = 0.0
    pair = np.triu(np.ones((k, k), dtype=np.float32), 1)
    if np.all(W == 1.0):
        wt = np.broadcast_to(pair, D.shape)
    else:
        wt = W[:, :, None] * W[:, None, :] * pair
    conn = wt * ~far
    big = float(wt.sum(axis=(1, 2)).max(initial=0.0)) * float(D.max(initial=0.0) + 1.0) >= 1 << 24
    acc = np.float64 if big else np.float32  # float32 sums of integers are exact below 2**24
    n_pairs = np.einsum("bij->b", conn, dtype=acc).astype(np.float64)
    sb = np.einsum("bij,bij->b", D, wt, dtype=acc).astype(np.float64)
    sa = np.einsum("bij,bij->b", DA, wt, dtype=acc).astype(np.float64)
    if not np.all(W == 1.0):
        inner = np.sum(np.where(deg > 0, W * (W - 1.0) / 2.0, 0.0), axis=1, dtype=np.float64)
        n_pairs += inner
        sb += 2.0 * inner
        sa += 2.0 * inner
    safe = np.maximum(n_pairs, 1.0)
    lb = np.where(n_pairs > 0, sb / safe, 0.0)
    la = np.where(n_pairs > 0, sa / safe, 0.0)
    return n_pairs.astype(np.int64), lb, la


def degree_entropy_rows(deg: np.ndarray, k: np.ndarray) -> np.ndarray:
    """:func:`kgr.gauge.gedig.degree_entropy` of every row (padding zeros ignored; edgeless: ln k)."""
    total = deg.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    p = deg / safe[:, None]
    terms = np.where(deg > 0, p * np.log(np.where(deg > 0, p, 1.0)), 0.0)
    H = np.maximum(0.0, -terms.sum(axis=1))
    return np.where(total > 0, H, np.log(k))


def _spectral_entropy(w: np.ndarray, trace: np.ndarray, W: np.ndarray, deg: np.ndarray, mu: float) -> np.ndarray:
    """:func:`kgr.gauge.entropy._entropy_of_spectrum` of a quotient spectrum ``w`` (unshifted) plus,
    per class of ``W`` twins, the eigenvalue ``deg`` with multiplicity ``W - 1``."""
    rho = np.clip((w + mu) / trace[:, None], 0.0, None)
    terms = np.where(rho > 0.0, rho * np.log(np.where(rho > 0.0, rho, 1.0)), 0.0)
    total = terms.sum(axis=1)
    extra = (W > 1.0) & (deg + mu > 0.0)
    if extra.any():
        r = (deg + mu) / trace[:, None]
        total += np.where(extra, (W - 1.0) * r * np.log(np.where(extra, r, 1.0)), 0.0).sum(axis=1)
    return np.maximum(0.0, -total)


def vn_group(
    A: np.ndarray, W: np.ndarray, deg: np.ndarray, trace_b: np.ndarray, k: np.ndarray, mu: float
) -> np.ndarray:
    r""":math:`S(L + e e^\top) - S(L)` for stacked quotient balls, :math:`e = e_0 - e_1` (no edge 0-1).

    The quotient Laplacian in the orthonormal basis :math:`1_C/\sqrt{|C|}` of the twin classes is
    :math:`M_{CC} = \deg C`, :math:`M_{CC'} = -\sqrt{|C||C'|}\,[C \sim C']`; the rest of the
    spectrum is :math:`\deg C` with multiplicity :math:`|C| - 1` (vectors summing to zero on a
    class), unchanged by the edge. ``trace_b`` is :math:`\operatorname{tr}(L + \mu I)` of the
    ball, ``k`` its size.
    """
    B, q, _ = A.shape
    if np.all(W == 1.0):
        L = -A
    else:
        L = -A * np.sqrt(W[:, :, None] * W[:, None, :])
    idx = np.arange(q)
    L[:, idx, idx] = deg
    trace_a = trace_b + 2.0
    if q < _SMALL_EIG:
        La = L.copy()
        La[:, 0, 0] += 1.0
        La[:, 1, 1] += 1.0
        La[:, 0, 1] -= 1.0
        La[:, 1, 0] -= 1.0
        wb, wa = np.linalg.eigvalsh(L), np.linalg.eigvalsh(La)
    else:
        r = 1.0 / math.sqrt(2.0)
        x0, x1 = L[:, 0, :].copy(), L[:, 1, :].copy()
        L[:, 0, :], L[:, 1, :] = (x0 - x1) * r, (x0 + x1) * r
        x0, x1 = L[:, :, 0].copy(), L[:, :, 1].copy()
        L[:, :, 0], L[:, :, 1] = (x0 - x1) * r, (x0 + x1) * r
        wb, wa = np.empty((B, q)), np.empty((B, q))
        sytrd, sterf = lapack.dsytrd, lapack.dsterf
        for b in range(B):
            _, d, e, _, info = sytrd(L[b].T, lower=1, overwrite_a=1)
            if info != 0:  # pragma: no cover - LAPACK argument errors only
                raise KgrValidationError(f"dsytrd failed with info={info}")
            wb[b] = sterf(d, e)[0]
            d[0] += 2.0
            wa[b] = sterf(d, e)[0]
    pos = trace_b > 0.0
    S_b = np.where(pos, _spectral_entropy(wb, np.where(pos, trace_b, 1.0), W, deg, mu), np.log(k))
    S_a = _spectral_entropy(wa, trace_a, W, deg, mu)
    return S_a - S_b


class Quotient(NamedTuple):
    r"""Internal: the false-twin quotient of the balls :math:`S_h` of some candidates.

    Classes of a candidate are ordered by their first (representative) ball position, so the
    endpoints (never merged) are classes 0 and 1; ``weight``/``deg`` are flat, candidate ``c``
    owning ``[c_off[c], c_off[c + 1])``; edges between classes are ``(e_i, e_j)``, ``e_i < e_j``,
    candidate ``c`` owning ``[e_off[c], e_off[c + 1])``.
    """

    q: np.ndarray
    c_off: np.ndarray
    weight: np.ndarray
    deg: np.ndarray
    e_off: np.ndarray
    e_i: np.ndarray
    e_j: np.ndarray


def twin_quotient(
    sel: np.ndarray, h: int, k_h: np.ndarray, ball_own: np.ndarray, ball_pos: np.ndarray, ball_dist: np.ndarray,
    masks: np.ndarray, deg_h: np.ndarray, ec: np.ndarray, ei: np.ndarray, ej: np.ndarray, in_h: np.ndarray,
    e_off: np.ndarray, k_max: int,
) -> Quotient:
    r"""False twins of :math:`S_h` (same neighbours in :math:`S_h`, not an endpoint) merged, per candidate.

    Twins have equal distances to every other node and are at distance 2 from each other; the
    Laplacian splits as in :func:`vn_group`. So both the path terms and :math:`\Delta S_{VN}` are
    exact on the quotient, which is much smaller on hub-and-leaf graphs. ``in_h`` flags the edges
    inside :math:`S_h`; ``e_off`` are the offsets of the ball edges ``(ei, ej)``.
    """
    m = sel.size
    ent = np.flatnonzero((ball_dist <= h) & sel[ball_own])
    own, pos = ball_own[ent], ball_pos[ent]
    words = masks.shape[1]
    key = masks[ent]
    k_e = k_h[own]
    for w in range(words):  # keep neighbours inside S_h only
        nb = np.clip(k_e - 64 * w, 0, 64).astype(np.uint64)
        low = np.left_shift(np.uint64(1), np.minimum(nb, np.uint64(63))) - np.uint64(1)
        low[nb >= 64] = np.uint64(0xFFFFFFFFFFFFFFFF)
        key[:, w] &= low
    first = np.ones(ent.size, dtype=bool)
    first[1:] = own[1:] != own[:-1]
    prim = ((np.cumsum(first) - 1) * 3 + np.where(pos < 2, pos + 1, 0)).astype(np.uint64)  # endpoints: own class
    pbits = int(prim[-1]).bit_length() if prim.size else 1
    order = None
    if words == 1 and pbits <= 32:
        # One sort on (class prefix, 64 - pbits bits of a multiplicative hash of the mask); hash
        # collisions are detected below and then the exact sort is used.
        mixed = (key[:, 0] * np.uint64(_HASH_MULT)) >> np.uint64(pbits)
        combined = (prim << np.uint64(64 - pbits)) | mixed
        sc = np.sort(combined)
        if not np.any(sc[1:] == sc[:-1]):  # all keys distinct: no twins (sorting is cheaper than argsort)
            return _identity_quotient(own, pos, m, deg_h, e_off, ei, ej)
        order = np.argsort(combined)
        same = sc[1:] == sc[:-1]
        if np.any(same & (key[order[1:], 0] != key[order[:-1], 0])):
            order = None
        else:
            start = np.ones(ent.size, dtype=bool)
            start[1:] = ~same
    if order is None:
        order = np.lexsort(tuple(key[:, w] for w in range(words - 1, -1, -1)) + (prim,))
        sp_, sk = prim[order], key[order]
        start = np.ones(ent.size, dtype=bool)
        start[1:] = (sp_[1:] != sp_[:-1]) | np.any(sk[1:] != sk[:-1], axis=1)
    n_cls = int(np.count_nonzero(start))
    if n_cls == ent.size:
        return _identity_quotient(own, pos, m, deg_h, e_off, ei, ej)
    run = np.cumsum(start) - 1
    first_pos = np.full(n_cls, np.iinfo(np.int64).max)
    np.minimum.at(first_pos, run, order)  # representative: the lowest entry (position) of a class
    rep = np.sort(first_pos)
    weight = np.bincount(run)
    run_of = np.empty(ent.size, dtype=np.int64)
    run_of[order] = run
    r_own, r_pos = own[rep], pos[rep]
    q = np.bincount(r_own, minlength=m)
    c_off = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(q, out=c_off[1:])
    rid = np.full(m * k_max, -1, dtype=np.int64)
    rid[r_own * k_max + r_pos] = np.arange(rep.size) - c_off[r_own]
    ri, rj = rid[ec * k_max + ei], rid[ec * k_max + ej]
    keep = in_h & sel[ec] & (ri >= 0) & (rj >= 0)
    rc = ec[keep]
    q_off = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rc, minlength=m), out=q_off[1:])
    return Quotient(q, c_off, weight[run_of[rep]].astype(np.float64), deg_h[r_own, r_pos], q_off, ri[keep], rj[keep])


def _identity_quotient(
    own: np.ndarray, pos: np.ndarray, m: int, deg_h: np.ndarray, e_off: np.ndarray, ei: np.ndarray, ej: np.ndarray
) -> Quotient:
    """No twins: every node is its own class (edges beyond :math:`S_h` are dropped by the caller)."""
    q = np.bincount(own, minlength=m)
    c_off = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(q, out=c_off[1:])
    return Quotient(q, c_off, np.ones(own.size), deg_h[own, pos], e_off, ei, ej)


def per_class(grp: np.ndarray, q: int, c_off: np.ndarray, values: np.ndarray, dtype: type) -> np.ndarray:
    """(B, q) array of a flat per-class quantity for the candidates of ``grp``."""
    return values[c_off[grp][:, None] + np.arange(q)].astype(dtype)
