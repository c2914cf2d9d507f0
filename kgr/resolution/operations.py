"""Clusters of units turned into the operations a version applies: source moves (splits) and merges.

The rules are in :mod:`kgr.resolution.plan`'s docstring: each entity's *home* is the cluster
holding most of its sources; a cluster's kept entity is the one at home there with most sources
(ties: the smaller key), or a new split entity when none is at home; an entity's units away from
home move their sources to their cluster's kept entity; the other entities at home are merged into
the kept one. Everything is ordered by keys and unit ids, never by input order.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence

from kgr.model.resolution import MergeProposal, PairEvidence, SplitProposal
from kgr.resolution.cluster import Blocked
from kgr.resolution.units import SPLIT_MARK, Unit, key_name

__all__ = ["operations", "split_key"]

Evidence = Callable[[Sequence[int], Sequence[int]], PairEvidence | None]


def split_key(entity: str, etype: str, sources: Collection[str]) -> str:
    """The key of an entity split off ``entity``: ``"<Type>:<name>#<8 hex of sha256(sorted sources)>"``.

    Canonical names never contain ``#``, so the key cannot collide with a staged name's; it depends
    only on the sources, so the same split gives the same key whatever the order of staging.

    >>> split_key("Person:jacob green", "Person", ["r2", "r1"])
    'Person:jacob green#8dbf0d4b'
    """
    digest = hashlib.sha256("\x1f".join(sorted(sources)).encode()).hexdigest()[:8]
    return f"{etype}:{key_name(entity)}{SPLIT_MARK}{digest}"


def _reason(units: Sequence[Unit], members: Collection[int], blocked: Sequence[Blocked]) -> str:
    for b in blocked:
        if (b.i in members) != (b.j in members) and units[b.i].entity == units[b.j].entity:
            return b.reason
    return ""


def operations(units: Sequence[Unit], labels: Sequence[int], blocked: Sequence[Blocked] = (), *,
               evidence: Evidence | None = None) -> tuple[list[MergeProposal], list[SplitProposal]]:
    """Merges and source moves for the clustering ``labels`` of ``units`` (module docstring)."""
    clusters: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(labels):
        clusters[c].append(i)
    weight: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for i, u in enumerate(units):
        weight[u.entity][labels[i]] += len(u.sources)
    home = {e: min(w, key=lambda c: (-w[c], c)) for e, w in weight.items()}
    total = {e: sum(w.values()) for e, w in weight.items()}
    keep: dict[int, str] = {}
    for c, members in sorted(clusters.items()):
        at_home = sorted({units[i].entity for i in members if home[units[i].entity] == c})
        if at_home:
            keep[c] = min(at_home, key=lambda e: (-total[e], e))
        else:
            first = min({units[i].entity for i in members}, key=lambda e: (-weight[e][c], e))
            keep[c] = split_key(first, units[members[0]].type, {s for i in members for s in units[i].sources})
    splits: list[SplitProposal] = []
    for e in sorted(weight):
        for c in sorted(weight[e]):
            if c == home[e]:
                continue
            mine = [i for i in clusters[c] if units[i].entity == e]
            sources = sorted({s for i in mine for s in units[i].sources})
            if not sources:
                continue
            into = keep[c]
            splits.append(SplitProposal(entity=e, into=into, new_entity=SPLIT_MARK in into and into not in weight,
                                        sources=sources, reason=_reason(units, set(mine), blocked)))
    merges: list[MergeProposal] = []
    for c, members in sorted(clusters.items()):
        k = keep[c]
        for e in sorted({units[i].entity for i in members if home[units[i].entity] == c} - {k}):
            ev = None
            if evidence is not None:
                ev = evidence([i for i in members if units[i].entity == k], [i for i in members if units[i].entity == e])
            merges.append(MergeProposal(keep=k, drop=e, probability=ev.probability if ev else 1.0, evidence=ev))
    return merges, splits
