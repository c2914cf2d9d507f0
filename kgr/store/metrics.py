r"""``kgr metrics``: counts, the promoted graph's entropy and coverage, and the figures of recent rounds.

Everything here is read-only and computed from what the store holds.

Conventions
-----------
* **Nodes** are ``(:Entity)`` nodes; **edges** are current promoted edges (``valid_to`` null).
  ``pending_edges`` counts the staged (``PENDING_REL``) edges of any status (``kgr metrics`` prints
  it as "staged edges"), and ``status`` counts them by status (``pending``: undecided, ``held``,
  ``promoted``, ``rejected``, ``expired``), every status present with 0 when there is none.
* **Entropy** :math:`S_{VN}` (nats) of the undirected simple projection of the promoted graph
  (self loops and parallel edges dropped, entities without a promoted edge left out: with
  :math:`\mu = 0` they add nothing), streamed from Neo4j into a sparse Laplacian
  (:func:`kgr.store.export.promoted_edge_pairs`) and passed to :func:`kgr.gauge.vn_entropy` with
  ``method="auto"``: exact up to :data:`kgr.gauge.SLQ_AUTO_THRESHOLD` (3000) nodes, stochastic
  Lanczos quadrature (seed 0) above. :math:`\mu` is :attr:`PromotionConfig.mu`. None for an empty
  graph.
* **Coverage** :math:`\mathrm{Cov}_\kappa(G; h) = \sum_v [1 - (1-\kappa)^{|N(v;h)|}]` on the same
  projection, with :math:`\kappa` and :math:`h` from :class:`PromotionConfig` (``kappa``,
  ``coverage_hops``).
* **Rounds** are versions of kind ``promotion`` (gedig or quorum policy; ``note`` says which),
  newest first. Per round: ``candidates`` = its promote + hold + reject decisions;
  ``promoted`` = edges the round actually created; ``acceptance = promoted / candidates``;
  ``rejection_rate = rejected / candidates``; ``expired`` = expire decisions recorded at that
  version (aging tags them with the current version); ``gauged`` = decisions judged by the geDIG
  gates (their recorded inputs carry ``gates`` and their :math:`H`-ball held a promoted edge);
  ``no_context`` = decisions past quorum and constraints whose ball was empty (decided on votes and
  constraints alone; their gate values are not counted); ``ag_rate`` / ``dg_rate`` = share of
  gauged decisions whose AG / DG gate fired (None when nothing was gauged, e.g. a quorum round);
  ``retracted`` = promoted edges of this round that have since been retired (a rollback, e.g. by
  the grace-period audit): the only false-merge signal the store has without ground truth.
  ``mean_decision_latency_ms`` = the round's decide time per candidate when the version records
  it (``decide_ms`` on ``(:Version)``); None otherwise.
* The ``totals`` aggregate the same figures over the listed rounds (rates are pooled: sums of
  counts over sums of counts, not means of per-round rates).
* **PSZ** (the geDIG paper's Perfect Scaling Zone: Acceptance ≥ 0.95, FMR ≤ 0.02, added P50
  latency ≤ 200 ms) on what a store can observe without ground truth, over the listed rounds:
  ``acceptance`` = promoted / (promoted + holds with votes ≥ quorum) — the share of corroborated,
  constraint-abiding candidates the policy integrated, whatever the policy; ``fmr`` = retracted / promoted (promotions since rolled back — a lower
  bound of the false merge rate, the only one a store has without labels); ``p50_latency_ms`` =
  the median over the rounds of their decision time per candidate; and the shortfall (the
  paper's Eq. 2)

  .. math::

      s_{PSZ} = \max(0, 0.95 - Acc) + \max(0, FMR - 0.02) + \max(0, (P50 - 200\,\text{ms}) / 200\,\text{ms})

  with ``in_zone`` when :math:`s_{PSZ} = 0`. A figure whose inputs are missing is None (e.g. no
  round has a corroborated candidate), and so is the shortfall. Example: Acc 0.80, FMR 0.0, P50 2 ms gives
  :math:`s_{PSZ} = 0.15`. The benchmark's labelled Acceptance and FMR (``scripts/bench_promotion.py``)
  are the ground-truth versions of the first two.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.gauge import SLQ_AUTO_THRESHOLD, coverage, laplacian_from_edges, vn_entropy
from kgr.promotion.gedig import PromotionConfig
from kgr.store.admin import status
from kgr.store.connection import Graph
from kgr.store.decision_tally import corroborated, gates, parse_inputs
from kgr.store.export import promoted_edge_pairs

__all__ = ["EntropyFigure", "CoverageFigure", "RoundFigures", "PSZFigure", "StoreMetrics", "collect_metrics",
           "psz_shortfall", "MAX_ROUNDS"]

#: Largest ``rounds`` accepted (each round's decision inputs are read and parsed).
MAX_ROUNDS = 1000

STATUSES = ("pending", "held", "promoted", "rejected", "expired")


class EntropyFigure(BaseModel):
    """Von Neumann entropy of the promoted graph's undirected simple projection."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    value: float | None = Field(description="S_VN in nats; None for a graph without edges")
    method: Literal["exact", "slq"] | None = Field(description="exact eigensolver or stochastic Lanczos quadrature")
    nodes: int = Field(ge=0, description="nodes of the projection (endpoints of promoted edges)")
    edges: int = Field(ge=0, description="edges of the projection (self loops and parallels dropped)")
    mu: float = Field(ge=0.0, description="density-operator regulariser")


