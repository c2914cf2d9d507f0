"""Retiring promoted edges that a change left below the quorum (a forget, an unmerge).

A forget removes votes; an unmerge moves them back to the entities they were staged under. Either
can leave a promoted edge with fewer distinct sources than the quorum it was promoted on. Such an
edge is retired in the same transaction: its promoted relationship gets ``valid_to`` = the version
and its staged edge goes back to ``held`` (``retire_edges``), with the reason
``"<why>: <n> vote(s) left, quorum <q>"``. The caller records its own ``retract`` decisions.
"""

from __future__ import annotations

from kgr.store.connection import Tx

__all__ = ["retire_below_quorum", "promoted_below_quorum"]


def promoted_below_quorum(tx: Tx, entities: list[str], quorum: int) -> list[dict]:
    """The promoted staged edges at ``entities`` (either end) with fewer than ``quorum`` votes:
    ``{key, s_key, o_key, votes}``, by key."""
    return tx.run("promoted_below_quorum", {"keys": entities, "quorum": quorum}) if entities else []


def retire_below_quorum(tx: Tx, rows: list[dict], *, quorum: int, version: int, why: str) -> set[str]:
    """Retire the edges of ``rows`` (``{key, s_key, o_key, votes}``, promoted, below ``quorum``) at
    ``version``; the keys actually retired (an edge no longer promoted is skipped)."""
    if not rows:
        return set()
    gone = tx.run("retire_edges", {"rows": [{"key": r["key"], "s_key": r["s_key"], "o_key": r["o_key"],
                                             "reason": f"{why}: {r['votes']} vote(s) left, quorum {quorum}"}
                                            for r in rows], "version": version, "status": "held"})
    return {g["key"] for g in gone}
