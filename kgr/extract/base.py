"""The extractor interface and its result type.

Every extractor (the offline :mod:`kgr.extract.rules` extractor, the litellm-backed
:mod:`kgr.extract.llm` extractor, a user's own) satisfies :class:`Extractor`: it reads one chunk of
text and returns an :class:`ExtractionResult`. Conventions:

- ``result.kg`` holds only what fits the schema: entity types and relation types the schema
  declares, relation endpoints whose types satisfy the relation's domain and range. It is the
  ``{"entities": {Type: [names]}, "relations": {Type: [{"subject", "object"}]}}`` format of the six
  agent tools (:class:`kgr.model.kg.ExtractedKG`).
- Types **outside** the schema go to ``result.proposed_types`` (with their instances), for schema
  expansion staging. They are never silently dropped.
- Assertions that break the schema in other ways (a relation whose subject has the wrong type, a
  self loop, an endpoint that was never extracted as an entity, a name with no letters) go to
  ``result.rejected``, each with a one-line reason.
- ``usage`` counts tokens as the provider reported them (0 for offline extractors); ``cost_usd`` is
  the provider cost in US dollars as litellm prices it, 0.0 when unknown (``unpriced_calls`` counts
  the answered requests whose cost is unknown); ``llm_calls`` counts completion requests sent,
  including retried and repair requests.
- ``guidance`` is the list of recommendation strings returned by ``query_extraction_density`` (or any
  other tool) on the previous round; extractors use it to widen what they extract.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, computed_field

from kgr.errors import KgrExtractionError
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema

__all__ = [
    "Extractor",
    "AsyncExtractor",
    "takes_title",
    "ExtractionResult",
    "TokenUsage",
    "TypedRelation",
    "ProposedTypes",
    "RejectedItem",
    "RelationSpan",
    "extract_concurrently",
]


class TokenUsage(BaseModel):
    """Prompt and completion tokens of one or more LLM calls (0 for offline extractors)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class TypedRelation(BaseModel):
    """A relation instance with its endpoint types spelled out (used where types may be unknown)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    subject: str
    subject_type: str | None = None
    object: str
    object_type: str | None = None


class ProposedTypes(BaseModel):
    """Entity and relation types an extractor proposed outside the schema, with their instances.

    Keys are the type names exactly as proposed (they need not be identifiers yet; staging decides
    how to name them). ``entities[T]`` lists the names proposed under entity type ``T``;
    ``relations[R]`` the instances proposed under relation type ``R``, with endpoint types when known.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    entities: dict[str, list[str]] = Field(default_factory=dict)
    relations: dict[str, list[TypedRelation]] = Field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.entities and not self.relations

    def add_entity(self, entity_type: str, name: str) -> None:
        names = self.entities.setdefault(entity_type, [])
        if name not in names:
            names.append(name)

    def add_relation(self, relation: str, rel: TypedRelation) -> None:
        rels = self.relations.setdefault(relation, [])
        if rel not in rels:
            rels.append(rel)


class RejectedItem(BaseModel):
    """One extracted entity or relation that was not accepted, and why."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    kind: Literal["entity", "relation"]
    type: str = Field(description="the entity or relation type the extractor gave")
    name: str | None = Field(None, description="entity name (kind='entity')")
    subject: str | None = Field(None, description="relation subject (kind='relation')")
    object: str | None = Field(None, description="relation object (kind='relation')")
    reason: str


class RelationSpan(BaseModel):
    """Where in the chunk one relation of ``kg`` was read: the character span ``[start, end)`` of its
    sentence (or clause) in the chunk's text, under the names ``kg`` uses."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    relation: str
    subject: str
    object: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    path: str = ""  # how the rules extractor read it (kgr.extract.paths); "" for other extractors
    #: rules extractor: chunk offsets [subject start, subject end, object start, object end, trigger start]
    #: (-1: no trigger; a carried title's subject is empty or the words standing for it, "It")
    anchors: list[int] = Field(default_factory=list)


class ExtractionResult(BaseModel):
    """What one extractor call on one chunk produced (conventions in the module docstring)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    kg: ExtractedKG = Field(default_factory=ExtractedKG)
    proposed_types: ProposedTypes = Field(default_factory=ProposedTypes)
    rejected: list[RejectedItem] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float = Field(0.0, ge=0.0, description="provider cost in USD; 0.0 when unknown or offline")
    llm_calls: int = Field(0, ge=0, description="completion requests sent, retries and repairs included")
    unpriced_calls: int = Field(0, ge=0, description="answered requests litellm could not price (their cost is "
                                                     "unknown and counted as 0.0 in cost_usd)")
    extractor: str = Field("", description="which extractor produced this ('rules', 'llm:<model>')")
    spans: list[RelationSpan] = Field(default_factory=list, description=(
        "the sentence each relation of kg was read from (a relation without one: unknown)"))


@runtime_checkable
class Extractor(Protocol):
    """Anything that turns one chunk of text into an :class:`ExtractionResult` under a schema."""

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        """Extract entities and relations from ``chunk_text``.

        An extractor may also take a keyword ``title`` (the document's title,
        :mod:`kgr.ingest.titles`); ingestion passes it to those that do (:func:`takes_title`).

        Raises
        ------
        kgr.errors.KgrExtractionError
            When extraction failed for this chunk (the caller reports it and moves on).
        """
        ...


@runtime_checkable
class AsyncExtractor(Extractor, Protocol):
    """An extractor that can also run on an event loop (for bounded-concurrency batch ingestion)."""

    async def aextract(
        self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None
    ) -> ExtractionResult: ...


def takes_title(extractor: Extractor, is_async: bool = False, keyword: str = "title") -> bool:
    """Whether ``extractor``'s ``extract`` (``aextract`` when ``is_async``) accepts a ``title`` keyword
    (or ``keyword``: ``"headings"``, the headings in force at the chunk's start)."""
    method = getattr(extractor, "aextract" if is_async else "extract", None)
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin or a mock without a signature: do not guess
        return False
    return keyword in params  # not **kwargs: an extractor passing them on to a provider would send it


async def extract_concurrently(
    extractor: Extractor,
    texts: Sequence[str],
    schema: KGSchema,
    *,
    concurrency: int = 8,
    guidance: list[str] | None = None,
) -> list[ExtractionResult | KgrExtractionError]:
    """Extract from many chunks with at most ``concurrency`` extractions in flight.

    Uses ``aextract`` when the extractor has one, else runs ``extract`` in worker threads. Returns
    one entry per text, in order: the result, or the :class:`KgrExtractionError` that chunk raised
    (a failed chunk never stops the others). Other exceptions propagate.

    Raises
    ------
    ValueError
        If ``concurrency < 1``.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    sem = asyncio.Semaphore(concurrency)
    is_async = isinstance(extractor, AsyncExtractor)

    async def one(text: str) -> ExtractionResult | KgrExtractionError:
        async with sem:
            try:
                if is_async:
                    return await extractor.aextract(text, schema, guidance=guidance)  # type: ignore[attr-defined]
                return await asyncio.to_thread(extractor.extract, text, schema, guidance=guidance)
            except KgrExtractionError as exc:
                return exc

    return list(await asyncio.gather(*(one(t) for t in texts)))
