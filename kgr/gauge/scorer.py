r"""The promotion scorer: a calibrated :math:`\hat p = P(\text{true} \mid \text{evidence})` per candidate.

Two layers, both fitted on every round's candidates (no labels needed), the second only once
labels exist.

**1. Without labels: a latent-class model over evidence views** (the documented rule). The
features (:mod:`kgr.gauge.features`) are grouped into categorical *views*, each ordered from the
least to the most favourable evidence:

=================  =====================================================================
view               levels
=================  =====================================================================
``sources``        independent documents :math:`d = 1, 2, 3, \ge 4`
``verifier``       contradicts / silent only / not re-read / supports
``constraints``    :math:`R_{\text{contr}} > 0.25` / soft (:math:`0 < R \le 0.25`) / none
``rules``          path/inverse rule noisy-or: none / < 0.3 / < 0.7 / :math:`\ge 0.7`
``quality``        extraction quality: < 0.5 / unknown / < 0.8 / :math:`\ge 0.8`
``entities``       an endpoint in nothing else / roles fit poorly / fairly / well
``embedding``      ComplEx rank quantile: < 0.5 / unknown / < 0.8 / < 0.95 / :math:`\ge 0.95`
=================  =====================================================================

A two-class latent-class model (naive Bayes with the class unobserved),

.. math::

    P(x) = \sum_{y \in \{0, 1\}} \pi_y \prod_v \theta_{v, y}(x_v),

is fitted by EM with symmetric Dirichlet priors (``alpha``) over the views of
:data:`LABEL_FREE_VIEWS` (sources, verifier, constraints, rules, quality: the evidence whose
direction held on every benchmark stream; ``entities`` and ``embedding`` are available but left to
the refit). In every M-step the likelihood ratio :math:`\theta_{v,1}/\theta_{v,0}` of each view is
made non-decreasing in its level (pool-adjacent-violators, :func:`_monotone`): more independent
sources, a supporting reading, firing rules can never count *against* a triple. That order is
what names the class *true*, and it keeps EM from settling on a cluster that is not truth (say,
"well-connected entities"). Labelled candidates enter with their class fixed (semi-supervised
EM: labels chosen on the observed evidence are *missing at random*, so the likelihood stays
valid). :data:`VIEW_PRIORS` gives the verifier view a prior worth ``view_prior_strength``
candidates until answers accumulate. The posterior

.. math::

    \hat p_{\text{LCM}}(x) = \frac{\pi_1 \prod_v \theta_{v,1}(x_v)}{\sum_y \pi_y \prod_v \theta_{v,y}(x_v)}

is the score without labels. Measured on the benchmark streams it is conservative at the top
(it claims less certainty than its best candidates have), which keeps the FMR target on the safe
side but lowers acceptance; labels correct it.

**2. With labels: a MAP logistic refit.** Once there are at least ``min_labels`` labels with both
classes present (at least 3 each), a logistic model over the latent-class logit and all
standardised features is fitted to the labels by maximum a posteriori (:func:`_refit`, scipy's
L-BFGS on a convex objective), with Gaussian priors that centre it on the label-free model:
weight 1 on the latent-class logit, 0 on every feature, so a few labels move the scores a little
and many labels let structure, role profiles and the embedding earn weights of either sign.
Labels are recorded with the feature vector of the edge's last scored decision, so a refit uses
exactly what the policy saw.

**Explanations.** :func:`explain` lists each view's log-likelihood ratio
:math:`\ln \theta_{v,1}(x_v)/\theta_{v,0}(x_v)` (and, after a refit, each feature's
:math:`w_j (x_j - \bar x_j)/s_j`): the pieces of evidence that moved :math:`\hat p` most.

Examples
--------
>>> import numpy as np
>>> from kgr.gauge.features import FEATURES
>>> rng = np.random.default_rng(0)
>>> X = np.zeros((400, len(FEATURES)))
>>> truth = rng.random(400) < 0.7
>>> ix = {f: i for i, f in enumerate(FEATURES)}
>>> X[:, ix["log_documents"]] = np.log(np.where(truth, rng.integers(1, 5, 400), rng.integers(1, 3, 400)))
>>> X[:, ix["rule_noisy_or"]] = np.where(truth, rng.uniform(0.4, 1, 400), rng.uniform(0, 0.5, 400))
>>> X[:, ix["log_min_degree"]] = np.log1p(np.where(truth, 3, rng.integers(0, 4, 400)))
>>> X[:, ix["kge_known"]] = 1.0
>>> X[:, ix["kge_rank"]] = np.where(truth, rng.uniform(0.6, 1, 400), rng.uniform(0, 0.8, 400))
>>> model = fit_scorer(X)
>>> p = predict(model, X)
>>> bool(p[truth].mean() > p[~truth].mean() + 0.3)
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.gauge.features import FEATURE_SET, FEATURES, feature_index

__all__ = ["VIEWS", "ScorerModel", "LatentClass", "Logistic", "view_codes", "fit_scorer", "predict", "explain",
           "explain_many", "ScorerConfig"]

#: View name → number of levels. Levels are ordered from the least to the most favourable evidence:
#: the fitted likelihood ratio of every view is kept non-decreasing in its level.
VIEWS: dict[str, int] = {"sources": 4, "verifier": 4, "constraints": 3, "entities": 4, "rules": 4,
                         "embedding": 5, "quality": 4}

_IX = feature_index()

#: The views the latent-class model uses by default: evidence about the assertion itself (its
#: sources, what re-reading found, the schema, the extraction's quality) and path/inverse rules.
#: Entity degree, role profiles and the embedding are left to the refit on labels: measured on the
#: three benchmark streams their direction is not the same everywhere (a swapped object keeps a
#: head that already holds the relation), so a label-free model must not assume one.
LABEL_FREE_VIEWS: tuple[str, ...] = ("sources", "verifier", "constraints", "rules", "quality")

#: Informative priors of views whose evidence may be rare at first, as (false-class, true-class)
#: level distributions; they enter the M-step as pseudo-counts worth ``view_prior_strength``
#: candidates, split by the class prior, so the likelihood ratio starts at the prior's and moves to
#: the data's as answers accumulate. A verifier that re-read a chunk and found the triple stated is
#: strong evidence (LR ≈ 5.6), a contradiction stronger against (LR ≈ 0.1); silence is evidence
#: against (LR ≈ 0.3: the chunks that mention both endpoints, the candidate's own sources among
#: them, do not state the relation — what re-reading finds for an extractor's hallucination).
VIEW_PRIORS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "verifier": ((0.20, 0.35, 0.40, 0.05), (0.02, 0.10, 0.60, 0.28)),
}


class ScorerConfig(BaseModel):
    """Settings of :func:`fit_scorer`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: float = Field(1.0, gt=0.0, description="symmetric Dirichlet prior of each view's level probabilities")
    em_iterations: int = Field(200, ge=1, description="EM iterations at most")
    em_tolerance: float = Field(1e-6, gt=0.0, description="stop when the mean log-likelihood improves less")
    min_labels: int = Field(20, ge=2, description="labels (both classes present) before the logistic refit")
    prior_sd_latent: float = Field(0.5, gt=0.0, description=(
        "refit: prior standard deviation of the latent-class logit's weight (around 1)"))
    prior_sd_features: float = Field(0.5, gt=0.0, description=(
        "refit: prior standard deviation of each standardised feature's weight (around 0)"))
    prior_sd_intercept: float = Field(2.0, gt=0.0, description="refit: prior standard deviation of the intercept")
    views: tuple[str, ...] = Field(LABEL_FREE_VIEWS, description="views of the latent-class model")
    view_prior_strength: float = Field(50.0, ge=0.0, description="candidates the VIEW_PRIORS stand for")


