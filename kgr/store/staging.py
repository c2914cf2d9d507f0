"""Staging: assertions become votes on ``PENDING_REL`` edges, never promoted edges.

A vote is one distinct source asserting one edge. Its id is ``"<edge key>|<source>"`` under a
uniqueness constraint, so re-staging the same assertion from the same source is a no-op, and a
vote count always equals the number of distinct sources (exactly, under concurrent writers: the
vote MERGE is serialised by the constraint, the edge MERGE by write locks on both endpoints).

Rows are deduplicated and sorted by key in Python before they are sent, batches are written with
``UNWIND $rows`` in one transaction each (entities, then votes), and transient errors (deadlocks,
leader switches) are retried by the driver. A batch either lands whole or not at all, so a run
interrupted by a database failure can simply be re-run.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, Field

from kgr.errors import KgrValidationError
from kgr.model.canonical import canonical_name, edge_key, entity_key
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.connection import Graph, Tx
from kgr.store.cypher import validate_identifier

__all__ = ["StageReport", "stage", "write_batch", "check_assertion", "MAX_SOURCES_SAMPLE", "MAX_ALIASES"]

#: Sources kept on the edge itself (all votes stay queryable as (:Vote) nodes).
MAX_SOURCES_SAMPLE = 16
#: Surface forms kept per entity.
MAX_ALIASES = 64


class RejectedRow(BaseModel):
    index: int
    reason: str


class StageReport(BaseModel):
    """What one :func:`stage` call did."""

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


def _resolve(schema: KGSchema | None, etype: str, name: str) -> str:
    return schema.resolve_name(etype, name) if schema is not None else name


def _resolved_key(a: TripleAssertion, schema: KGSchema | None) -> str:
    """The edge key after the schema's alias table (what the store will MERGE on)."""
    if schema is None:
        return a.key
    return edge_key(entity_key(a.subject_type, _resolve(schema, a.subject_type, a.subject)), a.relation,
                    entity_key(a.object_type, _resolve(schema, a.object_type, a.object)))


def _entity_row(rows: dict[str, dict], etype: str, name: str, surface: str) -> str:
    key = entity_key(etype, name)
    row = rows.setdefault(key, {"key": key, "name": name, "type": etype, "aliases": []})
    if surface not in row["aliases"]:
        row["aliases"].append(surface)
    return key


def check_assertion(a: TripleAssertion, schema: KGSchema | None) -> None:
    """Raise :class:`KgrValidationError` unless ``a`` may be staged (identifiers; closed-schema types)."""
    for kind, value in (("label", a.subject_type), ("label", a.object_type), ("relationship type", a.relation)):
        validate_identifier(value, kind=kind)
    if schema is not None and not schema.is_open:
        unknown = [t for t in (a.subject_type, a.object_type) if not schema.has_entity_type(t)]
        if unknown:
            raise KgrValidationError(f"unknown entity type {unknown[0]}", field="subject_type")
        if not schema.has_relation_type(a.relation):
            raise KgrValidationError(f"unknown relation type {a.relation}", field="relation")


def stage(
    graph: Graph,
    assertions: Iterable[TripleAssertion],
    *,
    schema: KGSchema | None = None,
    entities: Sequence[tuple[str, str]] = (),
    batch_size: int = 2000,
    workers: int = 2,
    now: float | None = None,
    on_batch: Callable[[StageReport], None] | None = None,
) -> StageReport:
    """Stage ``assertions`` (and bare ``entities`` as ``(type, name)``) as PENDING_REL votes.

    Assertions are validated first: identifiers, and with a closed ``schema`` the entity and
    relation types (unknown types are rejected with a reason; domain/range violations are staged
    and left to the promotion policy, which rejects them with a recorded decision). Names pass
    through the schema's alias table. ``on_batch`` is called after each committed batch (progress).

    Inputs longer than one batch are routed to ``workers`` lanes by edge key; each lane commits its batches in input order,
    and lanes run concurrently (the server has cores to spare while a client waits on one
    transaction). Every vote of one edge goes through one lane, in input order, so the result
    (votes, noisy-or confidence) is the same whatever the interleaving. On a database failure the
    lanes stop, committed batches stay, and the error is raised: a re-run completes the rest.

    Returns
    -------
    StageReport
        Exact counts of new votes, repeated (no-op) votes, new edges and new entities.
    """
    if batch_size < 1:
        raise KgrValidationError("batch_size must be >= 1", field="batch_size")
    if workers < 1:
        raise KgrValidationError("workers must be >= 1", field="workers")
    report = StageReport()
    started = time.perf_counter()
    lanes: list[list[TripleAssertion]] = [[] for _ in range(workers)]
    pending: list[Future | None] = [None] * workers
    lock = threading.Lock()
    index = 0

    def commit(items: list[TripleAssertion], extra_entities: Sequence[tuple[str, str]]) -> None:
        nonlocal report
        part = _stage_batch(graph, items, schema, extra_entities, now)
        with lock:
            report = report.merge(part)
            if on_batch is not None:
                on_batch(report)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgr-stage") as pool:

        def submit(lane: int, items: list[TripleAssertion]) -> None:
            previous = pending[lane]
            if previous is not None:
                previous.result()  # one batch in flight per lane, in order; raises a lane's failure
            pending[lane] = pool.submit(commit, items, ())

        stream = iter(assertions)
        head = list(itertools.islice(stream, batch_size + 1))
        # an input that fits in one batch goes through one lane: one transaction, no lock
        # contention between lanes over the same entities
        nlanes = workers if len(head) > batch_size else 1
        try:
            for a in itertools.chain(head, stream):
                index += 1
                try:
                    check_assertion(a, schema)
                except KgrValidationError as exc:
                    with lock:
                        report.rejected.append(RejectedRow(index=index - 1, reason=str(exc)))
                        report.rows += 1
                    continue
                lane = int(_resolved_key(a, schema)[:8], 16) % nlanes
                lanes[lane].append(a)
                if len(lanes[lane]) >= batch_size:
                    submit(lane, lanes[lane])
                    lanes[lane] = []
            for lane, items in enumerate(lanes):
                if items:
                    submit(lane, items)
            for f in pending:
                if f is not None:
                    f.result()
        except BaseException:
            for f in pending:
                if f is not None:
                    f.cancel()
            raise
    if entities:
        for etype, _ in entities:
            validate_identifier(etype, kind="label")
            if schema is not None and not schema.is_open and not schema.has_entity_type(etype):
                raise KgrValidationError(f"unknown entity type {etype}", field="entities")
        commit([], entities)
    report.seconds = time.perf_counter() - started
    return report


