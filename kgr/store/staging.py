"""Staging: assertions become votes on ``PENDING_REL`` edges, never promoted edges.

A vote is one distinct source asserting one edge. The first :data:`MAX_INLINE_VOTES` sources of
an edge are kept on the edge itself (``r.sources``); later ones become ``(:Vote {id:
"<edge key>|<source>"})`` nodes under a uniqueness constraint.

**Per-vote fields.** An inline vote is one position in the parallel lists
:data:`~kgr.store.stage_rows.VOTE_LISTS` on the edge: ``sources`` (who), ``source_confidence``,
``source_at`` (epoch seconds) and ``source_span`` (``"start:end"``, the character span of the
sentence that produced the vote in its chunk's text, ``""`` when unknown); an overflow vote carries
the same fields as the :data:`~kgr.store.stage_rows.VOTE_PROPS` properties ``source``, ``confidence``,
``at``, ``span`` of its ``(:Vote)`` node. Code that moves or rewrites votes (forget, merge, splits)
carries every one of them; edges staged before ``source_span`` existed lack it, and their first
new vote pads it with ``""``. Re-staging the same assertion from
the same source is a no-op, and ``r.votes`` always equals the number of distinct sources, exactly,
under concurrent writers: the edge MERGE is serialised by write locks on both endpoints, an
existing edge is write-locked before its sources are read, and overflow votes by the constraint.
Keeping the common case (a handful of sources per edge) inline costs one relationship update per
edge instead of one node per vote; ``scripts/bench_stage.py`` measures it against a raw MERGE.

Rows are deduplicated and sorted by key in Python before they are sent
(:mod:`kgr.store.stage_rows`), and every write goes through the one staging write path,
:mod:`kgr.store.group_commit`: batches are written with ``UNWIND $rows`` in one transaction each
(entities, then votes), and transient errors (deadlocks, leader switches) are retried by the driver. A batch either lands whole or not at all, so a run
interrupted by a database failure can simply be re-run.

**Merged entities.** An entity merged into another (:mod:`kgr.store.merge`) keeps its node with
``merged_into = <kept key>``. Staging its name lands on the kept entity: ``stage_entities``, which
MERGEs every entity row anyway, also returns the rows whose node has ``merged_into`` (one property
read on a node already found, no extra query). When it returns any, the batch is prepared again
with those keys replaced (edge keys recomputed, votes deduplicated by source across the two names),
the kept entities get the surface forms as aliases, and only then are votes written. A
:func:`stage` call remembers the redirects it learnt, so later batches are keyed right at once.
Staging without merged entities runs exactly the statements it ran before.

**The cycle collector.** A :func:`stage` call keeps its batches' rows alive while it runs and makes
no reference cycles itself, so Python's cyclic collector is paused for the call (it re-scanned the
surviving rows some 170 times on 15,000 assertions: a fifth of staging's Python time). The
driver's own cycles are collected once per batch (a young-generation collection), so a long input
does not pile them up; the collector is restored as it was when the call returns.

**Index statistics.** A call that created :data:`REFRESH_STATISTICS_AFTER` or more entities and
edges resamples the outdated indexes before it returns (:func:`kgr.store.statistics.refresh_index_statistics`),
so a command right after it is not planned on samples of the graph before (after a reset: the empty one).
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
import uuid
import concurrent.futures as cf
from collections.abc import Callable, Iterable, Sequence

from kgr.errors import KgrValidationError
from kgr.gc_freeze import cycle_collector_paused
from kgr.model.canonical import entity_key
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.connection import Graph, Tx
from kgr.store.group_commit import GroupWriter, StageUnit, write_group, write_units
from kgr.store.stage_rows import (MAX_ALIASES, MAX_INLINE_VOTES, MAX_REDIRECT_HOPS, RejectedRow, StageReport,
                                  TypeCheck, check_assertion, check_entities, learn_redirects, resolve_name)
from kgr.store.statistics import refresh_index_statistics

__all__ = ["StageReport", "RejectedRow", "stage", "write_batch", "check_assertion", "learn_redirects",
           "MAX_INLINE_VOTES", "MAX_ALIASES", "MAX_REDIRECT_HOPS", "REFRESH_STATISTICS_AFTER"]

#: A staging call that created at least this many entities and edges brings the planner's index
#: samples up to date before it returns (:func:`kgr.store.statistics.refresh_index_statistics`): a small
#: call leaves them to Neo4j's background sampling; a bulk one must not leave the next commands'
#: plans to estimates of the graph before it.
REFRESH_STATISTICS_AFTER = 500


class EntityCache:
    """Entity rows (key and surface forms) already committed during one :func:`stage` call.

    Later batches of the same call skip those rows, so a long input merges each entity once
    instead of once per batch. Only committed rows enter the cache, and a batch whose endpoints
    went missing meanwhile is rolled back and re-run with its entity rows
    (:func:`kgr.store.group_commit.write_units`), so the cache saves work but never loses a vote.
    """

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def unseen(self, rows: Sequence[dict]) -> list[dict]:
        with self._lock:
            return [r for r in rows if any((r["key"], a) not in self._seen for a in r["aliases"])]

    def add(self, rows: Sequence[dict]) -> None:
        with self._lock:
            self._seen.update((r["key"], a) for r in rows for a in r["aliases"])


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

    How a long input is written (through a :class:`~kgr.store.group_commit.GroupWriter` with
    ``workers`` lanes):

    - rows go to one of the lanes by their subject's entity key, so every vote of one edge goes
      through one lane, in input order, and two lanes never lock the same subject;
    - the calling thread prepares each batch (deduplication, keys, sorting) and upserts the
      entities that this call has not committed yet (an :class:`EntityCache`), so lane
      transactions do not queue behind each other's entity creations;
    - each lane then writes its batches' votes in order, one transaction per batch, while the
      caller prepares the next batch.

    The result (votes, noisy-or confidence) is the same whatever the interleaving. On a database
    failure the lanes stop, committed batches stay, and the error is raised: a re-run completes
    the rest (every step is idempotent). An input that fits in one batch is one transaction.

    Returns
    -------
    StageReport
        Exact counts of new votes, repeated (no-op) votes, new edges and new entities.
    """
    if batch_size < 1:
        raise KgrValidationError("batch_size must be >= 1", field="batch_size")
    if workers < 1:
        raise KgrValidationError("workers must be >= 1", field="workers")
    collect = gc.isenabled()  # off on entry (the command line's bulk commands): no collection stands in for it
    with cycle_collector_paused():
        report = _stage(graph, assertions, schema, entities, batch_size, workers, now, on_batch, collect)
    if report.new_entities + report.new_edges >= REFRESH_STATISTICS_AFTER:
        refresh_index_statistics(graph)
    return report


