r"""The calibrated promotion policy: promote to a target false-promotion rate.

Every candidate gets :math:`\hat p = P(\text{true} \mid \text{evidence})` from its evidence features
(:mod:`kgr.gauge.features`) and the scorer (:mod:`kgr.gauge.scorer`). The policy keeps the
promoted graph the largest set whose *expected* false-promotion rate stays within the target
:math:`\varphi` (``target_fmr``):

.. math::

    \widehat{\mathrm{FMR}}(P) = \frac{\sum_{e \in P} (1 - \hat p_e)}{|P|} \le \varphi .

For a fixed size, the set with the smallest expected number of false edges is the top of the
ranking by :math:`\hat p`, so the best admissible set is a prefix of everything scored — the
promoted edges (their recorded :math:`\hat p`, rescored when labels refit the scorer; unscored
and reviewer-confirmed ones count as certain) and this round's candidates — sorted by
:math:`\hat p`. The round computes its cut

.. math::

    \tau = \min\Bigl\{\hat p_{(k)} : \frac{\sum_{i \le k} (1 - \hat p_{(i)})}{n_1 + k} \le \varphi,\
    \hat p_{(k)} \ge p_{\min}\Bigr\} \quad (\hat p_{(1)} \ge \hat p_{(2)} \ge \ldots),

(:math:`n_1` the certain edges, :math:`p_{\min}` = ``min_p``, 0.5: nothing more likely false
than true is promoted), promotes the candidates at or above it and, when the promoted graph would
exceed the target, **retires** the least likely promoted edges below the cut (an *exchange*: a
candidate better supported than an edge promoted earlier takes its place instead of being locked
out by an error budget already spent). Retired edges stay staged and may return.

**The gates on** :math:`\hat p` keep their geDIG meaning:

- **DG** (confident accept): :math:`\hat p \ge \tau`;
- **AG** (ambiguous, gather evidence): one reading of the corpus would change the decision — a
  candidate that has chunk sources and was never re-read, with one *supporting* answer would
  reach :math:`\tau` from below, or with one *silent* answer (the chunks that mention both
  endpoints do not state it: what re-reading finds for an extractor's hallucination) would fall
  below it from above; and, since a verifier's answer is cheap next to a person's, any unread
  candidate below the cut with :math:`\hat p \ge` ``reread_min_p`` (0.3). It is held as ``escalated``: :mod:`kgr.ingest.reread` re-reads the chunks
  that mention both endpoints with a verifier, and ``kgr review queue`` offers it to people;
- **low**: held (``evidence``) until its evidence changes.

**Order within the budget.** At most ``max_promotions_per_round`` DG candidates are promoted, in
order of :math:`R_{\text{env}} = \Delta\mathrm{Cov}_\kappa + \Delta S_{VN} - \lambda_T T`
computed on the promoted graph at the start of the round (the first step of kgr's greedy; the
rest are held as ``budget`` and decided again next round on the updated graph).

**Hard constraints** reject before scoring, as in the geDIG policy: self loops,
:math:`R_{\text{contr}} >` ``max_contr`` (declared domain/range, near-duplicate entities), and a
reviewer's ``false`` label. A reviewer's ``true`` label sets :math:`\hat p = 1`. Within a round at
most one promotion per (subject, functional relation) survives.

**What is learnt across rounds** (the state, JSON): the scorer (its latent-class model is fitted
again every round with the previous one as a Dirichlet prior, so a round of ten candidates cannot
swing it), the labels it has seen, the epoch. In-process caches (rules mined per epoch, the
embedding models of the cross-fit) make later rounds cheaper and are rebuilt after a restart.
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgr.gauge.batch import gauge_batch
from kgr.gauge.constraints import PromotedIndex, functional_losers, functional_relations
from kgr.gauge.features import FEATURE_SET, FEATURES, EvidenceGraph, evidence_graph, feature_index, source_features
from kgr.gauge.policies import growth_epoch
from kgr.gauge.roles import role_evidence
from kgr.gauge.rules import RuleSet, mine_rules
from kgr.gauge.scorer import ScorerConfig, ScorerModel, explain_many, fit_scorer, predict
from kgr.model.decisions import EdgeDecision
from kgr.model.promotion import CandidateRow, EdgeList, RoundContext, RoundDecisions, RoundInputs, RoundRequest

__all__ = ["CalibratedConfig", "CalibratedState", "CalibratedPolicy", "promotion_cut"]

_IX = feature_index()


class CalibratedConfig(BaseModel):
    """Every setting of the calibrated policy, with its default and the reason for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_fmr: float = Field(0.1, gt=0.0, lt=1.0, description=(
        "the expected false-promotion rate the promoted graph is held to (kgr promote --target-fmr)"))
    min_p: float = Field(0.5, ge=0.0, le=1.0, description="never promote a candidate with p_hat below this")
    quorum: int = Field(1, ge=1, description=(
        "votes before a candidate is scored at all; 1: every candidate, the evidence decides how many it needs"))
    max_promotions_per_round: int = Field(1000, ge=0)
    max_candidates_per_round: int = Field(5000, ge=1)
    max_contr: float = Field(0.5, ge=0.0, description="reject when R_contr exceeds it (one hard violation)")
    duplicate_similarity: float | None = Field(0.85, gt=0.0, le=1.0, description="near-duplicate entity check")
    escalate: bool = Field(True, description="hold ambiguous candidates as escalated (AG) for verifiers and review")
    reread_min_p: float = Field(0.3, ge=0.0, le=1.0, description=(
        "candidates below the cut with at least this p_hat that were never re-read are escalated too: a "
        "verifier's answer costs little next to a person's, and it teaches the scorer what reading finds "
        "(1.0: only those one reading would carry over the cut)"))
    hops: int = Field(2, ge=1, description="gauge hops H")
    k_max: int = Field(32, ge=2, description="gauge ball cap (32: 5x cheaper than 64, same features to 3 decimals)")
    kappa: float = Field(0.1, gt=0.0, le=1.0)
    lambda_t: float = Field(0.1, ge=0.0)
    rules_min_support: int = Field(2, ge=1)
    rules_min_confidence: float = Field(0.05, ge=0.0, le=1.0)
    embedding: bool = Field(True, description=(
        "the ComplEx embedding feature, computed once the scorer has labels to weigh it with (the "
        "costliest feature: ~2 s per round at 100k edges when warm)"))
    embedding_dim: int = Field(32, ge=2)
    background: int = Field(2000, ge=0, description=(
        "decided staged edges (a uniform sample) the scorer is fitted on besides the candidates: the "
        "population stays the same from round to round whatever a round's candidates are"))
    prior_strength: float = Field(0.0, ge=0.0, le=1.0, description=(
        "weight of the previous round's latent-class model as a prior (0: each round alone)"))
    prior_cap: int = Field(5000, ge=0, description="most candidates the prior stands for")
    scorer: ScorerConfig = Field(default_factory=ScorerConfig)


