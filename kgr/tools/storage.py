"""``query_kg_storage``: write an extraction into the staging area of the store.

Nothing goes straight into promoted edges. Entities are upserted as ``(:Entity:<Type>)`` nodes
(keyed by type and canonical name, after the KG schema's alias table); each relation becomes one
vote of ``source`` on a ``PENDING_REL`` edge (:func:`kgr.store.staging.stage`), so storing the same
KG again from the same source changes nothing, and from another source adds one vote per relation.
Promotion (``kgr promote``) decides later what becomes a fact.

Relation endpoints are resolved against ``entities`` (:class:`~kgr.tools._kg.EntityIndex`: same
:func:`~kgr.model.canonical.name_key`, else same :func:`~kgr.model.canonical.variant_key`); the
endpoint's type is the type it is listed under. A relation whose endpoint is missing or listed under several types fails with that
reason.

Counts (each item lands in exactly one of stored / skipped / failed):

* entities: **stored** = nodes created; **skipped** = repeats within the input plus entities already
  in the store; **failed** = names with no letters or digits, types outside a closed KG schema, and
  entities of a batch that did not commit.
* relations: **stored** = new votes; **skipped** = repeats within the input plus votes this source
  had already cast; **failed** = unresolvable endpoints, types outside a closed schema, rows
  rejected by staging, and relations of a batch that did not commit.

``code`` is 0 when nothing failed, −1 otherwise (the message says why); ``overall_success`` when
both codes are 0. Batches of ``ToolContext.batch_size`` rows commit one by one. A database failure
before anything was written raises :class:`~kgr.errors.KgrNeo4jUnavailable` (nothing to report but
the error); a failure after some batches committed is reported, not raised, because the caller
must learn exactly what was stored: the committed counts, the failed remainder, the error in
``message`` and ``warnings``, and ``final_kg`` holding exactly the stored entities and relations.
Re-running the call is safe: staging is idempotent.

The vote ``source`` is ``ToolContext.source`` when the session fixes one, else the input's
``source``, else ``"kgr-tool:"`` + a hash of the KG's content (so a repeated call adds no votes).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from kgr.errors import KgrDatabaseError, KgrError, KgrNeo4jUnavailable, KgrValidationError
from kgr.model.canonical import entity_key
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema
from kgr.model.tools import (
    DatabaseConfig,
    DuplicatesDetected,
    KGStorageInput,
    KGStorageOutput,
    OperationStatus,
    PerformanceMetrics,
    ProcessingTime,
    StorageDetails,
    StorageStatus,
    StorageSummary,
)
from kgr.model.triples import TripleAssertion
from kgr.tools._kg import EntityIndex
from kgr.text.sentences import sentence_spans
from kgr.text.spans import locate
from kgr.tools.context import ToolContext
from kgr.tools.registry import tool

__all__ = ["query_kg_storage", "default_source"]

_MAX_LISTED = 10


def stage(graph: Any, assertions: list[TripleAssertion], **kwargs: Any) -> Any:
    """:func:`kgr.store.staging.stage`, imported on first use (the driver loads only when needed)."""
    from kgr.store.staging import stage as _stage

    return _stage(graph, assertions, **kwargs)


def default_source(kg: ExtractedKG) -> str:
    """The source used when none is given: a hash of the KG's content."""
    blob = json.dumps(kg.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return "kgr-tool:" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def _host(uri: str) -> str:
    try:
        parts = urlsplit(uri)
        if parts.hostname:
            return parts.hostname + (f":{parts.port}" if parts.port else "")
    except ValueError:
        pass
    return "unknown"


#: the database failed or refused the write (a bug in kgr's Cypher, KgrCypherBug, is one too: reported, not hidden)
_DB_ERRORS: tuple[type[BaseException], ...] = (KgrNeo4jUnavailable, KgrDatabaseError)


def _status(kind: str, stored: int, skipped: int, failed: int, error: str | None) -> OperationStatus:
    msg = f"{stored} {kind} stored, {skipped} skipped as duplicates, {failed} failed"
    if error:
        msg += f": {error}"
    return OperationStatus(code=0 if failed == 0 else -1, message=msg, stored_count=stored, skipped_count=skipped,
                           failed_count=failed)


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 2) if seconds > 0 else 0.0


@dataclass
class _Plan:
    """What the input asks to store, after validation (nothing written yet)."""

    total_entities: int = 0
    total_relations: int = 0
    entity_rows: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # key -> (type, given, stored name)
    entity_failed: list[str] = field(default_factory=list)
    entity_repeats: int = 0
    assertions: list[TripleAssertion] = field(default_factory=list)
    relation_failed: list[str] = field(default_factory=list)
    relation_repeats: int = 0


