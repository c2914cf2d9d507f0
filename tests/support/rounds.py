"""Test helpers: one promotion round of a named policy through the seam (kgr.store.rounds.run_round)."""

from __future__ import annotations

from pydantic import BaseModel

from kgr.promotion.policies import make_policy
from kgr.model.decisions import RoundSummary
from kgr.model.schema import KGSchema
from kgr.store.connection import Graph
from kgr.store.rounds import run_round


def gedig_round(graph: Graph, *, schema: KGSchema | None = None, config: BaseModel | None = None,
                quorum: int | None = None) -> RoundSummary:
    """One round of the geDIG policy."""
    return run_round(graph, make_policy("gedig", config, quorum=quorum), schema=schema)