class CoverageFigure(BaseModel):
    """Submodular coverage Cov_κ(G; h) of the promoted graph's projection."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    value: float = Field(ge=0.0)
    kappa: float = Field(gt=0.0, le=1.0)
    h: int = Field(ge=1)


class RoundFigures(BaseModel):
    """What one promotion round (or, in ``totals``, a group of rounds) decided."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int | None = Field(None, description="the round's version (None in totals)")
    at: float | None = Field(None, description="epoch seconds the round was written (None in totals)")
    note: str = ""
    candidates: int = Field(0, ge=0, description="promote + hold + reject decisions")
    promoted: int = Field(0, ge=0, description="edges the round created")
    held: int = Field(0, ge=0)
    rejected: int = Field(0, ge=0)
    expired: int = Field(0, ge=0, description="expire decisions recorded at this version (aging)")
    gauged: int = Field(0, ge=0, description="decisions judged by the geDIG gates (H-ball with promoted edges)")
    no_context: int = Field(0, ge=0, description="decisions past quorum and constraints whose H-ball was empty")
    ag_fired: int = Field(0, ge=0)
    dg_fired: int = Field(0, ge=0)
    retracted: int = Field(0, ge=0, description="promoted edges of the round since retired")
    corroborated_held: int = Field(0, ge=0, description="hold decisions with votes >= quorum (held past the quorum)")
    acceptance: float | None = Field(None, description="promoted / candidates")
    rejection_rate: float | None = Field(None, description="rejected / candidates")
    ag_rate: float | None = Field(None, description="AG fired / gauged")
    dg_rate: float | None = Field(None, description="DG fired / gauged")
    retracted_share: float | None = Field(None, description="retracted / promoted")
    mean_decision_latency_ms: float | None = Field(None, description="decide time per candidate, when recorded")


