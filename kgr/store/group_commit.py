"""The staging write path: units of work, written in shared transactions (group commit).

Every write of votes goes through here: the CLI's :func:`kgr.store.staging.stage` (a long input
cut into batches), the ingestion pipeline (one unit per drafted chunk, with its processed mark)
and the tool server's storage calls (one unit per request). A :class:`StageUnit` is what one
caller wants written: validated assertions, bare entities, and optionally the
:class:`~kgr.store.chunk_marks.ChunkMark` of the chunks they came from.

:func:`write_units` writes a list of units in **one** transaction:

1. the units' chunks are claimed (write-locked) first; the votes of a chunk that a concurrent forget
   deleted are dropped (:mod:`kgr.store.forget`);
2. the entities of all units, merged by key, are upserted (``stage_entities``). Names of merged
   entities (``merged_into``) are re-keyed to the kept entity and the units prepared again before
   any vote is written (:mod:`kgr.store.staging` explains redirects);
3. the edges of all units, merged by key and source and sorted by endpoint key (one lock order, no
   deadlock among kgr's own writers), get their votes (``stage_votes``);
4. the chunks' schema proposals and processed marks with MENTIONS are written.

A unit whose entities were committed beforehand (``entities_committed``: the CLI's bulk path does
that once per entity in the calling thread) skips step 2; if an endpoint vanished meanwhile, the
transaction is rolled back and written again with step 2, so no vote is lost.

Each unit gets its **own exact report**: new entities, votes and edges are attributed to the first
unit of the group (in arrival order) that asked for them, the rest count as repeated, exactly as
if the units had been written one after the other in that order.

:class:`GroupWriter` queues units from any number of threads and lets writer threads (``lanes``)
write everything queued so far in one transaction:

- while a group is being written, new units queue and form the next group, so groups grow with
  the load; with ``linger`` a writer waits that long at most for a group to fill;
- a group holds at most ``max_votes`` votes and ``max_units`` units (a unit larger than that forms
  a group on its own);
- a unit goes to the lane its caller names (the CLI routes by subject key, so two lanes never lock
  the same subject) or to whichever lane is free;
- a group lands whole or not at all. When the database is gone, every unit of the group and every
  unit queued gets the error at once (none waits out another retry period) and nothing of them is
  written, so each caller can retry (staging is idempotent); when the group fails for any other
  reason, each unit is written again on its own, so one failing unit fails alone.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgr.errors import KgrNeo4jUnavailable, KgrValidationError
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.chunk_marks import ChunkMark, claim_chunks, stage_schema_proposals, write_marks
from kgr.store.connection import Graph, Tx
from kgr.store.edge_locks import lock_order
from kgr.store.stage_rows import (MAX_ALIASES, MAX_INLINE_VOTES, MAX_REDIRECT_HOPS, RejectedRow, StageReport,
                                  TypeCheck, check_entities, learn_redirects, prepare_rows, redirected_sources)

__all__ = ["StageUnit", "GroupWriter", "write_units", "write_group"]


class _MissingEndpoints(RuntimeError):
    """Votes found fewer endpoint entities than they need (committed beforehand, deleted meanwhile)."""


@dataclass(eq=False)
class StageUnit:
    """What one caller wants written in one go (see the module docstring).

    ``valid`` are assertions already checked (:class:`~kgr.store.stage_rows.TypeCheck`); ``rows``
    and ``rejected`` are reported back as they are. ``redirects`` (merged key -> kept key) are
    applied when the rows are prepared.
    """

    valid: list[TripleAssertion] = field(default_factory=list)
    entities: Sequence[tuple[str, str]] = ()
    schema: KGSchema | None = None
    marks: list[ChunkMark] = field(default_factory=list)
    rows: int | None = None
    rejected: list[RejectedRow] = field(default_factory=list)
    redirects: dict[str, str] = field(default_factory=dict)
    entities_committed: bool = False
    now: float | None = None  # the write's timestamp (default: the transaction's start)
    ents: list[dict] = field(init=False, default_factory=list)
    edges: list[dict] = field(init=False, default_factory=list)
    dups: int = field(init=False, default=0)
    #: ``{drop, source, alias}``: votes staged onto a merged entity's survivor (recorded as the named entity's)
    redirected: list[dict] = field(init=False, default_factory=list)
    future: cf.Future = field(init=False, default_factory=cf.Future, repr=False)

    def __post_init__(self) -> None:
        if self.rows is None:
            self.rows = len(self.valid) + len(self.rejected)
        self.prepare()

    def prepare(self) -> None:
        """(Re)compute the entity and edge rows from ``valid``, ``entities`` and ``redirects``."""
        self.ents, self.edges, self.dups = prepare_rows(self.valid, self.schema, self.entities, self.redirects)
        self.redirected = redirected_sources(self.valid, self.schema, self.redirects)

    @property
    def votes(self) -> int:
        return sum(len(e["votes"]) for e in self.edges)

    @property
    def empty(self) -> bool:
        return not self.ents and not self.edges and not self.marks

    def empty_report(self) -> StageReport:
        return StageReport(rows=self.rows or 0, repeated_votes=self.dups, rejected=list(self.rejected))


# -- one transaction -------------------------------------------------------------------------------
def write_units(graph: Graph, units: Sequence[StageUnit]) -> list[StageReport]:
    """Write ``units`` in ONE transaction (see the module docstring); each unit's exact report.

    Raises what the unit of work raised (:class:`~kgr.errors.KgrDatabaseError`,
    :class:`~kgr.errors.KgrNeo4jUnavailable`); nothing of the units is written then.
    """
    group = list(units)
    try:
        return graph.write_unit(lambda tx: write_group(tx, group))
    except _MissingEndpoints:
        for u in group:
            u.entities_committed = False
        return graph.write_unit(lambda tx: write_group(tx, group))


def write_group(tx: Tx, group: list[StageUnit]) -> list[StageReport]:
    """Write a group's merged rows in ``tx``; each unit's exact report, in group order."""
    now = next((u.now for u in group if u.now is not None), None)
    now, token = time.time() if now is None else now, uuid.uuid4().hex
    marks = _claim(tx, group, now)
    created: tuple[set[str], int] = (set(), 0)
    if not all(u.entities_committed for u in group):
        created = _upsert_group_entities(tx, group, now, token)
    votes = _write_group_votes(tx, group, now, token)
    redirected = sorted({(r["drop"], r["source"], r["alias"]) for u in group for r in u.redirected})
    if redirected:  # staged under a merged-away name: that entity's sources and aliases, for an unmerge to give back
        tx.run("merged_sources_add", {"rows": [{"drop": d, "source": src, "alias": a} for d, src, a in redirected],
                                      "max_aliases": MAX_ALIASES})
    for u in group:
        for m in u.marks:
            if m.proposals:
                stage_schema_proposals(tx, m.chunk_id, m.proposals, now=now)
    write_marks(tx, marks, now=now)
    return _attribute(group, created, *votes)


def _claim(tx: Tx, group: list[StageUnit], now: float) -> list[ChunkMark]:
    """Lock the group's chunks; drop the marks and votes of chunks gone; the marks that remain."""
    ids = [m.chunk_id for u in group for m in u.marks]
    if not ids:
        return []
    gone = set(ids) - claim_chunks(tx, ids, now=now)
    for u in group:
        if gone and any(m.chunk_id in gone for m in u.marks):
            u.marks = [m for m in u.marks if m.chunk_id not in gone]
            u.valid = [a for a in u.valid if a.source not in gone]
            u.prepare()
    return [m for u in group for m in u.marks]


