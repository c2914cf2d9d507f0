"""The batched gauge against the per-candidate core, candidate by candidate, on many graphs."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from kgr.errors import KgrValidationError
from kgr.gauge.graphview import GraphView
from kgr.gauge import batch, batch_balls, batch_kernels
from kgr.gauge.batch import GaugeBatch, gauge_batch
from kgr.gauge.gedig import gauge_on_view, gedig_gauge
from kgr.gauge.graphview import local_structure
from kgr.promotion.gedig import Candidate, PromotionConfig
from kgr.promotion.gedig_select import candidate_rewards

TOL = 1e-9


def keyed(G: nx.Graph, n: int | None = None) -> tuple[nx.Graph, list[str], sp.csr_array]:
    """``G`` (nodes 0..n-1) relabelled with keys whose sort order is the index order, and its adjacency."""
    n = G.number_of_nodes() if n is None else n
    keys = [f"n{i:05d}" for i in range(n)]
    H = nx.Graph()
    H.add_nodes_from(keys)
    H.add_edges_from((keys[a], keys[b]) for a, b in G.edges() if a != b)
    A = sp.csr_array(nx.to_scipy_sparse_array(H, nodelist=keys, format="csr", dtype=np.int8))
    return H, keys, A


def random_pairs(
    rng: np.random.Generator, n: int, m: int, G: nx.Graph | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` candidate pairs: random ones, plus existing edges and friends of friends when ``G`` is given."""
    s, o = [], []
    edges = list(G.edges()) if G is not None else []
    while len(s) < m:
        r = rng.random()
        if edges and r < 0.15:
            a, b = edges[rng.integers(len(edges))]
        elif G is not None and r < 0.5:
            a = int(rng.integers(n))
            nb = list(G[a]) if a in G else []
            if not nb:
                continue
            x = nb[rng.integers(len(nb))]
            nb2 = list(G[x])
            b = nb2[rng.integers(len(nb2))]
        else:
            a, b = (int(v) for v in rng.integers(n, size=2))
        if a == b:
            continue
        if rng.random() < 0.5:
            a, b = b, a
        s.append(int(a))
        o.append(int(b))
    return np.array(s), np.array(o)


def assert_matches(
    H: nx.Graph, keys: list[str], A: sp.csr_array, s, o, *, seeds=None, coverage=True, **kw
) -> GaugeBatch:
    """Every term of every candidate equals the core's (``gauge_on_view`` and ``candidate_rewards``)."""
    gb = gauge_batch(A, s, o, seeds=seeds, **kw)
    params = dict(hops=2, k_max=64, c_node=1.0, c_edge=1.0, lam=1.0, gamma=1.0, eps=1e-9, max_sp_pairs=4096,
                  use_epc=True, use_ig=True, use_sp=True)
    params.update({k: v for k, v in kw.items() if k in params})
    cfg = PromotionConfig(hops=params["hops"], k_max=params["k_max"], kappa=kw.get("kappa", 0.1),
                          mu=kw.get("mu", 0.0), beta=kw.get("beta", 0.5), coverage_hops=1)
    view = GraphView(H)
    assert len(gb) == len(s)
    for i, (a, b) in enumerate(zip(s, o)):
        u, v = keys[a], keys[b]
        seed = 0 if seeds is None else int(seeds[i])
        local = local_structure(view, u, v, params["hops"], params["k_max"])
        want = gauge_on_view(view, u, v, seed=seed, local=local, **params)
        got = gb.gauge_result(i, keys=keys)
        assert (got.u, got.v, got.new_nodes, got.edge_exists, got.capped) == (
            want.u, want.v, want.new_nodes, want.edge_exists, want.capped), i
        for hg, hw in zip(got.hops, want.hops, strict=True):
            for name, x in hw.model_dump().items():
                assert getattr(hg, name) == pytest.approx(x, abs=TOL), (i, hw.hop, name)
        for name in ("g0", "g_min", "b"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), abs=TOL), (i, name)
        nodes, dist, capped = gb.ball(i)
        assert [keys[x] for x in nodes] == local.ball and dist.tolist() == local.dist and capped == local.capped
        assert gb.context_edges[i] == want.hops[-1].edges_before
        if coverage:
            cand = Candidate(key=f"c{i}", subject=u, object=v, relation="R", votes=2)
            r = candidate_rewards(view, cand, cfg, 0.0, local)
            assert gb.delta_cov[i] == pytest.approx(r.delta_cov, abs=TOL), i
            assert gb.delta_vn[i] == pytest.approx(r.delta_vn, abs=TOL), i
            assert gb.temporal[i] == pytest.approx(r.temporal, abs=TOL), i
    return gb


