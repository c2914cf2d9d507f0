r"""The geDIG gauge :math:`\mathcal{F}`: structural cost against information gain, per hop.

For a candidate edge :math:`(u, v)` on an undirected simple graph :math:`G` (the promoted graph,
or a local ball of it), with :math:`X = \{u, v\}`:

.. math::

    \mathcal{F}_h = \Delta\mathrm{EPC}^{(h)}_{\text{norm}} - \lambda\,\Delta\mathrm{IG}^{(h)}_{\text{norm}},
    \qquad \Delta\mathrm{IG}^{(h)}_{\text{norm}}
    = \Delta H^{(h)}_{\text{gain}} + \gamma\,\Delta\mathrm{SP}^{(h)}_{\text{rel}}

evaluated on the ball :math:`S_h` for :math:`h = 0, 1, \ldots, H`, and
:math:`g_0 = \mathcal{F}_0`, :math:`g_{\min} = \min_{1 \le h \le H}\mathcal{F}_h`,
:math:`b = \min(g_0, g_{\min})`. Smaller is better: DG accepts when :math:`b \le \theta_{DG}`.

Conventions
-----------
**Ball.** :math:`S_h` is the set of nodes within :math:`h` hops of :math:`X` in :math:`G`, ordered
by ``(distance, str(node))`` and cut to the first :math:`K_{\max}` nodes. :math:`S_0 = X`. The cut
only ever removes part of the outermost layer, so every node of :math:`S_h` keeps a shortest path
to :math:`X` inside :math:`S_h`, and :math:`S_h` is a prefix of :math:`S_H`. Endpoints missing from
:math:`G` are in :math:`S_h` at distance 0 with no edges. "Before" is the subgraph of :math:`G`
induced by :math:`S_h`; "after" adds :math:`(u, v)`.

**New nodes.** An endpoint absent from :math:`G` *or isolated in it* counts as new: a node with no
promoted edge carries no structure, and the result must not depend on whether the caller lists
such nodes.

**Edit-path cost.** :math:`\Delta\mathrm{EPC}_{\text{norm}} = (n_{\text{new}} c_{\text{node}} +
c_{\text{edge}}) / (c_{\text{node}} + c_{\text{edge}}\,|E(S_h^{\text{after}})|)`: the edit cost
of the candidate over :math:`C_{\max}`, the cost of building the ball's after-graph from one node.

**Shortest paths.** :math:`\Delta\mathrm{SP}_{\text{rel}} = (L_{\text{before}} - L_{\text{after}})
/ \max(L_{\text{before}}, \varepsilon)`, the relative drop of the mean shortest-path length over
one fixed set of node pairs of :math:`S_h`: those connected *before* (inside the induced
subgraph). All pairs when :math:`K(K-1)/2 \le` ``max_sp_pairs``; otherwise all pairs from a seeded
sample of source nodes. After-distances come from the before-distances exactly,
:math:`d'(a, b) = \min(d(a,b),\, d(a,u) + 1 + d(v,b),\, d(a,v) + 1 + d(u,b))`. Pairs joined only
by the new edge (different components before) are not counted: merging components is rewarded
by coverage and entropy in :math:`R_{\text{env}}`, not here. :math:`\Delta\mathrm{SP}_0 = 0` by
definition (hop 0 evaluates no paths), and :math:`\Delta\mathrm{SP} = 0` when no pair is connected.

**Entropy and its sign.** The distribution is the degree distribution of the induced subgraph,
:math:`p_v = \deg_{S_h}(v) / 2|E(S_h)|`, over the nodes of :math:`S_h` (zero-degree nodes
contribute 0); an edgeless ball has the uniform distribution, :math:`H = \ln K` (no edge says
which node matters more). It is a cheap, local measure of how concentrated the ball's structure
is. The paper's short form writes :math:`\Delta H_{\text{norm}} = (H_{\text{after}} -
H_{\text{before}})/\ln K` inside :math:`-\lambda(\cdot)`, which would make *more* uncertainty
lower :math:`\mathcal{F}`; its own note says the gain from ordering is :math:`-\Delta
H_{\text{norm}}`. kgr uses the note:

.. math::

    \Delta H_{\text{gain}} = \frac{H_{\text{before}} - H_{\text{after}}}{\ln K}

so an edge that *reduces* uncertainty has a positive information gain and **lowers**
:math:`\mathcal{F}`, consistent with "smaller :math:`\mathcal{F}` is better" and with the
MDL reading (information that compresses the structure is worth its edit cost). Completing a
clique, which makes degrees uniform, therefore raises :math:`\mathcal{F}`.

**Existing edge.** If :math:`(u, v)` is already in :math:`G`, the projection does not change:
:math:`\Delta H = \Delta\mathrm{SP} = 0` and :math:`\mathcal{F}_h = \Delta\mathrm{EPC}_h > 0`.

**Ablations.** ``use_epc``, ``use_ig`` and ``use_sp`` switch off the :math:`\Delta\mathrm{EPC}`,
:math:`\Delta H_{\text{gain}}` and :math:`\Delta\mathrm{SP}` terms of :math:`\mathcal{F}`
(every term is still computed and recorded).

Defaults and why
----------------
``c_node = c_edge = 1``: a new entity costs as much as a new edge. Then :math:`g_0 = 1/2` for an edge between
existing nodes, 1 with one new node and 3/2 with two, and the default :math:`\theta_{AG} = 0.75` makes AG a
novelty alert for new entities. ``lam = 1``, ``gamma = 1`` (the paper's RAG default; path shortening counts
fully). With them a chord that completes a clique has :math:`\Delta\mathrm{SP} = \Delta\mathrm{EPC} = 1/(|E|+1)`
exactly (:math:`|E|` edges after) and :math:`\mathcal{F} = \lambda|\Delta H_{\text{gain}}| > 0`, so it is never
accepted at :math:`\theta_{DG} = 0`, while a bridge that shortens paths across two clusters reaches
:math:`\mathcal{F} \approx -0.15`. ``hops = 2`` (the smallest :math:`H` that sees a one-node detour) and
``k_max = 64`` (all pairs fit in ``max_sp_pairs = 4096``).

References
----------
geDIG (000_efc51f491838b6b4): "Short Forms and Sign Conventions"; Eqs. 3–4; Algorithm 1;
assumption (B4) for the :math:`\ln K` normalisation and :math:`K_{\max}` cap.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict

from kgr.errors import KgrValidationError
from kgr.gauge.validate import integer, real
from kgr.gauge.graphview import GraphView, LocalStructure, capped_ball, check_simple_undirected, local_structure
from kgr.gauge.paths import path_terms

__all__ = ["HopTerms", "GaugeResult", "degree_entropy", "local_ball", "gedig_gauge"]


class HopTerms(BaseModel):
    r"""Every term of :math:`\mathcal{F}_h` at one hop, as recorded with a decision.

    Attributes
    ----------
    hop : int
        :math:`h` (0 for the 0-hop check).
    n_nodes : int
        :math:`K = |S_h|`.
    edges_before, edges_after : int
        :math:`|E(S_h)|` before and after adding the candidate.
    delta_epc : float
        :math:`\Delta\mathrm{EPC}_{\text{norm}}`.
    entropy_before, entropy_after : float
        Shannon entropy (nats) of the degree distribution of :math:`S_h`.
    delta_h : float
        :math:`\Delta H_{\text{gain}} = (H_{\text{before}} - H_{\text{after}})/\ln K`.
    n_pairs : int
        Number of node pairs (connected before) in the path statistic.
    path_before, path_after : float
        Mean shortest-path lengths over those pairs (0 when there are none).
    delta_sp : float
        :math:`\Delta\mathrm{SP}_{\text{rel}}`.
    delta_ig : float
        :math:`\Delta\mathrm{IG}_{\text{norm}}` with the ablation switches applied.
    f : float
        :math:`\mathcal{F}_h`.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    hop: int
    n_nodes: int
    edges_before: int
    edges_after: int
    delta_epc: float
    entropy_before: float
    entropy_after: float
    delta_h: float
    n_pairs: int
    path_before: float
    path_after: float
    delta_sp: float
    delta_ig: float
    f: float