class PSZFigure(BaseModel):
    """The Perfect Scaling Zone figures of the listed rounds (see the module docstring)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    acceptance: float | None = Field(None, description="promoted / (promoted + holds with votes >= quorum)")
    fmr: float | None = Field(None, description="retracted / promoted: a lower bound of the false merge rate")
    p50_latency_ms: float | None = Field(None, description="median over rounds of decision time per candidate")
    shortfall: float | None = Field(None, description="s_PSZ (geDIG Eq. 2); 0 inside the zone")
    in_zone: bool | None = None
    targets: dict[str, float] = Field(default_factory=lambda: {"acceptance": 0.95, "fmr": 0.02, "p50_latency_ms": 200.0})


def psz_shortfall(acceptance: float, fmr: float, p50_ms: float) -> float:
    r""":math:`s_{PSZ} = \max(0, 0.95 - Acc) + \max(0, FMR - 0.02) + \max(0, (P50 - 200) / 200)`.

    >>> round(psz_shortfall(0.80, 0.0, 2.0), 4), psz_shortfall(0.97, 0.01, 150.0)
    (0.15, 0.0)
    >>> round(psz_shortfall(0.90, 0.05, 300.0), 4)
    0.58
    """
    return max(0.0, 0.95 - acceptance) + max(0.0, fmr - 0.02) + max(0.0, (p50_ms - 200.0) / 200.0)


class StoreMetrics(BaseModel):
    """The output of ``kgr metrics`` (``--json`` prints this model)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int = Field(ge=0)
    hash: str
    nodes: int = Field(ge=0, description="(:Entity) nodes")
    edges: int = Field(ge=0, description="current promoted edges")
    pending_edges: int = Field(ge=0, description=(
        "staged (PENDING_REL) edges of any status: pending, held, promoted, rejected, expired; not only those "
        "whose status is 'pending' (status['pending'] counts those)"))
    status: dict[str, int] = Field(description="staged (PENDING_REL) edges by status; 'pending': undecided")
    entropy: EntropyFigure
    coverage: CoverageFigure
    rounds_requested: int = Field(ge=1)
    rounds: list[RoundFigures] = Field(description="the last promotion rounds, newest first")
    totals: RoundFigures = Field(description="the same figures pooled over the listed rounds")
    psz: PSZFigure = Field(default_factory=PSZFigure, description="the Perfect Scaling Zone over the listed rounds")


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _finish(r: RoundFigures, decide_ms: float | None = None) -> RoundFigures:
    r.acceptance = _ratio(r.promoted, r.candidates)
    r.rejection_rate = _ratio(r.rejected, r.candidates)
    r.ag_rate = _ratio(r.ag_fired, r.gauged)
    r.dg_rate = _ratio(r.dg_fired, r.gauged)
    r.retracted_share = _ratio(r.retracted, r.promoted)
    if decide_ms is not None and r.candidates:
        r.mean_decision_latency_ms = float(decide_ms) / r.candidates
    return r


def _entropy_and_coverage(pairs: Iterable[tuple[str, str]], config: PromotionConfig) -> tuple[EntropyFigure, CoverageFigure]:
    G = nx.Graph()
    G.add_edges_from((s, o) for s, o in pairs if s != o)
    cov = CoverageFigure(value=coverage(G, kappa=config.kappa, h=config.coverage_hops), kappa=config.kappa,
                         h=config.coverage_hops)
    n, m = G.number_of_nodes(), G.number_of_edges()
    if m == 0:
        return EntropyFigure(value=None, method=None, nodes=n, edges=0, mu=config.mu), cov
    L, _ = laplacian_from_edges(G.edges(), list(G.nodes()))
    method: Literal["exact", "slq"] = "exact" if n <= SLQ_AUTO_THRESHOLD else "slq"
    value = vn_entropy(L, mu=config.mu, method=method)
    return EntropyFigure(value=value, method=method, nodes=n, edges=m, mu=config.mu), cov


