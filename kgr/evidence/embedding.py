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

from typing import Any

import numpy as np

from kgr.errors import KgrValidationError
from kgr.evidence.facts import FactTable
from kgr.evidence.kge_crossfit import CrossFitter, KGEScores, crossfit_scores
from kgr.evidence.kge_model import (DEFAULT_DIM, DEFAULT_L2, DEFAULT_NEG, KGE_MODELS, KGEModel, check_facts, check_params,
                                    check_seed, check_types)
from kgr.evidence.kge_init import warm_by_ids
from kgr.evidence.kge_train import KnownFacts, fact_codes, train_model

__all__ = [
    "KGE_MODELS",
    "KGEModel",
    "KGEScores",
    "fit_kge",
    "crossfit_scores",
    "CrossFitter",
]


def fit_kge(facts: FactTable, *, entity_types: Any = None, model: str = "complex", dim: int = DEFAULT_DIM,
            neg_per_pos: int = DEFAULT_NEG, l2: float = DEFAULT_L2, max_iter: int | None = None,
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
    facts = check_facts(facts)
    p = check_params(model, dim, neg_per_pos, l2, max_iter)
    seed = check_seed(seed)
    types = check_types(entity_types, facts.n_entities)
    warm = None
    if init is not None:
        if not isinstance(init, KGEModel):
            raise KgrValidationError(f"init must be a KGEModel, got {type(init).__name__}", field="init")
        if init.kind != p.kind or init.dim != p.dim:
            raise KgrValidationError(f"init is a {init.kind} model of dim {init.dim}, not {p.kind} of dim {p.dim}",
                                     field="init")
        warm = warm_by_ids(init, facts.n_entities, facts.n_relations)
    rng = np.random.default_rng(seed)
    return train_model(facts, np.ones(len(facts), dtype=bool), p, types=types, known=KnownFacts(facts),
                  codes=fact_codes(facts, None, None), seed=seed, rng=rng,
                  warm=warm, max_iter=p.max_iter)


