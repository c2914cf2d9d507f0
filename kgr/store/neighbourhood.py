"""What a promotion round reads of the promoted graph: the candidates' balls, not every edge.

The decision core needs the promoted graph only inside each candidate's capped ball
:math:`S_H` (at most ``k_max`` nodes within ``hops`` of its endpoints, frozen for the round) and
the endpoints' degrees (:class:`kgr.gauge.policy.Prefetched`). :func:`fetch_balls` gets exactly
that with one bounded query per :data:`CANDIDATES_PER_QUERY` candidates (``policy_balls``): the
database runs the same capped breadth-first search as :func:`kgr.gauge._graph.capped_ball`, layer
by layer in key order, expands a layer only when the previous one fitted under the cap, and
returns at most ``k_max`` nodes, their induced edges and two degrees per candidate. The read no
longer grows with the promoted graph, only with the candidates (and the degrees met in their
first layers).

The constraints need a little more, also near the candidates only: the current objects of the
candidates' subjects on functional relations (:func:`functional_objects`) and, for a candidate
with an endpoint new to the promoted graph, who already holds its relation with its other
endpoint (:func:`fact_holders`, the near-duplicate check's twins).

Decisions are the same as on the whole graph (``tests/store/test_policy_e2e.py`` and
``tests/gauge/test_policy.py`` check it). One caveat: the database orders keys by UTF-16 code
units and Python by code points, which differ only between characters above U+FFFF and those in
U+E000–U+FFFF; a capped ball with such keys may keep other nodes than the core would on the
whole graph (still a valid ball of the same size).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from kgr.errors import KgrValidationError
from kgr.gauge.policy import Ball, Prefetched
from kgr.store.connection import Graph

__all__ = ["fetch_balls", "functional_objects", "fact_holders", "CANDIDATES_PER_QUERY"]

#: Candidates per ``policy_balls`` query.
CANDIDATES_PER_QUERY = 1000


def fetch_balls(graph: Graph, cands: Sequence[tuple[str, str, str]], *, hops: int,
                k_max: int) -> tuple[Prefetched, set[tuple[str, str]], int]:
    """Balls of ``cands`` (``(key, subject key, object key)``) on the current promoted graph.

    Returns the :class:`Prefetched` balls and endpoint degrees, the union of the balls' edges
    (undirected pairs, each once), and the number of queries run.
    """
    if hops < 1 or k_max < 2:
        raise KgrValidationError("hops must be >= 1 and k_max >= 2", field="hops")
    balls: dict[str, Ball] = {}
    degrees: dict[str, int] = {}
    edges: set[tuple[str, str]] = set()
    queries = 0
    rows = [{"key": k, "s": s, "o": o} for k, s, o in cands]
    for i in range(0, len(rows), CANDIDATES_PER_QUERY):
        queries += 1
        for r in graph.read("policy_balls", {"cands": rows[i:i + CANDIDATES_PER_QUERY], "k_max": k_max}, hops=hops):
            balls[r["key"]] = Ball(nodes=tuple(r["nodes"]), dist=tuple(r["dist"]), capped=r["capped"])
            for a, b in r["edges"]:
                edges.add((a, b) if a < b else (b, a))
            for k, deg in r["degrees"]:
                degrees[k] = deg
    return Prefetched(balls=balls, degrees=degrees), edges, queries


def functional_objects(graph: Graph, pairs: Iterable[tuple[str, str]], *,
                       min_objects: int = 1) -> dict[tuple[str, str], set[str]]:
    """``(subject key, relation)`` → its current promoted objects (only pairs with ``min_objects`` or more)."""
    asks = [{"subject": s, "relation": r} for s, r in sorted(set(pairs))]
    if not asks:
        return {}
    rows = graph.read("policy_functional_objects", {"pairs": asks, "min_objects": min_objects})
    return {(r["subject"], r["relation"]): set(r["objects"]) for r in rows}


def fact_holders(graph: Graph, asks: Iterable[tuple[str, str, str, str]]) -> dict[tuple[str, str, str], list[str]]:
    """``(relation, other key, side)`` → entities of the asked type holding ``relation`` with ``other``.

    ``asks`` are ``(relation, other key, side, entity type)`` with ``side`` ``"subject"`` (holders
    are subjects of ``(x)-[relation]->(other)``) or ``"object"`` (objects of
    ``(other)-[relation]->(x)``).
    """
    rows = [{"relation": r, "other": o, "side": side, "type": t} for r, o, side, t in sorted(set(asks))]
    if not rows:
        return {}
    out: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for r in graph.read("policy_fact_holders", {"asks": rows}):
        out[(r["relation"], r["other"], r["side"])].extend(r["holders"])
    return dict(out)
