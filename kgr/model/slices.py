"""Context slices for LLM agents: the contracts (policy, slice, verification, outcome).

A **slice** is the part of the promoted graph an agent gets as context: chosen around anchor
entities by a priority-queue expansion (:mod:`kgr.slices.expand`), packed to a token budget, with
each edge's provenance (vote sources → chunks → documents, short quotes) and a prompt-ready
rendering. Its identity is a hash of its canonical content (:func:`slice_content`: every field a
reader sees), and it carries an HMAC-SHA256 **admissibility token** over its id and that whole
content, which a downstream system verifies (:mod:`kgr.slices.tokens`).

**Outcome tiers** (after OpenClawBrain's, 003_b4e8b77a93384d4f.txt): an edge's outcome weight
``w ∈ [-1, 1]`` puts it in the first tier that holds, in this precedence:

=============  ================  ==========================================================
reflex         w ≥ 0.6           followed first (its priority gets the full outcome bonus)
habitual       0.2 ≤ w < 0.6     followed on its merits (an edge without feedback: w = 0.3)
inhibitory     w ≤ -0.01         vetoed: never traversed, never in a slice (``drop_inhibited``)
dormant        otherwise         followed on its merits, flagged by ``kgr doctor`` in bulk
=============  ================  ==========================================================
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticSerializationError

__all__ = ["SlicePolicy", "SliceQuote", "SliceNode", "SliceEdge", "ContextSlice", "SliceVerification",
           "OutcomeReport", "Tier", "tier_of", "slice_content", "slice_digest", "NEUTRAL_WEIGHT", "REFLEX",
           "HABITUAL", "INHIBITORY"]

#: Outcome weight of an edge nobody has reported on (habitual: followed on its merits).
NEUTRAL_WEIGHT = 0.3
#: Tier thresholds on the outcome weight (the seed's).
REFLEX, HABITUAL, INHIBITORY = 0.6, 0.2, -0.01

Tier = Literal["reflex", "habitual", "inhibitory", "dormant"]


def tier_of(weight: float) -> Tier:
    """The outcome tier of a weight, in the seed's precedence (reflex, habitual, inhibitory, dormant).

    >>> [tier_of(w) for w in (0.6, 0.3, 0.0, -0.01, -0.5)]
    ['reflex', 'habitual', 'dormant', 'inhibitory', 'inhibitory']
    """
    if weight >= REFLEX:
        return "reflex"
    if weight >= HABITUAL:
        return "habitual"
    if weight <= INHIBITORY:
        return "inhibitory"
    return "dormant"


class SlicePolicy(BaseModel):
    """How a slice is chosen. Registered by name (:mod:`kgr.slices.policies`); ``version`` and
    :meth:`params_hash` go into every slice's provenance and token.

    An edge's base priority, in [0, 1]:

    .. math:: b(e) = \\frac{w_c\\,c_e + w_v \\min(v_e, 10)/10 + w_o \\max(o_e, 0)}{w_c + w_v + w_o}

    with ``c_e`` the edge's confidence, ``v_e`` its votes, ``o_e`` its outcome weight; a node
    reached from ``u`` over ``e`` gets priority :math:`P(u)\\,b(e)\\,\\delta` (anchors 1), the best
    path's; ties broken by distance, then by key (canonical, so the same graph gives the same slice).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,40}$")]
    version: int = Field(1, ge=1)
    description: str = ""
    radius: int = Field(2, ge=0, le=6, description="hops from the anchors at most")
    max_nodes: int = Field(256, ge=1, le=100_000, description="entities selected at most (before packing)")
    budget_tokens: int = Field(2000, ge=32, le=1_000_000, description="default token budget of the rendering")
    fanout: int = Field(64, ge=1, le=10_000, description=(
        "edges read per anchor, best base priority first; further out, per entity, what the remaining entity "
        "budget can use (kgr.slices.expand.hop_fanout)"))
    w_confidence: float = Field(1.0, ge=0, le=10)
    w_votes: float = Field(0.25, ge=0, le=10)
    w_outcome: float = Field(0.5, ge=0, le=10)
    distance_decay: float = Field(0.9, gt=0, le=1, description="δ: priority factor per hop")
    drop_inhibited: bool = Field(True, description="inhibitory edges are neither traversed nor included")
    quotes_per_edge: int = Field(1, ge=0, le=10, description="provenance quotes rendered per edge")
    quote_chars: int = Field(160, ge=20, le=2000)
    quote_share: float = Field(0.25, ge=0, le=1, description=(
        "share of the token budget the quotes may take before further facts: facts fill the rest first "
        "(kgr.slices.render.pack); 0 = quotes only in room no fact needs, 1 = every kept fact quoted first"))

    @property
    def policy_id(self) -> str:
        return f"{self.name}@v{self.version}"

    def params_hash(self) -> str:
        """SHA-256 (hex, 32 chars) of the parameters in canonical JSON, floats quantised to 1e-6, so
        that a policy re-declared with the same values hashes the same on any machine."""
        params = {k: (round(v, 6) if isinstance(v, float) else v)
                  for k, v in self.model_dump().items() if k != "description"}
        return hashlib.sha256(json.dumps(params, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


class SliceQuote(BaseModel):
    """Where one vote of an edge came from."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    source: str
    chunk_id: str | None = None
    document_id: str | None = None
    path: str | None = None
    quote: str | None = Field(None, description=(
        "the sentence of the chunk that produced the vote (the chunk's start when the vote has no span)"))


class SliceNode(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    key: str
    type: str
    name: str
    distance: int = Field(description="hops from the nearest anchor")
    anchor: bool = False


class SliceEdge(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    key: str
    subject: str = Field(description="entity key")
    relation: str
    object: str = Field(description="entity key")
    confidence: float
    votes: int
    outcome_weight: float
    tier: Tier
    priority: float
    quotes: list[SliceQuote] = Field(default_factory=list, description=(
        "the edge's provenance (its first vote sources); the text quotes them where the budget leaves room "
        "after every fact's line (kgr.slices.render.pack)"))


class ContextSlice(BaseModel):
    """A slice with its provenance chain and admissibility token."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    slice_id: str = Field(description=(
        "sha256 (32 hex chars) of the canonical content: every other field but the token (kgr.model.slices.slice_content)"))
    anchors: list[str]
    policy_id: str
    policy_params_hash: str
    schema_version: str
    graph_hash: str = Field(description="content hash of the promoted graph the slice was cut from")
    graph_version: int
    nodes: list[SliceNode]
    edges: list[SliceEdge]
    budget_tokens: int
    tokens: int = Field(description="tokens of `text` (see token_counter)")
    token_counter: str = Field(description="'litellm:<model>' (the model's tokenizer) or 'estimate' (ceil(chars / 4))")
    truncated: bool = Field(description=(
        "to respect the budget, edges the expansion chose, or the quotes of kept edges, were left out of the text"))
    text: str = Field(description="the prompt-ready rendering")
    admissibility_token: str = Field(description="HMAC-SHA256 (hex) over the slice id and the whole canonical content")


