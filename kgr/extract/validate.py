"""Holding raw extractor output to a KG schema: accepted, proposed (new types) or rejected (with reasons).

:func:`sanitize_extraction` takes entities and relations exactly as an extractor produced them (for
the LLM extractor, the validated JSON reply) and sorts every item into one of three places:

- **accepted** (``kg``): entity types the schema declares; relations of declared types whose
  endpoint types satisfy the relation's domain and range;
- **proposed** (``proposed``): entity or relation types the schema does not declare, with their
  instances, for schema-expansion staging;
- **rejected** (``rejected``): everything else, with a reason: a name with no letters or digits, a
  domain/range violation, a self loop, a relation endpoint whose type is outside the schema, an
  endpoint that is not among the extracted entities and whose type cannot be inferred.

Rules, in order:

0. A type name that is not declared but matches a declared one when case and every character other
   than letters and digits are ignored is read as that type (``"person"`` → ``Person``,
   ``"works at"`` → ``WORKS_AT``).
1. Names are stripped; an entity type's names are deduplicated by canonical form
   (:func:`kgr.model.canonical.canonical_name`), keeping the first surface form.
2. The schema's alias tables apply (``"I.B.M."`` becomes ``"IBM"`` when the schema says so).
3. Relation endpoints are matched to entities by canonical form. An endpoint that was never listed
   as an entity is added under the relation's domain (subject) or range (object) type when that
   is a single type; otherwise the relation is rejected.
4. When a name is listed under several types, the first combination of endpoint types (in listed
   order) that satisfies the schema is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.extract.base import ProposedTypes, RejectedItem, TypedRelation
from kgr.model.canonical import IDENTIFIER_RE, canonical_name, no_control_characters
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema

__all__ = ["SanitizedExtraction", "sanitize_extraction"]


class SanitizedExtraction(BaseModel):
    """The three-way split of raw extractor output (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    kg: ExtractedKG = Field(default_factory=ExtractedKG)
    proposed: ProposedTypes = Field(default_factory=ProposedTypes)
    rejected: list[RejectedItem] = Field(default_factory=list)


def _canon(name: str) -> str | None:
    try:
        return canonical_name(name)
    except KgrValidationError:
        return None


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str):
        return f"name must be a string, got {type(name).__name__}"
    if not name.strip():
        return "empty name"
    try:
        no_control_characters(name)
    except ValueError as exc:
        return str(exc)
    try:
        canonical_name(name)
    except KgrValidationError as exc:
        return str(exc).removeprefix("name: ")
    return None


def _type_key(t: str) -> str:
    return "".join(ch for ch in t.casefold() if ch.isalnum())


def _endpoint(pair: Any, field: str) -> Any:
    if isinstance(pair, Mapping):
        return pair.get(field)
    return getattr(pair, field, None)


