"""The KG schema a graph keeps: its hash, its versions and what changed between two of them.

``kgr init --schema S`` stores ``S`` in the graph as ``(:KgrSchema {version, hash, json, at, diff})``
(:mod:`kgr.store.schema_store`); later commands use the stored schema when they are given none, and
refuse a different one unless the user migrates (``kgr init --schema S2 --migrate``: a new version
with the diff of its types). Pure: no I/O.

- **Hash**: ``sha256:`` + the SHA-256 of the schema's canonical JSON (the validated model dumped
  with sorted keys and no spaces), so two files that differ only in key order or whitespace are the
  same schema.
- **Diff**: entity and relation types added and removed, and those kept whose definition changed
  (domain, range, flags, aliases, patterns, names, triggers, description).
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from kgr.model.schema import KGSchema

__all__ = ["schema_hash", "SchemaDiff", "schema_diff", "StoredSchema", "SchemaChange"]


def _canonical_json(schema: KGSchema) -> str:
    return json.dumps(schema.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_hash(schema: KGSchema) -> str:
    """``"sha256:<hex>"`` of the schema's canonical JSON (key order and whitespace do not count).

    >>> a = KGSchema.model_validate({"entity_types": {"A": {}, "B": {}}})
    >>> b = KGSchema.model_validate({"entity_types": {"B": {}, "A": {}}})
    >>> schema_hash(a) == schema_hash(b), schema_hash(a)[:7]
    (True, 'sha256:')
    """
    return "sha256:" + hashlib.sha256(_canonical_json(schema).encode("utf-8")).hexdigest()


class SchemaDiff(BaseModel):
    """What changed from one schema to the next, by type name (each list sorted)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    entity_types_added: list[str] = Field(default_factory=list)
    entity_types_removed: list[str] = Field(default_factory=list)
    entity_types_changed: list[str] = Field(default_factory=list)
    relation_types_added: list[str] = Field(default_factory=list)
    relation_types_removed: list[str] = Field(default_factory=list)
    relation_types_changed: list[str] = Field(default_factory=list)
    other_changed: list[str] = Field(default_factory=list, description="top-level fields that changed (name, ...)")

    @property
    def empty(self) -> bool:
        return not any(getattr(self, f) for f in type(self).model_fields)

    def describe(self) -> str:
        """One line: ``+Company -Organization ~Person; relations +WORKS_FOR -WORKS_AT`` (``no change``).

        >>> SchemaDiff(entity_types_added=["Company"], relation_types_removed=["WORKS_AT"]).describe()
        'entity types +Company; relation types -WORKS_AT'
        """
        parts = []
        for label, kind in (("entity types", "entity_types"), ("relation types", "relation_types")):
            items = [f"+{t}" for t in getattr(self, f"{kind}_added")] + \
                    [f"-{t}" for t in getattr(self, f"{kind}_removed")] + \
                    [f"~{t}" for t in getattr(self, f"{kind}_changed")]
            if items:
                parts.append(f"{label} {' '.join(items)}")
        if self.other_changed:
            parts.append("changed " + ", ".join(self.other_changed))
        return "; ".join(parts) or "no change"


def schema_diff(old: KGSchema, new: KGSchema) -> SchemaDiff:
    """The types ``new`` adds, removes and redefines relative to ``old``.

    >>> old = KGSchema.model_validate({"entity_types": {"Person": {}, "Org": {}},
    ...                                "relation_types": {"WORKS_AT": {"domain": ["Person"], "range": ["Org"]}}})
    >>> new = KGSchema.model_validate({"entity_types": {"Person": {}, "Company": {}},
    ...                                "relation_types": {"WORKS_AT": {"domain": ["Person"], "range": ["Company"]}}})
    >>> schema_diff(old, new).describe()
    'entity types +Company -Org; relation types ~WORKS_AT'
    """
    out: dict[str, list[str]] = {}
    for kind in ("entity_types", "relation_types"):
        a, b = getattr(old, kind), getattr(new, kind)
        out[f"{kind}_added"] = sorted(b.keys() - a.keys())
        out[f"{kind}_removed"] = sorted(a.keys() - b.keys())
        out[f"{kind}_changed"] = sorted(t for t in a.keys() & b.keys() if a[t] != b[t])
    out["other_changed"] = sorted(f for f in KGSchema.model_fields
                                  if f not in ("entity_types", "relation_types") and getattr(old, f) != getattr(new, f))
    return SchemaDiff(**out)


class StoredSchema(BaseModel):
    """One version of the schema a graph keeps (a ``(:KgrSchema)`` node)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int = Field(ge=1, description="1 for the first schema stored, +1 per migration")
    hash: str = Field(description="schema_hash of the schema")
    kg_schema: KGSchema = Field(description="the schema itself")
    at: float = Field(description="when it was stored, Unix seconds")
    graph_version: int = Field(0, description="the graph's version (promotion rounds etc.) when it was stored")
    diff: SchemaDiff | None = Field(None, description="what changed from the version before (None for version 1)")


class SchemaChange(BaseModel):
    """What storing a schema did: ``stored`` (the first), ``unchanged``, or ``migrated``."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    action: str = Field(description="stored, unchanged or migrated")
    current: StoredSchema
    previous_version: int | None = None

    def describe(self) -> str:
        s = self.current
        name = s.kg_schema.name
        if self.action == "stored":
            return f"schema {name!r} stored as version {s.version} ({s.hash[:19]})"
        if self.action == "unchanged":
            return f"schema {name!r} version {s.version} unchanged ({s.hash[:19]})"
        return (f"schema migrated from version {self.previous_version} to {s.version} ({s.hash[:19]}): "
                f"{s.diff.describe() if s.diff else 'no change'}")
