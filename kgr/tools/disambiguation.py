"""``query_entity_disambiguation``: match extracted entities to the entities already in Neo4j.

Each distinct ``(type, name)`` of the extraction is looked up (after the KG schema's alias table,
when the context has a schema) with :func:`kgr.store.lookup.find_entity_candidates`: one bounded
query per batch of names. Candidates are the store's entities **of the same type** found by exact
key or by the fulltext index on names and aliases.

Confidence of a candidate:

* ``exact_match``: 1.0 when the canonical form of the name (or its schema-resolved form) equals
  the canonical form of the candidate's name or of one of its aliases — case, dots, apostrophes,
  punctuation and width do not matter (``"I.B.M."`` = ``"IBM"``); otherwise 0.0.
* ``semantic_similarity``: 1.0 for an exact match; otherwise the best, over the candidate's name
  and aliases, of :func:`string_similarity` (difflib ratios of the canonical forms, of their
  sorted tokens and without legal suffixes; 0.85 for an acronym of the other form), or — when ``ToolContext.embed`` is set —
  the cosine similarity of the embeddings (clipped to 0-1). Candidates still come from the
  fulltext index, so a synonym sharing no word with any stored name or alias is not found.
  Never fuzzy between names that are distinct by declaration: both declared by the KG schema for
  the type (``EDSAC`` is not a misspelling of ``EDVAC``), or with different numbers, roman
  numerals or generational suffixes (``Paper 12`` / ``Paper 13``, ``UNIVAC II`` / ``UNIVAC I``,
  ``Alan Turing Jr`` / ``Alan Turing``: :func:`~kgr.model.canonical.distinguishing_marks`); those
  score 0.0 unless they match exactly.

The **best match** is the highest-confidence candidate at or above ``similarity_threshold`` (and
above 0); ties go to the candidate with more of its related entities named in ``context``, then to
the higher fulltext score, then to the smaller key. An entity's ``confidence`` is its best match's
(0.0 when unmatched). ``quality_score`` = 0.6 · disambiguated/total + 0.4 · mean confidence
(0.0 for an empty extraction).

``final_kg`` is the extraction with matched names replaced by the store's names (and names sent
to one entity by the alias table or canonical form merged), relations rewritten accordingly and
repeats dropped: the input ``query_kg_storage`` expects.
"""

from __future__ import annotations

from collections.abc import Callable

import math
from collections.abc import Sequence
from difflib import SequenceMatcher

from kgr.errors import KgrNeo4jUnavailable
from kgr.model.canonical import canonical_text, distinguishing_marks, name_key, name_similarity, variant_key
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema
from kgr.model.tools import (
    Candidate,
    DisambiguationResult,
    DisambiguationSummary,
    EntityDisambiguationInput,
    EntityDisambiguationOutput,
    KBEntity,
    OriginalEntity,
    Relationship,
    RelationshipsResult,
)
from kgr.store.lookup import CandidateHit, EntityRecord, find_entity_candidates
from kgr.tools._text import TextProfile, analyze_text
from kgr.tools.context import ToolContext
from kgr.tools.registry import tool

__all__ = ["query_entity_disambiguation", "string_similarity", "rewrite_kg", "endpoint_renamer", "LOW_CONFIDENCE",
           "ACRONYM_SIMILARITY"]

#: Matches below this confidence are flagged for verification.
LOW_CONFIDENCE = 0.9
#: Similarity of an acronym and its expansion ("IBM" / "International Business Machines").
ACRONYM_SIMILARITY = 0.85
#: Characters of each canonical form compared (difflib is quadratic in the worst case).
_MAX_COMPARED = 160


def _r(x: float) -> float:
    return round(x, 4)


def _acronym(canon: str) -> str:
    toks = canon.split(" ")
    return "".join(t[0] for t in toks if t) if len(toks) >= 2 else ""


def _distinct(schema, etype: str, name: str, candidate: str) -> bool:  # noqa: ANN001 - a KGSchema or None
    """Names that fuzzy similarity must never join: two entities the schema declares (``EDSAC`` and
    ``EDVAC`` are both machines of the example schema), or names whose numbers, roman numerals or
    generational suffixes differ (``Paper 12`` / ``Paper 13``, ``UNIVAC I`` / ``UNIVAC II``, ``Alan
    Turing`` / ``Alan Turing Jr``: :func:`~kgr.model.canonical.distinguishing_marks`)."""
    if distinguishing_marks(name) != distinguishing_marks(candidate):
        return True
    return schema is not None and schema.declares(etype, name) and schema.declares(etype, candidate)


