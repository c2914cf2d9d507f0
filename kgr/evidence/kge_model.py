"""The bilinear embedding model (ComplEx, DistMult), its defaults and the checks of its fit settings.

Conventions as in :mod:`kgr.evidence.embedding`: a model's rows are packed reals (ComplEx: real and
imaginary parts interleaved, viewed as complex by :func:`as_field`); scores are logits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgr.errors import KgrValidationError
from kgr.gauge.validate import integer, real
from kgr.evidence.facts import FactTable

__all__ = ["KGE_MODELS", "KGEModel", "FitParams", "check_params", "check_facts", "check_types", "check_seed",
           "check_iter", "auto_iter", "as_field", "softplus"]


#: The model names :func:`fit_kge` accepts.
KGE_MODELS: tuple[str, ...] = ("complex", "distmult")


DEFAULT_DIM = 32


DEFAULT_NEG = 4


DEFAULT_L2 = 0.2


#: Automatic iteration counts (``max_iter=None``): a budget of work units divided by the size of
#: the fit, ``m + n`` (training facts plus entities), clipped to ``[lo, hi]``. The cold budget
#: gives 18 iterations at 100,000 facts on 30,000 entities (about 6 s for two folds, see Notes).
_ITER_BUDGET, _ITER_LO, _ITER_HI = 2.4e6, 18, 200


_WARM_ITER_BUDGET, _WARM_ITER_LO, _WARM_ITER_HI = 0.65e6, 5, 50


MAXCOR = 5


RESAMPLE_ROUNDS = 3


REPLICAS = 4


_CHUNK = 1 << 16


def as_field(kind: str, x: np.ndarray) -> np.ndarray:
    """Packed real rows as the model's number field: complex pairs for ComplEx (a view).

    Parameters
    ----------
    kind : {"complex", "distmult"}
    x : numpy.ndarray of float32 or float64
        Packed rows.

    Returns
    -------
    numpy.ndarray
        Complex for ComplEx, ``x`` itself for DistMult.
    """
    return x.view(np.complex64 if x.dtype == np.float32 else np.complex128) if kind == "complex" else x


def _as_real(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`as_field` (a view)."""
    if x.dtype == np.complex64:
        return x.view(np.float32)
    if x.dtype == np.complex128:
        return x.view(np.float64)
    return x


def softplus(x: np.ndarray) -> np.ndarray:
    """:math:`\\log(1 + e^x)`, stable, in the dtype of ``x``.

    Parameters
    ----------
    x : numpy.ndarray of float

    Returns
    -------
    numpy.ndarray
        Same shape and dtype.
    """
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0)
    return out


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
        E, W = as_field(self.kind, self.entity), as_field(self.kind, self.relation)
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


@dataclass(frozen=True)
class FitParams:
    kind: str
    dim: int
    neg_per_pos: int
    l2: float
    max_iter: int | None


def check_iter(name: str, x: Any) -> int | None:
    """An iteration count >= 1, or None (automatic).

    Parameters
    ----------
    name : str
        The argument's name, for the error.
    x : int or None

    Returns
    -------
    int or None
    """
    return None if x is None else integer(name, x, ge=1)


def auto_iter(fixed: int | None, size: int, warm: bool, cap: int | None = None) -> int:
    """``fixed``, or the automatic count for a fit of ``size = m + n`` (see ``_ITER_BUDGET``),
    at most ``cap``.

    Parameters
    ----------
    fixed : int or None
        A count set by the caller.
    size : int
        :math:`m + n`, training facts plus entities.
    warm : bool
        A warm start (smaller budget).
    cap : int, optional
        Upper bound.

    Returns
    -------
    int
    """
    if fixed is not None:
        return fixed
    budget, lo, hi = ((_WARM_ITER_BUDGET, _WARM_ITER_LO, _WARM_ITER_HI) if warm
                      else (_ITER_BUDGET, _ITER_LO, _ITER_HI))
    n = int(min(hi, max(lo, round(budget / max(size, 1)))))
    return n if cap is None else min(n, cap)


def check_params(model: Any = "complex", dim: Any = DEFAULT_DIM, neg_per_pos: Any = DEFAULT_NEG,
                 l2: Any = DEFAULT_L2, max_iter: Any = None) -> FitParams:
    """The fit settings of :func:`~kgr.evidence.embedding.fit_kge`, checked.

    Parameters
    ----------
    model : {"complex", "distmult"}
    dim : int
        Even for ComplEx.
    neg_per_pos : int >= 1
    l2 : float >= 0
    max_iter : int >= 1 or None
        None: automatic (:func:`auto_iter`).

    Returns
    -------
    FitParams

    Raises
    ------
    KgrValidationError
        A setting out of range.
    """
    kind = _check_kind(model)
    return FitParams(kind, _check_dim(kind, dim), integer("neg_per_pos", neg_per_pos, ge=1),
                   real("l2", l2, ge=0.0), check_iter("max_iter", max_iter))


def check_facts(facts: Any) -> FactTable:
    """``facts``, or a :class:`KgrValidationError` unless it is a :class:`FactTable`.

    Parameters
    ----------
    facts : FactTable

    Returns
    -------
    FactTable
    """
    if not isinstance(facts, FactTable):
        raise KgrValidationError(f"facts must be a FactTable, got {type(facts).__name__}", field="facts")
    return facts


def check_types(entity_types: Any, n: int) -> np.ndarray:
    """Type ids as int64 of shape (n,); all zeros (one type) when not given.

    Parameters
    ----------
    entity_types : array_like of int or None
        One type id >= 0 per entity.
    n : int
        Number of entities.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
    """
    if entity_types is None:
        return np.zeros(n, dtype=np.int64)
    a = np.asarray(entity_types)
    if a.shape != (n,):
        raise KgrValidationError(f"entity_types must have shape ({n},), got {a.shape}", field="entity_types")
    if n and (a.dtype == bool or not np.issubdtype(a.dtype, np.integer) or a.min() < 0):
        raise KgrValidationError("entity_types must be integer type ids >= 0", field="entity_types")
    return np.unique(a, return_inverse=True)[1].astype(np.int64).reshape(n)  # dense ids 0..T-1


def check_seed(seed: Any) -> int:
    """``seed`` as an int >= 0, or a :class:`KgrValidationError`.

    Parameters
    ----------
    seed : int

    Returns
    -------
    int
    """
    return integer("seed", seed, ge=0)
