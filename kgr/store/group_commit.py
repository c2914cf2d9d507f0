"""Group commit for staging: many concurrent small staging requests, one transaction.

A tool server receives many small storage calls at once (an agent per client, ~20 triples each).
Run one by one, every call pays its own transactions, and calls that touch the same entities must
wait for each other (their endpoint locks conflict). :class:`GroupWriter` instead queues the
requests and lets one writer thread stage everything queued so far in **one** transaction:

- while a group is being written, new requests queue up and form the next group, so the group
  size adapts to the load (one request alone is written at once; there is no timer);
- a group holds at most ``max_votes`` votes (a single request larger than that forms a group on
  its own);
- rows of a group are merged (entities by key, votes by edge key and source) and sorted, so one
  transaction takes its locks in key order: no deadlock among the server's own calls;
- every request still gets its **own exact report**: new entities, new votes and new edges are
  attributed to the first request of the group (in arrival order) that asked for them, and the
  rest count as repeated, exactly as if the requests had been staged one after the other in that
  order;
- a group lands whole or not at all. When the database is gone every request of the group, and
  every request queued behind it, gets the error at once (none waits out another retry period)
  and nothing of them is written, so each caller can simply retry (staging is idempotent); when the group fails for any other reason, each of its requests is written again
  on its own, so one failing request fails alone and every other one is stored exactly.

The statements are the ones :func:`kgr.store.staging.stage` runs (``stage_entities`` and
``stage_votes`` with ``per_row`` results). Names of merged entities land on the kept entity the
same way too: when ``stage_entities`` reports rows of merged entities, the group's requests are
prepared again with those keys replaced before any vote is written (see :mod:`kgr.store.staging`).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgr.errors import KgrNeo4jUnavailable, KgrValidationError
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.connection import Graph, Tx
from kgr.store.staging import (MAX_ALIASES, MAX_INLINE_VOTES, MAX_REDIRECT_HOPS, RejectedRow, StageReport,
                               _check_entities, _prepare, check_assertion, learn_redirects)

__all__ = ["GroupWriter"]


@dataclass
class _Request:
    ents: list[dict]
    edges: list[dict]
    dups: int
    rows: int
    rejected: list[RejectedRow]
    # what the rows were prepared from, to prepare them again if some entity turns out merged
    valid: list[TripleAssertion] = field(default_factory=list)
    entities: Sequence[tuple[str, str]] = ()
    schema: KGSchema | None = None
    done: threading.Event = field(default_factory=threading.Event)
    report: StageReport | None = None
    error: BaseException | None = None

    @property
    def votes(self) -> int:
        return sum(len(e["votes"]) for e in self.edges)


class GroupWriter:
    """Stages concurrent requests in shared transactions (see the module docstring).

    Parameters
    ----------
    graph:
        The store.
    max_votes:
        Votes per group transaction at most (default 5,000).

    Use :meth:`stage` from any number of threads; :meth:`close` stops the writer thread.
    """

    def __init__(self, graph: Graph, *, max_votes: int = 5000):
        if max_votes < 1:
            raise KgrValidationError("max_votes must be >= 1", field="max_votes")
        self.graph = graph
        self.max_votes = max_votes
        self._queue: deque[_Request] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.groups = 0  # transactions committed (for statistics and tests)
        self.requests = 0
        self.isolations = 0  # failed groups whose requests were written again one by one

    # -- public -----------------------------------------------------------------------------------
    def stage(self, assertions: Sequence[TripleAssertion], *, schema: KGSchema | None = None,
              entities: Sequence[tuple[str, str]] = (), timeout: float | None = None) -> StageReport:
        """Stage like :func:`kgr.store.staging.stage` (same validation, same report), in a shared transaction.

        Blocks until the group holding this request has committed. Raises the group's database
        error if it failed (then nothing of this request was written).
        """
        _check_entities(entities, schema)
        rejected: list[RejectedRow] = []
        valid: list[TripleAssertion] = []
        for i, a in enumerate(assertions):
            try:
                check_assertion(a, schema)
            except KgrValidationError as exc:
                rejected.append(RejectedRow(index=i, reason=str(exc)))
                continue
            valid.append(a)
        ents, edges, dups = _prepare(valid, schema, entities)
        request = _Request(ents=ents, edges=edges, dups=dups, rows=len(assertions), rejected=rejected,
                           valid=valid, entities=entities, schema=schema)
        if not ents and not edges:
            return StageReport(rows=len(assertions), repeated_votes=dups, rejected=rejected)
        started = time.perf_counter()
        with self._cv:
            if self._closed:
                raise RuntimeError("GroupWriter is closed")
            self._queue.append(request)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kgr-group-commit", daemon=True)
                self._thread.start()
            self._cv.notify()
        if not request.done.wait(timeout):
            raise TimeoutError(f"staging did not commit within {timeout} s")
        if request.error is not None:
            raise request.error
        assert request.report is not None
        return request.report.model_copy(update={"seconds": time.perf_counter() - started})

    def close(self) -> None:
        """Finish the queued requests, then stop the writer thread."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join()

    # -- the writer thread ------------------------------------------------------------------------
    def _take_group(self) -> list[_Request] | None:
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait()
            if not self._queue:
                return None
            group = [self._queue.popleft()]
            size = group[0].votes
            while self._queue and size + self._queue[0].votes <= self.max_votes:
                size += self._queue[0].votes
                group.append(self._queue.popleft())
            return group

    def _run(self) -> None:
        while (group := self._take_group()) is not None:
            self._commit(group)

    def _commit(self, group: list[_Request]) -> None:
        """Write ``group`` in one transaction. If that fails for a reason other than the database
        being gone, write each request alone: one failing request never fails the others."""
        try:
            reports = self.graph.write_unit(lambda tx: _write_group(tx, group))
        except KgrNeo4jUnavailable as exc:
            # nothing can be written: every request of the group gets the error, and so does every
            # request queued meanwhile (they would each wait out another full retry period before
            # failing the same way); requests that arrive later try the database again
            with self._cv:
                waiting = list(self._queue)
                self._queue.clear()
            for r in [*group, *waiting]:
                r.error = exc
                r.done.set()
            return
        except Exception as exc:  # noqa: BLE001 - isolate the request that caused it
            if len(group) == 1:
                group[0].error = exc
                group[0].done.set()
                return
            self.isolations += 1
            for r in group:
                self._commit([r])
            return
        self.groups += 1
        self.requests += len(group)
        for r, rep in zip(group, reports):
            r.report = rep
            r.done.set()