def string_similarity(a: str, b: str) -> float:
    """Fuzzy similarity of two names in [0, 1], on their canonical forms.

    The best of: difflib's ratio of the canonical forms, of their sorted tokens, and of their
    :func:`~kgr.model.canonical.variant_key` forms (no leading "the", no legal suffix such as "Corp"), and
    :data:`ACRONYM_SIMILARITY` when one is the acronym of the other.

    >>> string_similarity("I.B.M.", "ibm"), string_similarity("IBM", "International Business Machines")
    (1.0, 0.85)
    >>> round(string_similarity("Microsft", "Microsoft"), 4)
    0.9412
    """
    ca, cb = canonical_text(a)[:_MAX_COMPARED], canonical_text(b)[:_MAX_COMPARED]
    if not ca or not cb:
        return 0.0
    if ca == cb:
        return 1.0
    best = name_similarity(ca, cb)
    na, nb = variant_key(a)[:_MAX_COMPARED], variant_key(b)[:_MAX_COMPARED]
    if (na, nb) != (ca, cb):
        best = max(best, SequenceMatcher(None, na, nb).ratio())
    short_a, short_b = ca.replace(" ", ""), cb.replace(" ", "")
    if (len(short_a) >= 2 and _acronym(cb) == short_a) or (len(short_b) >= 2 and _acronym(ca) == short_b):
        best = max(best, ACRONYM_SIMILARITY)
    return best


def _cosine(u: Sequence[float], v: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(u, v))
    nu = math.sqrt(sum(a * a for a in u))
    nv = math.sqrt(sum(b * b for b in v))
    if nu == 0 or nv == 0:
        return 0.0
    return max(0.0, min(1.0, dot / (nu * nv)))


def _forms(rec: EntityRecord) -> list[str]:
    return list(dict.fromkeys([rec.name, *rec.aliases]))


def _kb_entity(rec: EntityRecord) -> KBEntity:
    return KBEntity(name=rec.name, properties=rec.properties)


def _is_exact(queries: list[str], rec: EntityRecord, hit: CandidateHit) -> bool:
    if hit.exact_key:
        return True
    keys = {name_key(q) for q in queries}
    return any(name_key(f) in keys for f in _forms(rec))


def _disambiguate(etype: str, name: str, rname: str, found: Sequence[CandidateHit], *,
                  params: EntityDisambiguationInput, schema: KGSchema | None, embed_of: dict[str, Sequence[float]],
                  ctx_profile: TextProfile | None, keep: int,
                  cross_type: list[str]) -> tuple[DisambiguationResult, CandidateHit | None]:
    """One extracted entity ``name`` (schema-resolved: ``rname``) of type ``etype`` against its store
    candidates ``found``: its scored candidates (at most ``keep``) and the best match's hit, if any.
    Exact matches of another type are reported in ``cross_type``."""
    queries = list(dict.fromkeys([name, rname]))
    scored: list[tuple[float, int, float, str, CandidateHit]] = []
    for h in found:
        if h.entity.type != etype:
            if _is_exact(queries, h.entity, h):
                cross_type.append(f"'{name}' is {h.entity.type} in the knowledge graph but was extracted as "
                                  f"{etype}: check its type.")
            continue
        if _is_exact(queries, h.entity, h):
            conf = 1.0
        elif params.disambiguation_strategy == "exact_match" or _distinct(schema, etype, rname, h.entity.name):
            conf = 0.0
        elif embed_of:
            conf = max(_cosine(embed_of[q], embed_of[f]) for q in queries for f in _forms(h.entity))
        else:
            conf = max(string_similarity(q, f) for q in queries for f in _forms(h.entity))
        overlap = 0
        if ctx_profile is not None:
            overlap = sum(1 for e in h.relationships if ctx_profile.contains(e.target.name))
        scored.append((conf, overlap, h.score or 0.0, h.entity.key or "", h))
    scored.sort(key=lambda s: (-s[0], -s[1], -s[2], s[3]))
    scored = scored[:keep]
    cands = [Candidate(candidate=_kb_entity(s[4].entity), confidence=_r(s[0])) for s in scored]
    best_i = next((i for i, s in enumerate(scored) if s[0] >= params.similarity_threshold and s[0] > 0), None)
    best = cands[best_i] if best_i is not None else None
    result = DisambiguationResult(
        original_entity=OriginalEntity(type=etype, name=name), candidates=cands, best_match=best,
        is_disambiguated=best is not None, confidence=best.confidence if best else 0.0)
    return result, scored[best_i][4] if best_i is not None else None


