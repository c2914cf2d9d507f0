"""Entity resolution, served after the slice tools: ``resolve_entities``, ``split_entity``,
``review_pairs``, ``label_pairs`` (:meth:`kgr.engine.Engine.resolve` and its neighbours; see
``docs/resolve.md``). Same conventions as :mod:`kgr.catalog.graph_tools`: strict pydantic inputs, typed
outputs, fixed templates, no client Cypher."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from kgr.catalog.spec import StrictInput, engine_of, spec_of
from kgr.model.canonical import IDENTIFIER_RE
from kgr.model.resolution import PairEvidence, PairLabel, PairLabelReport, ResolveReport, SplitReport
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec

__all__ = ["RESOLVE_TOOLS", "ResolveEntitiesInput", "SplitEntityInput", "ReviewPairsInput", "LabelPairsInput"]


class ResolveEntitiesInput(StrictInput):
    type: Annotated[str, Field(pattern=IDENTIFIER_RE.pattern, max_length=64)] | None = Field(
        None, description="only entities of this type")
    dry_run: bool = Field(False, description="list the proposals with their evidence and change nothing")
    target_fmr: Annotated[float, Field(ge=0.0001, le=0.5)] = Field(
        0.02, description="the share of wrong merges the accepted pairs are held to")


def resolve_entities(params: ResolveEntitiesInput, *, context: ToolContext) -> ResolveReport:
    """Find duplicate entities (blocking on names and shared neighbours), score them with a Fellegi-Sunter model over names and graph context (functional values, neighbours, documents), cluster them without joining entities a functional relation or the schema separates, and apply the merges and splits as one version (reversible by rollback); dry_run only lists the proposals with their evidence. Writes unless dry_run."""
    return engine_of(context, "resolve_entities").resolve(type=params.type, dry_run=params.dry_run,
                                                          target_fmr=params.target_fmr)


class SplitEntityInput(StrictInput):
    key: Annotated[str, Field(min_length=3, max_length=1200, pattern=r"^[A-Za-z_][A-Za-z0-9_]*:.+$",
                              description="entity key TYPE:NAME (a key no entity has: not found)")]
    dry_run: bool = Field(False, description="say what would move and change nothing")


def split_entity(params: SplitEntityInput, *, context: ToolContext) -> SplitReport:
    """Split one entity whose sources assert clearly different values of a functional relation (two people with one name and different birth dates) into entities that carry their own sources' votes, as one version. Writes unless dry_run."""
    return engine_of(context, "split_entity").split(params.key, dry_run=params.dry_run)


class ReviewPairsInput(StrictInput):
    limit: Annotated[int, Field(ge=1, le=200, description="pairs at most")] = 20


class ReviewPairsOutput(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    pairs: list[PairEvidence]


def review_pairs(params: ReviewPairsInput, *, context: ToolContext) -> ReviewPairsOutput:
    """The entity pairs the last resolution was unsure about (match probability in the uncertain band), most uncertain first, each with its comparison evidence. Answer them with label_pairs. Read-only."""
    return ReviewPairsOutput(pairs=engine_of(context, "review_pairs").review_pairs(limit=params.limit))


class LabelPairsInput(StrictInput):
    labels: Annotated[list[PairLabel], Field(min_length=1, max_length=1000,
                                             description="one {a, b, label, reviewer} per entity pair")]


def label_pairs(params: LabelPairsInput, *, context: ToolContext) -> PairLabelReport:
    """Record people's answers about entity pairs: true (the same entity: the next resolution merges them) or false (different: never merged). The next resolution's model is fitted on them. Writes."""
    return engine_of(context, "label_pairs").label_pairs(params.labels)


#: The resolution tools, in the order they are listed (after the slice tools).
RESOLVE_TOOLS: tuple[ToolSpec, ...] = (
    spec_of(resolve_entities, ResolveEntitiesInput, ResolveReport, read_only=False, idempotent=False),
    spec_of(split_entity, SplitEntityInput, SplitReport, read_only=False, idempotent=False),
    spec_of(review_pairs, ReviewPairsInput, ReviewPairsOutput),
    spec_of(label_pairs, LabelPairsInput, PairLabelReport, read_only=False),
)