class GaugeResult(BaseModel):
    r"""The geDIG gauge of one candidate edge: per-hop terms, :math:`g_0`, :math:`g_{\min}`, :math:`b`.

    Attributes
    ----------
    u, v : hashable
        The candidate's endpoints, as given.
    new_nodes : int
        Endpoints absent from or isolated in the graph (0, 1 or 2).
    edge_exists : bool
        The projection already has the edge.
    capped : bool
        The ball :math:`S_H` was cut at ``k_max`` nodes.
    hops : tuple of HopTerms
        ``hops[h]`` holds the terms at hop :math:`h = 0 \ldots H`.
    g0, g_min, b : float
        :math:`\mathcal{F}_0`, :math:`\min_{h \ge 1}\mathcal{F}_h`, :math:`\min(g_0, g_{\min})`.
    lam, gamma, c_node, c_edge : float
        The constants used.
    use_epc, use_ig, use_sp : bool
        The ablation switches used.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    u: Any
    v: Any
    new_nodes: int
    edge_exists: bool
    capped: bool
    hops: tuple[HopTerms, ...]
    g0: float
    g_min: float
    b: float
    lam: float
    gamma: float
    c_node: float
    c_edge: float
    use_epc: bool
    use_ig: bool
    use_sp: bool

    def f_of(self, delta_epc: float, delta_h: float, delta_sp: float) -> float:
        r""":math:`\mathcal{F}` from three terms with this result's constants and switches."""
        ig = (delta_h if self.use_ig else 0.0) + (self.gamma * delta_sp if self.use_sp else 0.0)
        return (delta_epc if self.use_epc else 0.0) - self.lam * ig