def _stage(graph: Graph, assertions: Iterable[TripleAssertion], schema: KGSchema | None,
           entities: Sequence[tuple[str, str]], batch_size: int, workers: int, now: float | None,
           on_batch: Callable[[StageReport], None] | None, collect: bool) -> StageReport:
    started = time.perf_counter()
    ts = time.time() if now is None else now
    check_entities(entities, schema)
    check = TypeCheck(schema)
    stream = iter(assertions)
    head = list(itertools.islice(stream, batch_size + 1))
    if len(head) <= batch_size:  # it all fits in one batch: one transaction
        valid, rejected = check.split(head)
        unit = StageUnit(valid=valid, entities=entities, schema=schema, rejected=rejected, now=ts)
        report = write_units(graph, [unit])[0] if not unit.empty else unit.empty_report()
    else:
        lanes = _Lanes(graph, schema, GroupWriter(graph, max_votes=None, max_units=1, lanes=workers), ts, on_batch,
                       collect)
        try:
            for index, a in enumerate(itertools.chain(head, stream)):
                reason = check(a)
                if reason is None:
                    lanes.route(a, batch_size)
                else:
                    lanes.reject(index, reason)
            lanes.finish()
        except BaseException:
            lanes.writer.close(cancel=True)
            raise
        lanes.writer.close()
        if entities:
            unit = StageUnit(entities=entities, schema=schema, now=ts, rows=0)
            lanes.add(write_units(graph, [unit])[0])
        report = lanes.report
    report.seconds = time.perf_counter() - started
    return report