def hub_graph(seed: int) -> tuple[nx.Graph, int]:
    """Preferential attachment plus two adjacent hubs of degree 60 and 50, two components, isolated nodes."""
    rng = np.random.default_rng(seed)
    G = nx.barabasi_albert_graph(120, 2, seed=seed)
    hubs = (120, 121)
    for h, d in zip(hubs, (60, 50)):
        for x in rng.choice(120, size=d, replace=False):
            G.add_edge(h, int(x))
    G.add_edge(*hubs)
    G.add_edges_from((122 + a, 122 + b) for a, b in nx.cycle_graph(6).edges())  # a second component
    return G, 132  # nodes 128..131 isolated


@pytest.mark.parametrize("seed", range(3))
def test_sparse_dense_and_disconnected_graphs(seed):
    rng = np.random.default_rng(seed)
    for n, e in ((60, 70), (30, 250), (40, 120)):
        G = nx.gnm_random_graph(n, e, seed=seed)
        G.add_nodes_from(range(n, n + 4))  # isolated: new entities
        H, keys, A = keyed(G)
        s, o = random_pairs(rng, n + 4, 40, G)
        assert_matches(H, keys, A, s, o)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("k_max", [2, 5, 12, 64])
def test_hubs_caps_and_hops(monkeypatch, hops, k_max, dense):
    if not dense:  # the routes for large graphs, on a small one
        monkeypatch.setattr(batch_balls, "_DENSE_N", 0)
        monkeypatch.setattr(batch_balls, "_DENSE_BFS_N", 0)
    G, n = hub_graph(hops * 7 + k_max)
    H, keys, A = keyed(G, n)
    rng = np.random.default_rng(k_max)
    s, o = random_pairs(rng, n, 30, G)
    s = np.concatenate([s, [120, 120, 121, 0, 128]])  # hub pairs, a hub edge, new endpoints
    o = np.concatenate([o, [121, 5, 129, 121, 129]])
    gb = assert_matches(H, keys, A, s, o, hops=hops, k_max=k_max)
    if k_max <= 12:
        assert gb.capped.any()


def test_new_endpoints_and_existing_edges():
    G = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (2, 4)])
    H, keys, A = keyed(G, 8)  # 5, 6, 7 isolated
    s, o = np.array([0, 5, 5, 2, 1, 4]), np.array([2, 0, 6, 3, 0, 7])
    gb = assert_matches(H, keys, A, s, o)
    assert gb.new_nodes.tolist() == [0, 1, 2, 0, 0, 1]
    assert gb.edge_exists.tolist() == [False, False, False, True, True, False]
    assert gb.context_edges[2] == 0  # two new entities: no structure at all
    assert gb.g0[2] == pytest.approx(1.5) and gb.b[2] == pytest.approx(1.5)
    assert gb.delta_vn[3] == 0.0 and gb.delta_cov[3] == 0.0 and gb.temporal[3] == 1.0
    assert gb.temporal[0] == pytest.approx(math.exp(-1.0))


@pytest.mark.parametrize("mu", [0.0, 0.3, 2.0])
def test_von_neumann_with_and_without_mu(mu):
    rng = np.random.default_rng(5)
    G = nx.gnm_random_graph(50, 160, seed=5)
    G.add_nodes_from(range(50, 53))
    H, keys, A = keyed(G)
    s, o = random_pairs(rng, 53, 40, G)
    for k_max in (6, 20, 40):  # small balls (stacked eigvalsh) and large ones (tridiagonal path)
        assert_matches(H, keys, A, s, o, mu=mu, k_max=k_max, kappa=0.3, beta=0.2)


def test_sampling_fallback_is_identical():
    G = nx.gnm_random_graph(40, 200, seed=3)
    H, keys, A = keyed(G)
    s, o = random_pairs(np.random.default_rng(3), 40, 15, G)
    seeds = np.arange(15) * 7919 + 11
    gb = assert_matches(H, keys, A, s, o, max_sp_pairs=20, seeds=seeds, k_max=16)
    assert gb.sampled.all()
    small = gauge_batch(A, s, o, k_max=16)
    assert not small.sampled.any()


