"""Learned evidence about staged edges: the evidence graph, its checks, the features, the scorer.

Pure (numpy, scipy, scikit-learn; no Neo4j): :mod:`kgr.evidence.graph` (every staged edge in play as
integer facts), :mod:`kgr.evidence.checks` (hard constraints on that graph),
:mod:`kgr.evidence.features` (the feature transformer, with its caches), :mod:`kgr.evidence.latent`
(the label-free latent-class prior) and :mod:`kgr.evidence.scorer` (the scikit-learn estimator of
:math:`P(\\text{true} \\mid \\text{evidence})`). The path rules, role profiles and embeddings they use
live in :mod:`kgr.gauge` for now (issue 33 moves them here).
"""

from kgr.evidence.checks import Checks, check_rows
from kgr.evidence.features import FEATURE_SET, FEATURES, EvidenceFeatures
from kgr.evidence.graph import Evidence, EvidenceGraph, build_graph
from kgr.evidence.latent import LatentClass, fit_latent

__all__ = ["Evidence", "EvidenceGraph", "build_graph", "Checks", "check_rows", "FEATURES", "FEATURE_SET",
           "EvidenceFeatures", "LatentClass", "fit_latent"]
