"""What a verifier reads and answers: claims, verdicts, the report, and the :class:`Verifier` protocol
(semantics in :mod:`kgr.extract.verify`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from kgr.extract.base import TokenUsage
from kgr.model.schema import Identifier, KGSchema

__all__ = ["Answer", "Claim", "Verdict", "VerificationReport", "Verifier", "VerifierKind", "VERIFIER_KINDS",
           "MAX_QUOTE_CHARS", "clip_quote"]

#: A verifier's answer for one triple and one chunk (semantics in the module docstring).
Answer = Literal["supports", "contradicts", "silent"]
#: The verifier kinds :func:`make_verifier` builds.
VerifierKind = Literal["rules", "llm"]
#: The same kinds as a tuple, in documentation order.
VERIFIER_KINDS: tuple[str, ...] = get_args(VerifierKind)
#: Longest quote kept in a :class:`Verdict` (characters).
MAX_QUOTE_CHARS = 300


# -- the data ------------------------------------------------------------------------------------
class Claim(BaseModel):
    """One staged triple and one chunk to re-read for it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edge_key: str = Field(min_length=1, description="key of the pending edge the claim is about")
    subject: str = Field(min_length=1)
    subject_type: Identifier
    relation: Identifier
    object: str = Field(min_length=1)
    object_type: Identifier
    chunk_id: str = Field(min_length=1, description="id of the chunk to re-read")
    chunk_text: str


class Verdict(BaseModel):
    """A verifier's answer for one claim (semantics in the module docstring)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    edge_key: str
    chunk_id: str
    answer: Answer
    quote: str = Field("", max_length=MAX_QUOTE_CHARS, description="the sentence that decided, or ''")
    verifier: str = Field(description="the verifier's name ('rules', 'llm:<model>')")
    error: str | None = Field(None, description="why the verifier could not answer (the answer is then 'silent')")


class VerificationReport(BaseModel):
    """The verdicts of one :meth:`Verifier.verify` call (in claim order) and what they cost."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    verdicts: list[Verdict] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = Field(0.0, ge=0.0, description="USD as litellm prices it; None when unknown")
    calls: int = Field(0, ge=0, description="completion requests sent, retries and repairs included")
    failures: int = Field(0, ge=0, description="claims the verifier could not answer (verdicts with an error)")
    unpriced_calls: int = Field(0, ge=0, description="answered requests litellm could not price")


@runtime_checkable
class Verifier(Protocol):
    """Anything that judges claims against their chunks (answer semantics in the module docstring)."""

    name: str

    def verify(self, claims: Sequence[Claim], schema: KGSchema) -> VerificationReport:
        """One :class:`Verdict` per claim, in the order of ``claims``.

        Raises
        ------
        kgr.errors.KgrExtractionError
            When the verifier cannot work at all (e.g. the model rejects the credentials); a claim
            it merely cannot answer becomes a ``silent`` verdict with ``error`` set.
        """
        ...


def clip_quote(text: str) -> str:
    """``text`` with its whitespace collapsed, cut to :data:`MAX_QUOTE_CHARS` characters (with an ellipsis)."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1] + "…"