@pytest.mark.parametrize(
    "flags", [(False, True, True), (True, False, True), (True, True, False), (False, False, False)]
)
def test_ablations_and_constants(flags):
    use_epc, use_ig, use_sp = flags
    G, n = hub_graph(11)
    H, keys, A = keyed(G, n)
    s, o = random_pairs(np.random.default_rng(11), n, 25, G)
    assert_matches(H, keys, A, s, o, use_epc=use_epc, use_ig=use_ig, use_sp=use_sp, lam=0.7, gamma=2.5,
                   c_node=0.5, c_edge=2.0, coverage=False)


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_twin_quotient_on_leafy_graphs(monkeypatch, mu):
    # Stars and caterpillars: leaves of one entity are twins, so balls shrink to a few classes.
    G = nx.star_graph(12)  # 0 is the hub
    G.add_edges_from((13 + a, 13 + b) for a, b in nx.path_graph(5).edges())
    G.add_edges_from((13 + x, 18 + 3 * x + leaf) for x in range(5) for leaf in range(3))  # a caterpillar
    G.add_edge(0, 13)
    H, keys, A = keyed(G)
    s = np.array([1, 1, 0, 18, 18, 19, 14, 1])
    o = np.array([2, 13, 5, 21, 19, 30, 16, 32])
    sizes = []
    real = batch.path_group
    monkeypatch.setattr(batch, "path_group", lambda A_, W, d: sizes.append((A_.shape[1], W.sum(1))) or real(A_, W, d))
    assert_matches(H, keys, A, s, o, mu=mu)
    assert any(q < total.max() for q, total in sizes)  # some ball was reduced
    star = gauge_batch(A, [1], [2], hops=1)  # two leaves of K_{1,12}: S_1 = {1, 2, hub}
    assert star.n_pairs[0, 1] == 3 and star.path_before[0, 1] == pytest.approx(4 / 3)


def test_a_larger_sparse_graph_takes_the_sparse_routes():
    # More nodes than the dense thresholds: CSR frontiers and oriented edge reads, unpatched.
    G = nx.barabasi_albert_graph(2600, 2, seed=8)
    H, keys, A = keyed(G)
    s, o = random_pairs(np.random.default_rng(8), 2600, 25, G)
    gb = assert_matches(H, keys, A, s, o, k_max=40)
    assert gb.ball(-1)[0].size == gb.n_nodes[-1, -1]
    with pytest.raises(IndexError):
        gb.ball(len(gb))


def test_hand_computed_square():
    # Path a-b-c-d plus the candidate (a, d): the values of tests/gauge/test_gedig.py.
    H, keys, A = keyed(nx.path_graph(4))
    gb = gauge_batch(A, [0], [3])
    want = gedig_gauge(H, keys[0], keys[3])
    assert gb.n_nodes[0].tolist() == [2, 4, 4]
    assert gb.delta_sp[0, 1] == pytest.approx(want.hops[1].delta_sp, abs=TOL)
    assert gb.delta_epc[0, 0] == pytest.approx(0.5) and gb.delta_epc[0, 1] == pytest.approx(1 / 5)
    # Completing C_4 makes every degree 2: degree entropy rises to ln 4 (Delta H_gain < 0).
    assert gb.entropy_after[0, 1] == pytest.approx(math.log(4))


def test_empty_candidates():
    _, _, A = keyed(nx.path_graph(3))
    gb = gauge_batch(A, [], [], hops=3)
    assert len(gb) == 0
    assert gb.f.shape == (0, 4) and gb.b.shape == (0,) and gb.ball_offsets.tolist() == [0]
    assert gb.delta_vn.shape == (0,)


def test_results_are_read_only_and_input_untouched():
    _, _, A = keyed(nx.cycle_graph(6))
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    gb = gauge_batch(A, np.array([0]), np.array([3]))
    with pytest.raises(ValueError):
        gb.b[0] = 1.0
    for x, y in zip(before, (A.data, A.indices, A.indptr)):
        np.testing.assert_array_equal(x, y)


def test_accepts_other_sparse_formats_and_explicit_zeros():
    _, _, A = keyed(nx.cycle_graph(7))
    ref = gauge_batch(A, [0, 2], [3, 5])
    for M in (sp.coo_matrix(A), sp.csr_matrix(A), A.tocsc(), A.astype(bool)):
        np.testing.assert_allclose(gauge_batch(M, [0, 2], [3, 5]).f, ref.f)
    rows = np.repeat(np.arange(7), np.diff(A.indptr))
    data, rc = np.r_[A.data.astype(float), 0.0, 0.0], (np.r_[rows, 0, 4], np.r_[A.indices, 4, 0])
    E = sp.csr_array((data, rc), shape=A.shape)
    assert np.count_nonzero(E.data == 0) == 2  # stored zeros are not edges
    np.testing.assert_allclose(gauge_batch(E, [0, 2], [3, 5]).f, ref.f)