def _merged(rows: Iterable[dict], field: str, ident: Callable[[Any], Any]) -> dict[str, dict]:
    """Rows merged by ``key``: their ``field`` lists joined, an item (by ``ident``) kept once."""
    out: dict[str, dict] = {}
    for row in rows:
        have = out.get(row["key"])
        if have is None:
            out[row["key"]] = {**row, field: list(row[field])}
        else:
            seen = {ident(x) for x in have[field]}
            have[field].extend(x for x in row[field] if ident(x) not in seen)
    return out


def _group_entities(group: list[StageUnit]) -> dict[str, dict]:
    return _merged((row for u in group for row in u.ents), "aliases", lambda a: a)


def _upsert(tx: Tx, rows: list[dict], now: float, token: str,
            per_row: bool) -> tuple[set[str], int, dict[str, str]]:
    """Run ``stage_entities``: the created keys (``per_row``; else an empty set), how many were
    created, and where the keys of merged entities point."""
    params = {"rows": sorted(rows, key=lambda e: e["key"]), "now": now, "tx": token, "max_aliases": MAX_ALIASES}
    if not per_row:  # one record of counts: cheaper when nothing needs attributing
        out = tx.run("stage_entities", params)[0]
        return set(), out["created"], dict(out["redirects"])
    rows_out = tx.run("stage_entities", params, per_row=True)
    keys = {x["key"] for x in rows_out if x["created"]}
    return keys, len(keys), {x["key"]: x["merged_into"] for x in rows_out if x["merged_into"] is not None}


