r"""The promotion seam: one :class:`Policy` protocol, its implementations, and the registry.

A policy is pure. It tells the store what to read (:meth:`Policy.plan`), receives the typed
:class:`~kgr.model.promotion.RoundInputs`, and returns :class:`~kgr.model.promotion.RoundDecisions`
with its new state; :func:`kgr.store.rounds.run_round` does the I/O around it. Implementations:

``calibrated`` (the default, :mod:`kgr.promotion.settle`)
    One settle: a calibrated :math:`\hat p = P(\text{true} \mid \text{evidence})` for every
    managed staged edge from one model, and one cut, the largest top slice whose bound on the
    false-promotion rate stays within a target; escalates ambiguous edges for more evidence.
``gedig``
    The first version's policy: votes → constraints → the geDIG gauge and its gates → greedy
    :math:`R_{\text{env}}` selection (:func:`kgr.promotion.gedig.decide_round`).
``quorum``
    The plain vote rule: ``votes >= quorum``.

**Re-decisions.** The store offers a held edge again only when its evidence changed (votes,
verifier answers, a label), when it was held for budget, or when the policy's *epoch* moved on
(:func:`growth_epoch`: the promoted graph grew by a quarter since the epoch began, or labels
refit the scorer): a standing backlog of unchanged holds is not decided again every round.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgr.errors import KgrValidationError
from kgr.promotion.constraints import PromotedIndex, functional_losers, functional_relations
from kgr.model.decisions import EdgeDecision
from kgr.model.promotion import (
    DEFAULT_POLICY,
    POLICY_NAMES,
    CandidateRow,
    PolicyName,
    RoundContext,
    RoundDecisions,
    RoundInputs,
    RoundRequest,
)

if TYPE_CHECKING:  # the geDIG policy's modules load with it (networkx, the gauge), not with the registry
    from kgr.promotion.gedig import PolicyState, PromotionConfig

__all__ = ["Policy", "PolicyName", "POLICY_NAMES", "QuorumConfig", "QuorumPolicy", "GedigPolicy", "make_policy",
           "growth_epoch", "DEFAULT_POLICY"]


#: The promoted graph must grow by this factor (and at least :data:`EPOCH_MIN_GROWTH` edges) for a new epoch.
EPOCH_GROWTH = 1.25
EPOCH_MIN_GROWTH = 50


@runtime_checkable
class Policy(Protocol):
    """A promotion policy: pure, one round at a time.

    Attributes
    ----------
    name : str
        Its registry name (also the key of its persisted state).
    """

    name: ClassVar[str]

    def plan(self, context: RoundContext, state: str | None) -> RoundRequest:
        """What the store should read for the next round."""
        ...

    def decide(self, inputs: RoundInputs, state: str | None) -> RoundDecisions:
        """Decide every candidate of ``inputs``; ``state`` is the JSON the previous round returned."""
        ...


def growth_epoch(epoch: int, epoch_promoted: int, promoted: int) -> tuple[int, int]:
    r"""The re-decision epoch after the promoted graph reached ``promoted`` edges.

    A new epoch starts when :math:`|E| \ge \max(1.25\,|E_0|,\ |E_0| + 50)`, :math:`|E_0|` the
    size when the current epoch began; held edges decided in an earlier epoch are offered again
    (structure they were judged on has grown). Rounds re-decide each held edge
    :math:`O(\log_{1.25}|E|)` times over the life of a store, not once per round.

    >>> growth_epoch(0, 0, 10)
    (0, 0)
    >>> growth_epoch(0, 0, 60)
    (1, 60)
    >>> growth_epoch(1, 1000, 1200), growth_epoch(1, 1000, 1250)
    ((1, 1000), (2, 1250))
    """
    if promoted >= max(EPOCH_GROWTH * epoch_promoted, epoch_promoted + EPOCH_MIN_GROWTH):
        return epoch + 1, promoted
    return epoch, epoch_promoted


def _edge(c: CandidateRow, action: str, reason: str, inputs: dict, **extra) -> EdgeDecision:
    return EdgeDecision(key=c.key, subject_key=c.subject_key, object_key=c.object_key, action=action,  # type: ignore[arg-type]
                        reason=reason, inputs=inputs, **extra)


# --------------------------------------------------------------------------------------------
# quorum
# --------------------------------------------------------------------------------------------

class QuorumConfig(BaseModel):
    """The plain vote rule's settings."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    quorum: int = Field(2, ge=1, description="distinct sources needed to promote")
    max_candidates_per_round: int = Field(5000, ge=1)


class QuorumPolicy:
    """Promote when ``votes >= quorum``, otherwise hold (``hold = quorum``)."""

    name: ClassVar[str] = "quorum"

    def __init__(self, config: QuorumConfig | None = None):
        self.config = config or QuorumConfig()

    def plan(self, context: RoundContext, state: str | None) -> RoundRequest:
        return RoundRequest(limit=self.config.max_candidates_per_round, graph=False)

    def decide(self, inputs: RoundInputs, state: str | None) -> RoundDecisions:
        started = time.perf_counter()
        q = self.config.quorum
        out, order = [], []
        for c in inputs.candidates:
            ok = c.votes >= q
            out.append(_edge(c, "promote" if ok else "hold", f"votes {c.votes} {'>=' if ok else '<'} quorum {q}",
                             {"votes": c.votes, "quorum": q, "confidence": c.confidence},
                             hold=None if ok else "quorum"))
            if ok:
                order.append(c.key)
        return RoundDecisions(decisions=out, promoted_order=tuple(order), note=f"quorum {q}",
                              decide_ms=(time.perf_counter() - started) * 1000.0)