def sanitize_extraction(
    entities: Mapping[str, Iterable[str]],
    relations: Mapping[str, Iterable[Any]],
    schema: KGSchema,
) -> SanitizedExtraction:
    """Split raw extractor output into accepted, proposed and rejected items (rules in the module docstring).

    Parameters
    ----------
    entities:
        ``{type: [name, ...]}`` as extracted.
    relations:
        ``{type: [pair, ...]}`` where each pair is a mapping or an object with ``subject`` and ``object``.
    schema:
        The KG schema to hold the output to. An open schema (no types at all) accepts every type
        whose name is an identifier.

    Returns
    -------
    SanitizedExtraction
        ``kg`` (valid :class:`ExtractedKG`), ``proposed`` and ``rejected``.
    """
    out = SanitizedExtraction()
    aliases = schema.alias_map()
    accepted: dict[str, list[str]] = {}
    # canonical name -> [(type, surface form)] over accepted entities, in order of first appearance
    known: dict[str, list[tuple[str, str]]] = {}
    # canonical name -> [proposed type]
    proposed_of: dict[str, list[str]] = {}

    entity_keys = {_type_key(t): t for t in schema.entity_types}
    relation_keys = {_type_key(r): r for r in schema.relation_types}

    def fix_type(t: Any, declared: dict[str, str]) -> str:
        t = str(t)
        if t in declared.values():
            return t
        return declared.get(_type_key(t), t)

    def declared_entity(t: str) -> bool:
        return bool(IDENTIFIER_RE.fullmatch(t)) and len(t) <= 64 and schema.has_entity_type(t)

    def declared_relation(r: str) -> bool:
        return bool(IDENTIFIER_RE.fullmatch(r)) and len(r) <= 64 and schema.has_relation_type(r)

    def accept_entity(t: str, name: str) -> str:
        """Add ``name`` under declared type ``t``; return the surface form the KG uses for it."""
        name = name.strip()
        canon = canonical_name(name)
        target = aliases.get((t, canon))
        if target is not None:
            name, canon = target, canonical_name(target)
        for kt, surface in known.get(canon, []):
            if kt == t:
                return surface
        accepted.setdefault(t, []).append(name)
        known.setdefault(canon, []).append((t, name))
        return name

    for etype, names in entities.items():
        etype = fix_type(etype, entity_keys)
        for name in names:
            problem = _name_problem(name)
            if problem:
                out.rejected.append(RejectedItem(kind="entity", type=str(etype), name=str(name)[:200], reason=problem))
                continue
            if declared_entity(etype):
                accept_entity(etype, name)
            else:
                out.proposed.add_entity(etype, name.strip())
                lst = proposed_of.setdefault(canonical_name(name), [])
                if etype not in lst:
                    lst.append(etype)

    rel_pairs: dict[str, list[RelationPair]] = {}
    for rtype, pairs in relations.items():
        rtype = fix_type(rtype, relation_keys)
        spec = schema.relation_types.get(rtype)
        for pair in pairs:
            subj, obj = _endpoint(pair, "subject"), _endpoint(pair, "object")
            problem = _name_problem(subj) or _name_problem(obj)
            if problem:
                out.rejected.append(
                    RejectedItem(
                        kind="relation", type=str(rtype), subject=str(subj)[:200], object=str(obj)[:200], reason=problem
                    )
                )
                continue
            subj, obj = subj.strip(), obj.strip()
            cs, co = canonical_name(subj), canonical_name(obj)
            s_types = [t for t, _ in known.get(cs, [])]
            o_types = [t for t, _ in known.get(co, [])]
            s_prop, o_prop = proposed_of.get(cs, []), proposed_of.get(co, [])

            if not declared_relation(rtype):
                out.proposed.add_relation(
                    rtype,
                    TypedRelation(
                        subject=subj,
                        subject_type=(s_types or s_prop or [None])[0],
                        object=obj,
                        object_type=(o_types or o_prop or [None])[0],
                    ),
                )
                continue

            def reject(reason: str) -> None:
                out.rejected.append(RejectedItem(kind="relation", type=rtype, subject=subj, object=obj, reason=reason))

            # infer an unlisted endpoint's type from a single-type domain / range
            if not s_types and not s_prop and spec is not None and len(spec.domain) == 1:
                s_types = [spec.domain[0]]
            if not o_types and not o_prop and spec is not None and len(spec.range) == 1:
                o_types = [spec.range[0]]
            if not s_types:
                if s_prop:
                    reject(f"subject {subj!r} has type {s_prop[0]} outside the schema (proposed)")
                else:
                    reject(f"subject {subj!r} is not among the extracted entities and its type cannot be inferred")
                continue
            if not o_types:
                if o_prop:
                    reject(f"object {obj!r} has type {o_prop[0]} outside the schema (proposed)")
                else:
                    reject(f"object {obj!r} is not among the extracted entities and its type cannot be inferred")
                continue

            chosen: tuple[str, str] | None = None
            first_problems: list[str] | None = None
            for st in s_types:
                for ot in o_types:
                    s_canon = canonical_name(aliases.get((st, cs), subj))
                    o_canon = canonical_name(aliases.get((ot, co), obj))
                    problems = schema.violations(st, rtype, ot, self_loop=(st == ot and s_canon == o_canon))
                    if not problems:
                        chosen = (st, ot)
                        break
                    if first_problems is None:
                        first_problems = problems
                if chosen:
                    break
            if chosen is None:
                reject("; ".join(first_problems or ["schema violation"]))
                continue
            s_name = accept_entity(chosen[0], subj)
            o_name = accept_entity(chosen[1], obj)
            lst = rel_pairs.setdefault(rtype, [])
            rp = RelationPair(subject=s_name, object=o_name)
            if rp not in lst:
                lst.append(rp)

    out.kg = ExtractedKG(entities=accepted, relations=rel_pairs)
    return out
