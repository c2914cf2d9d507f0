"""Cutting a slice from the store, and checking one (see :mod:`kgr.slices`)."""

from __future__ import annotations

from collections.abc import Sequence

from kgr.errors import KgrValidationError
from kgr.model.embedding import EmbedFn
from kgr.model.schema import KGSchema
from kgr.model.schema_versions import schema_hash
from kgr.model.slices import (NEUTRAL_WEIGHT, ContextSlice, SliceEdge, SliceNode, SlicePolicy, slice_content,
                              slice_digest, tier_of)
from kgr.slices.adjacency import adjacency_for
from kgr.slices.anchors import MAX_ANCHORS, check_anchor_count, embed_query, resolve_anchors, user_anchor_keys
from kgr.slices.expand import expand
from kgr.slices.policies import DEFAULT_POLICY, get_policy
from kgr.slices.render import BareLines, TokenCounter, pack
from kgr.slices.tokens import seal
from kgr.store.connection import Graph
from kgr.store.slice_records import record_slice
from kgr.store.slices import EdgeRow, edge_quotes, promoted_edges_around, slice_state

__all__ = ["build_slice", "slice_id_of", "schema_version", "MAX_ANCHORS"]

#: Attempts at reading a consistent graph (a promotion round between the reads forces another).
_ATTEMPTS = 3


def schema_version(schema: KGSchema | None) -> str:
    """A slice's ``schema_version``: the first 16 hex digits of the schema's hash, the one the graph
    stores (:func:`kgr.model.schema_versions.schema_hash`, ``kgr status``'s ``schema_hash``, so a
    reader can match the two), or ``none``."""
    if schema is None:
        return "none"
    return schema_hash(schema)[:len("sha256:") + 16]


def slice_id_of(s: ContextSlice) -> str:
    """The slice's id: SHA-256 (32 hex chars) of its canonical content, every field a reader sees
    (:func:`kgr.model.slices.slice_content`)."""
    return slice_digest(slice_content(s))


def build_slice(graph: Graph, *, anchors: Sequence[str] = (), query: str | None = None,
                policy: str | SlicePolicy = DEFAULT_POLICY, budget_tokens: int | None = None,
                model: str | None = None, schema_version: str = "none", key: bytes | None = None,
                embed: EmbedFn | None = None, record: bool = True) -> ContextSlice:
    """The slice around ``anchors`` (entity keys) and/or the entities a ``query`` finds (fulltext,
    and with ``embed`` the nearest name embeddings: :mod:`kgr.slices.anchors`), under ``policy``
    and ``budget_tokens``. Hops come from the in-memory promoted graph when it is current
    (:mod:`kgr.slices.adjacency`), else from Neo4j; the slice is the same either way. The
    slice's edges are recorded under its id so that outcome feedback can name the slice alone; the
    record is written behind the answer (:mod:`kgr.store.slice_records`); ``record=False`` leaves
    it out (verification cuts a slice again only to compare it).

    Raises
    ------
    KgrNotFound
        An anchor key does not exist (without a query), or nothing matches.
    KgrValidationError
        More than 64 anchors, or a budget that does not hold the header.
    """
    pol = policy if isinstance(policy, SlicePolicy) else get_policy(policy)
    budget = budget_tokens if budget_tokens is not None else pol.budget_tokens
    if budget < 32:
        raise KgrValidationError("budget_tokens must be at least 32", field="budget_tokens")
    count = TokenCounter(model)
    check_anchor_count(anchors)  # before the query is embedded
    anchors = user_anchor_keys(anchors)  # names canonicalised as staging does (Software:Flask → Software:flask)
    query_vector = embed_query(embed, query) if embed is not None and query else None
    for _ in range(_ATTEMPTS):
        state = slice_state(graph, anchors)  # with the anchors that exist: one read
        version, graph_hash = state.version, state.hash
        roots = resolve_anchors(graph, anchors, query, query_vector, known=state.anchors)
        weights = (pol.w_confidence, pol.w_votes, pol.w_outcome)
        adj = adjacency_for(graph, state)  # the in-memory graph when it is current (kgr.slices.adjacency)
        if adj is not None:
            exp = expand([a.key for a in roots], pol, lambda keys, fanout: adj.around(keys, fanout, weights))
        else:
            exp = expand([a.key for a in roots], pol,
                         lambda keys, fanout: promoted_edges_around(graph, keys, fanout=fanout, types=state.types,
                                                                    weights=weights))
        ranked = [e for _, e in exp.edges]
        # quotes only for the edges that could fit: those whose lines, without their quotes, fit
        bare = BareLines(count)
        fits = len(pack(pol.policy_id, version, roots, ranked, {}, budget, count, exact=False, bare=bare).edges)
        per_edge, chars = pol.quotes_per_edge, pol.quote_chars
        known, missing = adj.cached_quotes(ranked[:fits], per_edge, chars) if adj is not None else ({}, ranked[:fits])
        if adj is not None and not missing:  # nothing read after the state: the slice is of that state
            quotes = known
            break
        read = edge_quotes(graph, missing, per_edge=per_edge, chars=chars)
        quotes = {**known, **read.by_edge}
        if read.state == (version, graph_hash):  # read after everything else: no round came in between
            if adj is not None:
                adj.keep_quotes(read.by_edge, per_edge, chars)
            break
    else:  # pragma: no cover - three promotion rounds during one slice
        raise KgrValidationError("the graph kept changing while the slice was cut; try again", field="graph")
    kept, text, tokens, quoted = pack(pol.policy_id, version, roots, ranked, quotes, budget, count,
                                      quote_share=pol.quote_share, bare=bare)
    # truncated: a fact, or a kept fact's quotes, left out of the text for the budget
    truncated = len(kept) < len(ranked) or any(e.key in quotes and e.key not in quoted for e in kept)
    prio = {e.key: p for p, e in exp.edges}
    nodes = {a.key: SliceNode(key=a.key, type=a.type, name=a.name, distance=0, anchor=True) for a in roots}
    for e in kept:
        for end in (e.subject, e.object):
            nodes.setdefault(end.key, SliceNode(key=end.key, type=end.type, name=end.name,
                                                distance=exp.distance.get(end.key, 0)))
    s = ContextSlice(
        slice_id="", anchors=[a.key for a in roots], policy_id=pol.policy_id, policy_params_hash=pol.params_hash(),
        schema_version=schema_version, graph_hash=graph_hash, graph_version=version,
        nodes=sorted(nodes.values(), key=lambda n: n.key), edges=[_edge(e, prio[e.key], quotes) for e in kept],
        budget_tokens=budget, tokens=tokens, token_counter=count.name, truncated=truncated, text=text,
        admissibility_token="")
    s = seal(s, key)
    if record:
        record_slice(graph, s.slice_id, pol.policy_id, graph_hash, [(e.key, e.subject.key, e.object.key) for e in kept])
    return s


def _edge(e: EdgeRow, priority: float, quotes: dict) -> SliceEdge:
    w = NEUTRAL_WEIGHT if e.outcome_weight is None else e.outcome_weight
    return SliceEdge(key=e.key, subject=e.subject.key, relation=e.relation, object=e.object.key,
                     confidence=e.confidence, votes=e.votes, outcome_weight=w, tier=tier_of(w),
                     priority=round(priority, 9), quotes=quotes.get(e.key, []))
