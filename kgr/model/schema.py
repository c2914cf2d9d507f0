"""The KG schema file: entity types, relation types with domain/range, functional flags, aliases.

A schema file is JSON validated by :class:`KGSchema` (its JSON Schema is committed in
``schemas/kg_schema.schema.json``). Example::

    {
      "name": "tech-companies",
      "entity_types": {
        "Person": {"description": "A human being"},
        "Organization": {"aliases": {"IBM": ["International Business Machines", "I.B.M."]},
                         "patterns": ["[A-Z][a-z]+ (Inc|Corp|Ltd)\\\\.?"]}
      },
      "relation_types": {
        "WORKS_AT": {"domain": ["Person"], "range": ["Organization"], "functional": false,
                     "triggers": ["works at", "joined"]}
      }
    }

``functional: true`` means a subject has at most one object for that relation (e.g. ``BORN_IN``).
"""

from __future__ import annotations

import difflib
import functools
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kgr.errors import KgrSchemaError, KgrValidationError
from kgr.model.canonical import IDENTIFIER_RE, canonical_name, canonical_text, reserved_name
from kgr.model.jsontext import loads_strict

__all__ = ["EntityTypeSpec", "RelationTypeSpec", "KGSchema", "load_schema", "schema_error", "Identifier"]

Identifier = Annotated[str, Field(pattern=IDENTIFIER_RE.pattern, min_length=1, max_length=64)]


class _RuleError(ValueError):
    """A cross-field rule of the schema failed at ``field`` (a dotted path); pydantic reports it at
    the model's root, :func:`load_schema` names the field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


#: Seconds of CPU one schema pattern may spend on one chunk (see :func:`pattern_matches`).
PATTERN_SECONDS = 0.25
#: Attempts :func:`pattern_matches` makes when the clock, not the pattern, ran out.
PATTERN_ATTEMPTS = 4


def pattern_matches(pattern: Any, text: str, seconds: float = PATTERN_SECONDS) -> list[Any]:
    """Every match of a compiled schema pattern in ``text``, within ``seconds`` of matching work.

    The ``regex`` library's ``timeout`` runs on a clock that also advances while the matching
    thread waits for a core (eight extraction threads and the database on two cores): a linear
    pattern then "times out" on a 100-character chunk and the chunk loses its matches, so the
    extraction would depend on the machine's load. An attempt that timed out is therefore repeated
    (``PATTERN_ATTEMPTS`` in all) unless this thread itself spent at least half the budget in it
    (:func:`time.thread_time`): only a pattern that does that much work — catastrophic
    backtracking — gives up.

    Raises
    ------
    TimeoutError
        The pattern spent ``seconds / 2`` or more of this thread's CPU time in an attempt, or every
        attempt timed out.
    """
    for _ in range(PATTERN_ATTEMPTS):
        cpu = time.thread_time()
        try:
            return list(pattern.finditer(text, timeout=seconds))
        except TimeoutError:
            if time.thread_time() - cpu >= seconds / 2:
                raise
    raise TimeoutError(f"pattern {pattern.pattern!r} timed out {PATTERN_ATTEMPTS} times")


def compile_pattern(pattern: str) -> Any:
    """A schema pattern compiled by the ``regex`` library (Python syntax; ``finditer(..., timeout=)``).

    Raises
    ------
    ValueError
        The pattern does not compile (the message quotes it and says why).
    """
    import regex

    try:
        return regex.compile(pattern, flags=regex.V0)
    except regex.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


class EntityTypeSpec(BaseModel):
    """One entity type of the schema."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    description: str = ""
    #: canonical name -> other surface forms that mean the same entity
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    #: regular expressions whose matches the rules extractor reads as entities of this type
    patterns: list[str] = Field(default_factory=list)
    #: known names (gazetteer) the rules extractor looks for
    names: list[str] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, v: list[str]) -> list[str]:
        for p in v:
            compile_pattern(p)  # checked at load: an invalid pattern is a schema error, not a failure per chunk
        return v


