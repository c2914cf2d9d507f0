"""The result of :func:`kgr.gauge.batch.gauge_batch`: every term of every candidate as read-only arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from kgr.gauge.gedig import GaugeResult, HopTerms

__all__ = ["GaugeBatch"]


class GaugeBatch(BaseModel):
    r"""The gauge and local reward terms of ``m`` candidates, one entry (row) per candidate.

    Per-hop arrays have shape ``(m, H + 1)``; column :math:`h` holds the terms on :math:`S_h`
    as in :class:`kgr.gauge.gedig.HopTerms`. Arrays are read-only.

    Attributes
    ----------
    s, o : ndarray of int, shape (m,)
        The candidates' endpoint indices, as given.
    new_nodes : ndarray of int, shape (m,)
        Isolated endpoints (0, 1 or 2).
    edge_exists : ndarray of bool, shape (m,)
        The graph already has the edge.
    capped : ndarray of bool, shape (m,)
        :math:`S_H` was cut at ``k_max`` nodes.
    sampled : ndarray of bool, shape (m,)
        Some hop had more than ``max_sp_pairs`` pairs: :math:`\Delta\mathrm{SP}` came from the
        core's seeded sample of sources.
    g0, g_min, b : ndarray of float, shape (m,)
        :math:`\mathcal{F}_0`, :math:`\min_{h \ge 1}\mathcal{F}_h`, :math:`\min(g_0, g_{\min})`.
    n_nodes, edges_before, edges_after, n_pairs : ndarray of int, shape (m, H + 1)
        :math:`|S_h|`, :math:`|E(S_h)|` before and after, pairs in the path statistic.
    delta_epc, entropy_before, entropy_after, delta_h : ndarray of float, shape (m, H + 1)
        :math:`\Delta\mathrm{EPC}_{\text{norm}}`, degree entropies (nats), :math:`\Delta H_{\text{gain}}`.
    path_before, path_after, delta_sp, delta_ig, f : ndarray of float, shape (m, H + 1)
        Mean path lengths, :math:`\Delta\mathrm{SP}_{\text{rel}}`, :math:`\Delta\mathrm{IG}_{\text{norm}}`
        (ablations applied) and :math:`\mathcal{F}_h`.
    context_edges : ndarray of int, shape (m,)
        :math:`|E(S_H)|` before (the policy's "structural context").
    delta_cov : ndarray of float, shape (m,)
        :math:`\Delta\mathrm{Cov}_\kappa` with :math:`h = 1`.
    delta_vn : ndarray of float, shape (m,)
        Exact :math:`\Delta S_{VN}` (nats) on :math:`S_H`.
    temporal : ndarray of float, shape (m,)
        :math:`T = e^{-\beta\|\Delta L\|_F}` (``1.0`` for an existing edge).
    ball_nodes, ball_dist : ndarray of int, shape (sum of ball sizes,)
        The balls :math:`S_H`, concatenated in candidate order, each in ``(distance, index)``
        order.
    ball_offsets : ndarray of int, shape (m + 1,)
        Candidate ``i``'s ball is ``ball_nodes[ball_offsets[i]:ball_offsets[i + 1]]``.
    hops, k_max, max_sp_pairs : int
        :math:`H`, :math:`K_{\max}` and the pair limit used.
    c_node, c_edge, lam, gamma, eps, kappa, mu, beta : float
        The constants used.
    use_epc, use_ig, use_sp : bool
        The ablation switches used.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, arbitrary_types_allowed=True)

    s: np.ndarray
    o: np.ndarray
    new_nodes: np.ndarray
    edge_exists: np.ndarray
    capped: np.ndarray
    sampled: np.ndarray
    g0: np.ndarray
    g_min: np.ndarray
    b: np.ndarray
    n_nodes: np.ndarray
    edges_before: np.ndarray
    edges_after: np.ndarray
    delta_epc: np.ndarray
    entropy_before: np.ndarray
    entropy_after: np.ndarray
    delta_h: np.ndarray
    n_pairs: np.ndarray
    path_before: np.ndarray
    path_after: np.ndarray
    delta_sp: np.ndarray
    delta_ig: np.ndarray
    f: np.ndarray
    context_edges: np.ndarray
    delta_cov: np.ndarray
    delta_vn: np.ndarray
    temporal: np.ndarray
    ball_nodes: np.ndarray
    ball_dist: np.ndarray
    ball_offsets: np.ndarray
    hops: int
    k_max: int
    max_sp_pairs: int
    c_node: float
    c_edge: float
    lam: float
    gamma: float
    eps: float
    kappa: float
    mu: float
    beta: float
    use_epc: bool
    use_ig: bool
    use_sp: bool

    def __len__(self) -> int:
        return int(self.s.shape[0])

    def ball(self, i: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """Candidate ``i``'s ball :math:`S_H`: node indices, their distances, and whether it was capped."""
        i = range(len(self))[i]  # negative indices count from the end; IndexError out of range
        a, z = int(self.ball_offsets[i]), int(self.ball_offsets[i + 1])
        return self.ball_nodes[a:z], self.ball_dist[a:z], bool(self.capped[i])

    def gauge_result(self, i: int, keys: Sequence[Any] | None = None) -> GaugeResult:
        """Candidate ``i`` as the core's :class:`~kgr.gauge.gedig.GaugeResult` (for explanations).

        ``keys[j]`` names node ``j`` (``u``/``v`` of the record); the indices when omitted.
        """
        i = range(len(self))[i]
        u, v = int(self.s[i]), int(self.o[i])
        if keys is not None:
            u, v = keys[u], keys[v]
        terms = tuple(
            HopTerms(
                hop=h, n_nodes=int(self.n_nodes[i, h]), edges_before=int(self.edges_before[i, h]),
                edges_after=int(self.edges_after[i, h]), delta_epc=float(self.delta_epc[i, h]),
                entropy_before=float(self.entropy_before[i, h]), entropy_after=float(self.entropy_after[i, h]),
                delta_h=float(self.delta_h[i, h]), n_pairs=int(self.n_pairs[i, h]),
                path_before=float(self.path_before[i, h]), path_after=float(self.path_after[i, h]),
                delta_sp=float(self.delta_sp[i, h]), delta_ig=float(self.delta_ig[i, h]), f=float(self.f[i, h]),
            )
            for h in range(self.hops + 1)
        )
        return GaugeResult(
            u=u, v=v, new_nodes=int(self.new_nodes[i]), edge_exists=bool(self.edge_exists[i]),
            capped=bool(self.capped[i]), hops=terms, g0=float(self.g0[i]), g_min=float(self.g_min[i]),
            b=float(self.b[i]), lam=self.lam, gamma=self.gamma, c_node=self.c_node, c_edge=self.c_edge,
            use_epc=self.use_epc, use_ig=self.use_ig, use_sp=self.use_sp,
        )