# --------------------------------------------------------------------------------------------
# gedig
# --------------------------------------------------------------------------------------------

def _gedig_state(raw: str | None, config: PromotionConfig) -> PolicyState:
    from kgr.promotion.gedig import PolicyState

    if raw:
        try:
            state = PolicyState.model_validate_json(raw)
            state.sync(config)
            return state
        except (ValidationError, ValueError):
            pass  # an incompatible older state: start fresh
    return PolicyState.initial(config)


class GedigPolicy:
    """The geDIG policy of the first version on the seam (see :mod:`kgr.promotion.gedig`).

    Constraints come from the schema and the promoted graph (:class:`PromotedIndex`); the
    decision core runs on the whole promoted graph's projection; within a round at most one
    promotion per (subject, functional relation) survives.
    """

    name: ClassVar[str] = "gedig"

    def __init__(self, config: PromotionConfig | None = None):
        from kgr.promotion.gedig import PromotionConfig

        self.config = config or PromotionConfig()

    def plan(self, context: RoundContext, state: str | None) -> RoundRequest:
        st = _gedig_state(state, self.config)
        epoch, _ = growth_epoch(st.epoch, st.epoch_promoted, context.promoted)
        return RoundRequest(limit=self.config.max_candidates_per_round, epoch=epoch, graph=True)

    def decide(self, inputs: RoundInputs, state: str | None) -> RoundDecisions:
        import networkx as nx

        from kgr.promotion.gedig import Candidate, decide_round

        started = time.perf_counter()
        cfg = self.config
        st = _gedig_state(state, cfg)
        st.epoch, st.epoch_promoted = growth_epoch(st.epoch, st.epoch_promoted, inputs.context.promoted)
        G = nx.Graph()
        p = inputs.promoted
        G.add_edges_from((s, o) for s, o in zip(p.subject, p.object) if s != o)
        index = PromotedIndex(p, inputs.entity_types)
        peers = index.peers(inputs.candidates, cfg.quorum)
        cands = [Candidate(key=c.key, subject=c.subject_key, object=c.object_key, relation=c.relation,
                           votes=c.votes, confidence=c.confidence,
                           constraints=index.constraints(c, inputs.schema, duplicate_similarity=cfg.duplicate_similarity,
                                                         peers=peers))
                 for c in inputs.candidates]
        round_ = decide_round(G, cands, cfg, st)
        by_key = {c.key: c for c in inputs.candidates}
        promoted = [by_key[d.key] for d in round_.decisions if d.action == "promote"]
        demoted = functional_losers(promoted, functional_relations(inputs.schema), index.objects)
        out = []
        for d in round_.decisions:
            c = by_key[d.key]
            hold = d.hold or ("gate" if d.action == "hold" else None)
            if d.key in demoted:
                d = d.model_copy(update={"action": "hold", "reason": demoted[d.key]})
                hold = "functional"
            payload = json.loads(d.model_dump_json())
            payload.pop("key", None)
            out.append(_edge(c, d.action, d.reason, payload, hold=hold if d.action == "hold" else None))
        order = tuple(k for k in round_.promoted if k not in demoted)
        return RoundDecisions(decisions=out, promoted_order=order, state=st.model_dump_json() if out else None,
                              note="gedig policy", decide_ms=(time.perf_counter() - started) * 1000.0)


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

def make_policy(name: PolicyName | str = DEFAULT_POLICY, config: BaseModel | None = None, *,
                quorum: int | None = None) -> Policy:
    """The policy registered as ``name``, with ``config`` (its own config model) and an optional quorum override.

    Raises
    ------
    KgrValidationError
        Unknown name, or a config of another policy.
    """
    if name == "quorum":
        cfg = config if config is not None else QuorumConfig()
        if not isinstance(cfg, QuorumConfig):
            raise KgrValidationError(f"policy quorum takes a QuorumConfig, got {type(cfg).__name__}", field="config")
        return QuorumPolicy(cfg.model_copy(update={"quorum": quorum}) if quorum else cfg)
    if name == "gedig":
        from kgr.promotion.gedig import PromotionConfig

        gcfg = config if config is not None else PromotionConfig()
        if not isinstance(gcfg, PromotionConfig):
            raise KgrValidationError(f"policy gedig takes a PromotionConfig, got {type(gcfg).__name__}", field="config")
        return GedigPolicy(gcfg.model_copy(update={"quorum": quorum}) if quorum else gcfg)
    if name == "calibrated":
        from kgr.promotion.config import CalibratedConfig
        from kgr.promotion.settle import CalibratedPolicy

        ccfg = config if config is not None else CalibratedConfig()
        if not isinstance(ccfg, CalibratedConfig):
            raise KgrValidationError(f"policy calibrated takes a CalibratedConfig, got {type(ccfg).__name__}",
                                     field="config")
        return CalibratedPolicy(ccfg.model_copy(update={"quorum": quorum}) if quorum else ccfg)
    raise KgrValidationError(f"unknown policy {name!r} (one of {', '.join(POLICY_NAMES)})", field="policy")
