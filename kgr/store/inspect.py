"""The read side: entity search, an entity's neighbourhood, an edge's explanation, saved queries.

Everything above the store that looks at the graph (the :class:`~kgr.engine.Engine`, the tool
server's helpers, the Browser guide) calls these and gets the models of :mod:`kgr.model.inspect`.
All reads run with read routing; values are parameters.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import canonical_text, edge_key, normalise_entity_key
from kgr.model.review import EvidenceLink
from kgr.model.inspect import DecisionRecord, EdgeExplanation, EntityHit, EntityRef, NeighbourEdge, Neighbourhood
from kgr.store.connection import DRIVER_ERRORS, Graph, translate_driver_error
from kgr.store.lookup import lucene_escape, lucene_query
from kgr.store.neo4j_driver import neo4j

__all__ = ["search_entities", "entity_neighbourhood", "explain_edge", "run_saved_query", "similar_entity_keys",
           "no_entity_message", "user_entity_key", "check_entity_keys", "relation_hint", "names_under_several_types"]


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


def user_entity_key(key: str) -> str:
    """The key a user's ``TYPE:name`` stands for, its name canonicalised as staging does
    (``Software:Flask`` → ``Software:flask``); a string that is no such key is returned as it is
    (the lookup then finds nothing and says so)."""
    try:
        return normalise_entity_key(key)
    except KgrValidationError:
        return key


#: The longest word :func:`similar_entity_keys` matches fuzzily (characters).
MAX_FUZZY_WORD = 64


def similar_entity_keys(graph: Graph, key: str, *, limit: int = 3) -> list[str]:
    """Keys of existing entities whose names are closest to ``key``'s name, those of ``key``'s type
    first: a did-you-mean for a key that names no entity. Looser than disambiguation's lookup: each
    word of the name matches within 1 edit (2 from six letters on) or as a prefix, whatever its length."""
    etype, sep, name = key.partition(":")
    # Words past MAX_FUZZY_WORD characters are no name's words, and Lucene refuses their fuzzy
    # automaton ("input automaton is too large"): they are left out of the hint.
    words = [lucene_escape(w) for w in canonical_text(name if sep else key).split(" ")[:8]
             if w and len(w) <= MAX_FUZZY_WORD]
    if not words:
        return []
    query = " ".join(f"{w}~{2 if len(w) >= 6 else 1} {w}*" for w in words)
    rows = graph.read("server_search_entities", {"query": query, "type": None, "limit": 10, "fetch": 10})
    ranked = [r["key"] for r in rows if r["type"] == etype] + [r["key"] for r in rows if r["type"] != etype]
    return [k for k in dict.fromkeys(ranked) if k is not None and k != key][:limit]


def no_entity_message(graph: Graph, key: str, *, suffix: str = "") -> str:
    """``no entity with key 'X'`` with a did-you-mean from :func:`similar_entity_keys` when there is one;
    for a key merged into another entity, that entity's key."""
    merged = graph.read("entity_merged_into", {"key": key})
    if merged:
        into = merged[0]["merged_into"]
        return (f"entity {key[:120]!r} was merged into {into[:120]!r}{suffix}; use {into[:120]!r} "
                f"(or `kgr snapshot rollback` to before the merge)")
    hint = similar_entity_keys(graph, key)
    text = f"no entity with key {key[:120]!r}{suffix}"
    return text + (f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else "")


def check_entity_keys(graph: Graph, keys: Sequence[str], roles: Sequence[str] | None = None) -> None:
    """Raise :class:`KgrNotFound` (with a did-you-mean) for the first of ``keys`` that names no entity;
    ``roles`` name each key's part in the message (``keep``, ``drop``)."""
    found = {r["key"] for r in graph.read("entity_keys_exist", {"keys": list(keys)})}
    for i, k in enumerate(keys):
        if k not in found:
            raise KgrNotFound(no_entity_message(graph, k, suffix=f" ({roles[i]})" if roles else ""))


def _num(x: Any) -> float | None:
    return None if x is None else float(x)


def entity_neighbourhood(graph: Graph, key: str, *, statuses: Sequence[str] = ("pending", "held"),
                         limit: int = 50) -> Neighbourhood:
    """Entity ``key`` and at most ``limit`` one-hop edges: current promoted ones first, then staged
    edges with one of ``statuses``.

    Raises
    ------
    KgrNotFound
        No entity has that key, or it was merged into another (the message names it).
    """
    key = user_entity_key(key)
    rows = graph.read("server_entity_neighbourhood", {"key": key, "statuses": list(dict.fromkeys(statuses)),
                                                      "fetch": limit + 1})
    if not rows or (not any(e is not None for e in rows[0]["edges"])  # none, or perhaps a merge's husk
                    and graph.read("entity_merged_into", {"key": key})):
        raise KgrNotFound(no_entity_message(graph, key, suffix=" (find keys with search_entities)"))
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


