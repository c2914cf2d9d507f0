"""Pure math over graphs and matrices on numpy/scipy/networkx: Laplacians, von Neumann entropy,
coverage, the geDIG gauge (one edge and batched) and its gates, calibration, rewards, review priority.

No I/O, no Neo4j, no LLM, no decisions: this layer imports only :mod:`kgr.errors` and :mod:`kgr.model`.
The learned evidence (facts, rules, roles, embeddings) is :mod:`kgr.evidence`; the promotion policies
that use this math (the geDIG policy, constraints) are :mod:`kgr.promotion`.
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
from kgr.gauge.batch import GaugeBatch, gauge_batch
from kgr.gauge.review import review_priority
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
    "review_priority",
    # the vectorised gauge
    "GaugeBatch", "gauge_batch",
]
