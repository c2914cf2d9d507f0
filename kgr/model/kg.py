"""The extracted-KG exchange format of the six agent tools.

``{"entities": {Type: [names]}, "relations": {Type: [{"subject": s, "object": o}]}}``

Relation endpoints are entity names; their types are found by looking the names up in ``entities``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from kgr.model.canonical import NO_CONTROL_CHARACTERS, MAX_NAME_CHARS
from kgr.model.schema import Identifier

__all__ = ["RelationPair", "ExtractedKG"]

#: A name: text without control characters (tab and newlines aside), as the JSON Schema says.
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=NO_CONTROL_CHARACTERS)]


class RelationPair(BaseModel):
    """One relation instance between two entity names."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    subject: Name
    object: Name


class ExtractedKG(BaseModel):
    """Entities grouped by type and relations grouped by type."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    entities: dict[Identifier, list[Name]] = Field(default_factory=dict)
    relations: dict[Identifier, list[RelationPair]] = Field(default_factory=dict)

    def entity_types_of(self, name: str) -> list[str]:
        """Types under which ``name`` appears in ``entities`` (exact string match)."""
        return [t for t, names in self.entities.items() if name in names]

    @property
    def entity_count(self) -> int:
        return sum(len(v) for v in self.entities.values())

    @property
    def relation_count(self) -> int:
        return sum(len(v) for v in self.relations.values())