def _relationships_results(best_hits: Sequence[CandidateHit | None]) -> list[RelationshipsResult]:
    """The store relationships of each distinct best match, in order."""
    out: list[RelationshipsResult] = []
    seen_keys: set[str] = set()
    for h in best_hits:
        if h is None or (h.entity.key or h.entity.name) in seen_keys:
            continue
        seen_keys.add(h.entity.key or h.entity.name)
        out.append(RelationshipsResult(
            entity=_kb_entity(h.entity),
            relationships=[Relationship(type=e.type, target=_kb_entity(e.target), properties=e.properties,
                                        direction="out" if e.direction == "out" else "in") for e in h.relationships]))
    return out


@tool(read_only=True, idempotent=True, needs_graph=True)
def query_entity_disambiguation(params: EntityDisambiguationInput, *,
                                context: ToolContext) -> EntityDisambiguationOutput:
    """Call once query_extraction_density reports adequate density: looks every extracted entity up in the Neo4j knowledge graph (exact_match: same name or alias ignoring case and punctuation; semantic_similarity: fuzzy similarity) and returns the candidates with confidences, the best match above similarity_threshold, the relationships the match already has, name standardisation suggestions, a quality score (0.6 x disambiguation rate + 0.4 x mean confidence) and final_kg, the extraction rewritten to the knowledge graph's names, ready for query_kg_storage.

    Definitions are in the module docstring.
    """
    graph = context.graph
    if graph is None:
        raise KgrNeo4jUnavailable("query_entity_disambiguation needs a Neo4j connection (ToolContext.graph)")
    kg = params.extracted_kg
    strategy = params.disambiguation_strategy
    threshold = params.similarity_threshold
    schema = context.schema

    items: list[tuple[str, str]] = list(dict.fromkeys((t, n) for t, names in kg.entities.items() for n in names))
    resolved = [schema.resolve_name(t, n) if schema is not None and canonical_text(n) else n for t, n in items]
    hits = find_entity_candidates(graph, [(t, r) for (t, _), r in zip(items, resolved)],
                                  per_name=context.candidates_per_name,
                                  hits_per_name=4 * context.candidates_per_name,
                                  max_rels=context.relationships_per_entity,
                                  batch_size=min(context.batch_size, 500),
                                  known_before=context.known_before) if items else []

    embed_of: dict[str, Sequence[float]] = {}
    if strategy == "semantic_similarity" and context.embed is not None and items:
        texts = list(dict.fromkeys([*(n for _, n in items), *resolved,
                                    *(f for hs in hits for h in hs for f in _forms(h.entity))]))
        vectors = context.embed(texts)
        embed_of = dict(zip(texts, vectors))

    ctx_profile = analyze_text(params.context) if params.context else None
    results: list[DisambiguationResult] = []
    best_hits: list[CandidateHit | None] = []
    cross_type: list[str] = []
    for (etype, name), rname, found in zip(items, resolved, hits or [[] for _ in items]):
        result, best_hit = _disambiguate(etype, name, rname, found, params=params, schema=schema,
                                         embed_of=embed_of, ctx_profile=ctx_profile,
                                         keep=context.candidates_per_name, cross_type=cross_type)
        results.append(result)
        best_hits.append(best_hit)

    total = len(results)
    matched = sum(1 for r in results if r.is_disambiguated)
    rate = matched / total if total else 0.0
    avg = sum(r.confidence for r in results) / total if total else 0.0
    quality = 0.6 * rate + 0.4 * avg if total else 0.0

    final_kg, renames = rewrite_kg(kg, items, resolved, [h.entity.name if h is not None else None for h in best_hits])
    suggestions = _suggestions(items, results, renames, cross_type)

    return EntityDisambiguationOutput(
        disambiguation_results=results,
        relationships_results=_relationships_results(best_hits),
        quality_score=_r(quality),
        disambiguation_strategy=strategy,
        similarity_threshold=threshold,
        standardization_suggestions=suggestions,
        summary=DisambiguationSummary(total_entities=total, disambiguated_entities=matched,
                                      disambiguation_rate=_r(rate), average_confidence=_r(avg),
                                      unmatched_entities=total - matched),
        final_kg=final_kg,
    )


