"""Entity resolution, pure: units, blocking, comparison vectors, the Fellegi–Sunter model with EM,
constrained clustering and the operations (merges, source moves) a resolution applies.

No Neo4j here: :mod:`kgr.store.resolve` reads the units and applies the plan as one version.
"""

from kgr.resolution.blocking import Candidates, block
from kgr.resolution.cluster import Link, constrained_clusters
from kgr.resolution.compare import comparison_set, name_level, value_level, values_differ
from kgr.resolution.model import FellegiSunter
from kgr.resolution.operations import operations, split_key
from kgr.resolution.plan import TypePlan, plan_type
from kgr.resolution.units import EdgeView, EntityView, Unit, build_units, key_name

__all__ = ["block", "Candidates", "Link", "constrained_clusters", "comparison_set", "name_level", "value_level", "values_differ",
           "FellegiSunter", "operations", "split_key", "TypePlan", "plan_type", "EdgeView", "EntityView", "Unit",
           "build_units", "key_name"]