class _Lanes:
    """The lanes of one :func:`stage` call (see its docstring): rows routed by subject key, one
    batch in flight per lane, the report merged under a lock as lanes commit."""

    def __init__(self, graph: Graph, schema: KGSchema | None, writer: GroupWriter, ts: float,
                 on_batch: Callable[[StageReport], None] | None, collect: bool = True):
        self.graph, self.schema, self.writer, self.ts, self.on_batch = graph, schema, writer, ts, on_batch
        self.collect = collect  #: collect the youngest generation per batch (the collector was on at the start)
        self.report = StageReport()
        self.lock = threading.Lock()
        self.cache = EntityCache()
        self.redirects: dict[str, str] = {}  # merged entity key -> kept key, learnt from stage_entities
        nlanes = writer.lanes
        self.rows: list[list[TripleAssertion]] = [[] for _ in range(nlanes)]
        self.pending: list[tuple[cf.Future, int] | None] = [None] * nlanes

    def add(self, part: StageReport) -> None:
        with self.lock:
            self.report = self.report.merge(part)
            if self.on_batch is not None:
                self.on_batch(self.report)

    def reject(self, index: int, reason: str) -> None:
        with self.lock:
            self.report.rejected.append(RejectedRow(index=index, reason=reason))
            self.report.rows += 1

    def route(self, a: TripleAssertion, batch_size: int) -> None:
        # Python's str hash is stable within a process, which is all the lane choice needs
        s_key = entity_key(a.subject_type, resolve_name(self.schema, a.subject_type, a.subject))
        lane = hash(self.redirects.get(s_key, s_key) if self.redirects else s_key) % len(self.rows)
        self.rows[lane].append(a)
        if len(self.rows[lane]) >= batch_size:
            self.submit(lane, self.rows[lane])
            self.rows[lane] = []

    def submit(self, lane: int, items: list[TripleAssertion]) -> None:
        """Upsert the batch's entities not committed yet (here), then queue its votes on ``lane``."""
        unit = StageUnit(valid=items, schema=self.schema, redirects=dict(self.redirects), entities_committed=True,
                         now=self.ts)
        created = self._upsert_entities(unit)
        if self.collect:
            gc.collect(0)  # the driver's cycles of the batches written meanwhile (the collector is paused)
        self._settle(lane)  # one batch in flight per lane, in order; raises a lane's failure
        self.pending[lane] = (self.writer.submit(unit, lane=lane), created)

    def _settle(self, lane: int) -> None:
        """Wait for ``lane``'s batch in flight and add its report (with the entities created here)."""
        if self.pending[lane] is not None:
            future, created = self.pending[lane]
            self.pending[lane] = None
            part = future.result()
            self.add(part.model_copy(update={"new_entities": part.new_entities + created}))

    def _upsert_entities(self, unit: StageUnit) -> int:
        """Upsert the entity rows of ``unit`` this call has not committed yet; rows of merged
        entities teach the call's redirects and the unit is prepared again. Entities created."""
        created = 0
        for _ in range(MAX_REDIRECT_HOPS):
            rows = self.cache.unseen(unit.ents)
            if not rows:
                return created
            out = self.graph.write("stage_entities", {"rows": rows, "now": self.ts, "tx": uuid.uuid4().hex,
                                                      "max_aliases": MAX_ALIASES})[0]
            created += out["created"]
            found = dict(out["redirects"])
            self.cache.add([r for r in rows if r["key"] not in found])  # committed: later batches skip them
            if not found:
                return created
            learn_redirects(self.redirects, found)
            unit.redirects = dict(self.redirects)
            unit.prepare()
        raise KgrValidationError("entity redirects do not settle", field="merged_into")

    def finish(self) -> None:
        for lane, items in enumerate(self.rows):
            if items:
                self.submit(lane, items)
        for lane in range(len(self.pending)):
            self._settle(lane)


def write_batch(tx: Tx, items: Sequence[TripleAssertion], *, schema: KGSchema | None = None,
                entities: Sequence[tuple[str, str]] = (), now: float | None = None) -> StageReport:
    """Stage already-validated assertions inside an open write unit (the staging write path's
    transaction body for one unit, :mod:`kgr.store.group_commit`)."""
    return write_group(tx, [StageUnit(valid=list(items), entities=entities, schema=schema, now=now)])[0]