def test_validation_errors():
    _, _, A = keyed(nx.path_graph(4))
    with pytest.raises(KgrValidationError, match="scipy.sparse"):
        gauge_batch(np.eye(3), [0], [1])
    with pytest.raises(KgrValidationError, match="square"):
        gauge_batch(sp.csr_array(np.ones((2, 3))), [0], [1])
    asym = sp.csr_array(np.array([[0, 1, 0], [0, 0, 1], [0, 1, 0]]))
    with pytest.raises(KgrValidationError, match="symmetric"):
        gauge_batch(asym, [0], [2])
    with pytest.raises(KgrValidationError, match="self-loops"):
        gauge_batch(sp.csr_array(np.array([[1, 1], [1, 0]])), [0], [1])
    with pytest.raises(KgrValidationError, match="0/1"):
        gauge_batch(sp.csr_array(np.array([[0, 2], [2, 0]])), [0], [1])
    with pytest.raises(KgrValidationError, match="out of range"):
        gauge_batch(A, [0], [4])
    with pytest.raises(KgrValidationError, match="out of range"):
        gauge_batch(A, [-1], [2])
    with pytest.raises(KgrValidationError, match="self-loop"):
        gauge_batch(A, [0, 2], [1, 2])
    with pytest.raises(KgrValidationError, match="same length"):
        gauge_batch(A, [0, 1], [2])
    with pytest.raises(KgrValidationError, match="integer"):
        gauge_batch(A, [0.5], [2])
    with pytest.raises(KgrValidationError, match="1-d"):
        gauge_batch(A, [[0]], [[2]])
    with pytest.raises(KgrValidationError, match="seeds"):
        gauge_batch(A, [0], [2], seeds=[1, 2])
    with pytest.raises(KgrValidationError, match="seeds"):
        gauge_batch(A, [0], [2], seeds=[-1])
    with pytest.raises(KgrValidationError, match="k_max"):
        gauge_batch(A, [0], [2], k_max=1)
    with pytest.raises(KgrValidationError, match="hops"):
        gauge_batch(A, [0], [2], hops=0)
    with pytest.raises(KgrValidationError, match="kappa"):
        gauge_batch(A, [0], [2], kappa=0.0)
    with pytest.raises(KgrValidationError, match="mu"):
        gauge_batch(A, [0], [2], mu=-1.0)
    with pytest.raises(KgrValidationError, match="c_edge"):
        gauge_batch(A, [0], [2], c_edge=0.0)


@pytest.mark.parametrize("dense", [True, False])
def test_internal_paths_and_chunking_agree_with_the_core(monkeypatch, dense):
    # The sparse-graph routes (CSR frontiers, oriented edge reads) and the small-graph ones
    # (dense frontiers, dense gathers); tiny chunks and stacks; both eigenvalue routes.
    if not dense:
        monkeypatch.setattr(batch_balls, "_DENSE_N", 0)
        monkeypatch.setattr(batch_balls, "_DENSE_BFS_N", 0)
    G, n = hub_graph(4)
    H, keys, A, s, o = *keyed(G, n), *random_pairs(np.random.default_rng(4), n, 20, G)
    for small, budget, chunk, mult in ((2, 64, 3, 0), (100, 1 << 20, 7, batch_kernels._HASH_MULT)):
        monkeypatch.setattr(batch_kernels, "_HASH_MULT", mult)  # 0: every twin hash collides; the exact sort runs
        monkeypatch.setattr(batch_kernels, "_SMALL_EIG", small)
        monkeypatch.setattr(batch_balls, "_STACK_BUDGET", budget)
        monkeypatch.setattr(batch_balls, "_BALL_CHUNK", chunk)
        monkeypatch.setattr(batch_balls, "_EDGE_CHUNK", chunk)
        assert_matches(H, keys, A, s, o, k_max=24, mu=0.1)
    for k_max, hops in ((5, 3), (70, 2)):  # heavy capping; two-word neighbour sets (k_max > 64)
        assert_matches(H, keys, A, s, o, k_max=k_max, hops=hops)
