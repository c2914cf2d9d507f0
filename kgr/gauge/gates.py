r"""The two gates (AG, DG), the stability audit before acceptance, and the cooldown.

Conventions
-----------
* **AG** (attention / ambiguity gate) fires when :math:`g_0 > \theta_{AG}`: the 0-hop check
  says the candidate looks costly or novel, so the multi-hop evaluation decides.
* **DG** (decision gate) fires when :math:`b \le \theta_{DG}`, with
  :math:`b = \min(g_0, g_{\min})`: somewhere within :math:`H` hops the gain pays for the cost.
  The paper takes :math:`b = g_0` when AG does not fire (Eq. 4); kgr always evaluates every hop
  (a few milliseconds) and uses the minimum, so a shortcut between *known* entities, whose
  :math:`g_0` is low and never trips AG, is still judged by its multi-hop gain.
* The acceptance **margin** is :math:`m = \theta_{DG} - b`; DG fires iff :math:`m \ge 0`.
* **StabilityAudit** re-evaluates the margin under seeded jitter of the gauge's inputs and
  threshold and accepts only if it stays :math:`\ge \varepsilon` every time.
* **Cooldown** counts *accepted promotions*: after an edge at node :math:`x` is accepted, the
  next :math:`N` accepted promotions may not touch :math:`x` (state persists across rounds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kgr.gauge.validate import integer, real
from kgr.gauge.gedig import GaugeResult

__all__ = ["GateResult", "evaluate_gates", "AuditResult", "stability_audit", "Cooldown"]


def _finite(name: str, x: object) -> float:
    return real(name, x)


class GateResult(BaseModel):
    """Outcome of the two gates for one candidate, with the values they compared."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    ag: bool
    dg: bool
    g0: float
    b: float
    theta_ag: float
    theta_dg: float
    margin: float


def evaluate_gates(g0: float, b: float, *, theta_ag: float, theta_dg: float) -> GateResult:
    r"""Apply the AG and DG gates.

    .. math::

        \mathrm{AG} = \mathbb{I}[g_0 > \theta_{AG}], \qquad
        \mathrm{DG} = \mathbb{I}[b \le \theta_{DG}], \qquad m = \theta_{DG} - b

    Parameters
    ----------
    g0 : float
        The 0-hop gauge :math:`g_0`.
    b : float
        :math:`b = \min(g_0, g_{\min})` (or :math:`g_0` in single-threshold mode).
    theta_ag, theta_dg : float
        The thresholds.

    Returns
    -------
    gates : GateResult
        ``ag``, ``dg`` and the margin :math:`m`.

    Raises
    ------
    KgrValidationError
        A non-finite input.

    Notes
    -----
    :math:`O(1)`. Both gates can fire at once (novel *and* worth it): DG decides.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Eqs. 3–4, Algorithm 1 lines 6–10.

    Examples
    --------
    >>> g = evaluate_gates(1.0, -0.2, theta_ag=0.75, theta_dg=0.0)
    >>> g.ag, g.dg, g.margin
    (True, True, 0.2)
    """
    g0, b = _finite("g0", g0), _finite("b", b)
    theta_ag, theta_dg = _finite("theta_ag", theta_ag), _finite("theta_dg", theta_dg)
    return GateResult(
        ag=g0 > theta_ag, dg=b <= theta_dg, g0=g0, b=b, theta_ag=theta_ag, theta_dg=theta_dg, margin=theta_dg - b
    )


