"""From one chunk's extraction to what is staged: assertions with resolved, canonically ordered
endpoints, schema proposals and rejections (pure functions of the extraction and the schema)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from kgr.errors import KgrError, KgrValidationError
from kgr.extract.base import ExtractionResult
from kgr.model.canonical import canonical_name, entity_key
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema
from kgr.model.tools.disambiguation import DisambiguationResult
from kgr.model.triples import TripleAssertion
from kgr.store.staging import check_assertion

from kgr.ingest.report import Rejection

__all__ = ["Resolve", "assertions_of", "canonical_order", "failure_kind", "key_or_none", "merge_kg", "proposals_of",
           "rejections_of", "resolver", "tool_schema", "unique_exact"]

def merge_kg(a: ExtractedKG, b: ExtractedKG) -> ExtractedKG:
    ents = {t: list(dict.fromkeys([*a.entities.get(t, []), *b.entities.get(t, [])]))
            for t in dict.fromkeys([*a.entities, *b.entities])}
    rels: dict[str, list[RelationPair]] = {}
    for t in dict.fromkeys([*a.relations, *b.relations]):
        seen: dict[tuple[str, str], RelationPair] = {}
        for r in [*a.relations.get(t, []), *b.relations.get(t, [])]:
            seen.setdefault((r.subject, r.object), r)
        rels[t] = list(seen.values())
    return ExtractedKG(entities=ents, relations=rels)


def tool_schema(schema: KGSchema) -> dict[str, list[str]]:
    return {"entity_schema": sorted(schema.entity_types), "relation_schema": sorted(schema.relation_types)}


Resolve = Callable[[str, str], str]


def resolver(schema: KGSchema) -> Resolve:
    """``schema.resolve_name`` with the alias table built once (it is rebuilt on every call otherwise)."""
    table = schema.alias_map()

    def resolve(etype: str, name: str) -> str:
        return table.get((etype, canonical_name(name)), name)

    return resolve


def key_or_none(resolve: Resolve, etype: str, name: str) -> str | None:
    try:
        return entity_key(etype, resolve(etype, name))
    except KgrError:
        return None


def canonical_order(a: TripleAssertion, schema: KGSchema, resolve: Resolve) -> TripleAssertion:
    """A symmetric relation's assertion with the smaller entity key as subject (when that fits)."""
    spec = schema.relation_types.get(a.relation)
    if spec is None or not spec.symmetric:
        return a
    sk, ok = key_or_none(resolve, a.subject_type, a.subject), key_or_none(resolve, a.object_type, a.object)
    if sk is None or ok is None or sk <= ok:
        return a
    if (spec.domain and a.object_type not in spec.domain) or (spec.range and a.subject_type not in spec.range):
        return a  # the reversed triple would break the schema: keep the order given
    return a.model_copy(update={"subject": a.object, "subject_type": a.object_type,
                                "object": a.subject, "object_type": a.subject_type})


def assertions_of(kg: ExtractedKG, schema: KGSchema, source: str, resolve: Resolve | None = None, *,
                  spans: dict[tuple[str, str, str], tuple[int, int]] | None = None,
                  ) -> tuple[list[TripleAssertion], list[Rejection]]:
    """The relations of ``kg`` as assertions from ``source`` (endpoint types looked up in entities),
    symmetric ones in canonical order, each with its sentence's span from ``spans`` (keyed by
    ``(relation, subject, object)`` as ``kg`` names them; none when absent); and what could not be
    staged, with reasons."""
    resolve = resolve or resolver(schema)
    out: list[TripleAssertion] = []
    bad: list[Rejection] = []
    for rel, pairs in kg.relations.items():
        spec = schema.relation_types.get(rel)
        for p in pairs:
            st, ot = kg.entity_types_of(p.subject), kg.entity_types_of(p.object)
            if spec is not None:  # prefer the declared domain/range when a name has several types
                st = [t for t in st if not spec.domain or t in spec.domain] or st
                ot = [t for t in ot if not spec.range or t in spec.range] or ot
            item = f"{p.subject} -> {p.object}"
            if not st or not ot:
                missing = p.subject if not st else p.object
                bad.append(Rejection(chunk_id=source, kind="relation", type=rel, item=item,
                                     reason=f"endpoint {missing!r} is not among the extracted entities"))
                continue
            try:
                a = TripleAssertion(subject=p.subject, subject_type=st[0], relation=rel, object=p.object,
                                    object_type=ot[0], source=source, span=(spans or {}).get((rel, p.subject, p.object)))
                check_assertion(a, schema)
                # keys (a name with no letters raises here), then the schema's domain/range and loops
                sk = entity_key(a.subject_type, resolve(a.subject_type, a.subject))
                ok = entity_key(a.object_type, resolve(a.object_type, a.object))
                problems = schema.violations(a.subject_type, rel, a.object_type, self_loop=sk == ok)
                if problems:
                    raise ValueError("; ".join(problems))
            except (KgrError, ValueError) as exc:
                why = KgrValidationError.from_pydantic(exc) if isinstance(exc, ValidationError) else exc
                bad.append(Rejection(chunk_id=source, kind="relation", type=rel, item=item[:300],
                                     reason=str(why).splitlines()[0][:300]))
                continue
            out.append(canonical_order(a, schema, resolve))
    return out, bad


def proposals_of(res: ExtractionResult) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for t, names in res.proposed_types.entities.items():
        out.append(("entity", t, names[0] if names else ""))
    for r, rels in res.proposed_types.relations.items():
        out.append(("relation", r, f"{rels[0].subject} -> {rels[0].object}" if rels else ""))
    return out


def rejections_of(res: ExtractionResult, chunk_id: str) -> list[Rejection]:
    return [Rejection(chunk_id=chunk_id, kind=r.kind, type=r.type,
                      item=r.name if r.kind == "entity" else f"{r.subject} -> {r.object}",
                      reason=r.reason) for r in res.rejected]


def unique_exact(result: DisambiguationResult, key: str | None) -> bool:
    """Whether a disambiguation result is a unique exact match on the entity keyed ``key``."""
    best = result.best_match
    if key is None or best is None or best.confidence < 1.0:
        return False
    if best.candidate.properties.get("key") != key:
        return False
    return sum(1 for c in result.candidates if c.confidence >= 1.0) == 1


def failure_kind(exc: BaseException) -> str:
    return str(getattr(exc, "reason", "") or type(exc).__name__)