def degree_entropy(degrees: Sequence[float] | np.ndarray) -> float:
    r"""Shannon entropy (nats) of the degree distribution of a graph.

    .. math::

        H = -\sum_{v} p_v \ln p_v, \qquad p_v = \frac{\deg v}{\sum_w \deg w} = \frac{\deg v}{2|E|}

    Parameters
    ----------
    degrees : sequence of float
        Node degrees, one per node of the (sub)graph, all :math:`\ge 0`.

    Returns
    -------
    H : float
        Entropy in nats, in :math:`[0, \ln K]` for :math:`K` nodes.

    Raises
    ------
    KgrValidationError
        No nodes, or a negative or non-finite degree.

    Notes
    -----
    Zero-degree nodes contribute :math:`0 \ln 0 = 0`. An edgeless graph (all degrees 0) gets the
    uniform distribution, :math:`H = \ln K`. :math:`O(K)`.

    References
    ----------
    geDIG (000_efc51f491838b6b4), "Short Forms and Sign Conventions" (:math:`\Delta H`).

    Examples
    --------
    The path a-b-c: :math:`p = (1/4, 1/2, 1/4)`, :math:`H = \tfrac{3}{2}\ln 2`:

    >>> round(degree_entropy([1, 2, 1]) / math.log(2), 12)
    1.5
    >>> round(degree_entropy([0, 0, 0, 0]), 6)  # edgeless: ln 4
    1.386294
    """
    d = np.asarray(degrees, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise KgrValidationError("degree_entropy needs a non-empty 1-d sequence of degrees")
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise KgrValidationError("degrees must be finite and >= 0")
    total = float(d.sum())
    if total == 0.0:
        return math.log(d.size)
    p = d[d > 0] / total
    return max(0.0, float(-(p * np.log(p)).sum()))


def local_ball(G: nx.Graph, centre: Sequence[Hashable], *, hops: int, k_max: int) -> list[Hashable]:
    r"""The capped :math:`h`-hop ball :math:`S_h` around a set of nodes, in its deterministic order.

    .. math::

        S_h = \operatorname{first}_{K_{\max}}\,\operatorname{sort}_{(d(x, X),\ \mathrm{str}(x))}
        \{\, x : d_G(x, X) \le h \,\}

    Parameters
    ----------
    G : networkx.Graph
        Undirected simple graph.
    centre : sequence of hashable
        The set :math:`X` (nodes missing from ``G`` are allowed; they sit at distance 0).
    hops : int
        Radius :math:`h \ge 0`.
    k_max : int
        Cap :math:`K_{\max} \ge 1`.

    Returns
    -------
    nodes : list of hashable
        :math:`S_h` ordered by (distance, ``str``); ties of equal ``str`` by type name.

    Raises
    ------
    KgrValidationError
        ``G`` directed or a multigraph; ``hops`` or ``k_max`` out of range.

    Notes
    -----
    Expansion stops at the layer that fills the cap, so the cost is the size of the layers
    visited, not of the graph. Use this to fetch or cut the local subgraph the gauge sees.

    References
    ----------
    geDIG (000_efc51f491838b6b4), assumption (B4): :math:`|S_h| \le K_{\max}`.

    Examples
    --------
    >>> local_ball(nx.path_graph(6), [2], hops=2, k_max=10)
    [2, 1, 3, 0, 4]
    >>> local_ball(nx.path_graph(6), [2], hops=2, k_max=4)
    [2, 1, 3, 0]
    """
    check_simple_undirected(G)
    hops = integer("hops", hops, ge=0)
    k_max = integer("k_max", k_max, ge=1)
    nodes, _, _ = capped_ball(GraphView(G), list(centre), hops, k_max)
    return nodes


def gauge_on_view(
    view: GraphView,
    u: Hashable,
    v: Hashable,
    *,
    hops: int,
    k_max: int,
    c_node: float,
    c_edge: float,
    lam: float,
    gamma: float,
    eps: float,
    max_sp_pairs: int,
    seed: int,
    use_epc: bool,
    use_ig: bool,
    use_sp: bool,
    local: LocalStructure | None = None,
) -> GaugeResult:
    """:func:`gedig_gauge` on a :class:`~kgr.gauge.graphview.GraphView`, arguments already validated.

    Parameters
    ----------
    view, u, v, hops, k_max, c_node, c_edge, lam, gamma, eps, max_sp_pairs, seed, use_epc, use_ig, use_sp
        As in :func:`gedig_gauge` (``view`` may carry an overlay of edges selected in this round).
    local : LocalStructure, optional
        The candidate's ball when the caller has it (else computed here).

    Returns
    -------
    GaugeResult
    """
    new_nodes = sum(1 for x in (u, v) if x not in view or view.degree(x) == 0)
    edge_exists = view.has_edge(u, v)
    if local is None:
        local = local_structure(view, u, v, hops, k_max)
    ball, dist, capped, ei, ej = local
    iu, iv = ball.index(u), ball.index(v)
    dist_arr = np.asarray(dist)
    terms: list[HopTerms] = []
    lo, hi = min(iu, iv), max(iu, iv)
    for h in range(hops + 1):
        k = int(np.searchsorted(dist_arr, h, side="right"))  # S_h is a prefix of the ball
        if h > 1 and k == terms[-1].n_nodes:  # ball already complete: same subgraph, same terms
            terms.append(terms[-1].model_copy(update={"hop": h}))
            continue
        keep = ej < k  # ei < ej, so both endpoints are inside the prefix
        h_ei, h_ej = ei[keep], ej[keep]
        m_before = int(keep.sum())
        m_after = m_before if edge_exists else m_before + 1
        deg_b = np.bincount(h_ei, minlength=k) + np.bincount(h_ej, minlength=k)
        deg_a = deg_b.copy()
        if not edge_exists:
            deg_a[lo] += 1
            deg_a[hi] += 1
        h_before = degree_entropy(deg_b)
        h_after = degree_entropy(deg_a)
        delta_h = 0.0 if edge_exists else (h_before - h_after) / math.log(k)
        delta_epc = (new_nodes * c_node + c_edge) / (c_node + c_edge * m_after)
        if h == 0 or edge_exists:
            n_pairs, l_before, l_after = 0, 0.0, 0.0
            if h > 0:
                n_pairs, l_before, l_after = path_terms(h_ei, h_ej, k, iu, iv, max_sp_pairs=max_sp_pairs, seed=seed)
                l_after = l_before
            delta_sp = 0.0
        else:
            n_pairs, l_before, l_after = path_terms(h_ei, h_ej, k, iu, iv, max_sp_pairs=max_sp_pairs, seed=seed)
            delta_sp = (l_before - l_after) / max(l_before, eps) if n_pairs else 0.0
        delta_ig = (delta_h if use_ig else 0.0) + (gamma * delta_sp if use_sp else 0.0)
        f = (delta_epc if use_epc else 0.0) - lam * delta_ig
        terms.append(
            HopTerms(
                hop=h, n_nodes=k, edges_before=m_before, edges_after=m_after, delta_epc=delta_epc,
                entropy_before=h_before, entropy_after=h_after, delta_h=delta_h, n_pairs=n_pairs,
                path_before=l_before, path_after=l_after, delta_sp=delta_sp, delta_ig=delta_ig, f=f,
            )
        )
    g0 = terms[0].f
    g_min = min(t.f for t in terms[1:])
    return GaugeResult(
        u=u, v=v, new_nodes=new_nodes, edge_exists=edge_exists, capped=capped, hops=tuple(terms),
        g0=g0, g_min=g_min, b=min(g0, g_min), lam=lam, gamma=gamma, c_node=c_node, c_edge=c_edge,
        use_epc=use_epc, use_ig=use_ig, use_sp=use_sp,
    )


def gedig_gauge(
    G: nx.Graph,
    u: Hashable,
    v: Hashable,
    *,
    hops: int = 2,
    k_max: int = 64,
    c_node: float = 1.0,
    c_edge: float = 1.0,
    lam: float = 1.0,
    gamma: float = 1.0,
    eps: float = 1e-9,
    max_sp_pairs: int = 4096,
    seed: int = 0,
    use_epc: bool = True,
    use_ig: bool = True,
    use_sp: bool = True,
) -> GaugeResult:
    r"""The geDIG gauge of adding edge :math:`(u, v)` to :math:`G`, at hops :math:`0 \ldots H`.

    .. math::

        \mathcal{F}_h = \frac{n_{\text{new}}c_{\text{node}} + c_{\text{edge}}}
        {c_{\text{node}} + c_{\text{edge}}|E(S_h^{\text{after}})|}
        - \lambda\Bigl(\frac{H_{\text{before}}(S_h) - H_{\text{after}}(S_h)}{\ln |S_h|}
        + \gamma\,\frac{L_{\text{before}} - L_{\text{after}}}{\max(L_{\text{before}}, \varepsilon)}\Bigr)

    .. math::

        g_0 = \mathcal{F}_0, \qquad g_{\min} = \min_{1 \le h \le H} \mathcal{F}_h, \qquad
        b = \min(g_0, g_{\min})

    Parameters
    ----------
    G : networkx.Graph
        The promoted graph's undirected simple projection, or a local ball of it containing
        :math:`S_H`. Not modified.
    u, v : hashable
        The candidate's endpoints; either may be missing from ``G`` (a new node).
    hops : int, default 2
        :math:`H \ge 1`, the largest hop evaluated.
    k_max : int, default 64
        :math:`K_{\max} \ge 2`, the cap on :math:`|S_h|`.
    c_node, c_edge : float, default 1.0
        Edit costs of a new node (:math:`\ge 0`) and a new edge (:math:`> 0`).
    lam : float, default 1.0
        :math:`\lambda \ge 0`, the weight of the information gain
        (see :func:`~kgr.gauge.calibration.variance_balanced_lambda`).
    gamma : float, default 1.0
        :math:`\gamma \ge 0`, the weight of path shortening inside :math:`\Delta\mathrm{IG}`.
    eps : float, default 1e-9
        :math:`\varepsilon > 0` in the denominator of :math:`\Delta\mathrm{SP}_{\text{rel}}`.
    max_sp_pairs : int, default 4096
        Above this many node pairs the path statistic uses a seeded sample of source nodes.
    seed : int, default 0
        Seed of that sample.
    use_epc, use_ig, use_sp : bool, default True
        Ablation switches for the :math:`\Delta\mathrm{EPC}`, :math:`\Delta H` and
        :math:`\Delta\mathrm{SP}` terms.

    Returns
    -------
    result : GaugeResult
        Per-hop :class:`HopTerms` (index = hop) and :math:`g_0`, :math:`g_{\min}`, :math:`b`.

    Raises
    ------
    KgrValidationError
        ``u == v`` (a self-loop has no place in a simple graph), ``G`` directed or a multigraph,
        or a parameter out of range.

    Notes
    -----
    The conventions (ball, new nodes, entropy sign, pairs, degenerate cases) are in the module docstring. Cost
    per candidate: a capped BFS (:math:`O(\sum_{x \in S_H}\min(\deg x, K))`), then per hop a sparse all-pairs
    BFS on :math:`K \le K_{\max}` nodes and :math:`O(K^2)` vector work; independent of :math:`|G|`.

    References
    ----------
    geDIG (000_efc51f491838b6b4): "Short Forms and Sign Conventions"; Eq. 4 (:math:`b`);
    Algorithm 1 (lines 2–6).

    Examples
    --------
    A redundant chord: completing :math:`K_4` (edge 0–1 missing). Of the 6 pairs, 5 are at distance 1 and one
    at 2, so :math:`L_b = 7/6`, :math:`L_a = 1` and :math:`\Delta\mathrm{SP} = (1/6)/(7/6) = 1/7`;
    :math:`\Delta\mathrm{EPC} = 1/(1 + 6) = 1/7` too. Degrees go from :math:`(2, 2, 3, 3)` to uniform, so
    entropy rises to :math:`\ln 4`, :math:`\Delta H_{\text{gain}} < 0` and :math:`\mathcal{F} > 0`:

    >>> G = nx.complete_graph(4); G.remove_edge(0, 1)
    >>> r = gedig_gauge(G, 0, 1)
    >>> round(r.hops[1].delta_epc, 6), round(r.hops[1].delta_sp, 6)
    (0.142857, 0.142857)
    >>> r.b > 0
    True
    >>> r.g0  # hop 0: (0 new nodes + 1) / (1 + 1 edge)
    0.5
    """
    check_simple_undirected(G)
    if u == v:
        raise KgrValidationError(f"a self-loop ({u!r}, {v!r}) cannot be gauged on a simple graph")
    hops = integer("hops", hops, ge=1)
    k_max = integer("k_max", k_max, ge=2)
    max_sp_pairs = integer("max_sp_pairs", max_sp_pairs, ge=1)
    seed = integer("seed", seed, ge=0)
    c_node = real("c_node", c_node, ge=0.0)
    c_edge = real("c_edge", c_edge, gt=0.0)
    lam, gamma, eps = real("lam", lam, ge=0.0), real("gamma", gamma, ge=0.0), real("eps", eps, gt=0.0)
    return gauge_on_view(
        GraphView(G), u, v, hops=hops, k_max=k_max, c_node=c_node, c_edge=c_edge, lam=lam, gamma=gamma,
        eps=eps, max_sp_pairs=max_sp_pairs, seed=seed, use_epc=bool(use_epc), use_ig=bool(use_ig), use_sp=bool(use_sp),
    )
