r"""The evidence features of the managed rows: one row of numbers per staged edge.

:class:`EvidenceFeatures` is a scikit-learn style transformer over an
:class:`~kgr.evidence.graph.Evidence` (not an array): :meth:`~EvidenceFeatures.fit` builds the
evidence graph and learns what needs learning on it (path rules, the cross-fitted embedding),
:meth:`~EvidenceFeatures.transform` returns the matrix. It owns its caches, keyed by the evidence
graph's digest: a settle over unchanged evidence mines nothing again. Every feature is computed on
the evidence graph (:mod:`kgr.evidence.graph`), so the matrix is a function of the staged evidence
alone, whatever is promoted at the moment.

**Sources** (the row's own evidence)
    ``log_documents`` :math:`\ln d` with :math:`d` the *independent* sources (distinct documents);
    ``log_repeats`` :math:`\ln(v/d)` for :math:`v` votes; ``mean_confidence`` and
    ``noisy_or_confidence`` of the extractions; ``quality`` (mean extraction quality of the source
    chunks / 100; 0.5 when unknown) and ``has_quality``.
**Verifiers** (corpus re-reading)
    ``supports``, ``contradicts``, ``silent`` (answers, each capped at 3); ``chunked`` (some
    source is a chunk: the corpus can be re-read for it).
**Checks** (:mod:`kgr.evidence.checks`)
    ``r_contr``, ``duplicate``, ``functional`` (a functional relation), ``functional_others``
    (:math:`\ln(1 + \#\text{other objects})` of the subject for it).
**Entities and competition**
    ``log_min_degree``, ``log_max_degree``: :math:`\ln(1 + \deg)` of the endpoints without the row
    itself; ``share_subject`` :math:`= w / \sum w` over the facts with the same subject and
    relation (how much of the support for "s r ?" this object has), ``share_object`` likewise
    over "? r o".
**Learned plausibility**
    ``rule_noisy_or``, ``rule_best`` (path and inverse rules, leave-one-out,
    :mod:`kgr.evidence.rules`); ``head_fit``, ``tail_fit``, ``head_seen``, ``tail_seen``,
    ``type_share_head``, ``type_share_tail`` (role profiles, leave-one-out, :mod:`kgr.evidence.roles`);
    ``kge_rank`` (a ComplEx embedding's rank quantile, cross-fitted: the model that scores a row
    never trained on it, :mod:`kgr.evidence.embedding`) and ``kge_known`` (0 when not computed: rank 0.5).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from kgr.evidence.checks import Checks, check_rows
from kgr.evidence.graph import Evidence, EvidenceGraph, build_graph
from kgr.evidence.roles import role_evidence
from kgr.evidence.rules import RuleSet, mine_rules

__all__ = ["FEATURES", "FEATURE_SET", "IX", "EvidenceFeatures", "source_columns"]

#: Feature names, in column order.
FEATURES: tuple[str, ...] = (
    "log_documents", "log_repeats", "mean_confidence", "noisy_or_confidence", "quality", "has_quality",
    "supports", "contradicts", "silent", "chunked",
    "r_contr", "duplicate", "functional", "functional_others",
    "log_min_degree", "log_max_degree", "share_subject", "share_object",
    "rule_noisy_or", "rule_best",
    "head_fit", "tail_fit", "head_seen", "tail_seen", "type_share_head", "type_share_tail",
    "kge_rank", "kge_known",
)
#: Name and version of the column layout; stored with every recorded feature vector.
FEATURE_SET = "kgr-features-2"
#: Feature name → column.
IX: dict[str, int] = {f: i for i, f in enumerate(FEATURES)}

_CACHE = 2  # fitted digests kept per cache


def source_columns(ev: Evidence, X: np.ndarray) -> None:
    """Fill the source and verifier columns of ``X`` (``len(ev.rows) × len(FEATURES)``) in place.

    Parameters
    ----------
    ev : Evidence
        The managed rows.
    X : numpy.ndarray of float64
        The feature matrix, written in place.

    Returns
    -------
    None
    """
    rows = ev.rows
    docs = np.array([max(1, c.documents) for c in rows], dtype=np.float64)
    votes = np.array([max(1, c.votes) for c in rows], dtype=np.float64)
    X[:, IX["log_documents"]] = np.log(docs)
    X[:, IX["log_repeats"]] = np.log(np.maximum(votes / docs, 1.0))
    X[:, IX["mean_confidence"]] = [c.mean_confidence for c in rows]
    X[:, IX["noisy_or_confidence"]] = [c.confidence for c in rows]
    q = [c.quality for c in rows]
    X[:, IX["quality"]] = [0.5 if x is None else min(1.0, max(0.0, x)) for x in q]
    X[:, IX["has_quality"]] = [0.0 if x is None else 1.0 for x in q]
    X[:, IX["supports"]] = [min(3, c.supports) for c in rows]
    X[:, IX["contradicts"]] = [min(3, c.contradicts) for c in rows]
    X[:, IX["silent"]] = [min(3, c.silent) for c in rows]
    X[:, IX["chunked"]] = [1.0 if c.chunked else 0.0 for c in rows]


def _shares(g: EvidenceGraph) -> tuple[np.ndarray, np.ndarray]:
    f = g.facts
    out = []
    for key_of_fact, key_of_row in ((f.head * f.n_relations + f.rel, g.h * f.n_relations + g.r),
                                    (f.tail * f.n_relations + f.rel, g.t * f.n_relations + g.r)):
        uniq, inv = np.unique(key_of_fact, return_inverse=True)
        total = np.bincount(inv, weights=f.weight, minlength=len(uniq))
        pos = np.searchsorted(uniq, key_of_row)
        out.append(f.weight[g.row] / np.maximum(total[pos], 1e-12) if len(g.row) else np.zeros(0))
    return out[0], out[1]


class EvidenceFeatures:
    """The feature transformer (see the module docstring).

    Parameters
    ----------
    duplicate_similarity : float or None
        Name similarity of near-duplicate entities (None: no check).
    duplicate_max_degree : int
        Endpoints with more facts than this are never checked for a twin.
    rules_min_support, rules_min_confidence : int, float
        Thresholds of :func:`kgr.evidence.rules.mine_rules`.
    embedding_dim : int
        Width of the cross-fitted ComplEx model.

    Attributes
    ----------
    graph_ : EvidenceGraph
        The evidence graph of the last :meth:`fit`.
    checks_ : Checks
        Its constraint checks.
    """

    def __init__(self, *, duplicate_similarity: float | None = 0.85, duplicate_max_degree: int = 3,
                 rules_min_support: int = 2, rules_min_confidence: float = 0.05, embedding_dim: int = 32):
        self.duplicate_similarity = duplicate_similarity
        self.duplicate_max_degree = duplicate_max_degree
        self.rules_min_support = rules_min_support
        self.rules_min_confidence = rules_min_confidence
        self.embedding_dim = embedding_dim
        self._rules: OrderedDict[str, RuleSet] = OrderedDict()
        self._kge: OrderedDict[str, np.ndarray] = OrderedDict()

    def fit(self, ev: Evidence, y: object = None) -> "EvidenceFeatures":
        """Build the evidence graph of ``ev`` and its checks (rules are mined lazily, cached by digest).

        Parameters
        ----------
        ev : Evidence
            The managed rows and the pinned edges.
        y : ignored
            For the scikit-learn signature.

        Returns
        -------
        EvidenceFeatures
            ``self``.
        """
        self.evidence_ = ev
        self.graph_ = build_graph(ev)
        self.checks_: Checks = check_rows(ev, self.graph_, duplicate_similarity=self.duplicate_similarity,
                                          duplicate_max_degree=self.duplicate_max_degree)
        return self

    def transform(self, ev: Evidence | None = None, *, embedding: bool = False) -> np.ndarray:
        """The feature matrix of the fitted evidence (``ev`` must be the one given to :meth:`fit`).

        ``embedding`` computes the cross-fitted embedding columns (the costliest feature; cached by
        digest); without it ``kge_rank`` is 0.5 and ``kge_known`` 0.

        Parameters
        ----------
        ev : Evidence, optional
            The fitted evidence (checked when given).
        embedding : bool, default False
            Compute the embedding columns.

        Returns
        -------
        numpy.ndarray of float64, shape (len(ev.rows), len(FEATURES))
        """
        if ev is not None and ev is not self.evidence_:
            self.fit(ev)
        ev, g, ch = self.evidence_, self.graph_, self.checks_
        X = np.zeros((len(ev.rows), len(FEATURES)))
        if not len(ev.rows):
            return X
        source_columns(ev, X)
        X[:, IX["r_contr"]] = ch.r_contr
        X[:, IX["duplicate"]] = ch.duplicate
        X[:, IX["functional"]] = ch.functional
        X[:, IX["functional_others"]] = np.log1p(ch.functional_others)
        deg = g.degree
        own = (g.h != g.t).astype(np.int64)
        dh, dt = deg[g.h] - own, deg[g.t] - own
        X[:, IX["log_min_degree"]] = np.log1p(np.maximum(0, np.minimum(dh, dt)))
        X[:, IX["log_max_degree"]] = np.log1p(np.maximum(0, np.maximum(dh, dt)))
        X[:, IX["share_subject"]], X[:, IX["share_object"]] = _shares(g)
        rules = self.rules()
        rev = rules.evidence(g.h, g.r, g.t, facts=g.facts)
        X[:, IX["rule_noisy_or"]] = rev.noisy_or
        X[:, IX["rule_best"]] = rev.best_confidence
        roles = role_evidence(g.facts, g.h, g.r, g.t, entity_types=g.vocab.entity_types)
        X[:, IX["head_fit"]], X[:, IX["tail_fit"]] = roles.head_fit, roles.tail_fit
        X[:, IX["head_seen"]], X[:, IX["tail_seen"]] = np.log1p(roles.head_seen), np.log1p(roles.tail_seen)
        if roles.type_share_head is not None:
            X[:, IX["type_share_head"]], X[:, IX["type_share_tail"]] = roles.type_share_head, roles.type_share_tail
        X[:, IX["kge_rank"]] = 0.5
        if embedding:
            rank = self.embedding()
            X[:, IX["kge_rank"]] = np.nan_to_num(rank, nan=0.5)
            X[:, IX["kge_known"]] = (~np.isnan(rank)).astype(np.float64)
        return X

    def fit_transform(self, ev: Evidence, y: object = None, *, embedding: bool = False) -> np.ndarray:
        """``fit(ev).transform(embedding=embedding)``.

        Parameters
        ----------
        ev : Evidence
            The managed rows and the pinned edges.
        y : ignored
            For the scikit-learn signature.
        embedding : bool, default False
            Compute the embedding columns.

        Returns
        -------
        numpy.ndarray of float64, shape (len(ev.rows), len(FEATURES))
        """
        return self.fit(ev).transform(embedding=embedding)

    def rules(self) -> RuleSet:
        """The rules mined on the fitted evidence graph (cached by its digest)."""
        g = self.graph_
        if g.digest not in self._rules:
            self._rules[g.digest] = mine_rules(g.facts, min_support=self.rules_min_support,
                                               min_confidence=self.rules_min_confidence,
                                               relation_names=g.vocab.relations)
            while len(self._rules) > _CACHE:
                self._rules.popitem(last=False)
        return self._rules[g.digest]

    def embedding(self) -> np.ndarray:
        """Per managed row, the cross-fitted ComplEx rank quantile (NaN where none; cached by digest)."""
        from kgr.evidence.embedding import crossfit_scores

        g = self.graph_
        if g.digest not in self._kge:
            query = ~g.pinned
            rank = np.full(len(g.facts), np.nan)
            if query.any() and len(g.facts) > 1:
                sc = crossfit_scores(g.facts, query, entity_types=g.vocab.entity_types, dim=self.embedding_dim,
                                     entity_keys=g.vocab.entities, relation_keys=g.vocab.relations)
                rank[sc.index] = sc.rank_quantile
            self._kge[g.digest] = rank
            while len(self._kge) > _CACHE:
                self._kge.popitem(last=False)
        return self._kge[g.digest][g.row]
