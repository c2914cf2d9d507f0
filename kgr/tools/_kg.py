"""Counting helpers over an :class:`~kgr.model.kg.ExtractedKG` shared by the tools.

An extracted KG may list one entity twice (``"IBM"`` and ``"I.B.M."``): "distinct" below means
distinct by type and :func:`~kgr.model.canonical.name_key`, and for relations by type and the name
keys of both endpoints. Order of first appearance is kept.
"""

from __future__ import annotations

from kgr.model.canonical import name_key, variant_key
from kgr.model.kg import ExtractedKG

__all__ = ["distinct_entities", "distinct_relations", "covered_entity_types", "covered_relation_types",
           "entity_name_types", "EntityIndex"]


def distinct_entities(kg: ExtractedKG) -> list[tuple[str, str]]:
    """``(type, name)`` of each distinct entity, first surface form kept."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for etype, names in kg.entities.items():
        for name in names:
            k = (etype, name_key(name))
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
            k = (rtype, name_key(p.subject), name_key(p.object))
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
            types = out.setdefault(name_key(name), [])
            if etype not in types:
                types.append(etype)
    return out


class EntityIndex:
    """Finds the extracted entities a relation endpoint refers to.

    An endpoint matches entities with the same :func:`~kgr.model.canonical.name_key`; failing that,
    the same :func:`~kgr.model.canonical.variant_key` (``"Microsoft"`` finds ``"Microsoft Corp."``).
    """

    def __init__(self, kg: ExtractedKG):
        self.by_name: dict[str, list[tuple[str, str]]] = {}
        self.by_variant: dict[str, list[tuple[str, str]]] = {}
        for etype, name in distinct_entities(kg):
            self.by_name.setdefault(name_key(name), []).append((etype, name))
            self.by_variant.setdefault(variant_key(name), []).append((etype, name))

    def lookup(self, name: str) -> list[tuple[str, str]]:
        """``(type, entity name)`` of the entities ``name`` refers to (empty: dangling; > 1: ambiguous)."""
        hits = self.by_name.get(name_key(name))
        if hits is None:
            hits = self.by_variant.get(variant_key(name), [])
        return hits