def _bins(x: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    return np.searchsorted(np.asarray(edges, dtype=np.float64), x, side="right")


def view_codes(X: np.ndarray) -> dict[str, np.ndarray]:
    """Each view's level per candidate (see the module docstring), least favourable first."""
    n = len(X)
    docs = np.rint(np.exp(X[:, _IX["log_documents"]])).astype(np.int64)
    sup, con, sil = X[:, _IX["supports"]], X[:, _IX["contradicts"]], X[:, _IX["silent"]]
    # contradicts < silent only < nothing read < supports
    verifier = np.where(con > 0, 0, np.where(sup > 0, 3, np.where(sil > 0, 1, 2)))
    known = X[:, _IX["kge_known"]] > 0
    rank = X[:, _IX["kge_rank"]]
    # < 0.5 < unknown < 0.8 < 0.95 <
    kge = np.where(~known, 1, np.where(rank < 0.5, 0, 1 + _bins(rank, (0.5, 0.8, 0.95))))
    fit = np.minimum(X[:, _IX["head_fit"]], X[:, _IX["tail_fit"]])
    isolated = np.expm1(X[:, _IX["log_min_degree"]]) < 0.5
    # an endpoint in nothing else < the endpoints' roles fit r poorly < fairly < well
    entities = np.where(isolated, 0, 1 + _bins(fit, (0.3, 0.6)))
    # low < unknown < fair < high
    q = X[:, _IX["quality"]]
    quality = np.where(X[:, _IX["has_quality"]] > 0, np.where(q < 0.5, 0, 1 + _bins(q, (0.5, 0.8))), 1)
    rules = np.where(X[:, _IX["rule_noisy_or"]] > 0, 1 + _bins(X[:, _IX["rule_noisy_or"]], (0.3, 0.7)), 0)
    codes = {
        "sources": np.clip(docs, 1, 4) - 1,
        "verifier": verifier,
        "constraints": 2 - _bins(X[:, _IX["r_contr"]], (1e-12, 0.25)),
        "entities": entities,
        "rules": rules,
        "embedding": kge,
        "quality": quality,
    }
    for name, c in codes.items():
        if len(c) != n or (n and (c.min() < 0 or c.max() >= VIEWS[name])):  # pragma: no cover - a binning bug
            raise AssertionError(f"view {name} out of range")
    return {k: v.astype(np.int64) for k, v in codes.items()}


def _monotone(c0: np.ndarray, c1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Level probabilities of both classes with a non-decreasing likelihood ratio θ1/θ0.

    Pools adjacent levels that violate the order (pool-adjacent-violators on the ratio, weighted by
    the levels' counts): pooled levels share one ratio, and each class keeps its own total mass.
    """
    t0, t1 = c0 / c0.sum(), c1 / c1.sum()
    blocks = [[i] for i in range(len(t0))]
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1):
            r_here = t1[blocks[b]].sum() / t0[blocks[b]].sum()
            r_next = t1[blocks[b + 1]].sum() / t0[blocks[b + 1]].sum()
            if r_here > r_next + 1e-12:
                blocks[b] = blocks[b] + blocks.pop(b + 1)
                changed = True
                break
    n0, n1 = t0.copy(), t1.copy()
    for blk in blocks:
        m0, m1 = t0[blk].sum(), t1[blk].sum()
        share = (t0[blk] + t1[blk]) / (m0 + m1)   # split the pooled mass over its levels alike in both classes
        n0[blk], n1[blk] = m0 * share, m1 * share
    return n0 / n0.sum(), n1 / n1.sum()


class LatentClass(BaseModel):
    r"""The fitted latent-class model: :math:`\pi_1` and :math:`\theta_{v,y}` per view."""

    model_config = ConfigDict(extra="forbid")

    prior: float
    views: dict[str, list[list[float]]]   # view -> [class 0 levels, class 1 levels]
    iterations: int
    loglik: float

    def log_ratios(self, codes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per view, :math:`\\ln \\theta_{v,1}(x_v) - \\ln \\theta_{v,0}(x_v)` per candidate."""
        out = {}
        for v, (t0, t1) in self.views.items():
            lr = np.log(np.asarray(t1)) - np.log(np.asarray(t0))
            out[v] = lr[codes[v]]
        return out

    def logit(self, codes: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(codes.values()))) if codes else 0
        z = np.full(n, np.log(self.prior) - np.log1p(-self.prior))
        for lr in self.log_ratios(codes).values():
            z = z + lr
        return z


class Logistic(BaseModel):
    """The logistic refit: standardisation of the features and the weights (the latent-class logit's first)."""

    model_config = ConfigDict(extra="forbid")

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    labels: int


class ScorerModel(BaseModel):
    """A fitted scorer (persisted in the calibrated policy's state)."""

    model_config = ConfigDict(extra="forbid")

    feature_set: str = FEATURE_SET
    latent: LatentClass
    logistic: Logistic | None = None


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def _heuristic_start(X: np.ndarray) -> np.ndarray:
    """Initial responsibilities: more independent sources and learned plausibility, fewer violations."""
    z = (1.2 * (X[:, _IX["log_documents"]] - np.log(1.5)) + 1.5 * (X[:, _IX["rule_noisy_or"]] - 0.3)
         + 1.5 * X[:, _IX["kge_known"]] * (X[:, _IX["kge_rank"]] - 0.6) - 3.0 * X[:, _IX["r_contr"]]
         + 0.8 * (np.expm1(X[:, _IX["log_min_degree"]]) > 0.5) - 0.4
         + 2.0 * X[:, _IX["supports"]] - 2.0 * X[:, _IX["contradicts"]])
    return _sigmoid(z)


def _fit_latent(codes: dict[str, np.ndarray], views: Sequence[str], resp: np.ndarray, fixed: np.ndarray,
                cfg: ScorerConfig, prior_model: LatentClass | None = None, prior_weight: float = 0.0) -> LatentClass:
    n = len(resp)
    pw = prior_weight if prior_model is not None else 0.0
    p1 = prior_model.prior if prior_model is not None else 0.5
    pseudo = {v: np.asarray(prior_model.views[v]) if prior_model is not None and v in prior_model.views
              and len(prior_model.views[v][0]) == VIEWS[v] else None for v in views}
    prev = -np.inf
    it = 0
    theta: dict[str, np.ndarray] = {}
    prior = 0.5
    for it in range(1, cfg.em_iterations + 1):
        # M-step
        w1, w0 = resp, 1.0 - resp
        prior = float((w1.sum() + pw * p1 + cfg.alpha) / (n + pw + 2 * cfg.alpha))
        for v in views:
            k = VIEWS[v]
            c1 = np.bincount(codes[v], weights=w1, minlength=k) + cfg.alpha
            c0 = np.bincount(codes[v], weights=w0, minlength=k) + cfg.alpha
            if pseudo[v] is not None:
                c0 = c0 + pw * (1.0 - p1) * pseudo[v][0]
                c1 = c1 + pw * p1 * pseudo[v][1]
            if v in VIEW_PRIORS:
                f0, f1 = VIEW_PRIORS[v]
                c0 = c0 + cfg.view_prior_strength * (1.0 - prior) * np.asarray(f0)
                c1 = c1 + cfg.view_prior_strength * prior * np.asarray(f1)
            theta[v] = np.vstack(_monotone(c0, c1))
        # E-step
        l1 = np.full(n, np.log(prior))
        l0 = np.full(n, np.log1p(-prior))
        for v in views:
            l0 = l0 + np.log(theta[v][0][codes[v]])
            l1 = l1 + np.log(theta[v][1][codes[v]])
        m = np.maximum(l0, l1)
        ll = float(np.mean(m + np.log(np.exp(l0 - m) + np.exp(l1 - m))))
        post = _sigmoid(l1 - l0)
        resp = np.where(fixed >= 0, fixed, post)
        if ll - prev < cfg.em_tolerance:
            break
        prev = ll
    return LatentClass(prior=prior, views={v: theta[v].tolist() for v in views}, iterations=it, loglik=prev)


def fit_scorer(X: np.ndarray, labels: np.ndarray | None = None, config: ScorerConfig | None = None, *,
               prior: LatentClass | None = None, prior_weight: float = 0.0) -> ScorerModel:
    """Fit the scorer on candidates' features ``X`` (``n × len(FEATURES)``).

    Parameters
    ----------
    X : numpy.ndarray
        Feature rows of every candidate to learn from (unlabelled and labelled).
    labels : numpy.ndarray of float, optional
        Per row: 1 (labelled true), 0 (labelled false) or -1 / NaN (no label).
    config : ScorerConfig, optional
    prior : LatentClass, optional
        A previous model whose level probabilities enter the M-step as Dirichlet pseudo-counts
        worth ``prior_weight`` candidates (online EM across rounds).
    prior_weight : float
        How many candidates the prior stands for.

    Returns
    -------
    ScorerModel
        The latent-class model, and a logistic refit when there are enough labels.

    Raises
    ------
    KgrValidationError
        ``X`` of the wrong width, or labels of the wrong length.
    """
    cfg = config or ScorerConfig()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(FEATURES):
        raise KgrValidationError(f"features must be n x {len(FEATURES)}, got {X.shape}", field="features")
    n = len(X)
    fixed = np.full(n, -1.0)
    if labels is not None:
        lab = np.asarray(labels, dtype=np.float64)
        if lab.shape != (n,):
            raise KgrValidationError("one label (or -1) per row", field="labels")
        fixed = np.where(np.isnan(lab) | (lab < 0), -1.0, (lab > 0.5).astype(np.float64))
    codes = view_codes(X)
    views = [v for v in cfg.views if v in VIEWS]
    if prior is not None and prior_weight > 0:
        start = np.where(fixed >= 0, fixed, _sigmoid(prior.logit({v: codes[v] for v in prior.views if v in codes})))
    else:
        start = np.where(fixed >= 0, fixed, _heuristic_start(X))
    latent = _fit_latent(codes, views, start, fixed, cfg, prior, prior_weight)
    model = ScorerModel(latent=latent)
    labelled = fixed >= 0
    n_pos = fixed[labelled].sum()
    if labelled.sum() >= cfg.min_labels and min(n_pos, labelled.sum() - n_pos) >= 3:
        with np.errstate(invalid="ignore"):  # a column missing everywhere (NaN) standardises to 0
            mean, scale = np.nan_to_num(np.nanmean(X, axis=0)), np.nan_to_num(np.nanstd(X, axis=0))
        scale[scale < 1e-9] = 1.0
        z = np.clip(latent.logit({k: v[labelled] for k, v in codes.items()}), -20, 20)
        coef, intercept = _refit(z, np.nan_to_num((X[labelled] - mean) / scale), fixed[labelled], cfg)
        model.logistic = Logistic(mean=mean.tolist(), scale=scale.tolist(), coef=coef.tolist(), intercept=intercept,
                                  labels=int(labelled.sum()))
    return model


def _refit(z: np.ndarray, Xs: np.ndarray, y: np.ndarray, cfg: ScorerConfig) -> tuple[np.ndarray, float]:
    r"""MAP logistic refit on labels: :math:`\hat p = \sigma(a + b z + w^\top \tilde x)`.

    :math:`z` is the latent-class logit, :math:`\tilde x` the standardised features. Gaussian
    priors :math:`b \sim N(1, s_z^2)`, :math:`w_j \sim N(0, s_x^2)`, :math:`a \sim N(0, s_a^2)`
    centre the refit on the label-free model (keep it as it is) rather than on a flat line: labels
    picked near the decision cut span a narrow range, and a weight shrunk to zero would give every
    candidate the labels' base rate. Every feature can then earn a weight of either sign from the
    labels. Fitted with scipy's L-BFGS (the negative log-posterior is convex).
    """
    from scipy.optimize import minimize

    D = np.hstack([z[:, None], Xs])
    mu = np.concatenate([[1.0], np.zeros(Xs.shape[1])])
    var = np.concatenate([[cfg.prior_sd_latent ** 2], np.full(Xs.shape[1], cfg.prior_sd_features ** 2)])
    va = cfg.prior_sd_intercept ** 2

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        a, w = theta[0], theta[1:]
        u = a + D @ w
        g = _sigmoid(u) - y
        f = float(np.sum(np.logaddexp(0.0, u) - y * u) + np.sum((w - mu) ** 2 / (2 * var)) + a * a / (2 * va))
        return f, np.concatenate([[g.sum() + a / va], D.T @ g + (w - mu) / var])

    res = minimize(loss, np.concatenate([[0.0], mu]), jac=True, method="L-BFGS-B")
    return res.x[1:], float(res.x[0])


def predict(model: ScorerModel, X: np.ndarray) -> np.ndarray:
    r""":math:`\hat p` per row of ``X``."""
    X = np.asarray(X, dtype=np.float64)
    if len(X) == 0:
        return np.zeros(0)
    codes = view_codes(X)
    z = model.latent.logit(codes)
    if model.logistic is not None:
        lg = model.logistic
        Xs = np.nan_to_num((X - np.asarray(lg.mean)) / np.asarray(lg.scale))
        z = lg.intercept + lg.coef[0] * np.clip(z, -20, 20) + Xs @ np.asarray(lg.coef[1:])
    return _sigmoid(z)


def explain(model: ScorerModel, x: np.ndarray, *, top: int = 5) -> list[tuple[str, float]]:
    """The pieces of evidence that moved one candidate's :math:`\\hat p` most: (name, log-odds contribution).

    Without a refit: each view's log-likelihood ratio. After a refit: the latent-class logit's
    weighted contribution and each feature's :math:`w_j (x_j - \\bar x_j)/s_j`.
    """
    x = np.asarray(x, dtype=np.float64).reshape(1, -1)
    codes = view_codes(x)
    items = [(f"view:{v}", float(lr[0])) for v, lr in model.latent.log_ratios(codes).items()]
    if model.logistic is not None:
        lg = model.logistic
        Xs = np.nan_to_num((x[0] - np.asarray(lg.mean)) / np.asarray(lg.scale))
        items = [("latent_class", float(lg.coef[0] * np.clip(model.latent.logit(codes)[0], -20, 20)))]
        items += [(n, float(c * v)) for n, c, v in zip(FEATURES, lg.coef[1:], Xs)]
    items.sort(key=lambda t: -abs(t[1]))
    return items[:top]


def explain_many(model: ScorerModel, X: np.ndarray, *, top: int = 5) -> list[list[list]]:
    """:func:`explain` for every row of ``X`` at once: per row, ``[[name, contribution], ...]`` (4 decimals)."""
    X = np.asarray(X, dtype=np.float64)
    codes = view_codes(X)
    if model.logistic is None:
        names = [f"view:{v}" for v in model.latent.views]
        C = np.column_stack([lr for lr in model.latent.log_ratios(codes).values()]) if names else np.zeros((len(X), 0))
    else:
        lg = model.logistic
        Xs = np.nan_to_num((X - np.asarray(lg.mean)) / np.asarray(lg.scale))
        names = ["latent_class", *FEATURES]
        C = np.column_stack([lg.coef[0] * np.clip(model.latent.logit(codes), -20, 20), Xs * np.asarray(lg.coef[1:])])
    order = np.argsort(-np.abs(C), axis=1, kind="stable")[:, :top]
    return [[[names[k], round(float(C[i, k]), 4)] for k in order[i]] for i in range(len(X))]