class CalibratedState(BaseModel):
    """What the calibrated policy keeps across rounds."""

    model_config = ConfigDict(extra="forbid")

    model: ScorerModel | None = None
    effective_n: float = 0.0
    labels_seen: int = 0
    epoch: int = 0
    epoch_promoted: int = 0
    rounds: int = 0
    last_tau: float | None = None


def _state(raw: str | None) -> CalibratedState:
    if raw:
        try:
            return CalibratedState.model_validate_json(raw)
        except (ValidationError, ValueError):
            pass
    return CalibratedState()


def promotion_cut(p: np.ndarray, *, target: float, base_false: float = 0.0, base_n: int = 0,
                  min_p: float = 0.5) -> float:
    r"""The smallest :math:`\hat p` that may be promoted (see the module docstring); ``inf`` when none.

    >>> promotion_cut(np.array([0.99, 0.97, 0.9, 0.6]), target=0.05)
    0.9
    >>> promotion_cut(np.array([0.99, 0.97, 0.9, 0.6]), target=0.05, base_false=10.0, base_n=100)
    inf
    """
    order = np.sort(np.asarray(p, dtype=np.float64))[::-1]
    order = order[order >= min_p]
    if len(order) == 0:
        return math.inf
    k = np.arange(1, len(order) + 1)
    fmr = (base_false + np.cumsum(1.0 - order)) / (base_n + k)
    ok = np.nonzero(fmr <= target + 1e-12)[0]
    return float(order[ok[-1]]) if len(ok) else math.inf