def _prepare(items: Sequence[TripleAssertion], schema: KGSchema | None,
             extra_entities: Sequence[tuple[str, str]]) -> tuple[list[dict], list[dict], int]:
    """Entity and vote rows, deduplicated and sorted by key; and the in-batch duplicate count."""
    entity_rows: dict[str, dict] = {}
    vote_rows: dict[str, dict] = {}
    dups = 0
    for etype, name in extra_entities:
        _entity_row(entity_rows, etype, _resolve(schema, etype, name), name)
    for a in items:
        s_key = _entity_row(entity_rows, a.subject_type, _resolve(schema, a.subject_type, a.subject), a.subject)
        o_key = _entity_row(entity_rows, a.object_type, _resolve(schema, a.object_type, a.object), a.object)
        key = edge_key(s_key, a.relation, o_key)
        vote_id = f"{key}|{a.source}"
        if vote_id in vote_rows:  # the same source twice in one batch is one vote
            dups += 1
            continue
        vote_rows[vote_id] = {
            "vote_id": vote_id, "key": key, "s_key": s_key, "o_key": o_key, "relation": a.relation,
            "source": a.source, "confidence": float(a.confidence),
        }
    ents = sorted(entity_rows.values(), key=lambda r: r["key"])
    votes = sorted(vote_rows.values(), key=lambda r: (min(r["s_key"], r["o_key"]), r["vote_id"]))
    return ents, votes, dups


def write_batch(tx: Tx, items: Sequence[TripleAssertion], *, schema: KGSchema | None = None,
                entities: Sequence[tuple[str, str]] = (), now: float | None = None) -> StageReport:
    """Stage already-validated assertions inside an open write unit (e.g. with a chunk's bookkeeping).

    The counts are exact for this transaction attempt (a fresh token per call).
    """
    ents, votes, dups = _prepare(items, schema, entities)
    ts = time.time() if now is None else now
    token = uuid.uuid4().hex
    created = tx.run("stage_entities", {"rows": ents, "now": ts, "tx": token, "max_aliases": MAX_ALIASES}) if ents else []
    counts = {"new_votes": 0, "rows": 0, "new_edges": 0}
    if votes:
        counts = tx.run("stage_votes", {"rows": votes, "now": ts, "tx": token, "max_sources": MAX_SOURCES_SAMPLE})[0]
        sources = sorted({r["source"] for r in votes})
        chunks = {r["id"] for r in tx.run("chunks_existing", {"ids": sources})}
        links = [{"vote_id": r["vote_id"], "source": r["source"]} for r in votes if r["source"] in chunks]
        if links:
            tx.run("link_vote_chunks", {"rows": links, "tx": token})
    return StageReport(
        rows=len(items),
        new_votes=counts["new_votes"],
        repeated_votes=counts["rows"] - counts["new_votes"] + dups,
        new_edges=counts["new_edges"],
        new_entities=created[0]["created"] if created else 0,
        batches=1,
    )


def _stage_batch(graph: Graph, items: list[TripleAssertion], schema: KGSchema | None,
                 extra_entities: Sequence[tuple[str, str]], now: float | None) -> StageReport:
    if not items and not extra_entities:
        return StageReport()
    return graph.write_unit(lambda tx: write_batch(tx, items, schema=schema, entities=extra_entities, now=now))


def canonical_preview(names: Iterable[str]) -> dict[str, str]:
    """``name -> canonical form`` (a convenience for reports and the CLI)."""
    return {n: canonical_name(n) for n in names}
