"""What ``kgr agent`` reports: per chunk, the transcript of the LLM's tool calls and how it ended.

The transcript is a flat list of :class:`TranscriptEntry`, in order: ``assistant`` entries (what the
model said and which tools it called) and ``tool`` entries (one per call: the tool, its protocol
phase, the arguments as the model sent them — with the chunk text elided — whether it succeeded,
and a summary of the result's key fields). The arguments and results sent to the model are
complete; the report keeps what a reader needs to follow the run.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Phase", "StopReason", "TranscriptEntry", "ChunkRun", "AgentReport"]

#: The Agentic-KGR phase a tool call belongs to. The first density assessment of a chunk is
#: ``density``; every later one assesses a new extraction, so it is ``re-extraction``.
Phase = Literal["density", "re-extraction", "feedback", "disambiguation", "storage", "unknown"]

#: How a chunk's loop ended.
StopReason = Literal[
    "stored",            # query_kg_storage succeeded: the protocol is complete
    "finished",          # the model answered without calling a tool, after storing
    "no_storage",        # the model stopped calling tools without ever storing
    "step_cap",          # max_steps model turns were spent
    "llm_error",         # the model could not be reached or answered unusably (after retries)
    "skipped",           # the chunk was already processed (re-run with redo)
]


class TranscriptEntry(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    kind: Literal["assistant", "tool"]
    step: int = Field(description="model turn (1-based) this entry belongs to")
    # assistant entries
    content: str | None = Field(None, description="what the model said (assistant entries)")
    tool_calls: list[str] = Field(default_factory=list, description="tools the model called in this turn")
    # tool entries
    tool: str | None = None
    phase: Phase | None = None
    ok: bool | None = None
    arguments: dict[str, Any] | None = Field(None, description="the call's arguments (chunk text elided)")
    filled: list[str] = Field(default_factory=list, description="arguments the driver supplied (text, schema)")
    summary: dict[str, Any] = Field(default_factory=dict, description="key fields of the result")
    error: str | None = None
    ms: float | None = None


class ChunkRun(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    document_id: str
    path: str | None
    chunk_id: str
    chunk_index: int
    characters: int
    stop_reason: StopReason
    steps: int = Field(description="model turns used")
    tool_calls: int
    phases: list[Phase] = Field(description="phase of every successful tool call, in order")
    density_rounds: int = Field(description="density assessments (the first plus re-extractions)")
    last_assessment: str | None = Field(None, description="assessment_level of the last density call")
    entities_stored: int = 0
    relations_stored: int = Field(0, description="new votes cast by this chunk")
    error: str | None = None
    transcript: list[TranscriptEntry] = Field(default_factory=list)


class AgentReport(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    model: str
    documents: int
    chunks: int
    stored_chunks: int
    failed_chunks: int
    skipped_chunks: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    seconds: float
    runs: list[ChunkRun]

    def render(self) -> str:
        """A short human summary (one line per chunk)."""
        lines = [f"{self.chunks} chunks of {self.documents} documents with {self.model}: {self.stored_chunks} stored, "
                 f"{self.failed_chunks} failed, {self.skipped_chunks} skipped; {self.llm_calls} LLM calls, "
                 f"{self.prompt_tokens + self.completion_tokens} tokens, {self.seconds:.1f} s"]
        for r in self.runs:
            flow = " → ".join(r.phases) or "-"
            lines.append(f"  {r.path or r.document_id[:12]}#{r.chunk_index}: {r.stop_reason} after {r.steps} steps "
                         f"[{flow}] {r.entities_stored} entities, {r.relations_stored} votes"
                         + (f" ({r.error})" if r.error else ""))
        return "\n".join(lines)
