"""The review loop and corpus re-reading, as data: labels people give, the queue they answer,
the claims a verifier re-reads and what it answered.

A label line (``kgr review label FILE.jsonl``, ``schemas/edge_label.schema.json``)::

    {"key": "3f2a9c0e1b7d4a5f6c8e9d01", "label": false, "reviewer": "ada@example.org"}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgr.text.controls import unsafe_character

__all__ = ["EdgeLabel", "LabelReport", "EvidenceLink", "ReviewItem", "ReviewQueue", "ClaimRow", "VerdictRow",
           "RereadReport", "EDGE_KEY"]

#: An edge key: 24 lowercase hex digits.
EDGE_KEY = r"^[0-9a-f]{24}$"
Answer = Literal["supports", "contradicts", "silent"]
#: A name a person types, as a JSON Schema ``pattern`` (so that generated clients and fuzzers know
#: the rule :func:`kgr.text.controls.unsafe_character` enforces): at least one non-space character,
#: no control character (C0, DEL, C1), line or paragraph separator or bidi formatting character.
_UNSAFE_CLASS = "\\x00-\\x1f\\x7f-\\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069"
PLAIN_NAME = f"^[^{_UNSAFE_CLASS}]*[^\\s{_UNSAFE_CLASS}][^{_UNSAFE_CLASS}]*$"


class EdgeLabel(BaseModel):
    """One reviewer's answer about one staged or promoted edge."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)

    key: Annotated[str, Field(pattern=EDGE_KEY, description="the edge key, as `kgr review queue` lists it")]
    label: bool = Field(description="true: the triple is a fact; false: it is not")
    reviewer: Annotated[str, Field(
        min_length=1, max_length=200, json_schema_extra={"pattern": PLAIN_NAME},  # checked by _plain_reviewer
        description="who answered (recorded); no control characters, line separators or bidi overrides")]

    @field_validator("reviewer")
    @classmethod
    def _plain_reviewer(cls, v: str) -> str:
        """A reviewer's name is printed by ``kgr promote --explain`` and kept in decisions: ESC, NUL,
        newlines, other C0/C1 controls, U+2028/U+2029 and bidi overrides are refused
        (:func:`kgr.text.controls.unsafe_character`)."""
        bad = unsafe_character(v)
        if bad is not None:
            raise ValueError(f"holds the character U+{ord(bad):04X} (control characters, line separators and "
                             "bidi overrides are not allowed in a name)")
        if not v.strip():
            raise ValueError("is blank")
        return v


class LabelReport(BaseModel):
    """What ``kgr review label`` changed (one version)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    version: int | None = Field(None, description="the version that recorded the labels (None: nothing to record)")
    labelled: int = 0
    relabelled: int = Field(0, description="edges that already had a label (the new one replaces it)")
    retired: int = Field(0, description="promoted edges labelled false, retired in this version")
    rejected: int = Field(0, description="staged edges labelled false, rejected")
    reopened: int = Field(0, description=(
        "rejected edges labelled true, back in play: the next promotion round decides them (a hard constraint, a "
        "self-loop say, still rejects one)"))
    hash: str = ""


class EvidenceLink(BaseModel):
    """One vote's provenance: source, chunk, document and a short quote (the sentence that produced
    the vote, from its span; the chunk's start for a vote staged without one)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    source: str
    chunk_id: str | None = None
    document: str | None = None
    quote: str | None = None


class ReviewItem(BaseModel):
    """A candidate whose label would teach the scorer most, with its evidence chain."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    key: str
    subject: str
    relation: str
    object: str
    subject_key: str
    object_key: str
    status: str = Field(description="held (escalated or below the cut) or promoted")
    p_hat: float
    priority: float = Field(description="uncertainty x impact: the order of the queue (0 for an audit item)")
    why: Literal["priority", "audit", "outcome"] = Field("priority", description=(
        "priority: ranked by uncertainty x impact; audit: a uniform random pick that keeps the calibration honest; "
        "outcome: a promoted edge agents reported bad outcomes for repeatedly (listed first)"))
    votes: int
    documents: int
    verdicts: list[str] = Field(default_factory=list, description="verifier answers so far, e.g. 'supports: c12'")
    evidence: list[EvidenceLink] = Field(default_factory=list)


class ReviewQueue(BaseModel):
    """``kgr review queue``: the items, best first, and the cut they were ranked against."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    tau: float | None = Field(description="the calibrated policy's last promotion cut on p_hat")
    items: list[ReviewItem]


class ClaimRow(BaseModel):
    """A (candidate, chunk) pair to re-read: the chunk mentions both endpoints."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edge_key: str
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    chunk_id: str
    chunk_text: str


class VerdictRow(BaseModel):
    """A verifier's answer to one claim, as the store records it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edge_key: str
    chunk_id: str
    answer: Answer
    verifier: str
    quote: str = ""


class RereadReport(BaseModel):
    """What a corpus re-reading pass did."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edges: int = Field(0, description="candidates whose chunks were re-read")
    claims: int = Field(0, description="(candidate, chunk) pairs read")
    supports: int = 0
    contradicts: int = 0
    silent: int = 0
    no_chunks: int = Field(0, description="candidates with no chunk mentioning both endpoints (left to review)")
    cost_usd: float | None = 0.0
    failures: int = 0
