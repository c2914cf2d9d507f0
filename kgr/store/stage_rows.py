"""What staging sends: validated assertions turned into sorted entity rows and edge rows, and the
report of what a write did. Pure: no database here (the writes are :mod:`kgr.store.group_commit`).

An **entity row** is ``{key, name, type, aliases}`` (one per entity key, with the surface forms
seen). An **edge row** is ``{key, s_key, o_key, relation, votes}`` with one vote
``{source, confidence, span}`` per distinct source, in input order (``span``: ``"start:end"`` of the
sentence in the source chunk, ``""`` when unknown; :func:`kgr.model.triples.span_text`). The same source asserting the same
edge twice in one input is one vote (the second counts as a duplicate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from kgr.errors import KgrIdentifierError, KgrValidationError
from kgr.model.canonical import edge_key, entity_key, reserved_name, validate_identifier
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion, span_text

__all__ = ["StageReport", "RejectedRow", "TypeCheck", "check_assertion", "check_entities", "prepare_rows",
           "learn_redirects", "redirected_sources", "resolve_name", "MAX_INLINE_VOTES", "MAX_ALIASES", "MAX_REDIRECT_HOPS",
           "VOTE_LISTS", "VOTE_PROPS"]

#: Votes kept inline on the edge (``r.sources``); later sources become (:Vote) nodes.
MAX_INLINE_VOTES = 32
#: The per-vote inline lists of a staged edge, parallel to ``sources`` (one entry per inline vote);
#: code that moves or rewrites votes (forget, merge, split) carries every one of them.
VOTE_LISTS = ("sources", "source_confidence", "source_at", "source_span")
#: The same per-vote fields on an overflow ``(:Vote)`` node, in the order of :data:`VOTE_LISTS`.
VOTE_PROPS = ("source", "confidence", "at", "span")
#: Surface forms kept per entity.
MAX_ALIASES = 64
#: Redirect hops followed at most (a merge re-points older redirects, so one hop is the rule).
MAX_REDIRECT_HOPS = 16


class RejectedRow(BaseModel):
    index: int
    reason: str


class StageReport(BaseModel):
    """What one staging call (or one request of a group) did."""

    rows: int = Field(0, description="assertions received")
    new_votes: int = 0
    repeated_votes: int = Field(0, description="(edge, source) pairs already voted: no-ops")
    new_edges: int = 0
    new_entities: int = 0
    batches: int = 0
    rejected: list[RejectedRow] = Field(default_factory=list)
    seconds: float = 0.0

    def merge(self, other: "StageReport") -> "StageReport":
        return StageReport(
            rows=self.rows + other.rows,
            new_votes=self.new_votes + other.new_votes,
            repeated_votes=self.repeated_votes + other.repeated_votes,
            new_edges=self.new_edges + other.new_edges,
            new_entities=self.new_entities + other.new_entities,
            batches=self.batches + other.batches,
            rejected=[*self.rejected, *other.rejected],
            seconds=self.seconds + other.seconds,
        )


def resolve_name(schema: KGSchema | None, etype: str, name: str) -> str:
    """``name`` through the schema's alias table for ``etype`` (unchanged without a schema)."""
    return schema.resolve_name(etype, name) if schema is not None else name


def check_assertion(a: TripleAssertion, schema: KGSchema | None) -> None:
    """Raise :class:`KgrValidationError` unless ``a`` may be staged (identifiers; closed-schema types)."""
    for kind, value in (("label", a.subject_type), ("label", a.object_type), ("relationship type", a.relation)):
        validate_identifier(value, kind=kind)
        why = reserved_name(value, relation=kind != "label")
        if why:
            raise KgrIdentifierError(f"{kind} {why}", field="relation" if kind != "label" else "subject_type")
    if schema is not None and not schema.is_open:
        unknown = [t for t in (a.subject_type, a.object_type) if not schema.has_entity_type(t)]
        if unknown:
            raise KgrValidationError(f"unknown entity type {unknown[0]}", field="subject_type")
        if not schema.has_relation_type(a.relation):
            raise KgrValidationError(f"unknown relation type {a.relation}", field="relation")


def check_entities(entities: Sequence[tuple[str, str]], schema: KGSchema | None) -> None:
    """Raise unless every ``(type, name)`` has a valid, unreserved label (known to a closed schema)."""
    for etype, _ in entities:
        validate_identifier(etype, kind="label")
        why = reserved_name(etype, relation=False)
        if why:
            raise KgrIdentifierError(f"label {why}", field="entities")
        if schema is not None and not schema.is_open and not schema.has_entity_type(etype):
            raise KgrValidationError(f"unknown entity type {etype}", field="entities")


class TypeCheck:
    """:func:`check_assertion`'s verdict (None: fine, else the reason), cached by (subject type,
    relation, object type): the check depends on the types only."""

    def __init__(self, schema: KGSchema | None):
        self.schema = schema
        self.verdicts: dict[tuple[str, str, str], str | None] = {}

    def __call__(self, a: TripleAssertion) -> str | None:
        types = (a.subject_type, a.relation, a.object_type)
        if types not in self.verdicts:
            try:
                check_assertion(a, self.schema)
                self.verdicts[types] = None
            except KgrValidationError as exc:
                self.verdicts[types] = str(exc)
        return self.verdicts[types]

    def split(self, assertions: Sequence[TripleAssertion],
              offset: int = 0) -> tuple[list[TripleAssertion], list[RejectedRow]]:
        """The assertions that may be staged, and the rejected ones by input index (+ ``offset``)."""
        valid, rejected = [], []
        for i, a in enumerate(assertions):
            reason = self(a)
            if reason is None:
                valid.append(a)
            else:
                rejected.append(RejectedRow(index=offset + i, reason=reason))
        return valid, rejected


