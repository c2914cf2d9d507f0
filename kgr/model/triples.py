"""The triple JSONL format: one assertion per line.

``{"subject", "subject_type", "relation", "object", "object_type", "source", "confidence"?, "span"?}``

``source`` names who asserted it (a chunk id, a document, an agent): one source is one vote.
``span`` (``[start, end]``, character offsets in the source chunk's text) is where the source says
it: the sentence or clause that produced the triple, which review items, ``kgr promote --explain``,
slices and the Browser's provenance query quote (:func:`span_text` renders it for the store).
Exported lines add ``votes``, ``confidence`` and ``status`` (:class:`ExportedTriple`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgr.errors import KgrValidationError
from kgr.model.canonical import MAX_NAME_CHARS, canonical_name, edge_key, entity_key, no_control_characters
from kgr.model.jsontext import json_lines, loads_strict
from kgr.model.schema import Identifier

__all__ = ["TripleAssertion", "ExportedTriple", "LineError", "parse_triple_lines", "span_text", "MAX_LINE_BYTES"]

#: A JSONL line longer than this is rejected without parsing (bytes).
MAX_LINE_BYTES = 64 * 1024

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]


class TripleAssertion(BaseModel):
    """One source asserting ``(subject:subject_type) -[relation]-> (object:object_type)``."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    subject: Name
    subject_type: Identifier
    relation: Identifier
    object: Name
    object_type: Identifier
    source: Annotated[str, Field(min_length=1, max_length=512)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    span: tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]] | None = Field(None, description=(
        "[start, end): character offsets of the sentence (or clause) that states the triple in the source "
        "chunk's text"))

    @field_validator("span")
    @classmethod
    def _span_in_order(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and v[1] < v[0]:
            raise ValueError(f"span end {v[1]} is before its start {v[0]}")
        return v

    @field_validator("subject", "object", "source")
    @classmethod
    def _no_control_characters(cls, v: str) -> str:
        return no_control_characters(v)

    @field_validator("subject", "object")
    @classmethod
    def _has_canonical_form(cls, v: str) -> str:
        canonical_name(v)  # raises with a clear message when nothing is left
        return v

    @property
    def subject_key(self) -> str:
        return entity_key(self.subject_type, self.subject)

    @property
    def object_key(self) -> str:
        return entity_key(self.object_type, self.object)

    @property
    def key(self) -> str:
        """The edge key shared by every source asserting this triple."""
        return edge_key(self.subject_key, self.relation, self.object_key)


def span_text(span: tuple[int, int] | None) -> str:
    """How the store keeps a vote's span: ``"start:end"``, or ``""`` when unknown (Neo4j lists
    hold no nulls and no nested lists; see :mod:`kgr.store.staging`).

    >>> span_text((12, 80)), span_text(None)
    ('12:80', '')
    """
    return "" if span is None else f"{span[0]}:{span[1]}"


class ExportedTriple(BaseModel):
    """A line of ``kgr export jsonl``: the assertion fields plus its standing in the graph."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    key: str
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    source: str = Field(description="sources, comma-separated, as far as the edge keeps them")
    confidence: float
    votes: int
    status: Literal["pending", "promoted", "rejected", "expired", "held", "merged"] = Field(
        description="merged: the tombstone an entity merge leaves where a pending edge moved away from")


class LineError(BaseModel):
    """A JSONL line that was skipped, with its 1-based number and the reason."""

    line: int
    error: str


def parse_triple_lines(lines: Iterator[str] | list[str]) -> Iterator[TripleAssertion | LineError]:
    """Parse triple JSONL lines one by one; yield an assertion or a :class:`LineError` per line.

    Blank lines are ignored. A bad line never stops the stream. Each line is strict JSON
    (:func:`kgr.model.jsontext.loads_strict`: duplicate keys, NaN and deep nesting refused; a
    byte-order mark at the start of the file ignored).
    """
    for n, line in json_lines(lines):
        if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
            yield LineError(line=n, error=f"line longer than {MAX_LINE_BYTES} bytes")
            continue
        try:
            data = loads_strict(line)
        except KgrValidationError as exc:
            yield LineError(line=n, error=str(exc))
            continue
        if not isinstance(data, dict):
            yield LineError(line=n, error="expected a JSON object")
            continue
        try:
            yield TripleAssertion.model_validate(data)
        except ValidationError as exc:
            yield LineError(line=n, error=str(KgrValidationError.from_pydantic(exc)))
        except KgrValidationError as exc:
            yield LineError(line=n, error=str(exc))
