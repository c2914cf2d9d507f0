"""Batch ingestion: documents → chunks → tool-driven extraction loop → staging → promotion.

Per chunk, following Agentic-KGR's protocol (Appendix A.4):

1. **extract** with the configured extractor (rules or LLM);
2. **density** (mandatory): while ``needs_more_extraction`` and rounds < ``max_rounds``,
   re-extract with the density tool's recommendations as guidance (results are merged);
3. **coverage** and **quality**, then **iterative feedback**: continue (another round, guided by
   the coverage and feedback recommendations) or stop — ``max_rounds`` bounds all rounds together;
4. **disambiguation** against Neo4j (its ``final_kg`` is what gets stored); names this run already
   resolved to a unique exact match are not looked up again (``disambiguation_cache``, see
   ``ChunkPipeline._disambiguate``: the graph is the same with and without it);
5. **storage**: the chunk's relations are staged as votes whose source is the chunk id, in ONE
   transaction with the chunk's ``processed_at`` mark and its MENTIONS, so a chunk is processed
   exactly when its votes are in the graph. This step is ``kgr.store.staging.write_batch``, not a
   ``query_kg_storage`` call (that tool commits on its own, apart from the chunk's mark), and the
   report says so: ``tool_calls`` counts only the tools actually called.

Then promotion rounds run every ``promote_every`` chunks and at the end (through the ``promote``
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
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path


from kgr.errors import KgrNeo4jUnavailable
from kgr.extract.base import Extractor
from kgr.ingest.chunking import Chunk, iter_chunks
from kgr.ingest.loaders import LoadIssue, iter_documents
from kgr.model.decisions import RoundSummary
from kgr.model.schema import KGSchema
from kgr.store import provenance
from kgr.store.connection import Graph

from kgr.ingest.chunk_loop import ChunkPipeline
from kgr.ingest.config import IngestConfig, make_extractor
from kgr.ingest.report import MAX_LISTED, ChunkOutcome, IngestReport

__all__ = ["ingest"]

#: Chunks read (and their documents and chunks upserted) per batch.
_READ_BATCH = 64

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
    on_progress: Callable[[str, int], None] | None = None,
    promote: Callable[[], RoundSummary] | None = None,
) -> IngestReport:
    """Ingest files/directories into the store (see the module docstring).

    ``on_progress(event, n)`` is called from the calling thread with increments of ``documents``,
    ``chunks`` (processed, skipped or failed), ``failed``, ``llm_calls`` and ``triples`` (assertions
    staged). ``promote`` runs one promotion round; it is called every ``config.promote_every``
    chunks and, when ``config.promote``, at the end until a round is ``settled`` (at most
    ``config.final_promotion_rounds``; without ``promote``: no promotion, the caller decides).

    Raises
    ------
    KgrNeo4jUnavailable
        Neo4j went away (a re-run resumes where the job stopped). ``graph`` is then closed, which ends
        the database calls still retrying in the background at once: reconnect to go on.
    KgrValidationError
        A path does not exist.
    """
    cfg = config or IngestConfig()
    ext = extractor or make_extractor(cfg)
    report = IngestReport()
    started = time.perf_counter()
    rounds: list[int] = []
    tick = on_progress or (lambda event, n: None)
    since_promotion = 0
    issues: list[LoadIssue] = []
    paths_by_doc: dict[str, str | None] = {}
    seen: set[str] = set()

    def documents() -> Iterator:
        for doc in iter_documents([str(p) for p in paths], on_error=issues.append):
            report.documents += 1
            paths_by_doc[doc.id] = doc.path
            tick("documents", 1)
            yield doc

    def absorb(fut: cf.Future) -> None:
        nonlocal since_promotion
        out: ChunkOutcome = fut.result()  # KgrNeo4jUnavailable and bugs propagate
        report.llm_calls += out.llm_calls
        report.prompt_tokens += out.prompt_tokens
        report.completion_tokens += out.completion_tokens
        report.cost_usd += out.cost_usd
        report.unpriced_llm_calls += out.unpriced_llm_calls
        if out.llm_calls:
            tick("llm_calls", out.llm_calls)
        if out.failure is not None:
            report.chunks_failed.append(out.failure)
            tick("failed", 1)
            tick("chunks", 1)
            return
        report.chunks_processed += 1
        rounds.append(out.rounds)
        for k, v in out.tool_calls.items():
            report.tool_calls[k] = report.tool_calls.get(k, 0) + v
        report.disambiguation_cached += out.cached_names
        report.triples_staged += out.triples
        report.schema_proposals += out.proposals
        report.rejected_items += out.rejected
        room = MAX_LISTED - len(report.rejections)
        if room > 0:
            report.rejections.extend(out.rejections[:room])
        since_promotion += 1
        tick("triples", out.triples)
        tick("chunks", 1)

    pipe = ChunkPipeline(graph, schema, ext, cfg, paths_by_doc).start()
    inflight: set[cf.Future] = set()
    window = 2 * cfg.concurrency + cfg.commit_chunks

    def drain(until: int) -> None:
        while len(inflight) > until:
            done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
            for f in done:
                inflight.discard(f)
                absorb(f)

    try:
        for batch in _batches(iter_chunks(documents(), config=cfg.chunking), _READ_BATCH):
            report.chunks += len(batch)
            provenance.upsert_chunks(graph, batch, paths=paths_by_doc)
            done_ids = provenance.processed_chunk_ids(graph, [c.id for c in batch])
            for chunk in batch:
                if chunk.id in done_ids or chunk.id in seen:
                    report.chunks_skipped += 1
                    tick("chunks", 1)
                    continue
                seen.add(chunk.id)
                drain(window - 1)
                inflight.add(pipe.submit(chunk))
                if promote is not None and cfg.promote_every and since_promotion >= cfg.promote_every:
                    drain(0)  # a round sees a consistent batch
                    report.promotion.append(promote())
                    since_promotion = 0
        drain(0)
    finally:
        for f in inflight:
            f.cancel()
        gone = isinstance(sys.exc_info()[1], KgrNeo4jUnavailable)
        if gone:  # end the calls still retrying now: the job stops within the retry bound
            graph.close()
        pipe.close(wait=not gone)
    if promote is not None and cfg.promote:  # work through the staged backlog, one version per round
        for _ in range(cfg.final_promotion_rounds):
            summary = promote()
            report.promotion.append(summary)
            if summary.settled and not (summary.reread is not None and summary.reread.claims):
                break  # (a round whose escalated candidates were just re-read has evidence to decide)
    staged = pipe.staged
    report.new_votes, report.repeated_votes = staged.new_votes, staged.repeated_votes
    report.new_edges, report.new_entities = staged.new_edges, staged.new_entities
    report.transactions = pipe.transactions
    report.load_issues = [str(i) for i in issues][:MAX_LISTED]
    if rounds:
        hist = Counter(rounds)
        report.rounds_per_chunk = {"mean": round(statistics.fmean(rounds), 3), "max": float(max(rounds)),
                                   **{f"={k}": float(v) for k, v in sorted(hist.items())}}
    report.seconds = time.perf_counter() - started
    report.chunks_per_second = round(report.chunks_processed / report.seconds, 3) if report.seconds > 0 else 0.0
    return report
