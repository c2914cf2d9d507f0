"""Entity resolution as data: proposals with their evidence, the report of ``kgr resolve``, and the
merge/no-merge labels of the review loop (``kgr review label-pairs``).

A pair label line (``kgr review label-pairs FILE.jsonl``)::

    {"a": "Person:jacob green", "b": "Person:jacob grene", "label": true, "reviewer": "ada@example.org"}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ComparisonEvidence", "PairEvidence", "MergeProposal", "SplitProposal", "TypeModel", "ResolveReport",
           "PairLabel", "PairLabelReport", "SplitReport", "ENTITY_KEY"]

#: An entity key as resolution names it: ``Type:canonical name``, a split entity with ``#<8 hex>``.
ENTITY_KEY = r"^[A-Za-z_][A-Za-z0-9_]*:\S.*$"

Decision = Literal["merge", "review", "reject", "blocked", "llm_merge", "llm_reject"]


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class ComparisonEvidence(_Out):
    """One comparison of a pair: its level and the log2 Bayes factor it contributed (0 when missing)."""

    comparison: str
    level: int = Field(description="-1: missing on either side")
    bits: float


class PairEvidence(_Out):
    """A scored candidate pair of units (two entities, or two source groups of one entity)."""

    a: str = Field(description="entity key of the first unit")
    b: str
    a_unit: str
    b_unit: str
    probability: float = Field(description="Fellegi–Sunter match probability p = 1 / (1 + 2^-w)")
    weight: float = Field(description="match weight w in bits (prior + sum of comparisons)")
    rules: list[str] = Field(default_factory=list, description="blocking rules that found the pair")
    comparisons: list[ComparisonEvidence] = Field(default_factory=list)
    decision: Decision
    reason: str = ""


class MergeProposal(_Out):
    """Entity ``drop`` merged into entity ``keep`` (as ``kgr merge`` does it)."""

    keep: str
    drop: str
    probability: float = Field(description="the best accepted pair between the two (1.0: a must-link)")
    evidence: PairEvidence | None = None


class SplitProposal(_Out):
    """Sources of entity ``entity`` moved, with their votes, to entity ``into`` (a new split key or a
    cluster's kept entity)."""

    entity: str
    into: str
    new_entity: bool = Field(description="into is a new entity created by the split")
    sources: list[str]
    reason: str = Field("", description="the cannot-link that separated the groups, when one did")


class TypeModel(_Out):
    """The fitted model of one entity type, as resolution used it."""

    type: str
    units: int
    candidate_pairs: int
    comparisons: list[str]
    lambda_: float = Field(alias="lambda", description="prior match probability among candidate pairs")
    em_iterations: int
    labelled_pairs: int = 0
    cut: float | None = Field(None, description="merge cut tau on p (None: nothing accepted)")

    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True)


class ResolveReport(_Out):
    """What ``kgr resolve`` proposed (``--dry-run``) or applied as one version."""

    version: int | None = Field(None, description="the version that applied it (None: dry run or nothing to do)")
    dry_run: bool = False
    target_fmr: float
    types: list[TypeModel] = Field(default_factory=list)
    merges: list[MergeProposal] = Field(default_factory=list)
    splits: list[SplitProposal] = Field(default_factory=list)
    splits_applied: bool = Field(True, description="False: the splits are proposals only (a dry run, or the "
                                                   "end-of-ingest step, which merges but leaves splits to `kgr resolve`)")
    review: list[PairEvidence] = Field(default_factory=list, description="the uncertain band, for `kgr review pairs`")
    blocked: list[PairEvidence] = Field(default_factory=list, description="accepted links a cannot-link refused")
    accepted_pairs: int = 0
    expected_wrong_merges: float = Field(0.0, description="sum of (1 - p) over the accepted cross-entity pairs")
    llm_decisions: int = 0
    hash: str = ""
    seconds: float = 0.0


class SplitReport(_Out):
    """``kgr split KEY``: the entity's source groups and where they went."""

    version: int | None = None
    entity: str
    splits: list[SplitProposal] = Field(default_factory=list)
    hash: str = ""


class PairLabel(BaseModel):
    """A reviewer's merge / no-merge answer about two entities."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)

    a: Annotated[str, Field(pattern=ENTITY_KEY, max_length=1200)]
    b: Annotated[str, Field(pattern=ENTITY_KEY, max_length=1200)]
    label: bool = Field(description="true: the same entity (merge); false: different entities (never merge)")
    reviewer: Annotated[str, Field(min_length=1, max_length=200)]


class PairLabelReport(_Out):
    labelled: int = 0
    relabelled: int = 0
