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

    model_config = ConfigDict(defer_build=True, extra="forbid")

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
    sanitizer = _Sanitizer(schema)
    for etype, names in entities.items():
        sanitizer.add_entities(etype, names)
    for rtype, pairs in relations.items():
        rtype = sanitizer.fix_type(rtype, sanitizer.relation_keys)
        for pair in pairs:
            sanitizer.add_relation(rtype, pair)
    return sanitizer.result()


class _Sanitizer:
    """The state of one :func:`sanitize_extraction` call: what was accepted, proposed, rejected."""

    def __init__(self, schema: KGSchema):
        self.schema = schema
        self.out = SanitizedExtraction()
        self.aliases = schema.alias_map()
        self.accepted: dict[str, list[str]] = {}
        # canonical name -> [(type, surface form)] over accepted entities, in order of first appearance
        self.known: dict[str, list[tuple[str, str]]] = {}
        # canonical name -> [proposed type]
        self.proposed_of: dict[str, list[str]] = {}
        self.rel_pairs: dict[str, list[RelationPair]] = {}
        self.entity_keys = {_type_key(t): t for t in schema.entity_types}
        self.relation_keys = {_type_key(r): r for r in schema.relation_types}

    @staticmethod
    def fix_type(t: Any, declared: dict[str, str]) -> str:
        """A type as declared when it differs only in case or separators."""
        t = str(t)
        if t in declared.values():
            return t
        return declared.get(_type_key(t), t)

    def declared_entity(self, t: str) -> bool:
        return bool(IDENTIFIER_RE.fullmatch(t)) and len(t) <= 64 and self.schema.has_entity_type(t)

    def declared_relation(self, r: str) -> bool:
        return bool(IDENTIFIER_RE.fullmatch(r)) and len(r) <= 64 and self.schema.has_relation_type(r)

    def accept_entity(self, t: str, name: str) -> str:
        """Add ``name`` under declared type ``t``; return the surface form the KG uses for it."""
        name = name.strip()
        canon = canonical_name(name)
        target = self.aliases.get((t, canon))
        if target is not None:
            name, canon = target, canonical_name(target)
        for kt, surface in self.known.get(canon, []):
            if kt == t:
                return surface
        self.accepted.setdefault(t, []).append(name)
        self.known.setdefault(canon, []).append((t, name))
        return name

    def add_entities(self, etype: Any, names: Iterable[str]) -> None:
        etype = self.fix_type(etype, self.entity_keys)
        for name in names:
            problem = _name_problem(name)
            if problem:
                self.out.rejected.append(RejectedItem(kind="entity", type=str(etype), name=str(name)[:200],
                                                      reason=problem))
            elif self.declared_entity(etype):
                self.accept_entity(etype, name)
            else:
                self.out.proposed.add_entity(etype, name.strip())
                lst = self.proposed_of.setdefault(canonical_name(name), [])
                if etype not in lst:
                    lst.append(etype)

    def add_relation(self, rtype: str, pair: Any) -> None:
        subj, obj = _endpoint(pair, "subject"), _endpoint(pair, "object")
        problem = _name_problem(subj) or _name_problem(obj)
        if problem:
            self.out.rejected.append(RejectedItem(kind="relation", type=str(rtype), subject=str(subj)[:200],
                                                  object=str(obj)[:200], reason=problem))
            return
        subj, obj = subj.strip(), obj.strip()
        cs, co = canonical_name(subj), canonical_name(obj)
        s_types, o_types = [t for t, _ in self.known.get(cs, [])], [t for t, _ in self.known.get(co, [])]
        s_prop, o_prop = self.proposed_of.get(cs, []), self.proposed_of.get(co, [])
        if not self.declared_relation(rtype):
            self.out.proposed.add_relation(rtype, TypedRelation(
                subject=subj, subject_type=(s_types or s_prop or [None])[0],
                object=obj, object_type=(o_types or o_prop or [None])[0]))
            return
        spec = self.schema.relation_types.get(rtype)
        # infer an unlisted endpoint's type from a single-type domain / range
        if not s_types and not s_prop and spec is not None and len(spec.domain) == 1:
            s_types = [spec.domain[0]]
        if not o_types and not o_prop and spec is not None and len(spec.range) == 1:
            o_types = [spec.range[0]]
        problem = _untyped("subject", subj, s_types, s_prop) or _untyped("object", obj, o_types, o_prop)
        chosen, problems = (None, [problem]) if problem else self._choose_types(rtype, subj, obj, s_types, o_types)
        if chosen is None:
            self.out.rejected.append(_relation_rejected(rtype, subj, obj, "; ".join(problems or ["schema violation"])))
            return
        rp = RelationPair(subject=self.accept_entity(chosen[0], subj), object=self.accept_entity(chosen[1], obj))
        lst = self.rel_pairs.setdefault(rtype, [])
        if rp not in lst:
            lst.append(rp)

    def _choose_types(self, rtype: str, subj: str, obj: str, s_types: list[str],
                      o_types: list[str]) -> tuple[tuple[str, str] | None, list[str] | None]:
        """The first (subject type, object type) the schema allows for ``rtype``, else the first problems."""
        cs, co = canonical_name(subj), canonical_name(obj)
        first_problems: list[str] | None = None
        for st in s_types:
            for ot in o_types:
                s_canon = canonical_name(self.aliases.get((st, cs), subj))
                o_canon = canonical_name(self.aliases.get((ot, co), obj))
                problems = self.schema.violations(st, rtype, ot, self_loop=(st == ot and s_canon == o_canon))
                if not problems:
                    return (st, ot), None
                if first_problems is None:
                    first_problems = problems
        return None, first_problems

    def result(self) -> SanitizedExtraction:
        self.out.kg = ExtractedKG(entities=self.accepted, relations=self.rel_pairs)
        return self.out


def _untyped(role: str, name: str, types: list[str], proposed: list[str]) -> str | None:
    """Why an endpoint cannot be typed within the schema, or None when it can."""
    if types:
        return None
    if proposed:
        return f"{role} {name!r} has type {proposed[0]} outside the schema (proposed)"
    return f"{role} {name!r} is not among the extracted entities and its type cannot be inferred"


def _relation_rejected(rtype: str, subj: str, obj: str, reason: str) -> RejectedItem:
    """A rejected relation item."""
    return RejectedItem(kind="relation", type=rtype, subject=subj, object=obj, reason=reason)