def _group_entities(group: list[_Request]) -> dict[str, dict]:
    ents: dict[str, dict] = {}
    for r in group:
        for row in r.ents:
            have = ents.get(row["key"])
            if have is None:
                ents[row["key"]] = {**row, "aliases": list(row["aliases"])}
            else:
                have["aliases"].extend(a for a in row["aliases"] if a not in have["aliases"])
    return ents


def _upsert_entities(tx: Tx, rows: list[dict], now: float, token: str) -> tuple[set[str], dict[str, str]]:
    out = tx.run("stage_entities", {"rows": sorted(rows, key=lambda e: e["key"]), "now": now, "tx": token,
                                    "max_aliases": MAX_ALIASES}, per_row=True)
    return ({x["key"] for x in out if x["created"]},
            {x["key"]: x["merged_into"] for x in out if x["merged_into"] is not None})


def _write_group(tx: Tx, group: list[_Request]) -> list[StageReport]:
    """Write a group's merged rows in ``tx``; each request's exact report, in group order."""
    now, token = time.time(), uuid.uuid4().hex
    ents = _group_entities(group)
    created: set[str] = set()
    if ents:
        created, found = _upsert_entities(tx, list(ents.values()), now, token)
        redirects: dict[str, str] = {}
        for _ in range(MAX_REDIRECT_HOPS):
            if not found:
                break
            # some names belong to merged entities: prepare the requests again with the kept keys
            targets = learn_redirects(redirects, found)
            for r in group:
                r.ents, r.edges, r.dups = _prepare(r.valid, r.schema, r.entities, redirects)
            ents = _group_entities(group)
            more, found = _upsert_entities(tx, [e for k, e in ents.items() if k in targets], now, uuid.uuid4().hex)
            created |= more
        else:
            raise KgrValidationError("entity redirects do not settle", field="merged_into")
    edges: dict[str, dict] = {}
    for r in group:
        for row in r.edges:
            have = edges.get(row["key"])
            if have is None:
                edges[row["key"]] = {**row, "votes": list(row["votes"])}
            else:
                sources = {v["source"] for v in have["votes"]}
                have["votes"].extend(v for v in row["votes"] if v["source"] not in sources)
    fresh: set[tuple[str, str]] = set()
    new_edges: set[str] = set()
    if edges:
        rows = sorted(edges.values(), key=lambda e: (min(e["s_key"], e["o_key"]), e["key"]))
        out = tx.run("stage_votes", {"rows": rows, "now": now, "tx": token, "max_inline": MAX_INLINE_VOTES},
                     per_row=True)
        if len(out) != len(rows):  # impossible: the endpoints were merged in this transaction
            raise RuntimeError(f"{len(rows) - len(out)} edges found no endpoint entity")
        for x in out:
            fresh.update((x["key"], s) for s in x["fresh_sources"])
            if x["new_edge"]:
                new_edges.add(x["key"])
    reports = []
    for r in group:  # attribute in arrival order: the first request that asked for a thing gets it
        new_entities = sum(1 for e in r.ents if e["key"] in created)
        created.difference_update(e["key"] for e in r.ents)
        new_votes = repeated = n_new_edges = 0
        for e in r.edges:
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
        reports.append(StageReport(rows=r.rows, new_votes=new_votes, repeated_votes=repeated + r.dups,
                                   new_edges=n_new_edges, new_entities=new_entities, batches=1,
                                   rejected=r.rejected))
    return reports