def _upsert_group_entities(tx: Tx, group: list[StageUnit], now: float, token: str) -> tuple[set[str], int]:
    """Upsert the group's entities; re-key the units' rows of merged entities. The created keys
    (several units: to attribute them) and how many."""
    ents = _group_entities(group)
    if not ents:
        return set(), 0
    per_row = len(group) > 1
    created, n_created, found = _upsert(tx, list(ents.values()), now, token, per_row)
    redirects: dict[str, str] = {}
    for _ in range(MAX_REDIRECT_HOPS):
        if not found:
            return created, n_created
        # some names belong to merged entities: prepare the units again with the kept keys
        targets = learn_redirects(redirects, found)
        for u in group:
            u.redirects = {**u.redirects, **redirects}
            u.prepare()
        ents = _group_entities(group)
        more, n_more, found = _upsert(tx, [e for k, e in ents.items() if k in targets], now, uuid.uuid4().hex,
                                      per_row)
        created, n_created = created | more, n_created + n_more
    raise KgrValidationError("entity redirects do not settle", field="merged_into")


def _write_group_votes(tx: Tx, group: list[StageUnit], now: float,
                       token: str) -> tuple[set[tuple[str, str]], set[str], dict | None]:
    """Run ``stage_votes`` for the group's merged edges: the fresh (edge, source) pairs and new
    edge keys (several units), or the statement's counts (one unit)."""
    edges = _merged((row for u in group for row in u.edges), "votes", lambda v: v["source"])
    if not edges:
        return set(), set(), None
    rows = sorted(edges.values(), key=lock_order)  # the writers' one lock order (kgr.store.edge_locks)
    params = {"rows": rows, "now": now, "tx": token, "max_inline": MAX_INLINE_VOTES}
    if len(group) == 1:  # nothing to attribute: the statement's counts are the unit's
        counts = tx.run("stage_votes", params)[0]
        sent = sum(len(e["votes"]) for e in rows)
        if counts["rows"] != sent:
            raise _MissingEndpoints(f"{sent - counts['rows']} votes found no endpoint entity")
        return set(), set(), counts
    out = tx.run("stage_votes", params, per_row=True)
    if len(out) != len(rows):
        raise _MissingEndpoints(f"{len(rows) - len(out)} edges found no endpoint entity")
    fresh = {(x["key"], s) for x in out for s in x["fresh_sources"]}
    return fresh, {x["key"] for x in out if x["new_edge"]}, None


def _attribute(group: list[StageUnit], created_entities: tuple[set[str], int], fresh: set[tuple[str, str]], new_edges: set[str],
               counts: dict | None) -> list[StageReport]:
    """Each unit's report: a thing new in this transaction goes to the first unit that asked for it."""
    created, n_created = created_entities
    reports = []
    for u in group:
        if len(group) == 1:
            new_entities = n_created
        else:
            new_entities = sum(1 for e in u.ents if e["key"] in created)
            created.difference_update(e["key"] for e in u.ents)
        if counts is not None:
            new_votes, repeated, n_new_edges = counts["new_votes"], counts["rows"] - counts["new_votes"], \
                counts["new_edges"]
        else:
            new_votes = repeated = n_new_edges = 0
            for e in u.edges:
                if e["key"] in new_edges:
                    n_new_edges += 1
                    new_edges.discard(e["key"])
                for v in e["votes"]:
                    pair = (e["key"], v["source"])
                    if pair in fresh:
                        new_votes += 1
                        fresh.discard(pair)
                    else:
                        repeated += 1
        reports.append(StageReport(rows=u.rows or 0, new_votes=new_votes, repeated_votes=repeated + u.dups,
                                   new_edges=n_new_edges, new_entities=new_entities, batches=1,
                                   rejected=list(u.rejected)))
    return reports


