"""Promotion policies: which staged edges become facts. The seam, the geDIG policy, the calibrated one.

Pure (no Neo4j): :mod:`kgr.promotion.policies` (the :class:`~kgr.promotion.policies.Policy` seam, the
quorum and geDIG policies, :func:`~kgr.promotion.policies.make_policy`), :mod:`kgr.promotion.gedig`
(the geDIG decision core :func:`~kgr.promotion.gedig.decide_round` over :mod:`kgr.gauge`'s math),
:mod:`kgr.promotion.constraints` (functional relations, promoted-fact index),
:mod:`kgr.promotion.settle` (the calibrated policy: one model over every managed edge, one cut),
:mod:`kgr.promotion.cut` (the ranking and the top slice), :mod:`kgr.promotion.certificate` (the
Clopper–Pearson bound from audit labels), :mod:`kgr.promotion.outcome` (what a settle writes) and
:mod:`kgr.promotion.config` (settings and state). It may import :mod:`kgr.evidence`,
:mod:`kgr.gauge`, :mod:`kgr.model` and :mod:`kgr.errors` (promotion → evidence → gauge). The store
reads and writes around it (:mod:`kgr.store.settle`, :mod:`kgr.store.rounds`).
"""

import importlib

from kgr.promotion.config import CalibratedConfig, CalibratedState
from kgr.promotion.cut import Cut, cut

__all__ = ["CalibratedConfig", "CalibratedState", "Cut", "cut", "SliceBounds", "slice_bounds",
           "clopper_pearson_upper"]


def __getattr__(name: str) -> object:
    # the certificate's names load on first use: scipy.special costs a cold process ~0.5 s, which a
    # settle with nothing new and the other policies never pay
    if name in ("SliceBounds", "clopper_pearson_upper", "slice_bounds"):
        return getattr(importlib.import_module("kgr.promotion.certificate"), name)
    raise AttributeError(f"module 'kgr.promotion' has no attribute {name!r}")
