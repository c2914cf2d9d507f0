"""Settings and persisted state of the calibrated policy (:mod:`kgr.promotion.settle`)."""

from __future__ import annotations

import hashlib
import math

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CalibratedConfig", "CalibratedState", "load_state"]


class CalibratedConfig(BaseModel):
    """Every setting of the calibrated policy, with its default and the reason for it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    target_fmr: float = Field(0.1, gt=0.0, lt=1.0, description=(
        "the false-promotion rate the promoted set is held to (kgr promote --target-fmr): its bound must stay within"))
    level: float = Field(0.9, gt=0.5, lt=1.0, description="confidence level of the bound on the FMR of the cut")
    model_weight: float = Field(20.0, gt=0.0, description=(
        "the model's expected FMR counts as model_weight / target_fmr audit labels in the bound (200 at 0.1) until "
        "real audit labels replace it: the bound sits about 1.28 / sqrt(model_weight), 29 %, above the expectation"))
    calibration_check: bool = Field(False, description=(
        "raise the model's expected FMR in the bound by how far the labelled rows' out-of-fold scores "
        "under-predict their false labels (kgr.promotion.certificate); off: measured, it cost acceptance "
        "without catching the overconfident draws"))
    min_p: float = Field(0.5, ge=0.0, le=1.0, description="never promote an edge with p_hat below this")
    quorum: int = Field(1, ge=1, description="votes before an edge is promoted at all (1: the evidence decides)")
    max_contr: float = Field(0.5, ge=0.0, description="reject when R_contr exceeds it (one hard violation)")
    duplicate_similarity: float | None = Field(0.85, gt=0.0, le=1.0, description="near-duplicate entity check")
    duplicate_max_degree: int = Field(3, ge=1, description="endpoints in more facts are never checked for a twin")
    escalate: bool = Field(True, description="hold ambiguous unread edges below the cut as escalated (AG)")
    hold_unread: bool = Field(False, description=(
        "also hold unread edges above the cut that one silent reading would drop below it, until a verifier "
        "has read them (Engine.promote sets it when it is given a verifier)"))
    reread_min_p: float = Field(0.3, ge=0.0, le=1.0, description=(
        "unread edges below the cut with at least this p_hat are escalated for re-reading too"))
    embedding: bool = Field(True, description="the cross-fitted embedding feature, once there are labels to weigh it")
    embedding_dim: int = Field(32, ge=2)
    rules_min_support: int = Field(2, ge=1)
    rules_min_confidence: float = Field(0.05, ge=0.0, le=1.0)
    min_labels: int = Field(20, ge=2, description="labels before the supervised stage of the scorer")
    min_per_class: int = Field(20, ge=1, description=(
        "labels of each class needed as well: the supervised stage cross-fits over 5 folds, so each training "
        "split holds >= 16 of the minority class (with 10, a fit on 17 false labels scored its top slice 0.99 "
        "where 10 % were false; docs/promotion.md)"))
    C: float = Field(1.0, gt=0.0, description="inverse L2 strength of the supervised stage")
    write_tolerance: float = Field(1e-3, ge=0.0, description="a recorded p_hat is rewritten when it moved by more")

    @property
    def prior_audits(self) -> int:
        """:math:`M`, the audit labels the model's expectation stands for (:mod:`kgr.promotion.certificate`)."""
        return int(math.ceil(self.model_weight / self.target_fmr))

    def digest(self) -> str:
        """A short hash of the settings (a settle under other settings cuts again)."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class CalibratedState(BaseModel):
    """What the calibrated policy keeps across settles (older fields are ignored)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    settled_version: int | None = None
    config: str = ""
    last_tau: float | None = None
    report: dict = Field(default_factory=dict)


def load_state(raw: str | None) -> CalibratedState:
    """The persisted state, or a fresh one (an unreadable or foreign state starts afresh)."""
    if raw:
        try:
            return CalibratedState.model_validate_json(raw)
        except (ValidationError, ValueError):
            pass
    return CalibratedState()