@dataclass
class _Phase:
    """What one phase wrote: batches committed in order until the first failure."""

    committed: int = 0  # rows of committed batches
    new: int = 0  # new entities / new votes
    repeated: int = 0  # repeated votes
    new_entities: int = 0
    kept: list[TripleAssertion] = field(default_factory=list)  # committed, not rejected
    rejected: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def _plan(kg: ExtractedKG, schema: KGSchema | None, source: str, text: str | None = None) -> _Plan:
    """What to stage, and what cannot be; each assertion with the span of its sentence in ``text``
    (the source chunk's, when the session knows it)."""
    plan = _Plan(total_entities=kg.entity_count, total_relations=kg.relation_count)
    sents = sentence_spans(text) if text is not None else []
    closed = schema is not None and not schema.is_open
    invalid: set[tuple[str, str]] = set()
    for etype, names in kg.entities.items():
        for name in names:
            try:
                if closed and not schema.has_entity_type(etype):  # type: ignore[union-attr]
                    raise KgrValidationError(f"entity type {etype} is not in the KG schema")
                stored_name = schema.resolve_name(etype, name) if schema is not None else name
                key = entity_key(etype, stored_name)
            except KgrValidationError as exc:
                plan.entity_failed.append(f"{etype} '{name}': {exc}")
                invalid.add((etype, name))
                continue
            if key in plan.entity_rows:
                plan.entity_repeats += 1
            else:
                plan.entity_rows[key] = (etype, name, stored_name)

    index = EntityIndex(kg)
    seen: set[str] = set()
    for rtype, pairs in kg.relations.items():
        for p in pairs:
            ends: list[tuple[str, str]] = []
            problems: list[str] = []
            for role, name in (("subject", p.subject), ("object", p.object)):
                hits = index.lookup(name)
                types = sorted({t for t, _ in hits})
                if not hits:
                    problems.append(f"{role} '{name}' is not among the entities")
                elif len(types) > 1:
                    problems.append(f"{role} '{name}' is listed under several types ({', '.join(types)})")
                elif hits[0] in invalid:
                    problems.append(f"{role} '{name}' failed validation")
                else:
                    ends.append(hits[0])
            if closed and not schema.has_relation_type(rtype):  # type: ignore[union-attr]
                problems.append(f"relation type {rtype} is not in the KG schema")
            label = f"{rtype}('{p.subject}', '{p.object}')"
            if problems:
                plan.relation_failed.append(f"{label}: {'; '.join(problems)}")
                continue
            (s_type, s_name), (o_type, o_name) = ends
            try:
                a = TripleAssertion(subject=s_name, subject_type=s_type, relation=rtype, object=o_name,
                                    object_type=o_type, source=source,
                                    span=None if text is None else locate(text, p.subject, p.object, sentences=sents))
            except ValidationError as exc:
                plan.relation_failed.append(f"{label}: {KgrValidationError.from_pydantic(exc)}")
                continue
            if a.key in seen:
                plan.relation_repeats += 1
                continue
            seen.add(a.key)
            plan.assertions.append(a)
    return plan


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _stage_entities(graph: Any, rows: list[tuple[str, str, str]], schema: KGSchema | None, batch: int,
                    *, nothing_written_yet: bool) -> _Phase:
    phase = _Phase()
    started = time.perf_counter()
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        try:
            rep = stage(graph, [], schema=schema, entities=[(t, n) for t, n, _ in chunk], batch_size=batch)
        except _DB_ERRORS as exc:
            if nothing_written_yet and phase.committed == 0:
                raise
            phase.error = _one_line(exc)
            break
        phase.new += rep.new_entities
        phase.committed += len(chunk)
    phase.seconds = time.perf_counter() - started
    return phase


def _stage_relations(graph: Any, assertions: list[TripleAssertion], schema: KGSchema | None, batch: int,
                     *, nothing_written_yet: bool) -> _Phase:
    phase = _Phase()
    started = time.perf_counter()
    for i in range(0, len(assertions), batch):
        chunk = assertions[i : i + batch]
        try:
            rep = stage(graph, chunk, schema=schema, batch_size=batch)
        except _DB_ERRORS as exc:
            if nothing_written_yet and phase.committed == 0:
                raise
            phase.error = _one_line(exc)
            break
        except KgrError as exc:  # a check the store makes beyond ours: this batch and the rest fail
            phase.error = str(exc)
            break
        reasons = {r.index: r.reason for r in rep.rejected}
        for j, a in enumerate(chunk):
            if j in reasons:
                phase.rejected.append(f"{a.relation}('{a.subject}', '{a.object}'): {reasons[j]}")
            else:
                phase.kept.append(a)
        phase.new += rep.new_votes
        phase.repeated += rep.repeated_votes
        phase.new_entities += rep.new_entities
        phase.committed += len(chunk)
    phase.seconds = time.perf_counter() - started
    return phase


