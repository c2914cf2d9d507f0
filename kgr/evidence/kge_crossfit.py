"""Cross-fitted embedding scores: each query scored by a model that did not see it, once or round after round.

Conventions as in :mod:`kgr.evidence.embedding`; :func:`crossfit_scores` fits once per call,
:class:`CrossFitter` keeps each fold's model and warm-starts it on the next call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgr.errors import KgrValidationError
from kgr.gauge.validate import integer
from kgr.evidence.facts import FactTable
from kgr.evidence.kge_model import (DEFAULT_DIM, DEFAULT_L2, DEFAULT_NEG, FitParams, KGEModel, check_facts, check_iter,
                                    check_params, check_seed, check_types)
from kgr.evidence.kge_init import WarmStart
from kgr.evidence.kge_train import FactCodes, KnownFacts, TypePools, corruptions, fact_codes, train_model

__all__ = ["KGEScores", "crossfit_scores", "CrossFitter"]


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


def _rank_quantiles(model: KGEModel, h: np.ndarray, r: np.ndarray, t: np.ndarray, codes: np.ndarray,
                    s: np.ndarray, pools: TypePools, known: KnownFacts, n_corr: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Share of ``n_corr`` type-consistent corruptions (heads first, then tails) scoring below ``s``."""
    if len(h) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    jh = n_corr // 2
    ch, okh = corruptions(pools, known, h, r, t, codes, jh, "head", seed, 1)
    ct, okt = corruptions(pools, known, h, r, t, codes, n_corr - jh, "tail", seed, 1)
    sc = np.concatenate([model.score(ch, r[:, None], t[:, None]), model.score(h[:, None], r[:, None], ct)], axis=1)
    ok = np.concatenate([okh, okt], axis=1)
    below = ((sc < s[:, None]) & ok).sum(axis=1) + 0.5 * ((sc == s[:, None]) & ok).sum(axis=1)
    n_ok = ok.sum(axis=1)
    return np.where(n_ok > 0, below / np.maximum(n_ok, 1), 0.5), n_ok.astype(np.int64)


def _crossfit(facts: FactTable, mask: np.ndarray, codes: FactCodes, p: FitParams, *, folds: int,
              types: np.ndarray, n_corr: int, seed: int, warm: Sequence[WarmStart | None],
              max_iters: Sequence[int | None], iter_cap: int | None = None
              ) -> tuple[KGEScores, list[KGEModel | None], list[np.ndarray]]:
    """Fit one model per non-empty fold and score that fold's queries; also each fold's training rows."""
    index = np.flatnonzero(mask)
    fold = (codes.rows[index] % np.uint64(folds)).astype(np.int64)
    known = KnownFacts(facts)
    members = np.unique(np.concatenate([facts.head, facts.tail]))
    pools = TypePools(members, types, codes.ent)
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
        model = train_model(facts, train, p, types=types, known=known, codes=codes, seed=seed,
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
    facts = check_facts(facts)
    return (facts, _check_mask(query_mask, len(facts)), integer("folds", folds, ge=2),
            check_types(entity_types, facts.n_entities), integer("n_corruptions", n_corruptions, ge=2),
            check_seed(seed))


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
    p = check_params(**fit_kwargs)
    ek = _check_keys(entity_keys, facts.n_entities, "entity_keys")
    rk = _check_keys(relation_keys, facts.n_relations, "relation_keys")
    out, _, _ = _crossfit(facts, mask, fact_codes(facts, ek, rk), p, folds=folds, types=types, n_corr=n_corr,
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

    def __init__(self, *, folds: int = 2, model: str = "complex", dim: int = DEFAULT_DIM,
                 neg_per_pos: int = DEFAULT_NEG, l2: float = DEFAULT_L2, max_iter: int | None = None,
                 warm_max_iter: int | None = None, n_corruptions: int = 32, seed: int = 0) -> None:
        self.folds = integer("folds", folds, ge=2)
        self.params = check_params(model, dim, neg_per_pos, l2, max_iter)
        self.warm_max_iter = check_iter("warm_max_iter", warm_max_iter)
        self.n_corruptions = integer("n_corruptions", n_corruptions, ge=2)
        self.seed = check_seed(seed)
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
                  n_ent: int, n_rel: int) -> WarmStart | None:
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
        return WarmStart(e, he, w, hw)

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
        codes = fact_codes(facts, ek, rk)
        index = np.flatnonzero(mask)
        qfold = (codes.rows[index] % np.uint64(self.folds)).astype(np.int64)
        warm: list[WarmStart | None] = []
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