def _entity_row(rows: dict[str, dict], etype: str, name: str, surface: str,
                redirects: Mapping[str, str] | None = None) -> str:
    key = entity_key(etype, name)
    if redirects:
        key = redirects.get(key, key)
    row = rows.get(key)
    if row is None:
        row = rows[key] = {"key": key, "name": name, "type": etype, "aliases": []}
    if surface not in row["aliases"]:
        row["aliases"].append(surface)
    return key


def redirected_sources(items: Sequence[TripleAssertion], schema: KGSchema | None,
                       redirects: Mapping[str, str] | None) -> list[dict]:
    """``{drop, source, alias}`` for each assertion staged onto the entity that an entity it names was
    merged into (``redirects``: merged key -> kept key): the named entity's own source, and the surface
    form the kept entity gains as an alias, which an unmerge must give back to it (:mod:`kgr.store.unmerge`);
    sorted and distinct.

    >>> from kgr.model.triples import TripleAssertion as A
    >>> redirected_sources([A(subject="Ann Le", subject_type="P", relation="R", object="X", object_type="Q",
    ...                       source="d1")], None, {"P:ann le": "P:ann lee"})
    [{'drop': 'P:ann le', 'source': 'd1', 'alias': 'Ann Le'}]
    """
    if not redirects:
        return []
    found = {(key, a.source, name) for a in items
             for etype, name in ((a.subject_type, a.subject), (a.object_type, a.object))
             if (key := entity_key(etype, resolve_name(schema, etype, name))) in redirects}
    return [{"drop": k, "source": src, "alias": alias} for k, src, alias in sorted(found)]


def prepare_rows(items: Sequence[TripleAssertion], schema: KGSchema | None,
                 extra_entities: Sequence[tuple[str, str]] = (),
                 redirects: Mapping[str, str] | None = None) -> tuple[list[dict], list[dict], int]:
    """Entity rows and edge rows (each with its distinct-source votes), sorted; and the in-input duplicate count.

    Edge rows are sorted by their smaller endpoint key, so concurrent writers lock endpoints in one
    global order (fewer deadlocks); votes keep their input order within an edge. Entity keys found
    in ``redirects`` (merged entity -> kept entity) are replaced before edge keys are computed.
    """
    entity_rows: dict[str, dict] = {}
    edge_rows: dict[str, dict] = {}
    seen: dict[str, set[str]] = {}
    # (type, surface form) -> entity key: a name met again already has its row and its alias
    keys: dict[tuple[str, str], str] = {}
    edge_keys: dict[tuple[str, str, str], str] = {}
    dups = 0
    for etype, name in extra_entities:
        _entity_row(entity_rows, etype, resolve_name(schema, etype, name), name, redirects)
    for a in items:
        s_key = keys.get((a.subject_type, a.subject))
        if s_key is None:
            s_key = keys[(a.subject_type, a.subject)] = _entity_row(
                entity_rows, a.subject_type, resolve_name(schema, a.subject_type, a.subject), a.subject, redirects)
        o_key = keys.get((a.object_type, a.object))
        if o_key is None:
            o_key = keys[(a.object_type, a.object)] = _entity_row(
                entity_rows, a.object_type, resolve_name(schema, a.object_type, a.object), a.object, redirects)
        triple = (s_key, a.relation, o_key)
        key = edge_keys.get(triple)
        if key is None:
            key = edge_keys[triple] = edge_key(s_key, a.relation, o_key)
        row = edge_rows.get(key)
        if row is None:
            row = edge_rows[key] = {"key": key, "s_key": s_key, "o_key": o_key, "relation": a.relation, "votes": []}
            seen[key] = set()
        sources = seen[key]
        if a.source in sources:  # the same source twice in one input is one vote
            dups += 1
            continue
        sources.add(a.source)
        row["votes"].append({"source": a.source, "confidence": float(a.confidence),
                             "span": span_text(a.span)})
    ents = sorted(entity_rows.values(), key=lambda r: r["key"])
    edges = sorted(edge_rows.values(), key=lambda r: (min(r["s_key"], r["o_key"]), r["key"]))
    return ents, edges, dups


def learn_redirects(redirects: dict[str, str], found: Mapping[str, str]) -> set[str]:
    """Add ``found`` (merged key -> kept key) to ``redirects``, following chains; the final targets.

    >>> r = {"A:x": "A:y"}
    >>> sorted(learn_redirects(r, {"A:y": "A:z"})), r["A:x"]
    (['A:z'], 'A:z')
    """
    redirects.update(found)
    for key in list(redirects):
        target, hops = redirects[key], 0
        while target in redirects:
            hops += 1
            if hops > MAX_REDIRECT_HOPS:
                raise KgrValidationError(f"entity {key!r} is merged in a cycle", field="merged_into")
            target = redirects[target]
        redirects[key] = target
    return {redirects[k] for k in found}