def _stage_grouped(stager: Any, rows: list[tuple[str, str, str]], assertions: list[TripleAssertion],
                   schema: KGSchema | None) -> tuple[_Phase, _Phase]:
    """Entities and relations as one request of the group-commit writer: all of it lands or none.

    A database failure is raised (nothing was written, like a failure of the first batch).
    """
    started = time.perf_counter()
    try:
        rep = stager.stage(assertions, schema=schema, entities=[(t, n) for t, n, _ in rows])
    except _DB_ERRORS:
        raise
    except KgrError as exc:  # a check the store makes beyond ours: nothing was written
        return _Phase(error=str(exc)), _Phase(error="not attempted: the entity phase failed")
    seconds = time.perf_counter() - started
    ents = _Phase(committed=len(rows), new=rep.new_entities, seconds=seconds)
    rels = _Phase(committed=len(assertions), new=rep.new_votes, repeated=rep.repeated_votes, seconds=seconds)
    reasons = {r.index: r.reason for r in rep.rejected}
    for j, a in enumerate(assertions):
        if j in reasons:
            rels.rejected.append(f"{a.relation}('{a.subject}', '{a.object}'): {reasons[j]}")
        else:
            rels.kept.append(a)
    return ents, rels


def _listed(what: str, items: list[str]) -> str:
    more = " ..." if len(items) > _MAX_LISTED else ""
    return f"{len(items)} {what} not stored: " + "; ".join(items[:_MAX_LISTED]) + more


def _source(params: KGStorageInput, context: ToolContext, warnings: list[str]) -> str:
    """The source the votes are cast as: the session's, else the input's, else a hash of the content."""
    if context.source:
        if params.source and params.source != context.source:
            warnings.append(f"Input source '{params.source}' ignored: this session stores as '{context.source}'.")
        return context.source
    if params.source:
        return params.source
    source = default_source(params.extracted_kg)
    warnings.append(f"No source given: votes are cast as '{source}' (a hash of the content), so storing "
                    "the same KG again adds no votes.")
    return source


def _stage(graph: Any, context: ToolContext, rows: list[tuple[str, str, str]],
           assertions: list[TripleAssertion]) -> tuple[_Phase, _Phase]:
    """The entity phase and the relation phase: through the group-commit writer when the context
    has one, else in batches (the relations only when the entities went through)."""
    schema, batch = context.schema, max(1, context.batch_size)
    if context.stager is not None:
        return _stage_grouped(context.stager, rows, assertions, schema)
    ents = _stage_entities(graph, rows, schema, batch, nothing_written_yet=True)
    if ents.error is not None:
        return ents, _Phase(error="not attempted: the entity phase failed")
    return ents, _stage_relations(graph, assertions, schema, batch, nothing_written_yet=ents.committed == 0)


@dataclass(frozen=True)
class _Counts:
    """Every input item is exactly one of stored / skipped / failed (definitions in the module docstring)."""

    e_stored: int
    e_skipped: int
    e_failed: int
    r_stored: int
    r_skipped: int
    r_failed: int
    existing: int  # entities that were in the database already
    rel_failed: list[str]  # why each failed relation failed

    @classmethod
    def of(cls, plan: _Plan, ents: _Phase, rels: _Phase) -> "_Counts":
        existing = ents.committed - min(ents.new + rels.new_entities, ents.committed)
        e_failed = len(plan.entity_failed) + len(plan.entity_rows) - ents.committed
        e_skipped = plan.entity_repeats + existing
        rel_failed = [*plan.relation_failed, *rels.rejected]
        r_failed = len(rel_failed) + len(plan.assertions) - rels.committed
        return cls(e_stored=plan.total_entities - e_failed - e_skipped, e_skipped=e_skipped, e_failed=e_failed,
                   r_stored=rels.new, r_skipped=plan.total_relations - r_failed - rels.new, r_failed=r_failed,
                   existing=existing, rel_failed=rel_failed)


def _warnings(plan: _Plan, ents: _Phase, rels: _Phase, n: _Counts, source: str) -> list[str]:
    out: list[str] = []
    if ents.error:
        out.append(f"Entity storage stopped after {ents.committed} of {len(plan.entity_rows)} entities: {ents.error}.")
    elif rels.error:
        out.append(f"Relation storage stopped after {rels.committed} of {len(plan.assertions)} relations: "
                   f"{rels.error}.")
    if plan.entity_failed:
        out.append(_listed("entities", plan.entity_failed))
    if n.rel_failed:
        out.append(_listed("relations", n.rel_failed))
    if n.existing:
        out.append(f"{n.existing} entities already existed in the database (aliases updated).")
    if rels.repeated:
        out.append(f"{rels.repeated} relations were already voted for by source '{source}': no new votes.")
    return out