class RelationTypeSpec(BaseModel):
    """One relation type: which entity types it connects and whether it is functional."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    description: str = ""
    domain: list[Identifier] = Field(default_factory=list, description="allowed subject types; empty = any")
    range: list[Identifier] = Field(default_factory=list, description="allowed object types; empty = any")
    functional: bool = Field(False, description="a subject has at most one object for this relation")
    symmetric: bool = False
    #: phrases that signal this relation between two mentions (rules extractor)
    triggers: list[str] = Field(default_factory=list)


class KGSchema(BaseModel):
    """A KG schema: the vocabulary extraction and staging are held to."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str = "default"
    entity_types: dict[Identifier, EntityTypeSpec] = Field(default_factory=dict)
    relation_types: dict[Identifier, RelationTypeSpec] = Field(default_factory=dict)
    allow_self_loops: bool = False

    @model_validator(mode="after")
    def _domains_are_declared(self) -> "KGSchema":
        if not self.entity_types:
            return self
        for rel, spec in self.relation_types.items():
            for role in ("domain", "range"):
                for i, t in enumerate(getattr(spec, role)):
                    if t not in self.entity_types:
                        declared = ", ".join(self.entity_types)
                        raise _RuleError(f"relation_types.{rel}.{role}.{i}",
                                         f"entity type {t!r} is not declared in entity_types (declared: {declared})")
        return self

    @field_validator("entity_types", "relation_types")
    @classmethod
    def _keys_are_identifiers(cls, v: dict, info) -> dict:  # noqa: ANN001 - pydantic's ValidationInfo
        for k in v:
            if not IDENTIFIER_RE.fullmatch(k):
                raise ValueError(f"type name {k!r} is not an identifier [A-Za-z_][A-Za-z0-9_]*")
            why = reserved_name(k, relation=info.field_name == "relation_types")
            if why:
                raise ValueError(f"type name {why}; choose another name")
        return v

    # -- queries -------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        """An empty schema accepts any identifier as a type (used for ad-hoc staging)."""
        return not self.entity_types and not self.relation_types

    def has_entity_type(self, t: str) -> bool:
        return self.is_open or t in self.entity_types

    def has_relation_type(self, r: str) -> bool:
        return self.is_open or r in self.relation_types

    def violations(self, subject_type: str, relation: str, object_type: str, *, self_loop: bool = False) -> list[str]:
        """Reasons why ``(subject_type) -[relation]-> (object_type)`` breaks the schema (empty if none)."""
        out: list[str] = []
        if not self.has_entity_type(subject_type):
            out.append(f"unknown entity type {subject_type}")
        if not self.has_entity_type(object_type):
            out.append(f"unknown entity type {object_type}")
        if not self.has_relation_type(relation):
            out.append(f"unknown relation type {relation}")
            return out
        spec = self.relation_types.get(relation)
        if spec is not None:
            if spec.domain and subject_type not in spec.domain:
                out.append(f"{relation} domain is {spec.domain}, got {subject_type}")
            if spec.range and object_type not in spec.range:
                out.append(f"{relation} range is {spec.range}, got {object_type}")
        if self_loop and not self.allow_self_loops:
            out.append("self loop")
        return out

    def alias_map(self) -> dict[tuple[str, str], str]:
        """``(type, canonical alias) -> canonical target name`` from every type's alias table."""
        return self._alias_map

    @functools.cached_property
    def _alias_map(self) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for t, spec in self.entity_types.items():
            for target, aliases in spec.aliases.items():
                for a in aliases:
                    out[(t, canonical_name(a))] = target
        return out

    @functools.cached_property
    def _declared(self) -> dict[str, frozenset[str]]:
        out: dict[str, set[str]] = {}
        for t, spec in self.entity_types.items():
            names = out.setdefault(t, set())
            for n in [*spec.names, *spec.aliases]:
                try:
                    names.add(canonical_name(n))
                except ValueError:  # a declared name without letters or digits: nothing to compare
                    continue
        return {t: frozenset(v) for t, v in out.items()}

    def declares(self, entity_type: str, name: str) -> bool:
        """Whether ``name`` is one of the entities the schema names for ``entity_type`` (its gazetteer
        ``names`` or an alias table's targets), compared by canonical form. Declared entities are
        distinct from each other: disambiguation never maps one to another by fuzzy similarity."""
        try:
            return canonical_name(name) in self._declared.get(entity_type, frozenset())
        except ValueError:
            return False

    def resolve_name(self, entity_type: str, name: str) -> str:
        """The schema's canonical surface form for ``name`` (itself when no alias applies). Never
        raises: a name without a valid canonical form (no letters, or too long once canonical) has
        no alias, and the entity key refuses it later with the reason."""
        return self.alias_map().get((entity_type, canonical_text(name)), name)


