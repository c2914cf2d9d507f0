"""The read side: entity search, an entity's neighbourhood, an edge's explanation, saved queries.

Everything above the store that looks at the graph (the :class:`~kgr.engine.Engine`, the tool
server's helpers, the Browser guide) calls these and gets the models of :mod:`kgr.model.inspect`.
All reads run with read routing; values are parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import RoutingControl

from kgr.errors import KgrNotFound
from kgr.model.review import EvidenceLink
from kgr.model.inspect import DecisionRecord, EdgeExplanation, EntityHit, EntityRef, NeighbourEdge, Neighbourhood
from kgr.store.connection import DRIVER_ERRORS, Graph, translate_driver_error
from kgr.store.lookup import lucene_query

__all__ = ["search_entities", "entity_neighbourhood", "explain_edge", "run_saved_query"]


def search_entities(graph: Graph, query: str, *, type: str | None = None, limit: int = 10) -> list[EntityHit]:
    """Entities whose name or alias matches ``query`` (fulltext, fuzzy), best first, at most ``limit``.

    With a ``type``, up to 20 × ``limit`` hits (at most 1,000) are fetched and filtered.
    """
    lucene = lucene_query(query)
    if not lucene:  # no letters or digits: nothing can match
        return []
    fetch = limit if type is None else min(1000, limit * 20)
    rows = graph.read("server_search_entities", {"query": lucene, "type": type, "limit": limit, "fetch": fetch})
    return [EntityHit(key=r["key"], name=r["name"], type=r["type"], aliases=[str(a) for a in r["aliases"] or []],
                      score=round(float(r["score"]), 4))
            for r in rows if r["key"] is not None]


def _num(x: Any) -> float | None:
    return None if x is None else float(x)


def entity_neighbourhood(graph: Graph, key: str, *, statuses: Sequence[str] = ("pending", "held"),
                         limit: int = 50) -> Neighbourhood:
    """Entity ``key`` and at most ``limit`` one-hop edges: current promoted ones first, then staged
    edges with one of ``statuses``.

    Raises
    ------
    KgrNotFound
        No entity has that key.
    """
    rows = graph.read("server_entity_neighbourhood", {"key": key, "statuses": list(dict.fromkeys(statuses)),
                                                      "fetch": limit + 1})
    if not rows:
        raise KgrNotFound(f"no entity with key {key[:120]!r} (find keys with search_entities)")
    row = rows[0]
    edges = [e for e in row["edges"] if e is not None]
    out = [NeighbourEdge(relation=str(e["relation"]), key=e["key"], direction="out" if e["outgoing"] else "in",
                         status=str(e["status"]), votes=None if e["votes"] is None else int(e["votes"]),
                         confidence=_num(e["confidence"]),
                         neighbour=EntityRef(key=str(e["neighbour"]["key"]), name=str(e["neighbour"]["name"]),
                                             type=e["neighbour"]["type"]))
           for e in edges[:limit]]
    return Neighbourhood(entity=EntityRef(key=row["key"], name=row["name"], type=row["type"]),
                         aliases=[str(a) for a in row["aliases"] or []], edges=out, truncated=len(edges) > limit)


def explain_edge(graph: Graph, key: str) -> EdgeExplanation:
    """The staged state of edge ``key``, the evidence of its first 10 votes (source, chunk, document,
    the sentence that produced the vote) and every decision recorded about it, oldest first.

    Raises
    ------
    KgrNotFound
        No staged edge has that key.
    """
    rows = graph.read("decisions_for_edge", {"key": key})
    if not rows or rows[0]["status"] is None:
        raise KgrNotFound(f"no staged edge with key {key!r}")
    row = rows[0]
    decisions = [DecisionRecord(action=str(d["action"]), version=None if d.get("version") is None else int(d["version"]),
                                at=_num(d.get("at")), reason=str(d.get("reason") or ""), inputs=d.get("inputs"))
                 for d in row["decisions"] if d and d.get("action") is not None]
    return EdgeExplanation(key=key, subject=str(row["subject"]), relation=str(row["relation"]),
                           object=str(row["object"]), status=str(row["status"]), votes=int(row["votes"] or 0),
                           confidence=float(row["confidence"] or 0.0), p_hat=_num(row.get("p_hat")),
                           features=[float(x) for x in row["features"]] if row.get("features") else None,
                           feature_set=row.get("feature_set"), decisions=decisions,
                           evidence=[EvidenceLink(source=src, chunk_id=cid, document=doc, quote=quote)
                                     for src, cid, doc, quote in row.get("evidence") or []])


def run_saved_query(graph: Graph, text: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one of the Browser guide's saved queries (``cypher/browser/*.cypher``, shown to users as
    they are, hence not a template) with read routing; its rows, column name → value."""
    try:
        records, _, _ = graph.driver.execute_query(text, params, database_=graph.database,
                                                   routing_=RoutingControl.READ)
    except DRIVER_ERRORS as exc:
        raise translate_driver_error(exc, graph.uri) from exc
    return [r.data() for r in records]