# -- the writer threads ----------------------------------------------------------------------------
class GroupWriter:
    """Writes queued units in shared transactions (see the module docstring).

    Parameters
    ----------
    graph:
        The store.
    max_votes:
        Votes per group transaction at most (default 5,000; ``None``: no bound).
    max_units:
        Units per group transaction at most (``None``: no bound).
    linger:
        Seconds a writer waits at most for more units when its group is not full (default 0).
    lanes:
        Writer threads, each with its own queue (and a shared one for units without a lane).

    Use :meth:`submit` or :meth:`stage` from any number of threads; :meth:`close` stops the writers.
    """

    def __init__(self, graph: Graph, *, max_votes: int | None = 5000, max_units: int | None = None,
                 linger: float = 0.0, lanes: int = 1):
        for name, value in (("max_votes", max_votes), ("max_units", max_units)):
            if value is not None and value < 1:
                raise KgrValidationError(f"{name} must be >= 1", field=name)
        if lanes < 1:
            raise KgrValidationError("lanes must be >= 1", field="lanes")
        if linger < 0:
            raise KgrValidationError("linger must be >= 0", field="linger")
        self.graph = graph
        self.max_votes, self.max_units, self.linger = max_votes, max_units, linger
        self._own: list[deque[StageUnit]] = [deque() for _ in range(lanes)]
        self._shared: deque[StageUnit] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.groups = 0  # transactions committed (for statistics and tests)
        self.requests = 0
        self.isolations = 0  # failed groups whose units were written again one by one

    # -- public -----------------------------------------------------------------------------------
    @property
    def lanes(self) -> int:
        return len(self._own)

    def submit(self, unit: StageUnit, *, lane: int | None = None) -> cf.Future:
        """Queue ``unit`` (on ``lane``, or for any free writer); a future of its :class:`StageReport`."""
        if unit.empty:
            unit.future.set_result(unit.empty_report())
            return unit.future
        with self._cv:
            if self._closed:
                raise RuntimeError("GroupWriter is closed")
            (self._shared if lane is None else self._own[lane % len(self._own)]).append(unit)
            if not self._threads:
                self._threads = [threading.Thread(target=self._run, args=(i,), name=f"kgr-group-commit-{i}",
                                                  daemon=True) for i in range(len(self._own))]
                for t in self._threads:
                    t.start()
            self._cv.notify_all()
        return unit.future

    def stage(self, assertions: Sequence[TripleAssertion], *, schema: KGSchema | None = None,
              entities: Sequence[tuple[str, str]] = (), timeout: float | None = None) -> StageReport:
        """Stage like :func:`kgr.store.staging.stage` (same validation, same report), in a shared transaction.

        Blocks until the group holding this request has committed. Raises the group's database
        error if it failed (then nothing of this request was written).
        """
        check_entities(entities, schema)
        valid, rejected = TypeCheck(schema).split(assertions)
        started = time.perf_counter()
        future = self.submit(StageUnit(valid=valid, entities=entities, schema=schema, rows=len(assertions),
                                       rejected=rejected))
        try:
            report = future.result(timeout)
        except cf.TimeoutError:
            raise TimeoutError(f"staging did not commit within {timeout} s") from None
        return report.model_copy(update={"seconds": time.perf_counter() - started})

    def close(self, *, cancel: bool = False, wait: bool = True) -> None:
        """Finish the queued units (``cancel``: drop them, their futures cancelled), then stop the
        writers (``wait=False``: do not wait for a transaction in flight)."""
        with self._cv:
            self._closed = True
            if cancel:
                for q in (*self._own, self._shared):
                    while q:
                        q.popleft().future.cancel()
            self._cv.notify_all()
        if wait:
            for t in self._threads:
                t.join()

    # -- the writer threads -----------------------------------------------------------------------
    def _take_group(self, lane: int) -> list[StageUnit] | None:
        with self._cv:
            while True:
                while not self._own[lane] and not self._shared and not self._closed:
                    self._cv.wait()
                queue = self._own[lane] or self._shared
                if not queue:
                    return None
                first = queue.popleft()
                if first.future.set_running_or_notify_cancel():
                    break
            group, size = [first], first.votes
            deadline = time.monotonic() + self.linger
            while self.max_units is None or len(group) < self.max_units:
                if queue:
                    if self.max_votes is not None and size + queue[0].votes > self.max_votes:
                        break
                    unit = queue.popleft()
                    if unit.future.set_running_or_notify_cancel():
                        group.append(unit)
                        size += unit.votes
                    continue
                wait = deadline - time.monotonic()
                if wait <= 0 or self._closed:
                    break
                self._cv.wait(wait)
            return group

    def _run(self, lane: int) -> None:
        while (group := self._take_group(lane)) is not None:
            self._commit(group)

    def _commit(self, group: list[StageUnit]) -> None:
        """Write ``group`` in one transaction. If that fails for a reason other than the database
        being gone, write each unit alone: one failing unit never fails the others."""
        try:
            reports = write_units(self.graph, group)
        except KgrNeo4jUnavailable as exc:
            # nothing can be written: every unit of the group gets the error, and so does every unit
            # queued meanwhile (they would each wait out another full retry period before failing
            # the same way); units that arrive later try the database again
            with self._cv:
                waiting = [u for q in (*self._own, self._shared) for u in q]
                for q in (*self._own, self._shared):
                    q.clear()
            for u in waiting:
                if u.future.set_running_or_notify_cancel():
                    u.future.set_exception(exc)
            for u in group:
                u.future.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 - isolate the unit that caused it
            if len(group) == 1:
                group[0].future.set_exception(exc)
                return
            self.isolations += 1
            for u in group:
                self._commit([u])
            return
        self.groups += 1
        self.requests += len(group)
        for u, rep in zip(group, reports):
            u.future.set_result(rep)
