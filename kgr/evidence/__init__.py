"""Learned evidence about staged edges: the evidence graph, its checks, the features, the scorer.

Pure (numpy, scipy, scikit-learn; no Neo4j): :mod:`kgr.evidence.graph` (every staged edge in play as
integer facts), :mod:`kgr.evidence.checks` (hard constraints on that graph),
:mod:`kgr.evidence.features` (the feature transformer, with its caches), :mod:`kgr.evidence.latent`
(the label-free latent-class prior) and :mod:`kgr.evidence.scorer` (the scikit-learn estimator of
:math:`P(\\text{true} \\mid \\text{evidence})`); and the learned evidence the features read:
:mod:`kgr.evidence.facts` (the integer fact table), :mod:`kgr.evidence.rules` (path rules),
:mod:`kgr.evidence.roles` (role profiles) and :mod:`kgr.evidence.embedding` (knowledge-graph embeddings,
cross-fitted). It may import :mod:`kgr.gauge`, :mod:`kgr.model` and :mod:`kgr.errors`, never
:mod:`kgr.promotion` (promotion → evidence → gauge).
"""

from kgr.evidence.checks import Checks, check_rows
from kgr.evidence.facts import FactTable, Vocabulary
from kgr.evidence.features import FEATURE_SET, FEATURES, EvidenceFeatures
from kgr.evidence.graph import Evidence, EvidenceGraph, build_graph
from kgr.evidence.latent import LatentClass, fit_latent
from kgr.evidence.roles import RoleEvidence, role_evidence, role_profiles
from kgr.evidence.rules import Rule, RuleEvidence, RuleSet, mine_rules

__all__ = ["Evidence", "EvidenceGraph", "build_graph", "Checks", "check_rows", "FEATURES", "FEATURE_SET",
           "EvidenceFeatures", "LatentClass", "fit_latent", "FactTable", "Vocabulary", "Rule", "RuleSet",
           "RuleEvidence", "mine_rules", "RoleEvidence", "role_evidence", "role_profiles"]
