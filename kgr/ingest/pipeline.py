"""Batch ingestion: documents → chunks → tool-driven extraction loop → staging → promotion.

Per chunk, following Agentic-KGR's protocol (Appendix A.4):

1. **extract** with the configured extractor (rules or LLM);
2. **density** (mandatory while rounds < ``max_rounds``): while ``needs_more_extraction``,
   re-extract with the density tool's recommendations as guidance (results are merged);
3. **quality**, then **iterative feedback**: continue (another round, guided by the coverage
   tool's and the feedback's recommendations) or stop — ``max_rounds`` bounds all rounds together.
   The last round allowed runs only the quality tool (its score is stored with the chunk): density,
   feedback and coverage decide whether and how another round runs, and none can follow;
4. **disambiguation** against Neo4j (its ``final_kg`` is what gets stored); names this run already
   resolved to a unique exact match are not looked up again (``disambiguation_cache``, see
   ``ChunkDrafter._disambiguate``: the graph is the same with and without it);
5. **storage**: the chunk's relations are staged as votes whose source is the chunk id, in ONE
   transaction with the chunk's ``processed_at`` mark and its MENTIONS, so a chunk is processed
   exactly when its votes are in the graph. This step is the staging write path (``kgr.store.group_commit``), not a
   ``query_kg_storage`` call (that tool commits on its own, apart from the chunk's mark), and the
   report says so: ``tool_calls`` counts only the tools actually called.

At the end of the job (``config.resolve``, when it staged new votes) entities are resolved
(:mod:`kgr.store.resolve`: merges and splits as one version), so that the job's own documents are
matched with each other, not only with what the store held when the job began. Then promotion rounds run every ``promote_every`` chunks and at the end (through the ``promote``
callable the caller passes; the report carries each round's summary).

What is staged
--------------
- Relations whose types and endpoint types fit the schema, as votes (one per chunk and edge).
  **Symmetric** relations (``RelationTypeSpec.symmetric``) are staged with their endpoints in a
  canonical order (the smaller entity key first, when the reversed triple also fits the domain and
  range), so ``A–B`` and ``B–A`` are one pending edge and share votes.
- Types outside the schema that the extractor proposes are staged as ``(:SchemaProposal)`` votes
  (one per chunk), never silently dropped and never written as edges.
- Everything else the extractor or the pipeline could not accept (a domain/range violation, an
  endpoint of unknown type, a name with no letters) is **rejected**: counted in
  ``rejected_items``, with the first :data:`MAX_LISTED` reasons in ``IngestReport.rejections``.

Failures
--------
A chunk whose extraction fails (an LLM timeout or rate limit after the retries, output still
invalid after the repair request: :class:`~kgr.errors.KgrExtractionError`) or whose tool input is
invalid is reported in ``chunks_failed`` with its kind and reason, and is **not** marked processed,
so a re-run retries it. The rest of the batch goes on. Neo4j becoming unavailable stops the job
(:class:`~kgr.errors.KgrNeo4jUnavailable`); re-running it resumes. Any other exception is a bug and
propagates.

Concurrency and throughput
--------------------------
Chunks run as coroutines on a private event loop (one thread). An extractor with ``aextract``
(the LLM extractor) is awaited on that loop, so ``concurrency`` LLM requests are in flight at once
without a thread each; other extractors run in a thread pool. The analysis tools are CPU-only and
run on the loop; disambiguation's Neo4j lookup runs in a small thread pool outside the concurrency
limit, so LLM requests never wait on the database. Storage goes through **one writer** (``writers``)
that commits the chunks ready at that moment together (at most ``commit_chunks`` per transaction,
each chunk's votes and mark always in the same transaction; the group's marks and MENTIONS in one
statement): no deadlocks between the job's own writes, and far fewer commits at high concurrency. A group that Neo4j refuses for a data
error is retried chunk by chunk, so one bad chunk cannot fail its neighbours.

Executors
---------
With ``executor="process"`` or ``"ray"`` (:mod:`kgr.ingest.executors`), steps 1-4 run in worker
processes or Ray actors, ``ceil(concurrency / workers)`` chunks at once each, and the drafted chunks
come back to this process's writer (step 5 unchanged; the writer lingers ``commit_linger`` for a
group to fill). Workers only read, so a worker that dies is replaced and its chunks are drafted
again and written once; the graph is the in-process one (see :mod:`kgr.ingest.executors`).

Documents that change and disappear
-----------------------------------
A file's document id is its path (:mod:`kgr.ingest.loaders`), so an edited file is the same
document with new text. Before a document's chunks go to the pipeline, the chunk ids the store holds
for it are compared with those of its current text: the chunks the edit removed are **forgotten**
(:func:`kgr.store.forget.forget`, one version per batch of documents: their votes leave every edge,
promoted edges left below ``forget_quorum`` votes are retired with a recorded ``retract`` decision,
orphaned entities go), chunks whose text is unchanged keep their id and are skipped as processed
(no extraction, no LLM call), new chunks are processed. With ``prune``, after the last chunk, the
documents read earlier from files at or under the given paths that this run did not read (deleted
files, vanished JSONL ids) are forgotten too; documents of a file that failed to load are kept.
Each step is one transaction, so a job killed anywhere and re-run ends in the same graph; and
re-ingesting a changed corpus ends with the staged graph (votes, sources, entities) of a fresh
ingest of the final corpus (promotion under the ``quorum`` policy then decides the same promoted
set; a stateful policy decides on the history it saw).

Resumability and memory
-----------------------
Chunk ids are content hashes recorded in Neo4j; chunks already processed are skipped (and a chunk
repeated within one run — identical files — is processed once), so a killed job re-run finishes
with the same graph as an uninterrupted one. Documents and chunks are streamed; at most
``2 × concurrency + commit_chunks`` chunks are in flight, so memory does not grow with the corpus
(the set of chunk ids seen in the run, 64 bytes each, is the only per-chunk state kept; the
disambiguation cache holds at most ``disambiguation_cache`` names).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path


from kgr.errors import KgrError, KgrNeo4jUnavailable
from kgr.extract.base import Extractor
from kgr.ingest.chunking import Chunk, chunk_document
from kgr.ingest.loaders import Document, LoadIssue, iter_documents, resolved_path, text_sha256
from kgr.ingest.unique_ids import require_unique_ids
from kgr.model.decisions import RoundSummary
from kgr.model.embedding import EmbedFn
from kgr.model.schema import KGSchema
from kgr.store import provenance
from kgr.store.connection import Graph
from kgr.store.forget import forget
from kgr.store.unmerge import resolution_due
from kgr.store.inspect import names_under_several_types
from kgr.store.resolve import resolve as resolve_entities
from kgr.store.statistics import refresh_index_statistics
from kgr.slices.anchors import embed_entities

from kgr.ingest.chunk_loop import ChunkPipeline
from kgr.ingest.config import IngestConfig, make_extractor
from kgr.ingest.drafting import ChunkDrafter
from kgr.ingest.executors import open_remote
from kgr.ingest.fail_fast import FailFast, preflight
from kgr.ingest.report import MAX_LISTED, ChunkOutcome, IngestReport

__all__ = ["ingest"]

#: Chunks read (and their documents and chunks upserted) per batch.
_READ_BATCH = 64
#: Documents compared with what the store records of them per query (or fewer, see _GROUP_CHARS).
_GROUP_DOCUMENTS = 512
#: Characters of document text held for one such comparison at most (a longer document goes alone).
_GROUP_CHARS = 4_000_000

# -- the driver -------------------------------------------------------------------------------------


def _batches(chunks: Iterator[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for c in chunks:
        batch.append(c)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ingest(
    graph: Graph,
    paths: Sequence[str | Path],
    schema: KGSchema,
    *,
    config: IngestConfig | None = None,
    extractor: Extractor | None = None,
    on_progress: Callable[[str, float], None] | None = None,
    promote: Callable[[], RoundSummary] | None = None,
    embed: EmbedFn | None = None,
) -> IngestReport:
    """Ingest files/directories into the store (see the module docstring).

    ``on_progress(event, n)`` is called from the calling thread with increments of ``documents``,
    ``files`` and ``file_bytes`` (files read, and their sizes on disk: a progress display's share
    of the corpus read), ``text_loaded`` (characters of the documents loaded), ``text_known`` and
    ``chunks_known`` (characters and chunks of the documents cut or found processed, so far),
    ``read_all`` (once: every chunk is known), ``chunks_read`` (cut and queued, or found processed), ``chunks``
    (processed, skipped or failed), ``failed``, ``llm_calls``, ``cost_usd`` (USD, as litellm prices
    the calls) and ``triples`` (assertions staged). ``promote`` runs one promotion round; it is called every ``config.promote_every``
    chunks and, when ``config.promote``, at the end until a round is ``settled`` (at most
    ``config.final_promotion_rounds``; without ``promote``: no promotion, the caller decides). When
    ``paths`` hold no document (empty or unreadable files only), nothing after the reading runs: no
    prune, resolution or promotion round, so the graph and its versions stay as they were
    (``report.documents == 0`` says so). With
    ``embed`` (an embedding model, :mod:`kgr.slices.anchors`), the names of the entities that have no
    embedding from it yet are embedded last; a failure there is reported (``embedding_error``) and
    leaves the ingest as it is (``kgr embed`` finishes the names).

    Raises
    ------
    KgrNeo4jUnavailable
        Neo4j went away (a re-run resumes where the job stopped). ``graph`` is then closed, which ends
        the database calls still retrying in the background at once: reconnect to go on.
    KgrValidationError
        A path does not exist, or two JSONL lines give one document id (before anything is written).
    KgrExtractionError
        The LLM cannot work (unknown model, missing key: before anything is read), or refused the
        job's first request (:mod:`kgr.ingest.fail_fast`; the re-run resumes).
    """
    cfg = config or IngestConfig()
    if extractor is None and cfg.executor == "inprocess":
        extractor = make_extractor(cfg)
    preflight(extractor if extractor is not None else make_extractor(cfg))  # before anything is read or written
    require_unique_ids([str(p) for p in paths])  # two JSONL lines with one id: refused before anything is written
    job = _Job(graph, schema, extractor, cfg, on_progress or (lambda event, n: None), promote)
    job.run(paths)
    if job.report.documents == 0:
        return job.finish()  # nothing read: no prune, resolution, promotion round or version (the caller reports it)
    if cfg.prune:
        job.prune(paths)
    if job.pipe.staged.new_votes:  # the planner's index samples follow the graph the job grew
        refresh_index_statistics(graph)
    if cfg.resolve and (job.pipe.staged.new_votes or job.unmerged or resolution_due(graph)):
        # new votes, or merges a forget undid (in this run or in one that stopped before resolving)
        job.report.resolution = resolve_entities(graph, schema, target_fmr=cfg.resolve_target_fmr,
                                                 apply_splits=cfg.resolve_splits)
    if job.pipe.staged.new_votes:  # a scan of the entities: only when the job staged something
        job.report.names_under_several_types = [f"{name}: {', '.join(types)}"
                                                for name, types in names_under_several_types(graph, schema)]
    job.promote_backlog()
    if embed is not None:
        job.embed_names(embed)
    return job.finish()


def _failed_first_last(fut: cf.Future) -> bool:
    """Sort key of finished chunks: those that succeeded first (:class:`FailFast` sees them first)."""
    if fut.cancelled() or fut.exception() is not None:
        return True
    return fut.result().failure is not None


class _Job:
    """One :func:`ingest` call: reads chunks in batches, keeps a bounded window of chunks in the
    :class:`ChunkPipeline`, absorbs their outcomes into the report, promotes when asked."""

    def __init__(self, graph: Graph, schema: KGSchema, extractor: Extractor | None, cfg: IngestConfig,
                 tick: Callable[[str, float], None], promote: Callable[[], RoundSummary] | None):
        self.graph, self.cfg, self.tick, self.promote = graph, cfg, tick, promote
        self.report = IngestReport()
        self.unmerged: list[str] = []
        self.started = time.perf_counter()
        self.rounds: list[int] = []
        self.since_promotion = 0
        self.issues: list[LoadIssue] = []
        self.skipped: Counter[str] = Counter()
        self.paths_by_doc: dict[str, str | None] = {}
        self.seen: set[str] = set()
        self.documents_seen: set[str] = set()
        self.files_read: set[str] = set()
        self.states: dict[str, provenance.DocumentState] = {}
        self.fail_fast = FailFast()
        # fuzzy matches only to entities that existed when the run began: chunk order (concurrency,
        # the executor) cannot change what a name resolves to
        began = time.time()
        if cfg.executor == "inprocess":
            drafter = ChunkDrafter(graph, schema, extractor or make_extractor(cfg), cfg, began, self.paths_by_doc)
            self.pipe = ChunkPipeline(graph, schema, drafter, cfg, self.paths_by_doc)
        else:
            remote = open_remote(graph, schema, cfg, began, extractor)
            self.report.executor_start_seconds = round(time.time() - began, 3)
            self.pipe = ChunkPipeline(graph, schema, None, cfg, self.paths_by_doc, remote=remote)
        self.inflight: set[cf.Future] = set()
        self.window = 2 * cfg.concurrency + cfg.commit_chunks

    def documents(self, paths: Sequence[str | Path]) -> Iterator[Document]:
        for doc in iter_documents([str(p) for p in paths], on_error=self.load_issue, on_skip=self.file_skipped):
            self.report.documents += 1
            self.paths_by_doc[doc.id] = resolved_path(doc.path) if doc.path else None
            self.file_read(doc.path)
            self.tick("documents", 1)
            self.tick("text_loaded", len(doc.text))
            yield doc

    def load_issue(self, issue: LoadIssue) -> None:
        self.issues.append(issue)
        self.file_read(issue.path)

    def file_skipped(self, path: Path) -> None:
        """Count a file no loader reads, by its extension."""
        self.skipped[path.suffix.lower() or "(none)"] += 1

    def file_read(self, path: str | None) -> None:
        """Tick ``files`` and ``file_bytes`` (its size on disk) the first time a file is met."""
        if not path or path in self.files_read:
            return
        self.files_read.add(path)
        self.tick("files", 1)
        try:
            self.tick("file_bytes", os.path.getsize(path))
        except OSError:  # gone or unreadable: its documents (if any) say so
            pass

    def chunks(self, paths: Sequence[str | Path]) -> Iterator[Chunk]:
        """The chunks that need work, a group of documents at a time (see :meth:`reconcile`)."""
        group: list[Document] = []
        size = 0
        for doc in self.documents(paths):
            group.append(doc)
            size += len(doc.text)
            if len(group) >= _GROUP_DOCUMENTS or size >= _GROUP_CHARS:
                yield from self.reconcile(group)
                group, size = [], 0
        yield from self.reconcile(group)

    def reconcile(self, docs: list[Document]) -> Iterator[Chunk]:
        """The chunks of ``docs`` that need work. A document whose text (sha256) and chunking are
        those the store recorded and whose chunks are all processed is skipped whole, not cut
        again; the others are cut, the chunks the store holds for them that their current text no
        longer has are forgotten, and their chunks already stored at the same position and
        processed are skipped. A document met earlier in this run is only added to."""
        fingerprint = self.cfg.chunking.model_dump_json()
        states = provenance.document_states(self.graph, {d.id for d in docs if d.id not in self.documents_seen})
        cut: list[tuple[Document, list[Chunk]]] = []
        again: set[str] = set()
        for doc in docs:
            sha = text_sha256(doc.text)
            if doc.id in self.documents_seen:
                again.add(doc.id)
            st = None if doc.id in again else states.get(doc.id)
            self.documents_seen.add(doc.id)
            self.tick("text_known", len(doc.text))
            if st is not None and (st.sha256, st.chunking) == (sha, fingerprint) and st.done == st.chunk_count:
                self.tick("chunks_known", st.chunk_count or 0)
                self.skip(st.chunk_count or 0)
                continue
            chunks = list(chunk_document(doc, config=self.cfg.chunking))
            self.tick("chunks_known", len(chunks))
            self.states[doc.id] = provenance.DocumentState(sha256=sha, chunking=fingerprint, chunk_count=len(chunks))
            cut.append((doc, chunks))
        yield from self.changed(cut, again)

    def changed(self, cut: list[tuple[Document, list[Chunk]]], again: set[str]) -> Iterator[Chunk]:
        """The chunks of documents that were cut, after forgetting their vanished stored chunks
        (none for the documents in ``again``, met earlier in this run: those are only added to)."""
        current: dict[str, set[str]] = {}
        for doc, chunks in cut:
            if doc.id not in again:
                current.setdefault(doc.id, set()).update(c.id for c in chunks)
        stored = provenance.document_chunks(self.graph, current)
        vanished = sorted(c for doc_id, have in stored.items() for c in have.keys() - current[doc_id])
        if vanished:
            self.forget(chunks=vanished)
            self.report.chunks_forgotten += len(vanished)
        for doc, chunks in cut:
            have = stored.get(doc.id, {})
            for c in chunks:
                old = have.get(c.id)
                if old is not None and old.done and (old.index, old.start, old.end) == (c.index, c.start, c.end) \
                        and c.id not in self.seen:
                    self.seen.add(c.id)
                    self.skip(1)
                else:
                    yield c

    def skip(self, n: int) -> None:
        """Count ``n`` chunks found processed in an earlier run."""
        self.report.chunks += n
        self.report.chunks_skipped += n
        self.tick("chunks_read", n)
        self.tick("chunks", n)

    def forget(self, **what: list[str]) -> None:
        """Forget (:func:`kgr.store.forget.forget`) once the chunks in flight are written, so that
        the forget and the run's staging never touch the same entities at once."""
        self.drain(0)
        rep = forget(self.graph, quorum=self.cfg.forget_quorum, **what)
        if rep.version is not None:
            self.report.forget_versions.append(rep.version)
        self.report.promoted_retracted += rep.promoted_retired
        self.unmerged += rep.unmerged  # merges the forget undid: the resolution at the end re-decides them
        if rep.entities_removed or rep.unmerged:
            self.pipe.forget_names()

    def prune(self, paths: Sequence[str | Path]) -> None:
        """Forget the documents read earlier from files at or under ``paths`` that this run did not
        read; a file that failed to load (its documents unknown) keeps its documents."""
        failed = {resolved_path(i.path) for i in self.issues}
        stored = provenance.documents_under(self.graph, [resolved_path(str(p)) for p in paths])
        gone = [d.id for d in stored if d.id not in self.documents_seen and d.path not in failed]
        if gone:
            self.forget(documents=gone)
            self.report.documents_pruned += len(gone)

    def absorb(self, fut: cf.Future) -> None:
        out: ChunkOutcome = fut.result()  # KgrNeo4jUnavailable and bugs propagate
        self.report.add_outcome(out)
        self.fail_fast.observe(out)  # an LLM that refuses every request stops the job
        if out.llm_calls:
            self.tick("llm_calls", out.llm_calls)
        if out.cost_usd:
            self.tick("cost_usd", out.cost_usd)
        if out.failure is not None:
            self.tick("failed", 1)
        else:
            self.rounds.append(out.rounds)
            self.since_promotion += 1
            self.tick("triples", out.triples)
        self.tick("chunks", 1)

    def drain(self, until: int) -> None:
        while len(self.inflight) > until:
            done, _ = cf.wait(self.inflight, return_when=cf.FIRST_COMPLETED)
            for f in sorted(done, key=_failed_first_last):  # a success finished beside a refusal counts first
                self.inflight.discard(f)
                self.absorb(f)

    def run(self, paths: Sequence[str | Path]) -> None:
        """Every chunk of ``paths`` not processed yet, through the pipeline (a kill, then a re-run, resumes)."""
        self.pipe.start()
        try:
            for batch in _batches(self.chunks(paths), _READ_BATCH):
                self.report.chunks += len(batch)
                self.tick("chunks_read", len(batch))
                provenance.upsert_chunks(self.graph, batch, paths=self.paths_by_doc, states=self.states)
                done_ids = provenance.processed_chunk_ids(self.graph, [c.id for c in batch])
                for chunk in batch:
                    self.submit(chunk, done_ids)
            self.tick("read_all", 1)  # every chunk is known: the progress total is exact from here
            self.drain(0)
            remote = self.pipe.remote
            if remote is not None:
                self.report.workers, self.report.worker_restarts = list(remote.placement), remote.restarts
        finally:
            for f in self.inflight:
                f.cancel()
            gone = isinstance(sys.exc_info()[1], KgrNeo4jUnavailable)
            if gone:  # end the calls still retrying now: the job stops within the retry bound
                self.graph.close()
            closing = time.perf_counter()
            self.pipe.close(wait=not gone)
            if self.pipe.remote is not None:
                self.report.executor_stop_seconds = round(time.perf_counter() - closing, 3)

    def submit(self, chunk: Chunk, done_ids: set[str]) -> None:
        if chunk.id in done_ids or chunk.id in self.seen:
            self.report.chunks_skipped += 1
            self.tick("chunks", 1)
            return
        self.seen.add(chunk.id)
        self.drain(self.window - 1)
        self.inflight.add(self.pipe.submit(chunk))
        if self.promote is not None and self.cfg.promote_every and self.since_promotion >= self.cfg.promote_every:
            self.drain(0)  # a round sees a consistent batch
            self.report.promotion.append(self.promote())
            self.since_promotion = 0

    def promote_backlog(self) -> None:
        """Work through the staged backlog, one version per round, until a round is settled."""
        if self.promote is None or not self.cfg.promote:
            return
        for _ in range(self.cfg.final_promotion_rounds):
            summary = self.promote()
            self.report.promotion.append(summary)
            if summary.settled and not (summary.reread is not None and summary.reread.claims):
                break  # (a round whose escalated candidates were just re-read has evidence to decide)

    def embed_names(self, embed: EmbedFn) -> None:
        try:
            self.report.embedded_entities = embed_entities(self.graph, embed).embedded
        except KgrNeo4jUnavailable:
            raise
        except KgrError as exc:  # derived data: the staged and promoted graph stands without it
            self.report.embedding_error = str(exc).splitlines()[0][:300]

    def finish(self) -> IngestReport:
        r, staged = self.report, self.pipe.staged
        r.new_votes, r.repeated_votes = staged.new_votes, staged.repeated_votes
        r.new_edges, r.new_entities = staged.new_edges, staged.new_entities
        r.transactions = self.pipe.transactions
        r.executor = self.cfg.executor
        r.load_issues = [str(i) for i in self.issues][:MAX_LISTED]
        r.files_skipped = dict(self.skipped.most_common())
        if self.rounds:
            hist = Counter(self.rounds)
            r.rounds_per_chunk = {"mean": round(statistics.fmean(self.rounds), 3), "max": float(max(self.rounds)),
                                  **{f"={k}": float(v) for k, v in sorted(hist.items())}}
        r.seconds = time.perf_counter() - self.started
        r.chunks_per_second = round(r.chunks_processed / r.seconds, 3) if r.seconds > 0 else 0.0
        return r