class AuditResult(BaseModel):
    """Outcome of :func:`stability_audit`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    passed: bool
    margin: float
    min_margin: float
    trials: int
    rel_jitter: float
    abs_jitter: float
    eps: float
    seed: int


def stability_audit(
    result: GaugeResult,
    *,
    theta_dg: float,
    rel_jitter: float = 0.05,
    abs_jitter: float = 0.005,
    trials: int = 8,
    eps: float = 0.0,
    seed: int = 0,
    multi_hop: bool = True,
) -> AuditResult:
    r"""Accept only if the DG margin survives small random perturbations of the gauge's inputs.

    .. math::

        x' = x\,(1 + \delta_x),\quad \delta_x \sim U(-r, r)
        \quad\text{for } x \in \{\Delta\mathrm{EPC}_h, \Delta H_h, \Delta\mathrm{SP}_h\},

        \theta' = \theta_{DG} + \eta,\quad \eta \sim U(-a, a), \qquad b' = \min_h \mathcal{F}(x'_h), \qquad
        \text{pass} \iff \theta_{DG} - b \ge \varepsilon \ \wedge\ \min_{\text{trials}} (\theta' - b') \ge \varepsilon

    Parameters
    ----------
    result : GaugeResult
        The candidate's gauge.
    theta_dg : float
        :math:`\theta_{DG}`.
    rel_jitter : float, default 0.05
        :math:`r \ge 0`, multiplicative jitter of every term, drawn independently per term and
        hop (the paper's :math:`\pm 5\%` noise on costs).
    abs_jitter : float, default 0.005
        :math:`a \ge 0`, additive jitter of the threshold (additive, because calibrated
        thresholds sit near 0 where a relative jitter would vanish).
    trials : int, default 8
        Number of perturbed re-evaluations, :math:`\ge 1`.
    eps : float, default 0.0
        Required margin :math:`\varepsilon`.
    seed : int, default 0
        Seed of the jitter; the policy derives it from the candidate key, so audits are
        reproducible and independent of candidate order.
    multi_hop : bool, default True
        False audits :math:`g_0` only (single-threshold mode).

    Returns
    -------
    audit : AuditResult
        ``passed`` and the unperturbed and smallest perturbed margins.

    Raises
    ------
    KgrValidationError
        Out-of-range jitter, trials or a non-finite threshold.

    Notes
    -----
    A margin survives when it exceeds about :math:`r` times the size of the terms plus
    :math:`a`: strong shortcuts pass, candidates balanced on the threshold do not. The constants
    :math:`\lambda, \gamma` and the ablation switches are those stored in ``result``.
    :math:`O(\text{trials} \cdot H)`.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Sec. 1.2 "Perspective of Stable Acceptance Subgraph"
    (``StabilityAudit``, margin :math:`m(t) \ge \varepsilon`), Algorithm 1 line 10, and the
    :math:`\pm 5\%` noise study of Sec. 3.

    Examples
    --------
    >>> import networkx as nx
    >>> from kgr.gauge.gedig import gedig_gauge
    >>> G = nx.path_graph(5)  # 0-1-2-3-4; closing 0-4 makes a 5-cycle
    >>> r = gedig_gauge(G, 0, 4, hops=2)
    >>> stability_audit(r, theta_dg=r.b + 0.5).passed, stability_audit(r, theta_dg=r.b + 1e-4).passed
    (True, False)
    """
    theta_dg = _finite("theta_dg", theta_dg)
    rel_jitter = real("rel_jitter", rel_jitter, ge=0.0)
    abs_jitter = real("abs_jitter", abs_jitter, ge=0.0)
    eps = real("eps", eps)
    trials = integer("trials", trials, ge=1)
    seed = integer("seed", seed, ge=0)
    hops = result.hops if multi_hop else result.hops[:1]
    b = min(h.f for h in hops)
    margin = theta_dg - b
    rng = np.random.default_rng(seed)
    worst = math.inf
    for _ in range(trials):
        rel = rng.uniform(-rel_jitter, rel_jitter, size=(len(hops), 3))
        theta = theta_dg + float(rng.uniform(-abs_jitter, abs_jitter))
        fs = []
        for i, h in enumerate(hops):
            epc = h.delta_epc * (1 + rel[i, 0])
            dh = h.delta_h * (1 + rel[i, 1])
            dsp = h.delta_sp * (1 + rel[i, 2])
            fs.append(result.f_of(float(epc), float(dh), float(dsp)))
        worst = min(worst, theta - min(fs))
    return AuditResult(
        passed=margin >= eps and worst >= eps, margin=margin, min_margin=worst, trials=trials,
        rel_jitter=rel_jitter, abs_jitter=abs_jitter, eps=eps, seed=seed,
    )


class Cooldown(BaseModel):
    r"""Re-firing cooldown: a node just promoted may not take part in the next ``steps`` promotions.

    .. math::

        \text{blocked}(x) \iff s_{\text{next}} - s_{\text{last}}(x) \le N

    where :math:`s` counts accepted promotions (0, 1, 2, …).

    Parameters
    ----------
    steps : int, default 0
        :math:`N \ge 0`; 0 disables the cooldown.
    step : int
        Promotions recorded so far (state).
    last : dict of str to int
        Step of each node's last promotion (state).

    Notes
    -----
    The unit is an accepted promotion, not a round or a candidate, so the cooldown neither
    depends on how many candidates were held nor on how rounds are cut. kgr's default is 0:
    knowledge-graph hubs legitimately receive many edges, and the submodular coverage reward
    already discounts repeated gains at one node. The paper suggests 3–5 steps against
    thrashing. :meth:`blocked` and :meth:`record` are :math:`O(1)` per node.

    References
    ----------
    geDIG (000_efc51f491838b6b4), Sec. 1.2 "Cooldown and Backoff" (re-firing cooldown, 3–5 steps).

    Examples
    --------
    >>> c = Cooldown(steps=2)
    >>> c.record(["a", "b"])          # promotion 0 touches a and b
    >>> c.blocked("a"), c.blocked("z")
    (True, False)
    >>> c.record(["x", "y"]); c.record(["x", "z"])   # promotions 1 and 2
    >>> c.blocked("a")               # the next promotion is #3: 3 - 0 > 2
    False
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    steps: int = Field(0, ge=0)
    step: int = Field(0, ge=0)
    last: dict[str, int] = Field(default_factory=dict)

    def blocked(self, node: str) -> bool:
        """Whether ``node`` may not be part of the next promotion."""
        if self.steps == 0 or node not in self.last:
            return False
        return self.step - self.last[node] <= self.steps

    def record(self, nodes: Iterable[str]) -> None:
        """Record one accepted promotion touching ``nodes``."""
        for x in nodes:
            self.last[x] = self.step
        self.step += 1
        if self.steps and len(self.last) > 4 * self.steps + 64:  # forget expired entries
            self.last = {x: s for x, s in self.last.items() if self.step - s <= self.steps}
