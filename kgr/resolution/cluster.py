"""Clustering with constraints: greedy union of scored pairs that never joins a cannot-link.

Transitive closure (connected components) over accepted pairs lets one chain of plausible links
join entities that plainly differ ("lachlan wheatley" absorbing "alisa wheatley" through "lachlan
walley"). Here clusters grow by union-find, one pair at a time, and a union is refused when the two
clusters hold a **cannot-link**:

- a functional relation on which they hold clearly different values
  (:func:`kgr.resolution.compare.values_differ`: two birth dates sharing no component);
- two names the KG schema declares as distinct entities of the type;
- a reviewer's no-merge label between two of their entities.

Pairs are taken in a fixed order, independent of how the units were read: *forced* links first
(units of one entity whose functional values differ but whose other context does not tell them
apart: extraction noise, not two entities; they join despite the values), then **must-links**
(units of one entity, and pairs a reviewer labelled *merge*), then the pairs the model accepted
(:math:`p \\ge \\tau`); within each, by decreasing probability, ties by the unit ids. So an
entity stays whole unless its units cannot-link (a split), a neutral unit joins the group it
matches best, and across entities only accepted pairs join clusters. Each cluster keeps the union of
its members' functional values, declared names and entities, so a constraint check costs the product
of two small value sets, not a scan of the members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kgr.resolution.compare import values_differ
from kgr.resolution.units import Unit

__all__ = ["Link", "Blocked", "constrained_clusters"]


@dataclass(frozen=True)
class Link:
    """A pair to consider: unit indexes, match probability, and whether it must link."""

    i: int
    j: int
    p: float
    must: bool = False
    force: bool = False  #: join despite clearly different functional values (noise within one entity)


@dataclass(frozen=True)
class Blocked:
    """A link the constraints refused, and why."""

    i: int
    j: int
    p: float
    reason: str


@dataclass
class _Info:
    functional: dict[str, set[str]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)

    def absorb(self, other: "_Info") -> None:
        for rel, vals in other.functional.items():
            self.functional.setdefault(rel, set()).update(vals)
        self.declared |= other.declared
        self.entities |= other.entities


def _conflict(a: _Info, b: _Info, no_merge: Callable[[str, str], bool], *, functional: bool = True) -> str | None:
    for rel in sorted(a.functional.keys() & b.functional.keys()) if functional else ():
        for x in sorted(a.functional[rel]):
            for y in sorted(b.functional[rel]):
                if values_differ(x, y):
                    return f"{rel}: {x!r} vs {y!r}"
    if a.declared and b.declared and a.declared != b.declared:
        return f"declared distinct: {sorted(a.declared)[0]!r} vs {sorted(b.declared)[0]!r}"
    for ea in sorted(a.entities):
        for eb in sorted(b.entities):
            if ea != eb and no_merge(ea, eb):
                return f"labelled no-merge: {ea} / {eb}"
    return None


def _mean_link(a: Sequence[int], b: Sequence[int], near: Mapping[int, Mapping[int, float]]) -> float:
    """Mean probability of the scored pairs between clusters ``a`` and ``b`` (1.0 when none is scored)."""
    if len(a) > len(b):
        a, b = b, a
    inb = set(b)
    ps = [p for i in a for j, p in near.get(i, {}).items() if j in inb]
    return sum(ps) / len(ps) if ps else 1.0


def constrained_clusters(units: Sequence[Unit], links: Sequence[Link], *, cut: float, support: float = 0.5,
                         scores: Mapping[tuple[int, int], float] | None = None, declared: Collection[str] = (),
                         no_merge: Callable[[str, str], bool] = lambda a, b: False) -> tuple[list[int], list[Blocked]]:
    """Cluster ``units`` (module docstring).

    Parameters
    ----------
    units:
        The units, sorted by unit id.
    links:
        Candidate pairs with probabilities; must-links are always tried, others only at ``p >= cut``.
    cut:
        The merge cut :math:`\\tau`.
    declared:
        Canonical names the schema declares for the type (distinct from each other).
    no_merge:
        Whether two entity keys carry a no-merge label.

    Returns
    -------
    labels, blocked
        Per unit, the index of its cluster's first unit (by unit id); the refused links.
    """
    parent = list(range(len(units)))
    info = [_Info(functional={r: set(v) for r, v in u.functional.items()},
                  declared={u.name} & set(declared), entities={u.entity}) for u in units]

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    members = [[i] for i in range(len(units))]
    near: dict[int, dict[int, float]] = defaultdict(dict)
    for (i, j), p in (scores or {}).items():
        near[i][j] = near[j][i] = p
    order = sorted((lk for lk in links if lk.must or lk.p >= cut),
                   key=lambda lk: (not lk.force, not lk.must, -round(lk.p, 12), units[lk.i].uid, units[lk.j].uid))
    blocked: list[Blocked] = []
    for lk in order:
        a, b = find(lk.i), find(lk.j)
        if a == b:
            continue
        why = _conflict(info[a], info[b], no_merge, functional=not lk.force)
        if why is not None:
            blocked.append(Blocked(lk.i, lk.j, lk.p, why))
            continue
        if not lk.must and _mean_link(members[a], members[b], near) < support:
            continue
        keep, gone = (a, b) if a < b else (b, a)
        parent[gone] = keep
        info[keep].absorb(info[gone])
        members[keep].extend(members[gone])
        members[gone] = []
    return [find(i) for i in range(len(units))], blocked