def slice_content(s: ContextSlice) -> bytes:
    """The canonical content of ``s``: every field but ``slice_id`` and ``admissibility_token``
    (anchors, policy, hashes, graph version, nodes with their anchor flags, edges in order with
    tiers, priorities and quotes, budget, counter, truncated, text), as compact JSON (UTF-8) with the
    keys in the models' field order — what pydantic's serializer writes, 5-9x faster than
    ``json.dumps`` of a dump with sorted keys (a 256-edge slice: 1.5 against 14 ms). A slice read
    back from its JSON gives the same bytes (floats keep their shortest round-trip form). A lone
    surrogate (never in a slice kgr cut; possible in a forged one) cannot be UTF-8: such a slice is
    written with ``json.dumps`` and ASCII escapes instead, which no surrogate-free slice matches.
    The layout is fixed per token version (:data:`kgr.slices.tokens.TOKEN_VERSION`): a change to
    these models bumps it.
    """
    try:
        return s.model_dump_json(exclude=_UNSIGNED).encode()
    except PydanticSerializationError:
        return json.dumps(s.model_dump(exclude=_UNSIGNED), separators=(",", ":"), ensure_ascii=True).encode("ascii")


#: The fields the content leaves out: the id (a hash of it) and the token (its signature).
_UNSIGNED = frozenset({"slice_id", "admissibility_token"})


def slice_digest(content: bytes) -> str:
    """A slice id: the first 32 hex digits of SHA-256 of :func:`slice_content`."""
    return hashlib.sha256(content).hexdigest()[:32]


class SliceVerification(BaseModel):
    """What checking a slice's token says."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    valid: bool = Field(description="the token was issued for exactly this slice (every field) with this server's key")
    current: bool = Field(description=(
        "valid, and what the slice shows has not changed since: the same request now cuts the same slice "
        "(graph, tiers and weights, quotes and all)"))
    reason: str
    graph_hash_now: str


class OutcomeReport(BaseModel):
    """What one outcome did to the edges it was about."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    slice_id: str
    outcome: int
    edges: int = Field(description="current promoted edges updated")
    weights: dict[str, float] = Field(default_factory=dict, description="edge key -> outcome weight after")
    tiers: dict[str, Tier] = Field(default_factory=dict)
    review_flagged: list[str] = Field(default_factory=list, description=(
        "edges whose negative outcomes reached the review threshold (put on the review queue)"))
