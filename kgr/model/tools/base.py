"""What every agent tool's contract shares: input and output bases, size limits, the tool schema.

Conventions in :mod:`kgr.model.tools`.
"""

from __future__ import annotations

from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgr.errors import KgrValidationError
from kgr.model.kg import ExtractedKG
from kgr.model.schema import Identifier, KGSchema

__all__ = ["ToolInput", "ToolOutput", "ToolSchema", "validate_strict", "MAX_TEXT_CHARS", "MAX_KG_ITEMS",
           "MAX_SCHEMA_TYPES", "MAX_HISTORY", "Text", "Score", "Count", "bounded_kg"]

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


M = TypeVar("M", bound=BaseModel)


def validate_strict(model: type[M], data: object) -> M:
    """``data`` (plain data, or model instances where the fields are models) validated strictly as a
    ``model``: the one validation of tool inputs, from JSON (:func:`kgr.tools.registry.validate_input`)
    and from Python (:meth:`ToolInput.of`) alike.

    Raises
    ------
    KgrValidationError
        Naming the first failing field (``extracted_kg.entities.Person.0``), with pydantic's error list
        in ``details``.
    """
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise KgrValidationError.from_pydantic(exc) from None
    except KgrValidationError:
        raise
    except ValueError as exc:  # e.g. a validator raising outside pydantic's wrapping
        raise KgrValidationError(str(exc)) from None


class ToolInput(BaseModel):
    """Base of the tool inputs: strict, closed."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)

    @classmethod
    def of(cls, **fields: Any) -> Self:
        """The input from Python values, validated as the registry validates a JSON payload (a model
        instance, such as an :class:`~kgr.model.kg.ExtractedKG`, is taken as it is, not copied):
        ``ExtractionDensityInput.of(text=..., schema=..., extracted_kg=kg)``.

        Raises
        ------
        KgrValidationError
            As :func:`validate_strict`.
        """
        return validate_strict(cls, fields)


class ToolOutput(BaseModel):
    """Base of the tool outputs: closed."""

    model_config = ConfigDict(defer_build=True, extra="forbid")


def bounded_kg(kg: ExtractedKG) -> ExtractedKG:
    if kg.entity_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} entities per call, got {kg.entity_count}")
    if kg.relation_count > MAX_KG_ITEMS:
        raise ValueError(f"at most {MAX_KG_ITEMS} relations per call, got {kg.relation_count}")
    return kg


class ToolSchema(BaseModel):
    """The target schema as the tools take it: entity type names and relation type names."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)

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


