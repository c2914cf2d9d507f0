"""Which entity types the ingestion loop's guidance asks the rules extractor to widen (its second pass:
names no gazetteer knows may fill a relation slot of those types; :mod:`kgr.extract.guesses`)."""

from __future__ import annotations

import re

from kgr.model.schema import KGSchema

__all__ = ["guided_types"]

_ASKS_MORE = re.compile(
    r"\b(?:extract|missing|more|add|link|lag|under|insufficient|low|candidate|not extracted)", re.IGNORECASE
)
_SAYS_ENOUGH = re.compile(
    r"no further extraction|\bcomplete\b|\badequate\b|\bexcellent\b|\bexceeds\b|\bdrop\b|\bremove\b|"
    r"\babsent\b|not in the schema|outside the schema",
    re.IGNORECASE,
)


def guided_types(schema: KGSchema, guidance: list[str] | None) -> list[str]:
    """Entity types the guidance asks to widen (see the module docstring), in schema order.

    Only recommendations that ask for more extraction count (they mention extracting, adding,
    linking, missing or candidate items, and do not say the extraction is adequate, complete or
    excessive, or ask to drop something). Entity types named in them, and the domain and range types
    of relation types named in them, are widened; every type when they name none.

    >>> s = KGSchema.model_validate({"entity_types": {"Person": {}, "Machine": {}, "Place": {}},
    ...     "relation_types": {"BORN_IN": {"domain": ["Person"], "range": ["Place"]}}})
    >>> guided_types(s, ["Extract Machine entities: none extracted yet."])
    ['Machine']
    >>> guided_types(s, ["Extract BORN_IN relations: none extracted yet."])
    ['Person', 'Place']
    >>> guided_types(s, ["Candidate entity mentions not extracted yet: 'Z3'"])
    ['Person', 'Machine', 'Place']
    >>> guided_types(s, ["Density is adequate: no further extraction needed."])
    []
    >>> guided_types(s, None)
    []
    """
    asking = [g for g in guidance or [] if _ASKS_MORE.search(g) and not _SAYS_ENOUGH.search(g)]
    if not asking:
        return []
    text = "\n".join(asking)
    wanted: set[str] = set()
    for etype in schema.entity_types:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(etype)}(?:s|es)?(?![A-Za-z0-9])", text, re.IGNORECASE):
            wanted.add(etype)
    for rel, spec in schema.relation_types.items():
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(rel)}(?![A-Za-z0-9_])", text, re.IGNORECASE):
            wanted.update(spec.domain or schema.entity_types)
            wanted.update(spec.range or schema.entity_types)
    if not wanted:
        wanted = set(schema.entity_types)
    return [t for t in schema.entity_types if t in wanted]
