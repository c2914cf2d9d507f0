"""Pure promotion math on numpy/scipy/networkx: Laplacians, von Neumann entropy, coverage, the
geDIG gauge and its gates, calibration, rewards and the promotion decision core.

No I/O, no Neo4j, no LLM: this layer imports only :mod:`kgr.errors` and :mod:`kgr.model`.
Every public name is re-exported here; each module's docstring states its conventions.
"""

from kgr.gauge.calibration import EWQuantile, ThresholdCalibrator, variance_balanced_lambda
from kgr.gauge.coverage import coverage, coverage_gain
from kgr.gauge.entropy import (
    EXACT_MAX_NODES,
    SLQ_AUTO_THRESHOLD,
    vn_entropy,
    vn_entropy_exact,
    vn_entropy_gain,
    vn_entropy_slq,
)
from kgr.gauge.gates import AuditResult, Cooldown, GateResult, evaluate_gates, stability_audit
from kgr.gauge.gedig import GaugeResult, HopTerms, degree_entropy, gedig_gauge, local_ball
from kgr.gauge.laplacian import density_matrix, laplacian_from_edges, laplacian_from_graph
from kgr.gauge.policy import (
    Action,
    Ball,
    Candidate,
    CandidateDecision,
    PolicyState,
    Prefetched,
    PromotionConfig,
    GedigRound,
    decide_round,
)
from kgr.gauge.batch import GaugeBatch, gauge_batch
from kgr.gauge.constraints import FactHolders, PromotedIndex, functional_losers, functional_relations
from kgr.gauge.embedding import CrossFitter, KGEModel, KGEScores, crossfit_scores, fit_kge
from kgr.gauge.facts import FactTable, Vocabulary
from kgr.gauge.review import review_priority
from kgr.gauge.roles import RoleEvidence, role_evidence, role_profiles
from kgr.gauge.rules import Rule, RuleEvidence, RuleSet, mine_rules
from kgr.gauge.reward import (
    ConstraintInputs,
    RewardTerms,
    constraint_penalty,
    environmental_reward,
    laplacian_change_norm,
    temporal_term,
)

__all__ = [
    # laplacian
    "laplacian_from_edges",
    "laplacian_from_graph",
    "density_matrix",
    # entropy
    "SLQ_AUTO_THRESHOLD",
    "EXACT_MAX_NODES",
    "vn_entropy",
    "vn_entropy_exact",
    "vn_entropy_slq",
    "vn_entropy_gain",
    # coverage
    "coverage",
    "coverage_gain",
    # reward
    "ConstraintInputs",
    "RewardTerms",
    "constraint_penalty",
    "laplacian_change_norm",
    "temporal_term",
    "environmental_reward",
    # gedig
    "HopTerms",
    "GaugeResult",
    "degree_entropy",
    "local_ball",
    "gedig_gauge",
    # gates
    "GateResult",
    "evaluate_gates",
    "AuditResult",
    "stability_audit",
    "Cooldown",
    # calibration
    "EWQuantile",
    "ThresholdCalibrator",
    "variance_balanced_lambda",
    # policy
    "Action",
    "Ball",
    "Prefetched",
    "Candidate",
    "PromotionConfig",
    "PolicyState",
    "CandidateDecision",
    "GedigRound",
    "decide_round",
    # the promotion seam (the calibrated policy is kgr.promotion's) "QuorumConfig", "QuorumPolicy", "GedigPolicy", "make_policy", "growth_epoch",
    "FactHolders", "PromotedIndex", "functional_losers", "functional_relations",
    "review_priority",
    # learned plausibility and the vectorised gauge
    "FactTable", "Vocabulary", "Rule", "RuleSet", "RuleEvidence", "mine_rules",
    "RoleEvidence", "role_evidence", "role_profiles",
    "KGEModel", "KGEScores", "CrossFitter", "fit_kge", "crossfit_scores",
    "GaugeBatch", "gauge_batch",
]
