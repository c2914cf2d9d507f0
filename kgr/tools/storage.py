"""``query_kg_storage``: write an extraction into the staging area of the store.

Nothing goes straight into promoted edges. Entities are upserted as ``(:Entity:<Type>)`` nodes
(keyed by type and canonical name, after the KG schema's alias table); each relation becomes one
vote of ``source`` on a ``PENDING_REL`` edge (:func:`kgr.store.staging.stage`), so storing the same
KG again from the same source changes nothing, and from another source adds one vote per relation.
Promotion (``kgr promote``) decides later what becomes a fact.

Relation endpoints are resolved against ``entities`` (:class:`~kgr.tools._kg.EntityIndex`: same
canonical name, else same :func:`~kgr.tools._text.norm_key`); the endpoint's type is the type it is
listed under. A relation whose endpoint is missing or listed under several types fails with that
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
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from kgr.errors import KgrError, KgrNeo4jUnavailable, KgrValidationError
from kgr.model.canonical import entity_key
from kgr.model.kg import ExtractedKG, RelationPair
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


def _db_errors() -> tuple[type[BaseException], ...]:
    from neo4j.exceptions import DriverError, Neo4jError

    return (KgrNeo4jUnavailable, Neo4jError, DriverError)


def _status(kind: str, stored: int, skipped: int, failed: int, error: str | None) -> OperationStatus:
    msg = f"{stored} {kind} stored, {skipped} skipped as duplicates, {failed} failed"
    if error:
        msg += f": {error}"
    return OperationStatus(code=0 if failed == 0 else -1, message=msg, stored_count=stored, skipped_count=skipped,
                           failed_count=failed)


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 2) if seconds > 0 else 0.0


@tool(read_only=False, destructive=False, idempotent=True, needs_graph=True)
def query_kg_storage(params: KGStorageInput, *, context: ToolContext) -> KGStorageOutput:
    """Call after query_entity_disambiguation, with its final_kg: stores the entities and relations in Neo4j through the staging area (entities as nodes, each relation as one vote of the source on a pending edge; nothing is promoted directly) and reports per-kind status codes (0 success, -1 failure), stored/skipped/failed counts, duplicates, timings, throughput, warnings, and final_kg: exactly what was stored. Storing the same KG again from the same source adds nothing.

    Definitions are in the module docstring.
    """
    graph = context.graph
    if graph is None:
        raise KgrNeo4jUnavailable("query_kg_storage needs a Neo4j connection (ToolContext.graph)")
    kg = params.extracted_kg
    schema = context.schema
    closed = schema is not None and not schema.is_open
    batch = max(1, context.batch_size)
    warnings: list[str] = []
    recs: list[str] = []
    db_errors = _db_errors()

    if context.source:
        source = context.source
        if params.source and params.source != context.source:
            warnings.append(f"Input source '{params.source}' ignored: this session stores as '{context.source}'.")
    elif params.source:
        source = params.source
    else:
        source = default_source(kg)
        warnings.append(f"No source given: votes are cast as '{source}' (a hash of the content), so storing "
                        "the same KG again adds no votes.")

    started = time.perf_counter()
    # -- validate entities ---------------------------------------------------------------------
    total_e = sum(len(v) for v in kg.entities.values())
    ent_failed: list[str] = []
    bad_entity: set[tuple[str, str]] = set()
    ent_rows: dict[str, tuple[str, str, str]] = {}  # key -> (type, name as given, name as stored)
    ent_dups = 0
    for etype, names in kg.entities.items():
        for name in names:
            try:
                if closed and not schema.has_entity_type(etype):  # type: ignore[union-attr]
                    raise KgrValidationError(f"entity type {etype} is not in the KG schema")
                stored_name = schema.resolve_name(etype, name) if schema is not None else name
                key = entity_key(etype, stored_name)
            except KgrValidationError as exc:
                ent_failed.append(f"{etype} '{name}': {exc}")
                bad_entity.add((etype, name))
                continue
            if key in ent_rows:
                ent_dups += 1
            else:
                ent_rows[key] = (etype, name, stored_name)

    # -- validate relations --------------------------------------------------------------------
    index = EntityIndex(kg)
    total_r = sum(len(v) for v in kg.relations.values())
    rel_failed: list[str] = []
    assertions: list[TripleAssertion] = []
    rel_dups = 0
    seen_keys: set[str] = set()
    for rtype, pairs in kg.relations.items():
        for p in pairs:
            label = f"{rtype}('{p.subject}', '{p.object}')"
            ends = []
            for role, name in (("subject", p.subject), ("object", p.object)):
                hits = index.lookup(name)
                types = sorted({t for t, _ in hits})
                if not hits:
                    ends.append(f"{role} '{name}' is not among the entities")
                elif len(types) > 1:
                    ends.append(f"{role} '{name}' is listed under several types ({', '.join(types)})")
                elif (hits[0][0], hits[0][1]) in bad_entity:
                    ends.append(f"{role} '{name}' failed validation")
                else:
                    ends.append(hits[0])  # type: ignore[arg-type]
            problems = [e for e in ends if isinstance(e, str)]
            if closed and not schema.has_relation_type(rtype):  # type: ignore[union-attr]
                problems.append(f"relation type {rtype} is not in the KG schema")
            if problems:
                rel_failed.append(f"{label}: {'; '.join(problems)}")
                continue
            (s_type, s_name), (o_type, o_name) = ends  # type: ignore[misc]
            try:
                a = TripleAssertion(subject=s_name, subject_type=s_type, relation=rtype, object=o_name,
                                    object_type=o_type, source=source)
            except (ValidationError, KgrValidationError) as exc:
                msg = str(KgrValidationError.from_pydantic(exc)) if isinstance(exc, ValidationError) else str(exc)
                rel_failed.append(f"{label}: {msg}")
                continue
            if a.key in seen_keys:
                rel_dups += 1
                continue
            seen_keys.add(a.key)
            assertions.append(a)

    # -- entities phase ------------------------------------------------------------------------
    rows = list(ent_rows.values())
    e_new = 0
    e_committed = 0
    e_error: str | None = None
    t_e = time.perf_counter()
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        try:
            rep = stage(graph, [], schema=schema, entities=[(t, n) for t, n, _ in chunk], batch_size=batch)
        except db_errors as exc:
            if e_committed == 0:
                raise
            e_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            break
        e_new += rep.new_entities
        e_committed += len(chunk)
    entities_time = time.perf_counter() - t_e

    # -- relations phase -----------------------------------------------------------------------
    r_new = r_repeat = r_committed = 0
    committed: list[TripleAssertion] = []
    r_error: str | None = None
    t_r = time.perf_counter()
    if e_error is None:
        for i in range(0, len(assertions), batch):
            chunk = assertions[i : i + batch]
            try:
                rep = stage(graph, chunk, schema=schema, batch_size=batch)
            except db_errors as exc:
                if e_committed == 0 and r_committed == 0:
                    raise
                r_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                break
            except KgrError as exc:  # a validation the store does beyond ours: report the chunk as failed
                r_error = str(exc)
                break
            rejected = {r.index for r in rep.rejected}
            for j, a in enumerate(chunk):
                if j in rejected:
                    rel_failed.append(f"{a.relation}('{a.subject}', '{a.object}'): "
                                      f"{next(r.reason for r in rep.rejected if r.index == j)}")
                else:
                    committed.append(a)
            r_new += rep.new_votes
            r_repeat += rep.repeated_votes
            r_committed += len(chunk)
            e_new += rep.new_entities
    else:
        r_error = "not attempted: the entity phase failed"
    relations_time = time.perf_counter() - t_r
    total_time = time.perf_counter() - started

    # -- report --------------------------------------------------------------------------------
    e_uncommitted = len(rows) - e_committed
    e_failed = len(ent_failed) + e_uncommitted
    e_skipped = ent_dups + (e_committed - min(e_new, e_committed))
    e_stored = total_e - e_failed - e_skipped
    r_uncommitted = len(assertions) - r_committed
    r_failed = len(rel_failed) + r_uncommitted
    r_stored = r_new
    r_skipped = total_r - r_failed - r_stored

    if e_error:
        warnings.append(f"Entity storage stopped after {e_committed} of {len(rows)} entities: {e_error}.")
    if r_error and e_error is None:
        warnings.append(f"Relation storage stopped after {r_committed} of {len(assertions)} relations: {r_error}.")
    if ent_failed:
        warnings.append(f"{len(ent_failed)} entities not stored: " + "; ".join(ent_failed[:_MAX_LISTED]) + (
            " ..." if len(ent_failed) > _MAX_LISTED else ""))
    if rel_failed:
        warnings.append(f"{len(rel_failed)} relations not stored: " + "; ".join(rel_failed[:_MAX_LISTED]) + (
            " ..." if len(rel_failed) > _MAX_LISTED else ""))
    existing = e_committed - min(e_new, e_committed)
    if existing:
        warnings.append(f"{existing} entities already existed in the database (aliases updated).")
    if r_repeat:
        warnings.append(f"{r_repeat} relations were already voted for by source '{source}': no new votes.")

    stored_entities = set(list(ent_rows)[:e_committed])
    final_entities: dict[str, list[str]] = {}
    for key in ent_rows:
        if key in stored_entities:
            etype, _, stored_name = ent_rows[key]
            final_entities.setdefault(etype, []).append(stored_name)
    final_relations: dict[str, list[RelationPair]] = {}
    for a in committed:
        s_name = schema.resolve_name(a.subject_type, a.subject) if schema is not None else a.subject
        o_name = schema.resolve_name(a.object_type, a.object) if schema is not None else a.object
        final_relations.setdefault(a.relation, []).append(RelationPair(subject=s_name, object=o_name))

    if r_stored:
        recs.append(f"{r_stored} relation votes are staged as PENDING_REL: run `kgr promote` to decide which become "
                    "facts once they have enough votes.")
    if any("is not among the entities" in f for f in rel_failed):
        recs.append("Add the missing relation endpoints to entities and store again.")
    if any("not in the KG schema" in f for f in [*ent_failed, *rel_failed]):
        recs.append("Map the rejected types to KG schema types, or add them to the schema.")
    if e_error or r_error:
        recs.append("Store again once the database is reachable: staging is idempotent, votes already cast are not "
                    "counted twice.")
    if total_e + total_r and e_stored == 0 and r_stored == 0 and e_failed == 0 and r_failed == 0:
        recs.append("Nothing new was stored: this source had already stored all of it.")

    return KGStorageOutput(
        storage_status=StorageStatus(
            overall_success=e_failed == 0 and r_failed == 0,
            entities_storage=_status("entities", e_stored, e_skipped, e_failed, e_error),
            relations_storage=_status("relations", r_stored, r_skipped, r_failed, r_error),
        ),
        storage_details=StorageDetails(
            total_entities=total_e,
            total_relations=total_r,
            entity_types_processed=list(final_entities),
            relation_types_processed=list(final_relations),
            duplicates_detected=DuplicatesDetected(entity_duplicates=e_skipped, relation_duplicates=r_skipped),
            processing_time=ProcessingTime(entities_time=round(entities_time, 4),
                                           relations_time=round(relations_time, 4),
                                           total_time=round(total_time, 4)),
        ),
        final_kg=ExtractedKG(entities=final_entities, relations=final_relations),
        storage_summary=StorageSummary(
            operation_timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            database_config=DatabaseConfig(host=_host(getattr(graph, "uri", "")),
                                           database=str(getattr(graph, "database", "neo4j"))),
            performance_metrics=PerformanceMetrics(
                entities_per_second=_rate(total_e, entities_time),
                relations_per_second=_rate(total_r, relations_time),
                overall_throughput=_rate(total_e + total_r, total_time),
            ),
        ),
        warnings=warnings,
        recommendations=recs,
    )

