"""Counting helpers over an :class:`~kgr.model.kg.ExtractedKG` shared by the tools.

An extracted KG may list one entity twice (``"IBM"`` and ``"I.B.M."``): "distinct" below means
distinct by type and canonical name (:func:`kgr.tools._text.safe_canonical`), and for relations by
type and the canonical names of both endpoints. Order of first appearance is kept.
"""

from __future__ import annotations

from kgr.model.kg import ExtractedKG
from kgr.tools._text import norm_key, safe_canonical

__all__ = ["ckey", "distinct_entities", "distinct_relations", "covered_entity_types", "covered_relation_types",
           "entity_name_types", "EntityIndex"]


def ckey(name: str) -> str:
    """Canonical lookup key of a name (the casefolded name itself when nothing canonical is left)."""
    return safe_canonical(name) or name.casefold().strip()


def distinct_entities(kg: ExtractedKG) -> list[tuple[str, str]]:
    """``(type, name)`` of each distinct entity, first surface form kept."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for etype, names in kg.entities.items():
        for name in names:
            k = (etype, ckey(name))
            if k not in seen:
                seen.add(k)
                out.append((etype, name))
    return out


def distinct_relations(kg: ExtractedKG) -> list[tuple[str, str, str]]:
    """``(type, subject, object)`` of each distinct relation, first surface forms kept."""
    seen: set[tuple[str, str, str]] = set()
    out: list[tuple[str, str, str]] = []
    for rtype, pairs in kg.relations.items():
        for p in pairs:
            k = (rtype, ckey(p.subject), ckey(p.object))
            if k not in seen:
                seen.add(k)
                out.append((rtype, p.subject, p.object))
    return out


def covered_entity_types(kg: ExtractedKG) -> list[str]:
    """Entity types with at least one entity."""
    return [t for t, names in kg.entities.items() if names]


def covered_relation_types(kg: ExtractedKG) -> list[str]:
    """Relation types with at least one relation."""
    return [t for t, pairs in kg.relations.items() if pairs]


def entity_name_types(kg: ExtractedKG) -> dict[str, list[str]]:
    """Canonical name → the entity types it is listed under (in order, no repeats)."""
    out: dict[str, list[str]] = {}
    for etype, names in kg.entities.items():
        for name in names:
            types = out.setdefault(ckey(name), [])
            if etype not in types:
                types.append(etype)
    return out


class EntityIndex:
    """Finds the extracted entities a relation endpoint refers to.

    An endpoint matches entities with the same canonical name; failing that, the same
    :func:`~kgr.tools._text.norm_key` (``"Microsoft"`` finds ``"Microsoft Corp."``).
    """

    def __init__(self, kg: ExtractedKG):
        self.by_ckey: dict[str, list[tuple[str, str]]] = {}
        self.by_norm: dict[str, list[tuple[str, str]]] = {}
        for etype, name in distinct_entities(kg):
            self.by_ckey.setdefault(ckey(name), []).append((etype, name))
            self.by_norm.setdefault(norm_key(name) or ckey(name), []).append((etype, name))

    def lookup(self, name: str) -> list[tuple[str, str]]:
        """``(type, entity name)`` of the entities ``name`` refers to (empty: dangling; > 1: ambiguous)."""
        hits = self.by_ckey.get(ckey(name))
        if hits is None:
            hits = self.by_norm.get(norm_key(name) or ckey(name), [])
        return hits
