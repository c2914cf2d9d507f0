"""The priority-queue expansion that chooses a slice's entities and edges (pure; no database).

After the Live KG context slicer (002_882827c94a695f02.txt, §3.2), on kgr's promoted graph:

1. every anchor enters a max-heap at distance 0 with priority 1;
2. while the heap is not empty and fewer than ``max_nodes`` entities are selected: pop the best
   candidate (highest priority, then nearest, then smallest key); skip it if already selected or
   farther than ``radius``; select it with its priority :math:`P(u)`, and push every neighbour
   ``v`` reached over an edge ``e`` with priority :math:`P(u)\\,b(e)\\,\\delta` at distance ``d + 1``
   (:math:`b` the edge's normalised base priority, see :class:`~kgr.model.slices.SlicePolicy`):
   a node's priority is that of its best path from an anchor, so a well-supported chain can
   outrank a weak direct fact;
3. the slice's edges are the edges between selected entities, ranked by
   :math:`\\max(P(s), P(o))\\,b(e)\\,\\delta`, ties by key.

Inhibitory edges (outcome weight ≤ −0.01) are neither traversed nor kept when the policy drops
them. Everything is ordered canonically, so the same graph, policy and anchors give the same
result on any machine.

Worked example (δ = 0.9, w_c = 1, w_v = 0.25, w_o = 0.5): an edge with confidence 0.9, 4 votes
and the neutral outcome weight 0.3 has b = (0.9 + 0.25·0.4 + 0.5·0.3) / 1.75 ≈ 0.657; its far end,
one hop from an anchor, enters the heap with priority 0.657·0.9 ≈ 0.591, and a node one such
edge further with 0.591·0.657·0.9 ≈ 0.350.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence

from kgr.model.slices import NEUTRAL_WEIGHT, SlicePolicy, tier_of
from kgr.store.slices import EdgeRow

__all__ = ["base_priority", "expand", "hop_fanout", "Expansion"]


def base_priority(edge: EdgeRow, policy: SlicePolicy) -> float:
    """:math:`b(e) = (w_c c_e + w_v \\min(v_e, 10)/10 + w_o \\max(o_e, 0)) / (w_c + w_v + w_o)`, in
    [0, 1] (the outcome weight defaults to the neutral 0.3; all weights 0 gives 1)."""
    w = NEUTRAL_WEIGHT if edge.outcome_weight is None else edge.outcome_weight
    total = policy.w_confidence + policy.w_votes + policy.w_outcome
    raw = (policy.w_confidence * edge.confidence + policy.w_votes * min(edge.votes, 10) / 10
           + policy.w_outcome * max(w, 0.0))
    return raw / total if total > 0 else 1.0


def _allowed(edge: EdgeRow, policy: SlicePolicy) -> bool:
    w = NEUTRAL_WEIGHT if edge.outcome_weight is None else edge.outcome_weight
    return not (policy.drop_inhibited and tier_of(w) == "inhibitory")


class Expansion:
    """What :func:`expand` chose: each selected entity's distance, and the ranked edges among them."""

    def __init__(self, distance: dict[str, int], edges: list[tuple[float, EdgeRow]]):
        self.distance = distance
        self.edges = edges


def hop_fanout(policy: SlicePolicy, room: int, waiting: int, hop: int) -> int:
    """Edges read per entity at a hop: ``fanout`` at the anchors; further out, what the remaining
    entity budget can use, :math:`\\min(f, \\max(4, 2\\lceil room / waiting \\rceil))` (the best
    edges by base priority come first, and only ``room`` more entities can be selected).

    >>> p = SlicePolicy(name="x", fanout=64)
    >>> hop_fanout(p, 200, 50, 0), hop_fanout(p, 200, 50, 1), hop_fanout(p, 10, 50, 1)
    (64, 8, 4)
    """
    if hop == 0:
        return policy.fanout
    return min(policy.fanout, max(4, 2 * -(-room // max(1, waiting))))


def expand(anchors: Sequence[str], policy: SlicePolicy,
           neighbours: Callable[[Iterable[str], int], list[EdgeRow]]) -> Expansion:
    """Run the expansion from ``anchors``; ``neighbours(keys, fanout)`` returns the edges incident
    to those entities, at most ``fanout`` each (it is called once per hop, for the best entities
    waiting at that hop, with :func:`hop_fanout`)."""
    adjacency: dict[str, dict[str, EdgeRow]] = {}
    seen_edges: dict[str, EdgeRow] = {}

    def load(keys: Iterable[str], fanout: int) -> None:
        todo = sorted(k for k in set(keys) if k not in adjacency)
        for k in todo:
            adjacency[k] = {}
        for e in neighbours(todo, fanout) if todo else []:
            if not _allowed(e, policy):
                continue
            seen_edges.setdefault(e.key, e)
            for end in (e.subject.key, e.object.key):
                if end in adjacency:
                    adjacency[end][e.key] = e

    heap: list[tuple[float, int, str]] = [(-1.0, 0, a) for a in sorted(set(anchors))]
    heapq.heapify(heap)
    distance: dict[str, int] = {}
    best: dict[str, float] = {}
    loaded_hops: set[int] = set()
    while heap and len(distance) < policy.max_nodes:
        neg, d, key = heapq.heappop(heap)
        if key in distance or d > policy.radius:
            continue
        distance[key], best[key] = d, -neg
        if d == policy.radius:
            continue
        if d not in loaded_hops:
            # one read per hop: the best candidates waiting at this distance, as many as could still
            # be selected (the others are read on their own if the expansion ever reaches them)
            loaded_hops.add(d)
            room = policy.max_nodes - len(distance)
            waiting = heapq.nsmallest(room, ((p, k) for p, dd, k in heap if dd == d and k not in distance))
            load([key] + [k for _, k in waiting], hop_fanout(policy, room, len(waiting) + 1, d))
        elif key not in adjacency:
            load([key], hop_fanout(policy, policy.max_nodes - len(distance), 1, d))
        for ekey in sorted(adjacency.get(key, {})):
            e = adjacency[key][ekey]
            other = e.object.key if e.subject.key == key else e.subject.key
            if other not in distance:
                heapq.heappush(heap, (neg * base_priority(e, policy) * policy.distance_decay, d + 1, other))
    ranked = []
    for e in seen_edges.values():
        ps, po = best.get(e.subject.key), best.get(e.object.key)
        if ps is not None and po is not None:
            ranked.append((max(ps, po) * base_priority(e, policy) * policy.distance_decay, e))
    ranked.sort(key=lambda pe: (-pe[0], pe[1].key))
    return Expansion(distance, ranked)
