"""Staging: assertions become votes on ``PENDING_REL`` edges, never promoted edges.

A vote is one distinct source asserting one edge. The first :data:`MAX_INLINE_VOTES` sources of
an edge are kept on the edge itself (``r.sources``); later ones become ``(:Vote {id:
"<edge key>|<source>"})`` nodes under a uniqueness constraint. Re-staging the same assertion from
the same source is a no-op, and ``r.votes`` always equals the number of distinct sources, exactly,
under concurrent writers: the edge MERGE is serialised by write locks on both endpoints, an
existing edge is write-locked before its sources are read, and overflow votes by the constraint.
Keeping the common case (a handful of sources per edge) inline costs one relationship update per
edge instead of one node per vote; ``scripts/bench_stage.py`` measures it against a raw MERGE.

Rows are deduplicated and sorted by key in Python before they are sent, batches are written with
``UNWIND $rows`` in one transaction each (entities, then votes), and transient errors (deadlocks,
leader switches) are retried by the driver. A batch either lands whole or not at all, so a run
interrupted by a database failure can simply be re-run.

**Merged entities.** An entity merged into another (:mod:`kgr.store.merge`) keeps its node with
``merged_into = <kept key>``. Staging its name lands on the kept entity: ``stage_entities``, which
MERGEs every entity row anyway, also returns the rows whose node has ``merged_into`` (one property
read on a node already found, no extra query). When it returns any, the batch is prepared again
with those keys replaced (edge keys recomputed, votes deduplicated by source across the two names),
the kept entities get the surface forms as aliases, and only then are votes written. A
:func:`stage` call remembers the redirects it learnt, so later batches are keyed right at once.
Staging without merged entities runs exactly the statements it ran before.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, Field

from kgr.errors import KgrIdentifierError, KgrValidationError
from kgr.model.canonical import canonical_name, edge_key, entity_key, reserved_name
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.connection import Graph, Tx
from kgr.model.canonical import validate_identifier

__all__ = ["StageReport", "stage", "write_batch", "check_assertion", "learn_redirects", "MAX_INLINE_VOTES",
           "MAX_ALIASES", "MAX_REDIRECT_HOPS"]

#: Votes kept inline on the edge (``r.sources``); later sources become (:Vote) nodes.
MAX_INLINE_VOTES = 32
#: Surface forms kept per entity.
MAX_ALIASES = 64


class _MissingEndpoints(RuntimeError):
    """A batch found fewer endpoint entities than it needs (skipped as cached, then deleted meanwhile)."""


class EntityCache:
    """Entity rows (key and surface forms) already committed during one :func:`stage` call.

    Later batches of the same call skip those rows, so a long input merges each entity once
    instead of once per batch. Only committed rows enter the cache, and a batch whose endpoints
    went missing meanwhile is rolled back and re-run with its entity rows (see
    :func:`_stage_votes_unit`), so the cache saves work but never loses a vote.
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

    How a long input is written:

    - rows go to one of ``workers`` lanes by their subject's entity key, so every vote of one
      edge goes through one lane, in input order, and two lanes never lock the same subject;
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
    started = time.perf_counter()
    ts = time.time() if now is None else now
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgr-stage") as pool:
        lanes = _Lanes(graph, schema, pool, workers, ts, on_batch)
        stream = iter(assertions)
        head = list(itertools.islice(stream, batch_size + 1))
        nlanes = workers if len(head) > batch_size else 1
        try:
            if nlanes == 1 and (head or entities):  # it all fits in one batch: one transaction
                lanes.one_batch(head, entities)
                entities, head = (), []
            check = _TypeCheck(schema)
            for index, a in enumerate(itertools.chain(head, stream)):
                reason = check(a)
                if reason is None:
                    lanes.route(a, nlanes, batch_size)
                else:
                    lanes.reject(index, reason)
            lanes.finish()
        except BaseException:
            lanes.cancel()
            raise
    if entities:
        _check_entities(entities, schema)
        lanes.add(_stage_batch(graph, [], schema, entities, ts))
    report = lanes.report
    report.seconds = time.perf_counter() - started
    return report


class _TypeCheck:
    """:func:`~kgr.model.schema.check_assertion`'s verdict (None: fine, else the reason), cached
    by (subject type, relation, object type): the check depends on the types only."""

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


