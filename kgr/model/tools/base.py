"""What every agent tool's contract shares: input and output bases, size limits, the tool schema.

Conventions in :mod:`kgr.model.tools`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgr.model.kg import ExtractedKG
from kgr.model.schema import Identifier, KGSchema

__all__ = ["ToolInput", "ToolOutput", "ToolSchema", "MAX_TEXT_CHARS", "MAX_KG_ITEMS", "MAX_SCHEMA_TYPES",
           "MAX_HISTORY", "Text", "Score", "Count", "bounded_kg"]

#: Longest ``text``/``context`` accepted, in characters.
MAX_TEXT_CHARS = 1_000_000
#: Most entities (and, separately, relations) one ``extracted_kg`` may hold.
MAX_KG_ITEMS = 20_000
#: Most entity (and, separately, relation) types a tool schema may list.
MAX_SCHEMA_TYPES = 200
#: Most rounds ``extraction_history`` / ``feedback_history`` may hold.
MAX_HISTORY = 50

Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Score = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=0)]


class ToolInput(BaseModel):
    """Base of the tool inputs: strict, closed."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ToolOutput(BaseModel):
    """Base of the tool outputs: closed."""

    model_config = ConfigDict(extra="forbid")


def bounded_kg(kg: ExtractedKG) -> ExtractedKG:
    if kg.entity_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} entities per call, got {kg.entity_count}")
    if kg.relation_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} relations per call, got {kg.relation_count}")
    return kg


class ToolSchema(BaseModel):
    """The target schema as the tools take it: entity type names and relation type names."""

    model_config = ConfigDict(extra="forbid", strict=True)

    entity_schema: list[Identifier] = Field(default_factory=list, max_length=MAX_SCHEMA_TYPES,
                                            description="entity type names, e.g. [\"Person\", \"Organization\"]")
    relation_schema: list[Identifier] = Field(default_factory=list, max_length=MAX_SCHEMA_TYPES,
                                              description="relation type names, e.g. [\"WORKS_AT\"]")

    @field_validator("entity_schema", "relation_schema")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))

    @classmethod
    def from_kg_schema(cls, schema: KGSchema) -> "ToolSchema":
        """The type names of a KG schema file."""
        return cls(entity_schema=list(schema.entity_types), relation_schema=list(schema.relation_types))


