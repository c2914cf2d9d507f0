r"""The evidence features of promotion candidates: one row of numbers per candidate.

The calibrated policy (:mod:`kgr.gauge.calibrated`) turns these into
:math:`\hat p = P(\text{true} \mid \text{evidence})` (:mod:`kgr.gauge.scorer`). Every feature is
computed from what the store holds, vectorised over the round's candidates:

**Sources** (the candidate's own evidence)
    ``log_documents`` :math:`\ln d` with :math:`d` the *independent* sources (distinct documents,
    not chunks); ``log_repeats`` :math:`\ln(v/d)` for :math:`v` votes (a document that states a
    fact in several chunks adds nothing independent); ``mean_confidence`` and
    ``noisy_or_confidence`` of the extractions; ``quality`` the mean extraction quality score of
    the source chunks (the quality tool's overall score / 100; 0.5 when unknown) and
    ``has_quality``.
**Verifiers** (corpus re-reading)
    ``supports``, ``contradicts``, ``silent``: answers recorded for the chunks that mention both
    endpoints (each capped at 3).
**Constraints** (:mod:`kgr.gauge.constraints`)
    ``r_contr`` :math:`= \sum_j \max(0, g_j)^2`, ``duplicate`` (a near-duplicate entity),
    ``functional_conflict``.
**Entities**
    ``log_min_degree``, ``log_max_degree``: :math:`\ln(1 + \deg)` of the endpoints in the
    evidence graph without the candidate itself (a typo'd entity that appears in nothing else
    has degree 0).
**Learned plausibility** (from the evidence graph: promoted edges and staged edges, vote-weighted)
    ``rule_noisy_or``, ``rule_best`` (path and inverse rules, :mod:`kgr.gauge.rules`);
    ``head_fit``, ``tail_fit``, ``head_seen``, ``tail_seen``, ``type_share_head``,
    ``type_share_tail`` (role profiles, :mod:`kgr.gauge.roles`; the learned types);
    ``kge_rank`` (a ComplEx embedding's rank quantile among type-consistent corruptions, from a
    model that did not see the candidate: :mod:`kgr.gauge.embedding`), ``kge_known``.
**Gauge** (geDIG on the promoted graph, :mod:`kgr.gauge.batch`)
    ``g0``, ``b`` :math:`= \min(g_0, g_{\min})`, ``delta_vn``, ``delta_cov``, ``has_context``.

The *evidence graph* is the promoted graph plus every staged edge still in play; a candidate is
part of it (it is a staged edge), so every structural feature leaves it out: rules cannot use a
fact as its own body (:mod:`kgr.gauge.rules`), role profiles are leave-one-out, and the embedding
is cross-fitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgr.gauge.facts import FactTable, Vocabulary
from kgr.model.promotion import CandidateRow, EdgeList

__all__ = ["FEATURES", "FEATURE_SET", "EvidenceGraph", "source_features", "evidence_graph", "feature_index"]

#: Feature names, in column order.
FEATURES: tuple[str, ...] = (
    "log_documents", "log_repeats", "mean_confidence", "noisy_or_confidence", "quality", "has_quality",
    "supports", "contradicts", "silent",
    "r_contr", "duplicate", "functional_conflict",
    "log_min_degree", "log_max_degree",
    "rule_noisy_or", "rule_best",
    "head_fit", "tail_fit", "head_seen", "tail_seen", "type_share_head", "type_share_tail",
    "kge_rank", "kge_known",
    "g0", "b", "delta_vn", "delta_cov", "has_context",
)
#: Name and version of the column layout; stored with every recorded feature vector.
FEATURE_SET = "kgr-features-1"


def feature_index() -> dict[str, int]:
    """Feature name → column."""
    return {f: i for i, f in enumerate(FEATURES)}


def source_features(cands: Sequence[CandidateRow], X: np.ndarray) -> None:
    """Fill the source and verifier columns of ``X`` (``len(cands) × len(FEATURES)``) in place."""
    ix = feature_index()
    docs = np.array([max(1, c.documents) for c in cands], dtype=np.float64)
    votes = np.array([max(1, c.votes) for c in cands], dtype=np.float64)
    X[:, ix["log_documents"]] = np.log(docs)
    X[:, ix["log_repeats"]] = np.log(np.maximum(votes / docs, 1.0))
    X[:, ix["mean_confidence"]] = [c.mean_confidence for c in cands]
    X[:, ix["noisy_or_confidence"]] = [c.confidence for c in cands]
    q = [c.quality for c in cands]
    X[:, ix["quality"]] = [0.5 if x is None else min(1.0, max(0.0, x)) for x in q]
    X[:, ix["has_quality"]] = [0.0 if x is None else 1.0 for x in q]
    X[:, ix["supports"]] = [min(3, c.supports) for c in cands]
    X[:, ix["contradicts"]] = [min(3, c.contradicts) for c in cands]
    X[:, ix["silent"]] = [min(3, c.silent) for c in cands]


@dataclass(frozen=True)
class EvidenceGraph:
    """The evidence graph as integer facts, and where the candidates are in it.

    Attributes
    ----------
    vocab : Vocabulary
        Entity keys, types and relation names.
    facts : FactTable
        Promoted edges and staged edges still in play, vote-weighted (a fact both promoted and
        staged counts once, with the larger weight).
    promoted : numpy.ndarray of bool
        Per fact: promoted.
    cand_h, cand_r, cand_t : numpy.ndarray of int64
        The candidates' ids (parallel to the round's candidates).
    cand_row : numpy.ndarray of int64
        Each candidate's row in ``facts``.
    """

    vocab: Vocabulary
    facts: FactTable
    promoted: np.ndarray
    cand_h: np.ndarray
    cand_r: np.ndarray
    cand_t: np.ndarray
    cand_row: np.ndarray


def evidence_graph(cands: Sequence[CandidateRow], promoted: EdgeList, pending: EdgeList,
                   entity_types: dict[str, str]) -> EvidenceGraph:
    """Build the evidence graph (see :class:`EvidenceGraph`); self loops are kept but ignored downstream."""
    keys: dict[str, str] = dict(entity_types)
    for c in cands:
        keys.setdefault(c.subject_key, c.subject_type)
        keys.setdefault(c.object_key, c.object_type)
    rels = set(promoted.relation) | set(pending.relation) | {c.relation for c in cands}
    for lst in (promoted.subject, promoted.object, pending.subject, pending.object):
        for k in lst:
            keys.setdefault(k, k.partition(":")[0])
    vocab = Vocabulary.build(keys.items(), rels)
    eid, rid = vocab.entity_index(), vocab.relation_index()

    def ids(el: EdgeList) -> np.ndarray:
        if not len(el):
            return np.zeros((0, 3), dtype=np.int64)
        return np.array([(eid[s], rid[r], eid[o]) for s, r, o in zip(el.subject, el.relation, el.object)],
                        dtype=np.int64)

    c_ids = np.array([(eid[c.subject_key], rid[c.relation], eid[c.object_key]) for c in cands],
                     dtype=np.int64).reshape(-1, 3)
    c_w = np.array([max(1, c.votes) for c in cands], dtype=np.float64)
    p_ids, q_ids = ids(promoted), ids(pending)
    p_w = np.asarray(promoted.weight, dtype=np.float64).clip(min=1.0)
    q_w = np.asarray(pending.weight, dtype=np.float64).clip(min=1.0)
    all_ids = np.concatenate([p_ids, q_ids, c_ids])
    all_w = np.concatenate([p_w, q_w, c_w])
    is_prom = np.concatenate([np.ones(len(p_ids), bool), np.zeros(len(q_ids) + len(c_ids), bool)])
    n, R = vocab.n_entities, vocab.n_relations
    if len(all_ids):
        code = (all_ids[:, 0] * R + all_ids[:, 1]) * n + all_ids[:, 2]
        uniq, inv = np.unique(code, return_inverse=True)
        w = np.zeros(len(uniq))
        np.maximum.at(w, inv, all_w)
        prom = np.zeros(len(uniq), bool)
        np.logical_or.at(prom, inv, is_prom)
        h, rest = np.divmod(uniq, R * n)
        r, t = np.divmod(rest, n)
        facts = FactTable(h, r, t, w, n, R)
        rows = np.searchsorted(uniq, (c_ids[:, 0] * R + c_ids[:, 1]) * n + c_ids[:, 2]) if len(c_ids) else \
            np.zeros(0, dtype=np.int64)
    else:
        facts = FactTable.from_triples([], n_entities=n, n_relations=R)
        prom = np.zeros(0, bool)
        rows = np.zeros(0, dtype=np.int64)
    return EvidenceGraph(vocab=vocab, facts=facts, promoted=prom, cand_h=c_ids[:, 0].copy(), cand_r=c_ids[:, 1].copy(),
                         cand_t=c_ids[:, 2].copy(), cand_row=np.asarray(rows, dtype=np.int64))
