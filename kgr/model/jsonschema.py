"""JSON Schemas of kgr's wire formats, generated from the pydantic models and committed in ``schemas/``.

Each registered model renders to ``schemas/<name>.schema.json``: JSON Schema draft 2020-12, keys
sorted, indent 2, a trailing newline, and a versioned ``$id``
(``https://kgr.dev/schemas/<SCHEMA_VERSION>/<name>.schema.json``). Inputs render in pydantic's
``validation`` mode (what a caller may send), outputs in ``serialization`` mode (what kgr emits).

``python scripts/gen_schemas.py`` rewrites the directory; ``tests/test_schemas.py`` regenerates the
schemas in memory and fails, naming that command, when the committed files drift from the models.
Other modules add their wire models with :func:`register_schema`.

>>> sorted(SCHEMA_MODELS)[:2]
['edge_label', 'exported_triple']
>>> schema_id("kg_schema")
'https://kgr.dev/schemas/0.1/kg_schema.schema.json'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from kgr.model import tools as t
from kgr.model.review import EdgeLabel, ReviewQueue
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema
from kgr.model.triples import ExportedTriple, TripleAssertion

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_BASE_URL",
    "SCHEMA_DIALECT",
    "SchemaEntry",
    "SCHEMA_MODELS",
    "register_schema",
    "schema_id",
    "schema_filename",
    "build_schema",
    "render_schema",
    "render_all",
    "REFRESH_COMMAND",
]

#: Version segment of every ``$id``; bump it when a wire format changes incompatibly.
SCHEMA_VERSION = "0.1"
SCHEMA_BASE_URL = "https://kgr.dev/schemas"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The command that refreshes the committed files.
REFRESH_COMMAND = "python scripts/gen_schemas.py"

Mode = Literal["validation", "serialization"]


@dataclass(frozen=True)
class SchemaEntry:
    """A registered model and the mode its schema is rendered in."""

    model: type[BaseModel]
    mode: Mode
    title: str


SCHEMA_MODELS: dict[str, SchemaEntry] = {}


def register_schema(name: str, model: type[BaseModel], *, mode: Mode = "validation", title: str | None = None) -> None:
    """Add ``model`` to the committed schemas as ``schemas/<name>.schema.json``.

    Raises
    ------
    ValueError
        When ``name`` is taken by another model or is not a lowercase file-name stem.
    """
    if not name or not all(c.islower() or c.isdigit() or c == "_" for c in name):
        raise ValueError(f"schema name {name!r} must be lowercase letters, digits and underscores")
    existing = SCHEMA_MODELS.get(name)
    if existing is not None and (existing.model is not model or existing.mode != mode):
        raise ValueError(f"schema name {name!r} is already registered for {existing.model.__name__}")
    SCHEMA_MODELS[name] = SchemaEntry(model=model, mode=mode, title=title or model.__name__)


def schema_id(name: str) -> str:
    """The versioned ``$id`` of a registered schema."""
    return f"{SCHEMA_BASE_URL}/{SCHEMA_VERSION}/{schema_filename(name)}"


def schema_filename(name: str) -> str:
    return f"{name}.schema.json"


def build_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a registered model, with ``$schema`` and ``$id``.

    Raises
    ------
    KeyError
        For an unregistered name.
    """
    entry = SCHEMA_MODELS[name]
    schema = entry.model.model_json_schema(mode=entry.mode, by_alias=True)
    schema["$schema"] = SCHEMA_DIALECT
    schema["$id"] = schema_id(name)
    schema["title"] = entry.title
    return schema


def render_schema(name: str) -> str:
    """The committed text of a schema: sorted keys, indent 2, trailing newline."""
    return json.dumps(build_schema(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_all() -> dict[str, str]:
    """``file name -> text`` for every registered schema."""
    return {schema_filename(n): render_schema(n) for n in sorted(SCHEMA_MODELS)}


# -- the registry --------------------------------------------------------------------------------

register_schema("triple_assertion", TripleAssertion)
register_schema("exported_triple", ExportedTriple, mode="serialization")
register_schema("kg_schema", KGSchema)
register_schema("extracted_kg", ExtractedKG)
register_schema("tool_schema", t.ToolSchema)
register_schema("edge_label", EdgeLabel, title="A reviewer's label (kgr review label FILE.jsonl, one per line)")
register_schema("review_queue", ReviewQueue, mode="serialization", title="kgr review queue --json")

_TOOL_MODELS: list[tuple[str, type[BaseModel], type[BaseModel]]] = [
    ("query_extraction_density", t.ExtractionDensityInput, t.ExtractionDensityOutput),
    ("query_coverage_feedback", t.CoverageFeedbackInput, t.CoverageFeedbackOutput),
    ("query_quality_metrics", t.QualityMetricsInput, t.QualityMetricsOutput),
    ("query_iterative_feedback", t.IterativeFeedbackInput, t.IterativeFeedbackOutput),
    ("query_entity_disambiguation", t.EntityDisambiguationInput, t.EntityDisambiguationOutput),
    ("query_kg_storage", t.KGStorageInput, t.KGStorageOutput),
]
for _name, _in, _out in _TOOL_MODELS:
    register_schema(f"{_name}_input", _in, mode="validation", title=f"{_name} input")
    register_schema(f"{_name}_output", _out, mode="serialization", title=f"{_name} output")