class _Lanes:
    """The lanes of one :func:`stage` call (see its docstring): rows routed by subject key, one
    batch in flight per lane, the report merged under a lock as lanes commit."""

    def __init__(self, graph: Graph, schema: KGSchema | None, pool: ThreadPoolExecutor, workers: int, ts: float,
                 on_batch: Callable[[StageReport], None] | None):
        self.graph, self.schema, self.pool, self.ts, self.on_batch = graph, schema, pool, ts, on_batch
        self.report = StageReport()
        self.lock = threading.Lock()
        self.cache = EntityCache()
        self.redirects: dict[str, str] = {}  # merged entity key -> kept key, learnt from stage_entities
        self.rows: list[list[TripleAssertion]] = [[] for _ in range(workers)]
        self.pending: list[Future | None] = [None] * workers

    def add(self, part: StageReport) -> None:
        with self.lock:
            self.report = self.report.merge(part)
            if self.on_batch is not None:
                self.on_batch(self.report)

    def reject(self, index: int, reason: str) -> None:
        with self.lock:
            self.report.rejected.append(RejectedRow(index=index, reason=reason))
            self.report.rows += 1

    def one_batch(self, items: list[TripleAssertion], entities: Sequence[tuple[str, str]]) -> None:
        """A whole input that fits in one batch: checked, then written in one transaction."""
        _check_entities(entities, self.schema)
        check = _TypeCheck(self.schema)
        valid = []
        for i, a in enumerate(items):
            reason = check(a)
            if reason is None:
                valid.append(a)
            else:
                self.reject(i, reason)
        self.add(_stage_batch(self.graph, valid, self.schema, entities, self.ts))

    def route(self, a: TripleAssertion, nlanes: int, batch_size: int) -> None:
        # Python's str hash is stable within a process, which is all the lane choice needs
        s_key = entity_key(a.subject_type, _resolve(self.schema, a.subject_type, a.subject))
        lane = hash(self.redirects.get(s_key, s_key) if self.redirects else s_key) % nlanes
        self.rows[lane].append(a)
        if len(self.rows[lane]) >= batch_size:
            self.submit(lane, self.rows[lane])
            self.rows[lane] = []

    def submit(self, lane: int, items: list[TripleAssertion]) -> None:
        ents, edges, dups, created = _prepare_entities(
            lambda rows: _run_entities(self.graph, self.cache.unseen(rows), self.ts, uuid.uuid4().hex),
            items, self.schema, (), self.redirects)
        self.cache.add(ents)  # committed: later batches of this call skip these rows

        def write() -> None:
            part = _stage_votes_unit(self.graph, edges, ents, self.ts)
            self.add(part.model_copy(update={"rows": len(items), "new_entities": part.new_entities + created,
                                             "repeated_votes": part.repeated_votes + dups}))

        previous = self.pending[lane]
        if previous is not None:
            previous.result()  # one batch in flight per lane, in order; raises a lane's failure
        self.pending[lane] = self.pool.submit(write)

    def finish(self) -> None:
        for lane, items in enumerate(self.rows):
            if items:
                self.submit(lane, items)
        for f in self.pending:
            if f is not None:
                f.result()

    def cancel(self) -> None:
        for f in self.pending:
            if f is not None:
                f.cancel()


def _check_entities(entities: Sequence[tuple[str, str]], schema: KGSchema | None) -> None:
    for etype, _ in entities:
        validate_identifier(etype, kind="label")
        why = reserved_name(etype, relation=False)
        if why:
            raise KgrIdentifierError(f"label {why}", field="entities")
        if schema is not None and not schema.is_open and not schema.has_entity_type(etype):
            raise KgrValidationError(f"unknown entity type {etype}", field="entities")


def _prepare(items: Sequence[TripleAssertion], schema: KGSchema | None,
             extra_entities: Sequence[tuple[str, str]],
             redirects: Mapping[str, str] | None = None) -> tuple[list[dict], list[dict], int]:
    """Entity rows and edge rows (each with its distinct-source votes), sorted; and the in-batch duplicate count.

    Edge rows are sorted by their smaller endpoint key, so concurrent writers lock endpoints in one
    global order (fewer deadlocks); votes keep their input order within an edge. Entity keys found
    in ``redirects`` (merged entity -> kept entity) are replaced before edge keys are computed.
    """
    entity_rows: dict[str, dict] = {}
    edge_rows: dict[str, dict] = {}
    dups = 0
    for etype, name in extra_entities:
        _entity_row(entity_rows, etype, _resolve(schema, etype, name), name, redirects)
    for a in items:
        s_key = _entity_row(entity_rows, a.subject_type, _resolve(schema, a.subject_type, a.subject), a.subject,
                            redirects)
        o_key = _entity_row(entity_rows, a.object_type, _resolve(schema, a.object_type, a.object), a.object,
                            redirects)
        key = edge_key(s_key, a.relation, o_key)
        row = edge_rows.get(key)
        if row is None:
            row = edge_rows[key] = {"key": key, "s_key": s_key, "o_key": o_key, "relation": a.relation,
                                    "votes": [], "_sources": set()}
        if a.source in row["_sources"]:  # the same source twice in one batch is one vote
            dups += 1
            continue
        row["_sources"].add(a.source)
        row["votes"].append({"source": a.source, "confidence": float(a.confidence)})
    for row in edge_rows.values():
        del row["_sources"]
    ents = sorted(entity_rows.values(), key=lambda r: r["key"])
    edges = sorted(edge_rows.values(), key=lambda r: (min(r["s_key"], r["o_key"]), r["key"]))
    return ents, edges, dups


