"""Pure math over graphs and matrices on numpy/scipy/networkx: Laplacians, von Neumann entropy,
coverage, the geDIG gauge (one edge and batched) and its gates, calibration, rewards, review priority.

No I/O, no Neo4j, no LLM, no decisions: this layer imports only :mod:`kgr.errors` and :mod:`kgr.model`.
The learned evidence (facts, rules, roles, embeddings) is :mod:`kgr.evidence`; the promotion policies
that use this math (the geDIG policy, constraints) are :mod:`kgr.promotion`.
Every public name is re-exported here (loaded on first use); each module's docstring states its conventions.
"""

import importlib
import sys
import types

#: Public name → the module that defines it; loaded on first use (PEP 562), so importing one
#: module of the package (``kgr.gauge.validate`` from the evidence code) does not load networkx and
#: scipy.linalg for the rest.
_WHERE: dict[str, str] = {
    "EWQuantile": "kgr.gauge.calibration",
    "ThresholdCalibrator": "kgr.gauge.calibration",
    "variance_balanced_lambda": "kgr.gauge.calibration",
    "coverage": "kgr.gauge.coverage",
    "coverage_gain": "kgr.gauge.coverage",
    "EXACT_MAX_NODES": "kgr.gauge.entropy",
    "SLQ_AUTO_THRESHOLD": "kgr.gauge.entropy",
    "vn_entropy": "kgr.gauge.entropy",
    "vn_entropy_exact": "kgr.gauge.entropy",
    "vn_entropy_gain": "kgr.gauge.entropy",
    "vn_entropy_slq": "kgr.gauge.entropy",
    "AuditResult": "kgr.gauge.gates",
    "Cooldown": "kgr.gauge.gates",
    "GateResult": "kgr.gauge.gates",
    "evaluate_gates": "kgr.gauge.gates",
    "stability_audit": "kgr.gauge.gates",
    "GaugeResult": "kgr.gauge.gedig",
    "HopTerms": "kgr.gauge.gedig",
    "degree_entropy": "kgr.gauge.gedig",
    "gedig_gauge": "kgr.gauge.gedig",
    "local_ball": "kgr.gauge.gedig",
    "density_matrix": "kgr.gauge.laplacian",
    "laplacian_from_edges": "kgr.gauge.laplacian",
    "laplacian_from_graph": "kgr.gauge.laplacian",
    "GaugeBatch": "kgr.gauge.batch",
    "gauge_batch": "kgr.gauge.batch",
    "review_priority": "kgr.gauge.review",
    "ConstraintInputs": "kgr.gauge.reward",
    "RewardTerms": "kgr.gauge.reward",
    "constraint_penalty": "kgr.gauge.reward",
    "environmental_reward": "kgr.gauge.reward",
    "laplacian_change_norm": "kgr.gauge.reward",
    "temporal_term": "kgr.gauge.reward",
}

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


def __getattr__(name: str) -> object:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kgr.gauge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """Binding a submodule on the package (the import system does, once it is loaded) keeps a public
    function of the same name (``coverage``) bound instead, as the eager re-exports did."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and name in _WHERE and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
