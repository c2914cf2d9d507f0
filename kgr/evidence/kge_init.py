"""Where a fit starts: the spectral initialisation of a cold fit, the warm-start rows of a refit.

Conventions as in :mod:`kgr.evidence.embedding`: rows are packed reals of width ``dim``; a warm start
covers the ids its model knew (a prefix of the current id spaces, or those matched by key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import solve_triangular

from kgr.evidence.kge_model import KGEModel

__all__ = ["spectral_init", "WarmStart", "warm_by_ids"]


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


def spectral_init(kind: str, dim: int, n: int, h: np.ndarray, t: np.ndarray, omega: np.ndarray,
                  n_rel: int, rng: np.random.Generator, power: int = 3) -> tuple[np.ndarray, np.ndarray]:
    r"""Cold-start embeddings from the top eigenvectors of the normalised adjacency.

    With :math:`\hat A = D^{-1/2}(A + A^\top)D^{-1/2}` of the facts (weights
    :math:`\omega`) and its ``dim`` eigenpairs of largest :math:`|\lambda_j|` (randomised
    subspace iteration), entity :math:`v` starts at :math:`c\,\sqrt{|\lambda_j|}\,u_{vj}` and
    every relation at :math:`\operatorname{sign}\lambda_j`, so that the first scores are
    :math:`s(h, r, t) \approx c^2 \hat A_{ht}`, scaled (:math:`c`) to average 1 on the facts.
    ComplEx pairs eigenvectors of equal sign into the real and imaginary part of one coordinate.

    Parameters
    ----------
    kind : {"complex", "distmult"}
    dim : int
    n : int
        Number of entities.
    h, t : numpy.ndarray of int64
        The training facts' heads and tails.
    omega : numpy.ndarray of float
        Their weights.
    n_rel : int
        Number of relations.
    rng : numpy.random.Generator
    power : int, default 3
        Subspace iterations.

    Returns
    -------
    entity : numpy.ndarray of float64, shape (n, dim)
    relation : numpy.ndarray of float64, shape (n_rel, dim)
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
class WarmStart:
    """Warm-start rows: embeddings for the current id spaces and which rows they cover."""

    entity: np.ndarray
    has_entity: np.ndarray
    relation: np.ndarray
    has_relation: np.ndarray


def warm_by_ids(init: KGEModel, n_ent: int, n_rel: int) -> WarmStart:
    """Warm-start rows from a fitted model whose ids are a prefix of the current ones.

    Parameters
    ----------
    init : KGEModel
    n_ent, n_rel : int
        Current numbers of entities and relations.

    Returns
    -------
    WarmStart
    """
    def rows(src: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros((n, src.shape[1]))
        k = min(n, src.shape[0])
        out[:k] = src[:k]
        return out, np.arange(n) < k

    e, he = rows(init.entity, n_ent)
    w, hw = rows(init.relation, n_rel)
    return WarmStart(e, he, w, hw)
