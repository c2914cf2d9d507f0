"""The LLM extractor's conversation: the system prompt from the schema, the messages, the repair
request, and parsing a reply into :class:`LLMOutput` (conventions in :mod:`kgr.extract.llm`)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kgr.model.schema import KGSchema


__all__ = ["LLMPair", "LLMOutput", "BadOutput", "FENCE", "parse_reply", "system_prompt", "build_messages",
           "repair_messages", "EXTRACTION_FORM"]

FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

class LLMPair(BaseModel):
    """A relation instance in the model's reply."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    subject: str
    object: str
    quote: str | None = None  # the sentence of the text that states it (kgr.text.spans.locate)


class LLMOutput(BaseModel):
    """The JSON the model must return (extra top-level keys such as notes are ignored)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    entities: dict[str, list[str]] = Field(default_factory=dict)
    relations: dict[str, list[LLMPair]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data}
            for k in ("entities", "relations"):
                if data.get(k) is None:
                    data.pop(k, None)
        return data


class BadOutput(Exception):
    """The model's reply is not usable; the message is sent back in the repair request."""


def parse_reply(content: str | None) -> LLMOutput:
    """Parse and validate a model reply.

    Raises
    ------
    BadOutput
        With a short description of what is wrong (sent back to the model).

    >>> parse_reply('```json\\n{"entities": {"Person": ["Ada"]}}\\n```').entities
    {'Person': ['Ada']}
    """
    if content is None or not content.strip():
        raise BadOutput("the reply was empty")
    text = content.strip()
    m = FENCE.match(text)
    if m:
        text = m.group(1).strip()
    if not text.startswith("{"):
        a, b = text.find("{"), text.rfind("}")
        if a >= 0 and b > a:
            text = text[a : b + 1]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadOutput(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    if not isinstance(data, dict):
        raise BadOutput(f"expected a JSON object, got {type(data).__name__}")
    try:
        return LLMOutput.model_validate(data)
    except ValidationError as exc:
        errs = exc.errors(include_url=False, include_input=False)
        first = errs[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        more = f" (+{len(errs) - 1} more errors)" if len(errs) > 1 else ""
        raise BadOutput(f"JSON does not match the required format at {loc}: {first['msg']}{more}") from exc


_SYSTEM = """You extract a knowledge graph from text for a typed graph database.

Answer with ONE JSON object and nothing else, in exactly this form:
{"entities": {"<EntityType>": ["<name>", ...], ...},
 "relations": {"<RELATION_TYPE>": [{"subject": "<name>", "object": "<name>", "quote": "<sentence>"}, ...], ...}}

Rules:
- Use the entity types and relation types of the schema below.
- Every relation's subject and object must also be listed under "entities", spelled identically.
- "quote" is the sentence of the text that states the relation, copied exactly (the shortest one that does).
- A relation's subject must have one of the relation's domain types and its object one of its range types.
- Name each entity by its most complete name in the text; do not add facts the text does not state.
- If the text clearly states an important entity or relation that no schema type fits, you may use a
  new descriptive type name (PascalCase for entity types, UPPER_SNAKE_CASE for relation types); it will
  be reviewed as a proposed schema extension.
- No comments, no markdown, JSON only."""


def _schema_text(schema: KGSchema, max_examples: int = 3) -> str:
    lines = ["Schema", "Entity types:"]
    if not schema.entity_types:
        lines.append("- (open: choose descriptive PascalCase types)")
    for name, spec in schema.entity_types.items():
        desc = f": {spec.description}" if spec.description else ""
        examples = (spec.names or list(spec.aliases))[:max_examples]
        ex = f" (e.g. {', '.join(examples)})" if examples else ""
        lines.append(f"- {name}{desc}{ex}")
    lines.append("Relation types:")
    if not schema.relation_types:
        lines.append("- (open: choose descriptive UPPER_SNAKE_CASE types)")
    for name, spec in schema.relation_types.items():
        dom = " | ".join(spec.domain) or "any"
        rng = " | ".join(spec.range) or "any"
        flags = []
        if spec.functional:
            flags.append("functional: at most one object per subject")
        if spec.symmetric:
            flags.append("symmetric")
        flag = f" [{'; '.join(flags)}]" if flags else ""
        desc = f": {spec.description}" if spec.description else ""
        lines.append(f"- {name} ({dom} -> {rng}){flag}{desc}")
    return "\n".join(lines)


def system_prompt(schema: KGSchema) -> str:
    """The system message: the extraction rules and the schema."""
    return f"{_SYSTEM}\n\n{_schema_text(schema)}"


def build_messages(chunk_text: str, schema: KGSchema, guidance: list[str] | None = None,
                   *, system: str | None = None) -> list[dict[str, str]]:
    """The chat messages for one extraction: system rules + schema, guidance, then the text.

    ``system`` is :func:`system_prompt` of ``schema`` when the caller already has it."""
    if system is None:
        system = system_prompt(schema)
    user = []
    if guidance:
        user.append("Recommendations from the assessment of the previous extraction of this text (follow them):")
        user.extend(f"- {g}" for g in guidance)
        user.append("")
    user.append('Text (between the lines """):')
    user.append('"""')
    user.append(chunk_text)
    user.append('"""')
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(user)}]


#: The JSON form the extractor asks for, as the repair request names it.
EXTRACTION_FORM = '{"entities": {...}, "relations": {...}}'


def repair_messages(messages: list[dict[str, str]], bad: str | None, problem: str, *,
                    form: str = EXTRACTION_FORM) -> list[dict[str, str]]:
    """The conversation plus the unusable reply and what was wrong with it, asking for ``form`` again."""
    return [
        *messages,
        {"role": "assistant", "content": bad or ""},
        {"role": "user", "content": (f"Your reply could not be used: {problem}. Reply again with only the "
                                     f"corrected JSON object in the required form {form}, nothing else.")},
    ]


