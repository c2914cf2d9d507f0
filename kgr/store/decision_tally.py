r"""What ``kgr metrics`` counts about a round's decisions, read from their recorded inputs.

A promote, reject or expire decision is a ``(:Decision)`` node whose ``inputs`` (a JSON string)
``kgr metrics`` reads back. A **hold** changes nothing in the promoted graph and is the bulk of a
round's decisions (5,000 of 5,000 in a cold round of new candidates), so it is recorded on the held
edge instead (``held_version``, ``held_reason``, ``held_inputs``: the latest hold) and the round's
figures about its holds are tallied here when the round is written and stored on its
``(:Version)`` as ``holds`` (a JSON object, :func:`tally_holds`). ``kgr metrics`` adds the tally to
what it reads from the round's decision nodes, so its per-round figures stay exact after a later
round decides the same edges again.

Per decision (``inputs`` a dict):

* **gates** :math:`(ag, dg, \text{context})`: the geDIG gates' outcome when the decision reached
  them (``inputs["gates"]`` a dict), ``context`` true when the candidate's :math:`H`-ball held a
  promoted edge (the last hop's ``edges_before`` > 0); None otherwise (a quorum or calibrated
  decision);
* **corroborated**: ``votes >= quorum`` (both integers in the inputs).

>>> tally_holds([{"votes": 2, "quorum": 2}, {"votes": 1, "quorum": 2,
...              "gates": {"ag": True, "dg": False}, "gauge": {"hops": [{"edges_before": 3}]}}])
{'held': 2, 'corroborated': 1, 'gauged': 1, 'ag_fired': 1, 'dg_fired': 0, 'no_context': 0}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["gates", "corroborated", "parse_inputs", "tally_holds", "HOLD_FIGURES"]

HOLD_FIGURES = ("held", "corroborated", "gauged", "ag_fired", "dg_fired", "no_context")


def parse_inputs(raw: str | None) -> dict[str, Any] | None:
    """A decision's recorded inputs as a dict; None when missing, malformed or not an object."""
    if not raw:
        return None
    try:
        inputs = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return inputs if isinstance(inputs, dict) else None


def gates(inputs: dict[str, Any] | None) -> tuple[bool, bool, bool] | None:
    """``(ag, dg, had_context)`` of a decision that reached the geDIG gates; None otherwise."""
    g = inputs.get("gates") if isinstance(inputs, dict) else None
    if not isinstance(g, dict):
        return None
    hops = (inputs.get("gauge") or {}).get("hops") or []
    context = bool(hops) and isinstance(hops[-1], dict) and (hops[-1].get("edges_before") or 0) > 0
    return bool(g.get("ag")), bool(g.get("dg")), context


def corroborated(inputs: dict[str, Any] | None) -> bool:
    """Whether the inputs have ``votes >= quorum`` (both integers)."""
    if not isinstance(inputs, dict):
        return False
    votes, quorum = inputs.get("votes"), inputs.get("quorum")
    return isinstance(votes, int) and isinstance(quorum, int) and votes >= quorum


def tally_holds(held_inputs: Iterable[dict[str, Any]]) -> dict[str, int]:
    """The round's figures about its holds, keyed by :data:`HOLD_FIGURES`.

    ``gauged`` counts holds whose gates saw a promoted edge in the ball, ``no_context`` those whose
    ball was empty; ``ag_fired`` / ``dg_fired`` count gauged holds whose gate fired.
    """
    out = dict.fromkeys(HOLD_FIGURES, 0)
    for inputs in held_inputs:
        out["held"] += 1
        out["corroborated"] += corroborated(inputs)
        g = gates(inputs)
        if g is None:
            continue
        if not g[2]:
            out["no_context"] += 1
            continue
        out["gauged"] += 1
        out["ag_fired"] += g[0]
        out["dg_fired"] += g[1]
    return out