def write_batch(tx: Tx, items: Sequence[TripleAssertion], *, schema: KGSchema | None = None,
                entities: Sequence[tuple[str, str]] = (), now: float | None = None) -> StageReport:
    """Stage already-validated assertions inside an open write unit (e.g. with a chunk's bookkeeping).

    Entities and votes go in the same transaction. The counts are exact for this transaction
    attempt (a fresh token per call).
    """
    ts = time.time() if now is None else now
    token = uuid.uuid4().hex
    ents, edges, dups, created = _prepare_entities(
        lambda rows: _run_entities(tx, rows, ts, uuid.uuid4().hex),
        items, schema, entities, {})
    part = _write_votes(tx, edges, ts, token)
    return part.model_copy(update={"rows": len(items), "new_entities": created,
                                   "repeated_votes": part.repeated_votes + dups})


def _run_entities(tx: Tx | Graph, rows: list[dict], ts: float, token: str) -> tuple[int, dict[str, str]]:
    """Upsert entity rows; how many nodes were created, and ``{key: kept key}`` for rows of merged entities."""
    if not rows:
        return 0, {}
    params = {"rows": rows, "now": ts, "tx": token, "max_aliases": MAX_ALIASES}
    out = tx.run("stage_entities", params) if isinstance(tx, Tx) else tx.write("stage_entities", params)
    return out[0]["created"], dict(out[0]["redirects"])


#: Redirect hops followed at most (a merge re-points older redirects, so one hop is the rule).
MAX_REDIRECT_HOPS = 16


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


def _prepare_entities(run: Callable[[list[dict]], tuple[int, dict[str, str]]], items: Sequence[TripleAssertion],
                      schema: KGSchema | None, extra: Sequence[tuple[str, str]],
                      redirects: dict[str, str]) -> tuple[list[dict], list[dict], int, int]:
    """Prepare a batch and upsert its entities with ``run``, re-keying rows of merged entities.

    ``redirects`` holds what is known already and learns what ``run`` reports (see the module
    docstring). Returns the final entity rows, edge rows, duplicate count and created entities.
    """
    ents, edges, dups = _prepare(items, schema, extra, redirects)
    created, found = run(ents)
    hops = 0
    while found:
        hops += 1
        if hops > MAX_REDIRECT_HOPS:
            raise KgrValidationError("entity redirects do not settle", field="merged_into")
        targets = learn_redirects(redirects, found)
        ents, edges, dups = _prepare(items, schema, extra, redirects)
        more, found = run([r for r in ents if r["key"] in targets])
        created += more
    return ents, edges, dups, created


def _write_votes(tx: Tx, edges: list[dict], ts: float, token: str) -> StageReport:
    """Run ``stage_votes`` for prepared edge rows (overflow votes are linked to their chunks there).

    Raises :class:`_MissingEndpoints` if some endpoint entity does not exist (votes would be lost).
    """
    if not edges:
        return StageReport(batches=1)
    counts = tx.run("stage_votes", {"rows": edges, "now": ts, "tx": token, "max_inline": MAX_INLINE_VOTES})[0]
    sent = sum(len(e["votes"]) for e in edges)
    if counts["rows"] != sent:
        raise _MissingEndpoints(f"{sent - counts['rows']} votes found no endpoint entity")
    return StageReport(new_votes=counts["new_votes"], repeated_votes=counts["rows"] - counts["new_votes"],
                       new_edges=counts["new_edges"], batches=1)


def _stage_votes_unit(graph: Graph, edges: list[dict], ents: list[dict], ts: float) -> StageReport:
    """One lane transaction: the votes of prepared ``edges`` whose entities were upserted before.

    If an endpoint vanished in between (a concurrent wipe), the transaction is rolled back and
    re-run with ``ents`` upserted in it, so no vote is lost.
    """
    try:
        return graph.write_unit(lambda tx: _write_votes(tx, edges, ts, uuid.uuid4().hex))
    except _MissingEndpoints:

        def with_entities(tx: Tx) -> StageReport:
            token = uuid.uuid4().hex
            created, _ = _run_entities(tx, ents, ts, token)
            return _write_votes(tx, edges, ts, token).model_copy(update={"new_entities": created})

        return graph.write_unit(with_entities)


def _stage_batch(graph: Graph, items: list[TripleAssertion], schema: KGSchema | None,
                 extra_entities: Sequence[tuple[str, str]], now: float | None) -> StageReport:
    if not items and not extra_entities:
        return StageReport()
    return graph.write_unit(lambda tx: write_batch(tx, items, schema=schema, entities=extra_entities, now=now))


def canonical_preview(names: Iterable[str]) -> dict[str, str]:
    """``name -> canonical form`` (a convenience for reports and the CLI)."""
    return {n: canonical_name(n) for n in names}
