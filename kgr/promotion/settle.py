r"""The calibrated policy: one settle scores every managed edge with one model and cuts once.

A **settle** (one :func:`kgr.store.rounds.run_round` of this policy) reads every staged edge the
policy manages — pending, held, rejected, and promoted by it (:mod:`kgr.store.settle`) — and:

1. computes their features on the evidence graph (:class:`~kgr.evidence.features.EvidenceFeatures`),
   which depends on the staged evidence only;
2. rejects the hard violations (declared domain/range, self loops, near-duplicate entities:
   :math:`R_{\text{contr}} >` ``max_contr``) and the edges labelled false;
3. fits **one** scorer (:class:`~kgr.evidence.scorer.EvidenceScorer`) on all of them — the
   latent-class prior, and with enough labels a logistic regression with the labels'
   selection accounted for — and scores every edge, promoted ones included (a label true sets
   :math:`\hat p = 1`);
4. **cuts once** (:mod:`kgr.promotion.cut`): the largest top slice of the ranking whose bound on the
   false-promotion rate (:mod:`kgr.promotion.certificate`: Clopper–Pearson on the uniform audit
   labels, the model's expectation standing in for missing audits) stays within ``target_fmr``;
5. writes the difference in **one version**: new promotions, promoted edges that fell out of the
   cut retired, holds and rejections whose outcome changed; an edge whose outcome did not change
   gets no decision record, only its new score (and, when its evidence had changed, the mark
   that it was weighed).

The promoted set is therefore a function of the staged evidence, the labels, the verifier answers
and these settings — not of the order in which they arrived, nor of how many settles ran: there is
no per-round cap and no state carried from one fit to the next (the fit and the mined rules are
cached by content only). A settle with nothing new (the store at the version it last settled,
no managed edge with unweighed evidence, the same settings) reads two small records and writes
nothing.

**The gates on** :math:`\hat p` keep their geDIG meaning: DG promotes (the cut); AG *gathers
evidence* — an edge with chunk sources that no verifier has read, below the cut with one
*supporting* reading able to carry it over (or :math:`\hat p \ge` ``reread_min_p``), is held
``escalated`` for :mod:`kgr.ingest.reread` and the review queue (with ``hold_unread``, also one
above the cut that one *silent* reading would drop below it); low holds (``evidence``).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from kgr.model.promotion import RoundContext, RoundDecisions, RoundInputs, RoundRequest
from kgr.promotion.config import CalibratedConfig, CalibratedState, load_state
from kgr.promotion.cut import cut

if TYPE_CHECKING:  # the evidence modules load with the first settle that decides (not for one with nothing new)
    from kgr.evidence.checks import Checks
    from kgr.evidence.features import EvidenceFeatures
    from kgr.promotion.cut import Cut

__all__ = ["CalibratedPolicy", "Scored"]


@dataclass(frozen=True)
class Scored:
    """Everything a settle computed about its rows (arrays parallel to ``inputs.candidates``).

    ``p`` is the recorded score (1 / 0 for labelled rows, the model's otherwise, 0 for hard
    violations); ``action`` is ``promote`` / ``hold`` / ``reject`` and ``hold`` its kind.
    """

    X: np.ndarray
    p: np.ndarray
    checks: Checks
    scorer: object
    cut: Cut
    action: list[str]
    hold: list[str | None]
    gate: list[str]
    labels: int


def _ag(cfg: CalibratedConfig, scorer, X: np.ndarray, p: np.ndarray, unread: np.ndarray, below: np.ndarray,  # noqa: ANN001
        above: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """The AG gate: unread edges one reading would move across the cut (see the module docstring)."""
    from kgr.evidence.features import IX

    none = np.zeros(len(p), bool)
    if not cfg.escalate or not unread.any():
        return none, none
    idx = np.nonzero(unread)[0]
    Xs, Xq = X[idx].copy(), X[idx].copy()
    Xs[:, IX["supports"]] = 1.0
    Xq[:, IX["silent"]] = 1.0
    p_sup, p_sil = np.zeros(len(p)), np.ones(len(p))
    p_sup[idx], p_sil[idx] = scorer.predict_proba(Xs)[:, 1], scorer.predict_proba(Xq)[:, 1]
    ref = tau if math.isfinite(tau) else 1.0
    ag_below = unread & below & ((p_sup >= ref) | (p >= cfg.reread_min_p))
    ag_above = unread & above & (p_sil < tau) if cfg.hold_unread else none
    return ag_below, ag_above


class CalibratedPolicy:
    """See the module docstring. One object per process: it caches mined rules, embeddings and fits,
    so concurrent settles on one object (threads of a server, ``Engine`` callers) score one at a time
    (the feature transformer keeps its last checks between ``fit_transform`` and their use)."""

    name: ClassVar[str] = "calibrated"
    counts: ClassVar[bool] = False  # run_round need not count the promoted graph first

    def __init__(self, config: CalibratedConfig | None = None):
        self.config = config or CalibratedConfig()
        self._features: EvidenceFeatures | None = None
        self._fit: tuple[str, object] | None = None
        self._scoring = threading.Lock()

    @property
    def features(self) -> "EvidenceFeatures":
        """The feature transformer (made on first use; it keeps the mined rules and embeddings)."""
        if self._features is None:
            from kgr.evidence.features import EvidenceFeatures

            c = self.config
            self._features = EvidenceFeatures(duplicate_similarity=c.duplicate_similarity,
                                              duplicate_max_degree=c.duplicate_max_degree,
                                              rules_min_support=c.rules_min_support,
                                              rules_min_confidence=c.rules_min_confidence,
                                              embedding_dim=c.embedding_dim)
        return self._features

    # -- the seam -------------------------------------------------------------------------------
    def prepare(self, context: RoundContext) -> None:
        """Import what :meth:`decide` needs (the evidence stack over numpy and scipy, ~0.5-1 s in a new
        process; scikit-learn only when the store holds labels). The store calls it in a thread while
        a settle's reads wait for the database (:func:`kgr.store.settle.read_settle`)."""
        import kgr.evidence.features  # noqa: F401
        import kgr.evidence.graph  # noqa: F401
        import kgr.evidence.latent  # noqa: F401
        import kgr.promotion.certificate  # noqa: F401
        import kgr.promotion.outcome  # noqa: F401

        if context.labels:
            import kgr.evidence.scorer  # noqa: F401

    def plan(self, context: RoundContext, state: str | None) -> RoundRequest:
        st = load_state(state)
        settled = st.settled_version if st.config == self.config.digest() else None
        return RoundRequest(limit=1, settle=True, settled_version=settled)

    def decide(self, inputs: RoundInputs, state: str | None) -> RoundDecisions:
        started = time.perf_counter()
        cfg = self.config
        st = load_state(state)
        note = f"calibrated policy, target FMR {cfg.target_fmr}"
        if inputs.nothing_new:
            return RoundDecisions(decisions=[], note=note, report=st.report or self._empty_report(),
                                  decide_ms=(time.perf_counter() - started) * 1000.0)
        if not inputs.candidates:  # nothing staged: no fit (and no scikit-learn import) for an empty store
            from kgr.promotion.outcome import advice

            report = {**self._empty_report(), "advice": advice(inputs, None, cfg)}
            return RoundDecisions(decisions=[], note=note, report=report,
                                  decide_ms=(time.perf_counter() - started) * 1000.0)
        scored = self.score(inputs)
        from kgr.promotion.outcome import assemble

        out = assemble(inputs, scored, cfg)
        wrote = bool(out.decisions or out.refreshed)
        st = CalibratedState(settled_version=inputs.context.version + (1 if wrote else 0), config=cfg.digest(),
                             last_tau=None if math.isinf(scored.cut.tau) else scored.cut.tau, report=out.report)
        return RoundDecisions(decisions=out.decisions, promoted_order=out.promoted_order, state=st.model_dump_json(),
                              refreshed=out.refreshed, note=note, escalated=out.escalated, report=out.report,
                              decide_ms=(time.perf_counter() - started) * 1000.0)

    def _empty_report(self) -> dict:
        return {"target_fmr": self.config.target_fmr, "level": self.config.level,
                "audits_needed": self.config.prior_audits}

    # -- scoring --------------------------------------------------------------------------------
    def _scorer(self, X: np.ndarray, y: np.ndarray, audit: np.ndarray):  # noqa: ANN202 - an EvidenceScorer
        """The scorer fitted on ``X``, ``y`` and ``audit`` (cached by their content); without a single
        label the latent-class scorer, which is the estimator's no-label case without scikit-learn."""
        key = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (X, y, audit))
                             + self.config.digest().encode()).hexdigest()
        if self._fit is None or self._fit[0] != key:
            c = self.config
            if not (y >= 0).any():
                from kgr.evidence.latent import LatentScorer

                sc = LatentScorer().fit(X, y)
            else:
                from kgr.evidence.scorer import EvidenceScorer

                sc = EvidenceScorer(min_labels=c.min_labels, min_per_class=c.min_per_class, C=c.C).fit(X, y,
                                                                                                     audit=audit)
            self._fit = (key, sc)
        return self._fit[1]

    def score(self, inputs: RoundInputs) -> Scored:
        """Features, checks, the fit, the cut and each row's outcome (see the module docstring);
        one call at a time per policy object."""
        with self._scoring:
            return self._score(inputs)

    def _score(self, inputs: RoundInputs) -> Scored:
        cfg = self.config
        rows = inputs.candidates
        n = len(rows)
        from kgr.evidence.graph import Evidence

        ev = Evidence(rows=rows, pinned=inputs.promoted, entity_types=inputs.entity_types, schema=inputs.schema)
        label = np.array([-1.0 if c.label is None else float(bool(c.label)) for c in rows])
        n_labels = int((label >= 0).sum())
        X = self.features.fit_transform(ev, embedding=cfg.embedding and n_labels >= cfg.min_labels)
        ch = self.features.checks_
        hard = (ch.r_contr > cfg.max_contr + 1e-12) | ch.self_loop
        pop = ~hard
        audit = np.array([c.label_kind == "audit" for c in rows], dtype=bool) & (label >= 0)
        sc = self._scorer(X[pop], label[pop], audit[pop])
        model_p = np.zeros(n)
        if pop.any():
            model_p[pop] = sc.predict_proba(X[pop])[:, 1]
        p = np.where(label >= 0, label, model_p)
        quorum = np.array([c.votes < cfg.quorum for c in rows], dtype=bool) & (label < 0)
        eligible = pop & (label != 0) & ~quorum
        oof = np.zeros(n)
        oof[np.nonzero(pop & (label >= 0))[0]] = sc.oof_
        aud = np.nonzero(pop & audit)[0]
        groups = [f"{c.subject_key}|{c.relation}" if ch.functional[i] else None for i, c in enumerate(rows)]
        lab = np.nonzero(pop & (label >= 0))[0] if cfg.calibration_check else None
        ct = cut(p, [c.key for c in rows], target=cfg.target_fmr, prior_audits=cfg.prior_audits, eligible=eligible,
                 known=label == 1, groups=groups, blocked=ch.pinned_object, audit_scores=oof[aud],
                 audit_false=label[aud] == 0, min_p=cfg.min_p, level=cfg.level,
                 label_scores=None if lab is None else oof[lab], label_false=None if lab is None else label[lab] == 0)
        inside = np.zeros(n, bool)
        inside[ct.order[:ct.k]] = True
        unread = pop & (label < 0) & np.array([c.chunked and not c.reread and c.supports + c.contradicts + c.silent == 0
                                               for c in rows], dtype=bool)
        ag_below, ag_above = _ag(cfg, sc, X, p, unread, eligible & ~inside, inside, ct.tau)
        action, hold, gate = [], [], []
        for i in range(n):
            if not pop[i] or label[i] == 0:
                action.append("reject"), hold.append(None), gate.append("low")
            elif inside[i] and not ag_above[i]:
                action.append("promote"), hold.append(None), gate.append("DG")
            else:
                kind = ("escalated" if ag_below[i] or ag_above[i] else "quorum" if quorum[i]
                        else "functional" if i in ct.losers else "evidence")
                action.append("hold"), hold.append(kind), gate.append("AG" if kind == "escalated" else "low")
        return Scored(X=X, p=p, checks=ch, scorer=sc, cut=ct, action=action, hold=hold, gate=gate, labels=n_labels)