def collect_metrics(graph: Graph, *, rounds: int = 5, config: PromotionConfig | None = None) -> StoreMetrics:
    """Read the store's counts, entropy, coverage and the figures of its last ``rounds`` promotion rounds.

    Parameters
    ----------
    graph : Graph
        The store (read-only access).
    rounds : int, default 5
        How many of the most recent promotion rounds to report, 1 to :data:`MAX_ROUNDS`.
    config : PromotionConfig, optional
        Source of ``mu``, ``kappa`` and ``coverage_hops`` (defaults when omitted).

    Returns
    -------
    StoreMetrics
        See the module docstring for every figure's definition.

    Raises
    ------
    KgrValidationError
        ``rounds`` out of range.
    KgrNeo4jUnavailable
        The database does not answer.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise KgrValidationError(f"rounds must be an integer from 1 to {MAX_ROUNDS}, got {rounds!r}", field="rounds")
    cfg = config or PromotionConfig()
    st = status(graph)
    by_status = {s: int(st.pending_by_status.get(s, 0)) for s in STATUSES}
    by_status.update({s: int(n) for s, n in st.pending_by_status.items() if s not in by_status})
    entropy, cov = _entropy_and_coverage(promoted_edge_pairs(graph), cfg)

    rows = graph.read("metrics_rounds", {"rounds": rounds})
    figures: dict[int, RoundFigures] = {}
    decide: dict[int, float | None] = {}
    holds: dict[int, str] = {}
    for r in rows:
        v = int(r["version"])
        held = int(r["hold"]) + int((parse_inputs(r["holds"]) or {}).get("held", 0))
        figures[v] = RoundFigures(version=v, at=r["at"], note=r["note"], promoted=int(r["promoted"]),
                                  held=held, rejected=int(r["reject"]), expired=int(r["expire"]),
                                  candidates=int(r["promote"]) + held + int(r["reject"]))
        decide[v] = r["decide_ms"]
        if r["holds"]:
            holds[v] = r["holds"]
    versions = sorted(figures)
    if versions:
        gate_counts: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for v, raw in holds.items():  # the holds tallied when their round was written
            t = parse_inputs(raw) or {}
            figures[v].corroborated_held += int(t.get("corroborated", 0))
            c = gate_counts[v]
            c[0] += int(t.get("gauged", 0))
            c[1] += int(t.get("ag_fired", 0))
            c[2] += int(t.get("dg_fired", 0))
            c[3] += int(t.get("no_context", 0))
        for r in graph.stream("metrics_decision_inputs", {"versions": versions}):
            if r["action"] == "hold" and int(r["version"]) in holds:  # moved off its edge: in the tally
                continue
            inputs = parse_inputs(r["inputs"])
            if r["action"] == "hold" and corroborated(inputs):
                figures[int(r["version"])].corroborated_held += 1
            g = gates(inputs)
            if g is None:
                continue
            c = gate_counts[int(r["version"])]
            if not g[2]:
                c[3] += 1
                continue
            c[0] += 1
            c[1] += g[0]
            c[2] += g[1]
        for v, (n, ag, dg, boot) in gate_counts.items():
            f = figures[v]
            f.gauged, f.ag_fired, f.dg_fired, f.no_context = n, ag, dg, boot
        for r in graph.read("metrics_retracted", {"versions": versions}):
            figures[int(r["version"])].retracted = int(r["retracted"])

    listed = [_finish(figures[v], decide[v]) for v in sorted(figures, reverse=True)]
    totals = RoundFigures(note=f"{len(listed)} round" + ("" if len(listed) == 1 else "s"))
    for f in listed:
        for name in ("candidates", "promoted", "held", "rejected", "expired", "gauged", "no_context", "ag_fired",
                     "dg_fired", "retracted", "corroborated_held"):
            setattr(totals, name, getattr(totals, name) + getattr(f, name))
    recorded = [(decide[f.version], f.candidates) for f in listed if decide[f.version] is not None and f.candidates]
    _finish(totals)
    if recorded:
        totals.mean_decision_latency_ms = sum(float(ms) for ms, _ in recorded) / sum(n for _, n in recorded)

    return StoreMetrics(
        version=st.version, hash=st.hash, nodes=st.entities, edges=st.promoted,
        pending_edges=sum(st.pending_by_status.values()), status=by_status, entropy=entropy, coverage=cov,
        rounds_requested=rounds, rounds=listed, totals=totals, psz=_psz(listed, totals),
    )


def _psz(listed: list[RoundFigures], totals: RoundFigures) -> PSZFigure:
    latencies = sorted(f.mean_decision_latency_ms for f in listed if f.mean_decision_latency_ms is not None)
    p50 = None
    if latencies:
        mid = len(latencies) // 2
        p50 = latencies[mid] if len(latencies) % 2 else (latencies[mid - 1] + latencies[mid]) / 2
    figure = PSZFigure(acceptance=_ratio(totals.promoted, totals.promoted + totals.corroborated_held),
                       fmr=_ratio(totals.retracted, totals.promoted), p50_latency_ms=p50)
    if figure.acceptance is not None and figure.fmr is not None and p50 is not None:
        figure.shortfall = psz_shortfall(figure.acceptance, figure.fmr, p50)
        figure.in_zone = figure.shortfall == 0.0
    return figure