def relation_hint(relation: str, relations: Sequence[str] | None) -> str:
    """``; 'SUPPORT' is no relation of the schema: did you mean 'SUPPORTS'?`` for a ``relation`` not
    among ``relations`` (the schema's; compared case-blind), listing them when none is close; empty
    for a known relation, or without a schema's relations to compare with."""
    if not relations or relation in relations:
        return ""
    by_upper = {r.upper(): r for r in relations}
    close = difflib.get_close_matches(relation.upper(), list(by_upper), n=1)
    shown = ", ".join(sorted(relations)[:30]) + (", ..." if len(relations) > 30 else "")
    return f"; {relation[:120]!r} is no relation of the schema: " + (
        f"did you mean {by_upper[close[0]]!r}?" if close else f"its relations are {shown}")


def _edge_rows(graph: Graph, key: str,
               relations: Sequence[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """``decisions_for_edge``'s rows for ``key`` (24 hex digits, or ``SUBJECT_KEY|RELATION|OBJECT_KEY``
    with entity keys a user typed: normalised, either direction), and the edge key found; a
    ``RELATION`` not among ``relations`` is named with a did-you-mean (:func:`relation_hint`)."""
    if key.count("|") == 2:
        s_key, rel, o_key = (part.strip() for part in key.split("|"))
        s_key, o_key = user_entity_key(s_key), user_entity_key(o_key)
        for a, b in ((s_key, o_key), (o_key, s_key)):
            k = edge_key(a, rel, b)
            found = graph.read("decisions_for_edge", {"key": k})
            if found and found[0]["status"] is not None:
                return found, k
        check_entity_keys(graph, [s_key, o_key])
        raise KgrNotFound(f"no staged edge {s_key} -[{rel}]-> {o_key}" + relation_hint(rel, relations))
    rows = graph.read("decisions_for_edge", {"key": key})
    if not rows or rows[0]["status"] is None:
        raise KgrNotFound(f"no staged edge with key {key[:120]!r} (an edge key is 24 hex digits, as kgr review queue "
                          "and kgr export jsonl --pending print them; or give SUBJECT_KEY|RELATION|OBJECT_KEY)")
    return rows, key


def explain_edge(graph: Graph, key: str, *, relations: Sequence[str] | None = None) -> EdgeExplanation:
    """The staged state of edge ``key``, the evidence of its first 10 votes (source, chunk, document,
    the sentence that produced the vote) and every decision recorded about it, oldest first.

    ``key`` is an edge key, or ``SUBJECT_KEY|RELATION|OBJECT_KEY`` (entity keys as a user types
    them: ``Software:Flask|DEPENDS_ON|Software:Werkzeug``); ``relations``, the schema's relation
    types, give a did-you-mean for a relation that is none of them.

    Raises
    ------
    KgrNotFound
        No staged edge has that key.
    """
    rows, key = _edge_rows(graph, key, relations)
    row = rows[0]
    decisions = [DecisionRecord(action=str(d["action"]), version=None if d.get("version") is None else int(d["version"]),
                                at=_num(d.get("at")), reason=str(d.get("reason") or ""), inputs=d.get("inputs"))
                 for d in row["decisions"] if d and d.get("action") is not None]
    return EdgeExplanation(key=key, subject=str(row["subject"]), relation=str(row["relation"]),
                           object=str(row["object"]), status=str(row["status"]), votes=int(row["votes"] or 0),
                           documents=int(row.get("documents") or 0),
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
                                                   routing_=neo4j.RoutingControl.READ)
    except DRIVER_ERRORS as exc:
        raise translate_driver_error(exc, graph.uri) from exc
    return [r.data() for r in records]


def names_under_several_types(graph: Graph, schema: Any = None, *, limit: int = 10) -> list[tuple[str, list[str]]]:
    """Canonical names that live entities carry under more than one type (``"linux"`` as a Language,
    a Software and an Organization), with those types sorted, most types first; at most ``limit``.
    A name the schema itself declares under two or more of its types (``schema.declares``: Python as a
    Language and as a Software) is the schema's choice and is left out. Scans the entities."""
    out = []
    for row in graph.read("names_under_several_types", {"limit": 10 * limit}):  # room for the declared ones
        name, types = str(row["name"]), sorted(str(t) for t in row["types"])
        if schema is not None and sum(1 for t in types if schema.declares(t, name)) >= 2:
            continue
        out.append((name, types))
    return out[:limit]

