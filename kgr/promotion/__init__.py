"""Promotion as risk control: the calibrated policy's settle, its cut and the cut's certificate.

Pure (no Neo4j): :mod:`kgr.promotion.settle` (the policy on the :class:`~kgr.promotion.policies.Policy`
seam: one model over every managed edge, one cut), :mod:`kgr.promotion.cut` (the ranking and the top
slice), :mod:`kgr.promotion.certificate` (the Clopper–Pearson bound from audit labels),
:mod:`kgr.promotion.outcome` (what a settle writes) and :mod:`kgr.promotion.config` (settings and
state). The store reads and writes around it (:mod:`kgr.store.settle`, :mod:`kgr.store.rounds`).
"""

from kgr.promotion.certificate import SliceBounds, clopper_pearson_upper, slice_bounds
from kgr.promotion.config import CalibratedConfig, CalibratedState
from kgr.promotion.cut import Cut, cut

__all__ = ["CalibratedConfig", "CalibratedState", "Cut", "cut", "SliceBounds", "slice_bounds",
           "clopper_pearson_upper"]
