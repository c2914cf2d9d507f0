"""The read side for agents, served after the graph tools: ``get_context_slice``, ``verify_slice``,
``report_outcome`` (:meth:`kgr.engine.Engine.slice` and its neighbours; see :mod:`kgr.slices`). Same
conventions as :mod:`kgr.catalog.graph_tools`: strict pydantic inputs, typed outputs, fixed templates,
no client Cypher; the slice key never leaves the server."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kgr.catalog.spec import StrictInput, engine_of, spec_of
from kgr.model.slices import ContextSlice, OutcomeReport, SliceVerification
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec

__all__ = ["SLICE_TOOLS", "GetContextSliceInput", "VerifySliceInput", "ReportOutcomeInput"]

_Key = Annotated[str, Field(min_length=1, max_length=512)]


class GetContextSliceInput(StrictInput):
    anchors: Annotated[list[_Key], Field(max_length=64, description="entity keys (TYPE:name) to start from")] = []
    query: Annotated[str | None, Field(None, min_length=1, max_length=500,
                                       description="text whose best fulltext matches (and nearest names by embedding, when the server has an embedding model) are the anchors")] = None
    policy: Annotated[str, Field(min_length=1, max_length=41, description="slice policy name")] = "default"
    budget_tokens: Annotated[int | None, Field(None, ge=32, le=1_000_000, description="token budget")] = None
    model: Annotated[str | None, Field(None, max_length=200, description="count tokens with this model's tokenizer")] = None


def get_context_slice(params: GetContextSliceInput, *, context: ToolContext) -> ContextSlice:
    """The promoted graph around anchor entities (keys, or the best fulltext matches of a query, plus the nearest names by embedding when configured) as a context slice: entities, edges with provenance (vote sources, chunks, documents, quotes) and a prompt-ready text within the token budget, with a deterministic slice_id and an HMAC admissibility token. Never contains pending or retired edges. Records the slice for report_outcome."""
    return engine_of(context, "get_context_slice").slice(params.anchors, query=params.query, policy=params.policy,
                                                         budget_tokens=params.budget_tokens, model=params.model)


class VerifySliceInput(StrictInput):
    slice: ContextSlice = Field(description="a slice as get_context_slice returned it")


def verify_slice(params: VerifySliceInput, *, context: ToolContext) -> SliceVerification:
    """Check a slice's admissibility token (an HMAC over every field of the slice) in constant time: valid (issued by this server, no field altered) and current (nothing it shows has changed since: the same request now cuts the same slice, outcome tiers and quotes included), with the reason. Read-only."""
    return engine_of(context, "verify_slice").verify_slice(params.slice)


class ReportOutcomeInput(StrictInput):
    slice_id: Annotated[str, Field(min_length=1, max_length=64)]
    outcome: Literal[1, -1] = Field(description="1: the slice helped; -1: it misled")
    edges: Annotated[list[_Key], Field(max_length=1000, description="only these edge keys of the slice")] = []


def report_outcome(params: ReportOutcomeInput, *, context: ToolContext) -> OutcomeReport:
    """Report whether a slice helped (1) or misled (-1): its edges' outcome weights move by 0.1 (reflex at 0.6 and above, inhibitory at -0.01 and below, which later slices leave out); an edge punished three times is put up for human review. Writes."""
    return engine_of(context, "report_outcome").report_outcome(params.slice_id, params.outcome, edges=params.edges)


#: The slice tools, in the order they are listed (after the graph tools).
SLICE_TOOLS: tuple[ToolSpec, ...] = (
    spec_of(get_context_slice, GetContextSliceInput, ContextSlice, read_only=False),
    spec_of(verify_slice, VerifySliceInput, SliceVerification),
    spec_of(report_outcome, ReportOutcomeInput, OutcomeReport, read_only=False, idempotent=False),
)