def load_schema(path: str | Path) -> KGSchema:
    """Read and validate a KG schema JSON file.

    Raises
    ------
    KgrSchemaError
        On unreadable files, malformed JSON (with line and column) or an invalid schema (naming the field).
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise KgrSchemaError(f"cannot read schema file {p}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise KgrSchemaError(f"{p}: not UTF-8 (undecodable byte at offset {exc.start})") from None
    try:
        data = loads_strict(raw)  # duplicate keys refused: kgr.model.jsontext
    except KgrValidationError as exc:
        raise KgrSchemaError(f"{p}: {exc}") from None
    try:
        return KGSchema.model_validate(data)
    except ValidationError as exc:
        raise schema_error(exc, p) from exc


def _keys_at(loc: list[str]) -> list[str]:
    if len(loc) == 1:
        return list(KGSchema.model_fields)
    if len(loc) == 3 and loc[0] == "entity_types":
        return list(EntityTypeSpec.model_fields)
    if len(loc) == 3 and loc[0] == "relation_types":
        return list(RelationTypeSpec.model_fields)
    return []


def schema_error(exc: ValidationError, path: str | Path | None = None) -> KgrSchemaError:
    """A one-line :class:`KgrSchemaError` for a schema that failed validation: ``"<path>: <field>: <what>"``,
    naming the first failing field (``field`` holds its dotted path, ``details`` pydantic's error list)."""
    errors = exc.errors(include_url=False)
    first = errors[0] if errors else {"loc": (), "msg": str(exc), "type": ""}
    loc = [str(x) for x in first.get("loc", ())]
    kind = first.get("type", "")
    value = first.get("input")
    rule = (first.get("ctx") or {}).get("error")
    if isinstance(rule, _RuleError):
        field, msg = rule.field, rule.message
    else:
        is_key = bool(loc) and loc[-1] == "[key]"
        if is_key:
            loc = loc[:-1]
        field = ".".join(loc) or None
        msg = str(first.get("msg", "invalid"))
        if kind == "string_pattern_mismatch":
            what = "type name" if is_key else "entity type"
            msg = f"{what} {value!r} is not an identifier (letters, digits and _, not starting with a digit)"
        elif kind == "extra_forbidden":
            allowed = _keys_at(loc)
            close = difflib.get_close_matches(loc[-1], allowed, n=1) if loc else []
            msg = "unknown key" + (f" (did you mean {close[0]!r}?)" if close else "") + (
                f"; expected one of: {', '.join(allowed)}" if allowed else "")
        elif not loc and kind in ("model_type", "dict_type"):
            msg = f"a KG schema must be a JSON object, got {type(value).__name__}"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
    more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
    text = ": ".join(x for x in (str(path) if path is not None else None, field, msg + more) if x)
    err = KgrSchemaError(text)
    err.field = field
    err.details = [{k: v for k, v in e.items() if k != "ctx"} for e in errors]
    return err