def _recommendations(plan: _Plan, ents: _Phase, rels: _Phase, n: _Counts) -> list[str]:
    out: list[str] = []
    if n.r_stored:
        out.append(f"{n.r_stored} relation votes are staged as PENDING_REL: run `kgr promote` to decide which become "
                   "facts once they have enough votes.")
    if any("is not among the entities" in f for f in n.rel_failed):
        out.append("Add the missing relation endpoints to entities and store again.")
    if any("not in the KG schema" in f for f in [*plan.entity_failed, *n.rel_failed]):
        out.append("Map the rejected types to KG schema types, or add them to the schema.")
    if ents.error or rels.error:
        out.append("Store again once the database is reachable: staging is idempotent, votes already cast are not "
                   "counted twice.")
    if plan.total_entities + plan.total_relations and not (n.e_stored or n.r_stored or n.e_failed or n.r_failed):
        out.append("Nothing new was stored: this source had already stored all of it.")
    return out


def _final_kg(stored_rows: list[tuple[str, str, str]], kept: list[TripleAssertion],
              schema: KGSchema | None) -> ExtractedKG:
    """Exactly what was stored, under the names it was stored as."""
    entities: dict[str, list[str]] = {}
    for etype, _, stored_name in stored_rows:
        entities.setdefault(etype, []).append(stored_name)
    relations: dict[str, list[RelationPair]] = {}
    for a in kept:
        s_name = schema.resolve_name(a.subject_type, a.subject) if schema is not None else a.subject
        o_name = schema.resolve_name(a.object_type, a.object) if schema is not None else a.object
        relations.setdefault(a.relation, []).append(RelationPair(subject=s_name, object=o_name))
    return ExtractedKG(entities=entities, relations=relations)


@tool(read_only=False, destructive=False, idempotent=True, needs_graph=True)
def query_kg_storage(params: KGStorageInput, *, context: ToolContext) -> KGStorageOutput:
    """Call after query_entity_disambiguation, with its final_kg: stores the entities and relations in Neo4j through the staging area (entities as nodes, each relation as one vote of the source on a pending edge; nothing is promoted directly) and reports per-kind status codes (0 success, -1 failure), stored/skipped/failed counts, duplicates, timings, throughput, warnings, and final_kg: exactly what was stored. Storing the same KG again from the same source adds nothing.

    Definitions are in the module docstring.
    """
    graph = context.graph
    if graph is None:
        raise KgrNeo4jUnavailable("query_kg_storage needs a Neo4j connection (ToolContext.graph)")
    kg, schema = params.extracted_kg, context.schema
    warnings: list[str] = []
    source = _source(params, context, warnings)

    started = time.perf_counter()
    plan = _plan(kg, schema, source, context.source_text if context.source and source == context.source else None)
    rows = list(plan.entity_rows.values())
    ents, rels = _stage(graph, context, rows, plan.assertions)
    total_time = time.perf_counter() - started
    n = _Counts.of(plan, ents, rels)
    warnings += _warnings(plan, ents, rels, n, source)
    recs = _recommendations(plan, ents, rels, n)
    final_kg = _final_kg(rows[: ents.committed], rels.kept, schema)

    return KGStorageOutput(
        storage_status=StorageStatus(
            overall_success=n.e_failed == 0 and n.r_failed == 0,
            entities_storage=_status("entities", n.e_stored, n.e_skipped, n.e_failed, ents.error),
            relations_storage=_status("relations", n.r_stored, n.r_skipped, n.r_failed, rels.error),
        ),
        storage_details=StorageDetails(
            total_entities=plan.total_entities,
            total_relations=plan.total_relations,
            entity_types_processed=list(final_kg.entities),
            relation_types_processed=list(final_kg.relations),
            duplicates_detected=DuplicatesDetected(entity_duplicates=n.e_skipped, relation_duplicates=n.r_skipped),
            processing_time=ProcessingTime(entities_time=round(ents.seconds, 4), relations_time=round(rels.seconds, 4),
                                           total_time=round(total_time, 4)),
        ),
        final_kg=final_kg,
        storage_summary=StorageSummary(
            operation_timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            database_config=DatabaseConfig(host=_host(getattr(graph, "uri", "")),
                                           database=str(getattr(graph, "database", "neo4j"))),
            performance_metrics=PerformanceMetrics(
                entities_per_second=_rate(plan.total_entities, ents.seconds),
                relations_per_second=_rate(plan.total_relations, rels.seconds),
                overall_throughput=_rate(plan.total_entities + plan.total_relations, total_time),
            ),
        ),
        warnings=warnings,
        recommendations=recs,
    )
