"""What an ingestion job reports: per-chunk outcomes, failures and rejections, totals, and the
human rendering ``kgr ingest`` prints."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kgr.model.decisions import RoundSummary
from kgr.model.resolution import ResolveReport

__all__ = ["ChunkFailure", "Rejection", "ChunkOutcome", "IngestReport", "MAX_LISTED"]

#: Most failures and rejections listed in a report (the counts are always complete).
MAX_LISTED = 100
#: Chunks read, upserted and checked against Neo4j together.
class ChunkFailure(BaseModel):
    """A chunk that was not processed (it stays unmarked: a re-run retries it)."""

    chunk_id: str
    document_id: str
    path: str | None = None
    kind: str = Field(description="timeout, rate_limited, invalid_output, ... (KgrExtractionError.reason) or the error class")
    reason: str
    http_status: int | None = Field(None, description="the LLM server's HTTP status, when it answered with an error")


class Rejection(BaseModel):
    """One extracted item that was not staged, and why."""

    chunk_id: str
    kind: Literal["entity", "relation"]
    type: str
    item: str = Field(description="the entity name, or 'subject -> object'")
    reason: str


class ChunkOutcome(BaseModel):
    """What the loop did with one chunk (the report sums these)."""

    chunk_id: str
    rounds: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_llm_calls: int = 0
    cached_names: int = Field(0, description="entity names resolved from the run's disambiguation cache")
    tool_calls: dict[str, int] = Field(default_factory=dict)
    triples: int = Field(0, description="assertions staged (before vote deduplication)")
    proposals: int = 0
    rejected: int = 0
    rejections: list[Rejection] = Field(default_factory=list)
    failure: ChunkFailure | None = None


class IngestReport(BaseModel):
    """The final report of ``kgr ingest`` (``--json`` prints it)."""

    documents: int = 0
    chunks: int = 0
    chunks_skipped: int = Field(0, description="already processed in an earlier run, or repeated in this one")
    chunks_processed: int = 0
    chunks_failed: list[ChunkFailure] = Field(default_factory=list)
    load_issues: list[str] = Field(default_factory=list)
    files_skipped: dict[str, int] = Field(default_factory=dict, description=(
        "files under the given directories that no loader reads, by extension ('(none)': no extension), "
        "most first"))
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(0.0, description="USD as litellm prices the model; unpriced calls count 0.0")
    unpriced_llm_calls: int = Field(0, description="answered LLM calls litellm could not price (cost unknown)")
    tool_calls: dict[str, int] = Field(default_factory=dict, description=(
        "agent tools called, by name. The storage step is not a query_kg_storage call: the pipeline stages "
        "each chunk through the staging write path (kgr.store.group_commit) in the transaction that marks it processed"))
    disambiguation_cached: int = Field(0, description=(
        "entity names resolved from this run's cache of unique exact matches instead of a Neo4j lookup"))
    rounds_per_chunk: dict[str, float] = Field(default_factory=dict, description="mean, max, histogram")
    triples_staged: int = 0
    new_votes: int = 0
    repeated_votes: int = 0
    new_edges: int = 0
    new_entities: int = 0
    transactions: int = Field(0, description="write transactions that staged chunks")
    schema_proposals: int = 0
    rejected_items: int = 0
    rejections: list[Rejection] = Field(default_factory=list, description=f"the first {MAX_LISTED}")
    promotion: list[RoundSummary] = Field(default_factory=list)
    resolution: ResolveReport | None = Field(None, description="the entity resolution at the end of the job, if it ran")
    names_under_several_types: list[str] = Field(default_factory=list, description=(
        "names the graph holds under more than one entity type, the schema not declaring them so (\"linux: Language, "
        "Software\"): usually an extraction's typing error, which entity resolution never merges (first 10)"))
    chunks_forgotten: int = Field(0, description=(
        "chunks of edited documents that their new text no longer has: their votes forgotten (kgr.store.forget)"))
    documents_pruned: int = Field(0, description="documents no longer under the given paths, forgotten (--prune)")
    forget_versions: list[int] = Field(default_factory=list, description="the versions those forgets opened")
    promoted_retracted: int = Field(0, description="promoted edges those forgets retired")
    embedded_entities: int = Field(0, description=(
        "entity names embedded at the end of the job (with an embedding model configured: kgr.slices.anchors)"))
    embedding_error: str | None = Field(None, description=(
        "why embedding the new names failed (the ingest itself stands; kgr embed finishes the names later)"))
    executor: str = Field("inprocess", description="where chunks were drafted: inprocess, process or ray")
    workers: list[str] = Field(default_factory=list, description=(
        "the executor's workers as they started ('node N pid P'); a worker that died was replaced"))
    worker_restarts: int = Field(0, description="workers that died and were replaced during the run")
    executor_start_seconds: float = Field(0.0, description="of ``seconds``, the time the workers took to start")
    executor_stop_seconds: float = Field(0.0, description=(
        "of ``seconds``, the time the workers took to stop after the last chunk was written"))
    seconds: float = 0.0
    chunks_per_second: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.chunks_failed)

    def promotion_totals(self) -> dict[str, int]:
        """Promoted, held, rejected and expired edges over every round of the run."""
        return {k: sum(getattr(p, k) for p in self.promotion) for k in ("promoted", "held", "rejected", "expired")}

    def add_outcome(self, out: ChunkOutcome) -> None:
        """Count one chunk's outcome in: its LLM accounting, then its failure or its results."""
        self.llm_calls += out.llm_calls
        self.prompt_tokens += out.prompt_tokens
        self.completion_tokens += out.completion_tokens
        self.cost_usd += out.cost_usd
        self.unpriced_llm_calls += out.unpriced_llm_calls
        if out.failure is not None:
            self.chunks_failed.append(out.failure)
            return
        self.chunks_processed += 1
        for k, v in out.tool_calls.items():
            self.tool_calls[k] = self.tool_calls.get(k, 0) + v
        self.disambiguation_cached += out.cached_names
        self.triples_staged += out.triples
        self.schema_proposals += out.proposals
        self.rejected_items += out.rejected
        room = MAX_LISTED - len(self.rejections)
        if room > 0:
            self.rejections.extend(out.rejections[:room])

    def skipped_files_line(self) -> str | None:
        """One line on the files no loader reads (None when there were none).

        >>> IngestReport(files_skipped={".gz": 3, ".html": 1, ".csv": 1}).skipped_files_line()
        'skipped 5 files with no loader: .gz ×3, .html, .csv'
        """
        if not self.files_skipped:
            return None
        n = sum(self.files_skipped.values())
        kinds = ", ".join(ext if k == 1 else f"{ext} ×{k}" for ext, k in self.files_skipped.items())
        return f"skipped {n} file{'s' if n != 1 else ''} with no loader: {kinds}"

    def render(self) -> str:
        lines = [
            f"documents {self.documents}, chunks {self.chunks} ({self.chunks_processed} processed, "
            f"{self.chunks_skipped} already done, {len(self.chunks_failed)} failed) in {self.seconds:.1f} s "
            f"({self.chunks_per_second:.1f} chunks/s)",
            f"triples staged {self.triples_staged}: {self.new_votes} new votes, {self.new_edges} new edges, "
            f"{self.new_entities} new entities; {self.schema_proposals} schema proposals, "
            f"{self.rejected_items} rejected items",
            f"LLM calls {self.llm_calls}, tokens {self.prompt_tokens}+{self.completion_tokens}, cost ${self.cost_usd:.4f}"
            + (f" ({self.unpriced_llm_calls} answered calls not priced: litellm has no price for the model, "
               "cost unknown)" if self.unpriced_llm_calls else ""),
            "tool calls: " + (", ".join(f"{k} {v}" for k, v in sorted(self.tool_calls.items())) or "none")
            + (f"; {self.disambiguation_cached} names resolved from the run's cache" if self.disambiguation_cached else ""),
            f"storage: {self.chunks_processed} chunks staged in {self.transactions} write transactions "
            "(kgr.store.group_commit, each chunk with its processed mark)",
            "rounds per chunk: " + (", ".join(f"{k} {v:g}" for k, v in self.rounds_per_chunk.items()) or "-"),
        ]
        if self.executor != "inprocess":
            lines.append(f"executor {self.executor}: {len(self.workers)} workers, started in "
                         f"{self.executor_start_seconds:.1f} s, stopped in {self.executor_stop_seconds:.1f} s"
                         + (f", {self.worker_restarts} replaced after dying" if self.worker_restarts else ""))
        if self.forget_versions:
            lines.append(f"changed documents: {self.chunks_forgotten} vanished chunks forgotten, {self.documents_pruned} "
                         f"documents pruned, {self.promoted_retracted} promoted edges retired (versions "
                         + ", ".join(map(str, self.forget_versions)) + ")")
        if self.embedded_entities or self.embedding_error:
            lines.append(f"embeddings: {self.embedded_entities} entity names embedded"
                         + (f"; not finished: {self.embedding_error} (run kgr embed)" if self.embedding_error else ""))
        if self.resolution is not None:
            r = self.resolution
            splits = (f"{len(r.splits)} splits" if r.splits_applied or not r.splits else
                      f"{len(r.splits)} splits proposed (`kgr resolve --dry-run` lists them, `kgr resolve` applies them)")
            lines.append(f"resolution: {len(r.merges)} merges, {splits}, {len(r.review)} pairs to review"
                         + (f" (version {r.version})" if r.version is not None else ""))
        if self.names_under_several_types:
            lines.append("names under several types (check the schema's names and the extraction; resolution does not "
                         "merge across types): " + "; ".join(self.names_under_several_types))
        if not self.promotion:
            lines.append("promotion: not run")
        for p in self.promotion:
            lines.append(f"promotion {p.describe()}")
        for f in self.chunks_failed[:20]:
            lines.append(f"failed chunk {f.chunk_id[:12]} ({f.path or f.document_id[:12]}): [{f.kind}] {f.reason}")
        if len(self.chunks_failed) > 20:
            lines.append(f"... and {len(self.chunks_failed) - 20} more failed chunks (--json lists them)")
        for r in self.rejections[:5]:
            lines.append(f"rejected {r.kind} {r.type} {r.item!r}: {r.reason}")
        for issue in self.load_issues[:10]:
            lines.append(f"skipped input {issue}")
        return "\n".join(lines)
