"""Balls and their induced edges for many candidates at once (the first steps of :func:`kgr.gauge.batch.gauge_batch`).

Conventions as in :mod:`kgr.gauge.batch`: candidate ``c``'s ball is ``ball_nodes[offsets[c]:offsets[c+1]]``
(positions 0 and 1 are ``s`` and ``o``), ordered by ``(distance, node index)``; its induced edges are
``(ec, ei, ej)`` with ``ei < ej`` positions in the ball. Work is chunked to bound memory.
"""

from __future__ import annotations


import numpy as np


__all__ = ["ragged", "batch_balls", "ball_edges", "size_groups"]


_BALL_CHUNK = 512  # candidates per ball-expansion step (memory <= chunk * k_max^2 entries)
_EDGE_CHUNK = 128  # candidates per induced-edge step (a chunk x union-of-balls position map)
_DENSE_N = 2048  # up to this many nodes, ball edges are gathered from a dense adjacency matrix
_DENSE_BFS_N = 512  # up to this many nodes, balls grow by dense frontier products
_STACK_BUDGET = 1 << 18  # entries of one stacked (B, k, k) array in the path and entropy steps


def ragged(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows ``r``: the row of every flat entry and the index ``starts[r] + 0..lengths[r]-1``."""
    row = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    return row, _ragged_index(starts, lengths)


def _ragged_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The flat indices ``starts[r] + 0..lengths[r]-1`` of every row ``r``, concatenated."""
    first = np.cumsum(lengths) - lengths
    return np.repeat(starts - first, lengths) + np.arange(int(first[-1] + lengths[-1]) if len(lengths) else 0)


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique`` for int arrays (sort and mask: several times faster than numpy's hash path)."""
    if x.size == 0:
        return x
    x = np.sort(x)
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _balls_chunk(
    indptr: np.ndarray, indices: np.ndarray, n: int, s: np.ndarray, o: np.ndarray, hops: int, k_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Capped balls of one chunk: (owner, node, dist) sorted by (owner, dist, node), and capped."""
    m = s.size
    own = np.repeat(np.arange(m, dtype=np.int64), 2)
    nodes = np.column_stack([np.minimum(s, o), np.maximum(s, o)]).ravel()
    parts_own, parts_node, parts_dist = [own], [nodes], [np.zeros(2 * m, dtype=np.int64)]
    count = np.full(m, 2, dtype=np.int64)
    capped = np.zeros(m, dtype=bool)
    seen = own * n + nodes  # sorted: owner-major, min < max
    layer_own, layer_node = own, nodes
    for d in range(1, hops + 1):
        if layer_own.size == 0:
            break
        deg = indptr[layer_node + 1] - indptr[layer_node]
        take = np.minimum(deg, k_max)  # the k_max smallest neighbours suffice (module notes)
        overflow = np.zeros(m, dtype=bool)
        overflow[layer_own[deg > k_max]] = True
        row, idx = ragged(indptr[layer_node], take)
        keys = _sorted_unique(layer_own[row] * n + indices[idx])
        at = np.minimum(np.searchsorted(seen, keys), seen.size - 1)
        new = keys[seen[at] != keys]
        new_own = new // n
        cnt = np.bincount(new_own, minlength=m)
        remaining = k_max - count
        active = np.zeros(m, dtype=bool)
        active[layer_own] = True
        capped |= active & ((cnt > remaining) | overflow)
        rank = np.arange(new.size, dtype=np.int64) - (np.cumsum(cnt) - cnt)[new_own]
        keep = rank < remaining[new_own]
        t_own, t_key = new_own[keep], new[keep]
        t_node = t_key - t_own * n
        parts_own.append(t_own)
        parts_node.append(t_node)
        parts_dist.append(np.full(t_own.size, d, dtype=np.int64))
        count += np.bincount(t_own, minlength=m)
        go_on = ~capped[t_own]
        layer_own, layer_node = t_own[go_on], t_node[go_on]
        if d < hops and layer_own.size:
            seen = np.sort(np.concatenate([seen, t_key[go_on]]))
    own = np.concatenate(parts_own)
    order = np.argsort(own, kind="stable")  # each part is (owner, node)-sorted; parts by distance
    return own[order], np.concatenate(parts_node)[order], np.concatenate(parts_dist)[order], capped


def _balls_dense_chunk(
    dense: np.ndarray, s: np.ndarray, o: np.ndarray, hops: int, k_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_balls_chunk` on a small graph's dense ``float32`` adjacency: frontiers as matrix products."""
    m, n = s.size, dense.shape[0]
    rows = np.arange(m)
    seen = np.zeros((m, n), dtype=bool)
    seen[rows, s] = True
    seen[rows, o] = True
    parts_own = [np.repeat(rows, 2)]
    parts_node = [np.column_stack([np.minimum(s, o), np.maximum(s, o)]).ravel()]
    parts_dist = [np.zeros(2 * m, dtype=np.int64)]
    count = np.full(m, 2, dtype=np.int64)
    capped = np.zeros(m, dtype=bool)
    layer = seen.copy()
    for d in range(1, hops + 1):
        active = layer.any(axis=1)
        if not active.any():
            break
        new = (layer.astype(np.float32) @ dense) > 0
        new &= ~seen
        remaining = k_max - count
        capped |= active & (np.count_nonzero(new, axis=1) > remaining)
        take = new & (np.cumsum(new, axis=1) <= remaining[:, None])
        flat = np.flatnonzero(take)
        c, x = flat // n, flat % n
        parts_own.append(c)
        parts_node.append(x)
        parts_dist.append(np.full(c.size, d, dtype=np.int64))
        count += np.bincount(c, minlength=m)
        seen |= take
        layer = take
        layer[capped] = False
    own = np.concatenate(parts_own)
    order = np.argsort(own, kind="stable")
    return own[order], np.concatenate(parts_node)[order], np.concatenate(parts_dist)[order], capped


def batch_balls(
    indptr: np.ndarray, indices: np.ndarray, n: int, s: np.ndarray, o: np.ndarray, hops: int, k_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Capped balls of all candidates: flat nodes, distances, offsets, capped flags."""
    nodes, dists, sizes, capped = [], [], [], []
    dense = None
    if n <= _DENSE_BFS_N:
        dense = np.zeros((n, n), dtype=np.float32)
        dense[np.repeat(np.arange(n), np.diff(indptr)), indices] = 1.0
    for a in range(0, s.size, _BALL_CHUNK):
        sl = slice(a, a + _BALL_CHUNK)
        if dense is not None:
            own, node, dist, cap = _balls_dense_chunk(dense, s[sl], o[sl], hops, k_max)
        else:
            own, node, dist, cap = _balls_chunk(indptr, indices, n, s[sl], o[sl], hops, k_max)
        nodes.append(node)
        dists.append(dist)
        sizes.append(np.bincount(own, minlength=cap.size))
        capped.append(cap)
    size = np.concatenate(sizes)
    offsets = np.zeros(s.size + 1, dtype=np.int64)
    np.cumsum(size, out=offsets[1:])
    return np.concatenate(nodes), np.concatenate(dists), offsets, np.concatenate(capped)


def ball_edges(
    indptr: np.ndarray, indices: np.ndarray, n: int, ball_nodes: np.ndarray, offsets: np.ndarray, k_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Induced edges of every ball as (candidate, i, j), i < j ball positions, sorted; and the
    neighbour bit sets of the ball entries (:func:`_neighbour_masks`).

    Each edge is read once, from its endpoint of lower ``(degree, index)``: a hub's long row is
    never scanned, and a ball node scans at most :math:`O(\sqrt{|E|})` entries.
    """
    if n <= _DENSE_N:
        return _ball_edges_dense(indptr, indices, n, ball_nodes, offsets, k_max)
    m = offsets.size - 1
    deg = np.diff(indptr)
    rows = np.repeat(np.arange(n, dtype=np.int64), deg)
    dr, dc = deg[rows], deg[indices]
    up = (dr < dc) | ((dr == dc) & (rows < indices))
    up_idx = indices[up]
    up_deg = np.bincount(rows[up], minlength=n)
    up_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(up_deg, out=up_ptr[1:])
    gid = np.full(n, -1, dtype=np.int64)
    pos_dtype = np.int16 if k_max < np.iinfo(np.int16).max else np.int32
    out_c, out_i, out_j = [], [], []
    for c0 in range(0, m, _EDGE_CHUNK):
        c1 = min(m, c0 + _EDGE_CHUNK)
        a, z = int(offsets[c0]), int(offsets[c1])
        bn = ball_nodes[a:z]
        size = np.diff(offsets[c0 : c1 + 1])
        bo = np.repeat(np.arange(c1 - c0, dtype=np.int64), size)
        bp = np.arange(z - a, dtype=np.int64) - np.repeat(offsets[c0:c1] - a, size)
        uniq = _sorted_unique(bn)
        u = uniq.size
        gid[uniq] = np.arange(u)
        # pos[c, g] = position + 1 of union node g in ball c; column u stays 0, so that g = -1
        # (not in any ball) reads the previous row's zero column (or the last one, for c = 0).
        pos = np.zeros((c1 - c0, u + 1), dtype=pos_dtype)
        pos[bo, gid[bn]] = bp + 1
        pos = pos.ravel()
        d = up_deg[bn]
        y = up_idx[_ragged_index(up_ptr[bn], d)]
        own = np.repeat(bo, d)
        j1 = pos[own * (u + 1) + gid[y]].astype(np.int64)
        keep = j1 > 0
        ci, ii, jj = own[keep], np.repeat(bp, d)[keep], j1[keep] - 1
        out_c.append(ci + c0)
        out_i.append(np.minimum(ii, jj))
        out_j.append(np.maximum(ii, jj))
        gid[uniq] = -1
    ec, ei, ej = np.concatenate(out_c), np.concatenate(out_i), np.concatenate(out_j)
    order = np.argsort((ec * k_max + ei) * k_max + ej)
    ec, ei, ej = ec[order], ei[order], ej[order]
    return ec, ei, ej, _neighbour_masks(ec, ei, ej, offsets, k_max)


def _ball_edges_dense(
    indptr: np.ndarray, indices: np.ndarray, n: int, ball_nodes: np.ndarray, offsets: np.ndarray, k_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ball_edges` for small graphs: gather each ball's block of a dense adjacency matrix."""
    m = offsets.size - 1
    dense = np.zeros((n + 1, n + 1), dtype=bool)  # node n: the padding, no edges
    dense[np.repeat(np.arange(n), np.diff(indptr)), indices] = True
    size = np.diff(offsets)
    own = np.repeat(np.arange(m, dtype=np.int64), size)
    padded = np.full((m, k_max), n, dtype=np.int32)
    padded[own, np.arange(ball_nodes.size) - offsets[own]] = ball_nodes
    upper = np.triu(np.ones((k_max, k_max), dtype=bool), 1)
    words = (k_max + 63) // 64
    valid = (np.arange(k_max) < size[:, None]).ravel()
    out_c, out_i, out_j, out_m = [], [], [], []
    step = max(1, _STACK_BUDGET // (k_max * k_max))
    for c0 in range(0, m, step):
        P = padded[c0 : c0 + step]
        block = dense.take(P[:, :, None] * (n + 1) + P[:, None, :])  # int32 indices: n <= _DENSE_N
        bits = np.zeros((P.shape[0], k_max, 8 * words), dtype=np.uint8)
        packed = np.packbits(block, axis=2, bitorder="little")
        bits[:, :, : packed.shape[2]] = packed
        out_m.append(bits.view("<u8").reshape(-1, words)[valid[c0 * k_max : (c0 + P.shape[0]) * k_max]])
        block &= upper
        flat = np.flatnonzero(block)  # faster than a 3-d nonzero
        c, i, j = flat // (k_max * k_max), (flat // k_max) % k_max, flat % k_max
        out_c.append(c + c0)
        out_i.append(i)
        out_j.append(j)
    masks = np.concatenate(out_m).astype(np.uint64)
    return np.concatenate(out_c), np.concatenate(out_i), np.concatenate(out_j), masks


def size_groups(cands: np.ndarray, size: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Candidates grouped by exact ball size, each group cut so that B * k^2 <= the budget."""
    out = []
    order = np.argsort(size[cands], kind="stable")
    cands = cands[order]
    ks = size[cands]
    cuts = np.flatnonzero(np.diff(ks)) + 1
    for grp in np.split(cands, cuts):
        if grp.size == 0:
            continue
        k = int(size[grp[0]])
        step = max(1, _STACK_BUDGET // (k * k))
        out.extend((k, grp[a : a + step]) for a in range(0, grp.size, step))
    return out


def _neighbour_masks(ec: np.ndarray, ei: np.ndarray, ej: np.ndarray, offsets: np.ndarray, k_max: int) -> np.ndarray:
    """Per ball entry, the bit set of its neighbours' ball positions in :math:`S_H`: (N, words) uint64.

    Built 32 bits at a time with a weighted ``bincount``: a sum of distinct powers of two below
    :math:`2^{32}` is exact in float64 and equals their bitwise or.
    """
    words = (k_max + 63) // 64
    halves = 2 * words
    src = np.concatenate([offsets[ec] + ei, offsets[ec] + ej])
    dst = np.concatenate([ej, ei])
    bins = np.bincount(src * halves + (dst >> 5), weights=np.ldexp(1.0, (dst & 31).astype(np.int32)),
                       minlength=int(offsets[-1]) * halves).astype(np.uint64).reshape(-1, words, 2)
    return bins[:, :, 0] | (bins[:, :, 1] << np.uint64(32))