def endpoint_renamer(renames: dict[tuple[str, str], str]) -> Callable[[str], str]:
    """How :func:`rewrite_kg` renames a relation endpoint (relations name entities without a type):
    the one new name of that name under any type, or the name itself when it has none or several."""
    by_name: dict[str, set[str]] = {}
    for (_etype, n), new in renames.items():
        by_name.setdefault(n, set()).add(new)

    def rename(n: str) -> str:
        news = by_name.get(n)
        return next(iter(news)) if news is not None and len(news) == 1 else n

    return rename


def rewrite_kg(kg: ExtractedKG, items: Sequence[tuple[str, str]], resolved: Sequence[str],
               targets: Sequence[str | None]) -> tuple[ExtractedKG, dict[tuple[str, str], str]]:
    """``final_kg``: ``kg`` with names rewritten to the store's, and the renames made.

    ``items`` are the distinct ``(type, name)`` of ``kg`` in order, ``resolved`` their schema-resolved
    names, ``targets`` the name of each one's best match in the store (None when unmatched: the
    name becomes the first surface form of the same canonical entity in ``items``). Relations are
    rewritten accordingly and repeats dropped.
    """
    renames: dict[tuple[str, str], str] = {}
    first_of: dict[tuple[str, str], str] = {}
    for (etype, name), rname, hit in zip(items, resolved, targets):
        if hit is not None:
            target = hit
        else:
            target = first_of.setdefault((etype, name_key(rname)), rname)
        renames[(etype, name)] = target
    entities: dict[str, list[str]] = {}
    for etype, names in kg.entities.items():
        out: list[str] = []
        seen: set[str] = set()
        for n in names:
            new = renames.get((etype, n), n)
            if name_key(new) not in seen:
                seen.add(name_key(new))
                out.append(new)
        entities[etype] = out
    rename = endpoint_renamer(renames)
    relations: dict[str, list[RelationPair]] = {}
    for rtype, pairs in kg.relations.items():
        out_p: list[RelationPair] = []
        seen_p: set[tuple[str, str]] = set()
        for p in pairs:
            s, o = rename(p.subject), rename(p.object)
            k = (name_key(s), name_key(o))
            if k not in seen_p:
                seen_p.add(k)
                out_p.append(RelationPair(subject=s, object=o))
        relations[rtype] = out_p
    return ExtractedKG(entities=entities, relations=relations), renames


def _q(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _suggestions(items: list[tuple[str, str]], results: list[DisambiguationResult],
                 renames: dict[tuple[str, str], str], cross_type: list[str]) -> list[str]:
    out: list[str] = []
    variants: dict[tuple[str, str], list[str]] = {}
    for (etype, name), res in zip(items, results):
        new = renames[(etype, name)]
        if new != name:
            variants.setdefault((etype, new), []).append(name)
    for (etype, new), olds in variants.items():
        where = "the knowledge graph's name" if any(
            r.best_match and r.best_match.candidate.name == new for r in results) else "one name per entity"
        out.append(f"Use '{new}' for {_q(olds)} ({etype}): {where}.")
    for res in results:
        b = res.best_match
        if b is not None and b.confidence < LOW_CONFIDENCE:
            out.append(f"Verify '{res.original_entity.name}' → '{b.candidate.name}' ({res.original_entity.type}, "
                       f"confidence {b.confidence:.2f}) before relying on it.")
    out.extend(dict.fromkeys(cross_type))
    unmatched = [f"{r.original_entity.name} ({r.original_entity.type})" for r in results if not r.is_disambiguated]
    if unmatched:
        out.append(f"No knowledge-graph match for {len(unmatched)} entities: {_q(unmatched)}. "
                   "query_kg_storage will add them as new entities; check their spelling first.")
    if not out and results:
        out.append("Every entity matches the knowledge graph with high confidence: store with query_kg_storage.")
    return out