class CalibratedPolicy:
    """See the module docstring. One object per process: it caches mined rules and embeddings."""

    name: ClassVar[str] = "calibrated"

    def __init__(self, config: CalibratedConfig | None = None):
        self.config = config or CalibratedConfig()
        self._rules: tuple[tuple, RuleSet] | None = None
        self._kge = None
        self._promoted_index: tuple[EdgeList, PromotedIndex] | None = None

    # -- the seam -------------------------------------------------------------------------------
    def plan(self, context: RoundContext, state: str | None) -> RoundRequest:
        st = _state(state)
        epoch, _ = growth_epoch(st.epoch, st.epoch_promoted, context.promoted)
        refit = context.labels != st.labels_seen
        return RoundRequest(limit=self.config.max_candidates_per_round, epoch=epoch + (1 if refit else 0),
                            graph=True, pending=True, labels=context.labels > 0,
                            promoted_features=refit and context.promoted_scored > 0,
                            background=self.config.background)

    def decide(self, inputs: RoundInputs, state: str | None) -> RoundDecisions:
        started = time.perf_counter()
        cfg = self.config
        st = _state(state)
        ctx = inputs.context
        epoch, epoch_promoted = growth_epoch(st.epoch, st.epoch_promoted, ctx.promoted)
        refit = ctx.labels != st.labels_seen
        st.epoch, st.epoch_promoted = epoch + (1 if refit else 0), epoch_promoted
        cands = list(inputs.candidates)
        index = self._index(inputs)
        peers = index.peers(cands, 2)
        decisions: list[EdgeDecision] = []
        scored: list[int] = []
        contr = []
        for i, c in enumerate(cands):
            ci = index.constraints(c, inputs.schema, duplicate_similarity=cfg.duplicate_similarity, peers=peers)
            r_contr = float(sum(max(0.0, g) ** 2 for g in ci.values()))
            contr.append((ci, r_contr))
            violated = ci.violated()
            contr[-1] = (ci, r_contr, violated)
            base = {"votes": c.votes, "documents": c.documents, "r_contr": r_contr, "violated": violated}
            if c.subject_key == c.object_key:
                decisions.append(_decision(c, "reject", "self-loop: subject and object are the same node", base))
            elif r_contr > cfg.max_contr:
                notes = "".join(f"; {n}" for n in ci.notes)
                decisions.append(_decision(c, "reject", f"constraint penalty R_contr={r_contr:.4f} > max_contr="
                                           f"{cfg.max_contr:.4f} ({', '.join(violated)}){notes}", base))
            elif c.votes < cfg.quorum and c.label is None:
                decisions.append(_decision(c, "hold", f"votes {c.votes} < quorum {cfg.quorum}", base, hold="quorum"))
            else:
                scored.append(i)
        # the population the scorer is fitted on: the candidates, a sample of decided edges, labels
        bg = [b for b in inputs.background if b.subject_key != b.object_key]
        bg_con = [index.constraints(b, inputs.schema) for b in bg]
        X_all = self.features([cands[i] for i in scored] + bg, inputs,
                              [contr[i][1] for i in scored] + [float(sum(max(0.0, g) ** 2 for g in c.values()))
                                                               for c in bg_con],
                              [contr[i][0] for i in scored] + bg_con, gauged=len(scored))
        X = X_all[:len(scored)]
        seen = {cands[i].key for i in scored} | {b.key for b in bg}
        lab_X, lab_y = _labelled(inputs, seen)
        cand_labels = np.array([-1.0 if cands[i].label is None else float(cands[i].label) for i in scored])
        bg_labels = np.array([-1.0 if b.label is None else float(b.label) for b in bg])
        fit_X = np.vstack([X_all, lab_X])
        fit_y = np.concatenate([cand_labels, bg_labels, lab_y])
        model = self._fit(fit_X, fit_y, st) if len(fit_X) else st.model
        p = predict(model, X) if (model is not None and len(X)) else np.zeros(len(X))
        p = np.where(cand_labels >= 0, cand_labels, p)

        st.model = model
        if len(fit_X):
            st.effective_n = min(float(cfg.prior_cap), cfg.prior_strength * st.effective_n + len(fit_X))
        # rescore promoted edges when labels refit the model
        rescored: dict[str, float] = {}
        labelled_true = {lab.key for lab in inputs.labels if lab.label}
        if refit and inputs.promoted_features and model is not None:
            rows = [e for e in inputs.promoted_features if e.feature_set == FEATURE_SET and len(e.features) == len(FEATURES)]
            if rows:
                ps = predict(model, np.array([e.features for e in rows]))
                rescored = {e.key: float(1.0 if e.key in labelled_true else p_) for e, p_ in zip(rows, ps)}
        st.labels_seen = ctx.labels
        # the promoted edges that carry a score (unscored and labelled-true ones count as certain)
        pr = inputs.promoted
        held_scores: dict[str, tuple[float, str, str]] = {}
        certain = 0
        for k, s_, o_, sc in zip(pr.key, pr.subject, pr.object, pr.score or [None] * len(pr)):
            sc = rescored.get(k, sc)
            if sc is None or k in labelled_true:
                certain += 1
            else:
                held_scores[k] = (float(sc), s_, o_)
        # the cut over everything scored: the promoted edges and this round's candidates
        eligible = cand_labels != 0
        pool = np.concatenate([np.array([v[0] for v in held_scores.values()]), p[eligible]])
        tau = promotion_cut(pool, target=cfg.target_fmr, base_n=certain, min_p=cfg.min_p)
        st.last_tau = None if math.isinf(tau) else tau
        # AG: would one reading change the decision? A candidate with chunks that was never re-read is
        # ambiguous when one supporting answer would carry it over the cut, or one silent answer
        # (the chunk mentions both endpoints without stating it) would drop it below. "The cut" for
        # the first test is the one reading could reach: computed as if every unread candidate's
        # reading supported it (so that escalation can start even when nothing qualifies yet).
        ag = np.zeros(len(scored), bool)
        if cfg.escalate and len(scored) and model is not None:
            unread = np.array([cands[i].chunked and cands[i].supports + cands[i].contradicts + cands[i].silent == 0
                               for i in scored]) & (cand_labels < 0)
            if unread.any():
                X_sup, X_sil = X.copy(), X.copy()
                X_sup[:, _IX["supports"]] = 1
                X_sil[:, _IX["silent"]] = 1
                p_sup, p_sil = predict(model, X_sup), predict(model, X_sil)
                reach = np.concatenate([np.array([v[0] for v in held_scores.values()]),
                                        np.where(unread, np.maximum(p, p_sup), p)[eligible]])
                tau_reach = promotion_cut(reach, target=cfg.target_fmr, base_n=certain, min_p=cfg.min_p)
                ag = unread & (((p < tau) & ((p_sup >= min(tau, tau_reach)) | (p >= cfg.reread_min_p)))
                               | ((p >= tau) & (p_sil < tau)))
        dg = (p >= tau) & ~ag
        # budget order: R_env at the start of the round
        renv = X[:, _IX["delta_cov"]] + X[:, _IX["delta_vn"]] - cfg.lambda_t * np.exp(-1.0) if len(X) else X[:, 0]
        renv = np.nan_to_num(renv)
        # ties at the cut (scores are discrete): admit only as many as keep the expected FMR within
        # the target, the likeliest first, then by R_env
        kept = sorted(held_scores.values(), key=lambda v: -v[0])
        false = sum(1.0 - v[0] for v in kept if v[0] >= tau)
        n_in = certain + sum(1 for v in kept if v[0] >= tau)
        trimmed: set[int] = set()
        for j in sorted(np.nonzero(dg)[0], key=lambda j: (-p[j], -renv[j], cands[scored[j]].key)):
            if (false + 1.0 - p[j]) / (n_in + 1) > cfg.target_fmr + 1e-12:
                dg[j] = False
                trimmed.add(int(j))
                continue
            false += 1.0 - p[j]
            n_in += 1
        order = sorted((j for j in range(len(scored)) if dg[j]), key=lambda j: (-renv[j], -p[j], cands[scored[j]].key))
        chosen = order[:cfg.max_promotions_per_round]
        losers = functional_losers([cands[scored[j]] for j in chosen], functional_relations(inputs.schema), index.objects)
        chosen_set = {j for j in chosen if cands[scored[j]].key not in losers}
        self._exchange(held_scores, certain, [float(p[j]) for j in chosen_set], tau, decisions, rescored)
        promoted_order = []
        moved = explain_many(model, X) if model is not None and len(X) else []
        tau_txt = "inf" if math.isinf(tau) else f"{tau:.4f}"
        for j, i in enumerate(scored):
            c = cands[i]
            feats = [float(x) for x in X[j]]
            info = {"votes": c.votes, "documents": c.documents, "p_hat": float(p[j]), "tau": None if math.isinf(tau) else tau,
                    "target_fmr": cfg.target_fmr, "r_contr": contr[i][1], "violated": contr[i][2],
                    "gate": "DG" if dg[j] else ("AG" if ag[j] else "low"),
                    "evidence": moved[j] if moved else []}
            head = f"p_hat={p[j]:.4f}"
            if c.label is True:
                head += " (labelled true by a reviewer)"
            extra = {"p_hat": float(p[j]), "features": feats, "feature_set": FEATURE_SET}
            if c.label is False:
                decisions.append(_decision(c, "reject", "labelled false by a reviewer", info, **extra))
            elif j in chosen_set:
                promoted_order.append(c.key)
                decisions.append(_decision(c, "promote", f"DG: {head} >= tau={tau_txt} (target FMR {cfg.target_fmr}); "
                                           f"selected #{len(promoted_order)} by R_env={renv[j]:.4f}", info, **extra))
            elif c.key in losers:
                decisions.append(_decision(c, "hold", losers[c.key], info, hold="functional", **extra))
            elif dg[j]:
                decisions.append(_decision(c, "hold", f"DG: {head} >= tau={tau_txt} but not selected: round budget of "
                                           f"{cfg.max_promotions_per_round} promotions used", info, hold="budget", **extra))
            elif j in trimmed:
                decisions.append(_decision(c, "hold", f"{head} at the cut tau={tau_txt}, but the target FMR "
                                           f"{cfg.target_fmr} is spent by likelier candidates", info, hold="evidence",
                                           **extra))
            elif ag[j]:
                decisions.append(_decision(c, "hold", f"AG: {head} < tau={tau_txt}, one supporting reading would carry it "
                                           "over: escalated for corpus re-reading or review", info, hold="escalated",
                                           **extra))
            else:
                decisions.append(_decision(c, "hold", f"{head} < tau={tau_txt} (target FMR {cfg.target_fmr})", info,
                                           hold="evidence", **extra))
        st.rounds += 1
        escalated = tuple(cands[scored[j]].key for j in range(len(scored)) if ag[j] and cands[scored[j]].key not in chosen_set)
        return RoundDecisions(decisions=decisions, promoted_order=tuple(promoted_order), state=st.model_dump_json(),
                              rescored=rescored, note=f"calibrated policy, target FMR {cfg.target_fmr}",
                              decide_ms=(time.perf_counter() - started) * 1000.0, escalated=escalated)

    def _exchange(self, held: dict[str, tuple[float, str, str]], certain: int, new: list[float], tau: float,
                  decisions: list[EdgeDecision], rescored: dict[str, float]) -> None:
        """Retire the least likely promoted edges below the cut while the expected FMR exceeds the target.

        The promoted set then stays a top slice of everything scored: a candidate better supported
        than an edge promoted earlier takes its place instead of being locked out by a spent error
        budget (and after a refit lowers old scores, the graph is brought back within the target).
        """
        cfg = self.config
        false = sum(1.0 - v[0] for v in held.values()) + sum(1.0 - x for x in new)
        n = certain + len(held) + len(new)
        for k, (p_, s_, o_) in sorted(held.items(), key=lambda kv: (kv[1][0], kv[0])):
            if n == 0 or false / n <= cfg.target_fmr + 1e-12 or p_ >= tau:
                break
            decisions.append(EdgeDecision(
                key=k, subject_key=s_, object_key=o_, action="retire", p_hat=p_,
                reason=(f"p_hat={p_:.4f} < tau={tau:.4f}: exchanged for better-supported candidates to keep the "
                        f"expected FMR of the promoted graph ({false / n:.4f}) within the target {cfg.target_fmr}"),
                inputs={"p_hat": p_, "tau": None if math.isinf(tau) else tau, "expected_fmr": false / n,
                        "target_fmr": cfg.target_fmr}))
            rescored.pop(k, None)
            false -= 1.0 - p_
            n -= 1

    def _index(self, inputs: RoundInputs) -> PromotedIndex:
        """The constraint index of the promoted graph, kept across rounds and extended with what was
        appended since (the store's cache only ever appends between versions it wrote)."""
        pr = inputs.promoted
        cached = self._promoted_index
        if cached is not None:
            old, idx = cached
            n = len(old)
            if len(pr) >= n and (n == 0 or (list(pr.key[n - 1:n]) == list(old.key[n - 1:n])
                                             and list(pr.subject[:1]) == list(old.subject[:1]))):
                if len(pr) > n:
                    idx.extend(EdgeList(pr.subject[n:], pr.relation[n:], pr.object[n:], pr.weight[n:]),
                               inputs.entity_types)
                self._promoted_index = (pr, idx)
                return idx
        idx = PromotedIndex(pr, inputs.entity_types)
        self._promoted_index = (pr, idx)
        return idx

    # -- features ---------------------------------------------------------------------------------
    def features(self, cands: list[CandidateRow], inputs: RoundInputs, r_contr: list[float], cons: list, *,
                 gauged: int | None = None) -> np.ndarray:
        """The feature matrix of ``cands`` (see :mod:`kgr.gauge.features`).

        The gauge columns are computed for the first ``gauged`` rows only (default: all) and are
        NaN for the others (the background sample the scorer is fitted on does not need them).
        """
        cfg = self.config
        X = np.zeros((len(cands), len(FEATURES)))
        if not cands:
            return X
        source_features(cands, X)
        X[:, _IX["r_contr"]] = r_contr
        X[:, _IX["duplicate"]] = [c.duplicate_entity for c in cons]
        X[:, _IX["functional_conflict"]] = [min(1.0, c.functional_conflict) for c in cons]
        eg = evidence_graph(cands, inputs.promoted, inputs.pending, inputs.entity_types)
        self._degrees(eg, X)
        self._rule_features(eg, inputs, X)
        ev = role_evidence(eg.facts, eg.cand_h, eg.cand_r, eg.cand_t, entity_types=eg.vocab.entity_types)
        X[:, _IX["head_fit"]] = ev.head_fit
        X[:, _IX["tail_fit"]] = ev.tail_fit
        X[:, _IX["head_seen"]] = np.log1p(ev.head_seen)
        X[:, _IX["tail_seen"]] = np.log1p(ev.tail_seen)
        if ev.type_share_head is not None:
            X[:, _IX["type_share_head"]] = ev.type_share_head
            X[:, _IX["type_share_tail"]] = ev.type_share_tail
        if cfg.embedding and inputs.context.labels >= cfg.scorer.min_labels:
            self._embedding_features(eg, X)
        self._gauge_features(eg, X, len(cands) if gauged is None else gauged)
        return X

    @staticmethod
    def _degrees(eg: EvidenceGraph, X: np.ndarray) -> None:
        f = eg.facts
        keep = f.head != f.tail
        deg = np.bincount(np.concatenate([f.head[keep], f.tail[keep]]), minlength=f.n_entities)
        h_own = (eg.cand_h != eg.cand_t).astype(np.int64)
        dh = deg[eg.cand_h] - h_own
        dt = deg[eg.cand_t] - h_own
        X[:, _IX["log_min_degree"]] = np.log1p(np.maximum(0, np.minimum(dh, dt)))
        X[:, _IX["log_max_degree"]] = np.log1p(np.maximum(0, np.maximum(dh, dt)))

    def _rule_features(self, eg: EvidenceGraph, inputs: RoundInputs, X: np.ndarray) -> None:
        cfg = self.config
        key = (inputs.epoch, eg.vocab.relations, eg.vocab.entities[:1], eg.vocab.n_entities)
        if self._rules is None or self._rules[0] != key:
            rs = mine_rules(eg.facts, min_support=cfg.rules_min_support, min_confidence=cfg.rules_min_confidence,
                            relation_names=eg.vocab.relations)
            self._rules = (key, rs)
        rs = self._rules[1]
        ev = rs.evidence(eg.cand_h, eg.cand_r, eg.cand_t, facts=eg.facts)
        X[:, _IX["rule_noisy_or"]] = ev.noisy_or
        X[:, _IX["rule_best"]] = ev.best_confidence

    def _embedding_features(self, eg: EvidenceGraph, X: np.ndarray) -> None:
        from kgr.gauge.embedding import CrossFitter

        if self._kge is None:
            self._kge = CrossFitter(dim=self.config.embedding_dim)
        f = eg.facts
        query = ~eg.promoted
        scores = self._kge.scores(f, query, entity_types=eg.vocab.entity_types, entity_keys=eg.vocab.entities,
                                  relation_keys=eg.vocab.relations)
        rank = np.full(len(f), np.nan)
        rank[np.nonzero(query)[0]] = scores.rank_quantile
        r = rank[eg.cand_row]
        X[:, _IX["kge_rank"]] = np.nan_to_num(r, nan=0.5)
        X[:, _IX["kge_known"]] = (~np.isnan(r)).astype(np.float64)

    def _gauge_features(self, eg: EvidenceGraph, X: np.ndarray, gauged: int) -> None:
        cfg = self.config
        f = eg.facts
        prom = eg.promoted & (f.head != f.tail)
        n = f.n_entities
        a = np.concatenate([f.head[prom], f.tail[prom]])
        b = np.concatenate([f.tail[prom], f.head[prom]])
        adj = sp.csr_array((np.ones(len(a)), (a, b)), shape=(n, n))
        adj.data[:] = 1.0
        adj.sum_duplicates()
        adj.data[:] = 1.0
        for col in ("g0", "b", "delta_vn", "delta_cov", "has_context"):
            X[gauged:, _IX[col]] = np.nan
        ok = (eg.cand_h != eg.cand_t) & (np.arange(len(eg.cand_h)) < gauged)
        if not ok.any():
            return
        gb = gauge_batch(adj, eg.cand_h[ok], eg.cand_t[ok], hops=cfg.hops, k_max=cfg.k_max, kappa=cfg.kappa)
        rows = np.nonzero(ok)[0]
        X[rows, _IX["g0"]] = gb.g0
        X[rows, _IX["b"]] = gb.b
        X[rows, _IX["delta_vn"]] = gb.delta_vn
        X[rows, _IX["delta_cov"]] = gb.delta_cov
        X[rows, _IX["has_context"]] = (gb.context_edges > 0).astype(np.float64)

    # -- the scorer -------------------------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray, st: CalibratedState) -> ScorerModel:
        cfg = self.config
        return fit_scorer(X, y, cfg.scorer, prior=st.model.latent if st.model is not None else None,
                          prior_weight=cfg.prior_strength * st.effective_n)


def _labelled(inputs: RoundInputs, skip: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and labels of labelled edges that are not this round's candidates."""
    rows, ys = [], []
    for lab in inputs.labels:
        if lab.key in skip or lab.features is None or lab.feature_set != FEATURE_SET or len(lab.features) != len(FEATURES):
            continue
        rows.append(lab.features)
        ys.append(1.0 if lab.label else 0.0)
    if not rows:
        return np.zeros((0, len(FEATURES))), np.zeros(0)
    return np.asarray(rows, dtype=np.float64), np.asarray(ys)


def _decision(c: CandidateRow, action: str, reason: str, inputs: dict, **extra) -> EdgeDecision:
    """A decision record (``inputs`` holds plain numbers, strings and lists only)."""
    return EdgeDecision.model_construct(key=c.key, subject_key=c.subject_key, object_key=c.object_key, action=action,
                                        reason=reason, inputs=inputs, p_hat=extra.get("p_hat"),
                                        features=extra.get("features"), feature_set=extra.get("feature_set"),
                                        hold=extra.get("hold"))
