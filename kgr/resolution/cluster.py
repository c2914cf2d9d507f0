"""Clustering with constraints: greedy union of scored pairs that never joins a cannot-link.

Transitive closure (connected components) over accepted pairs lets one chain of plausible links
join entities that plainly differ ("lachlan wheatley" absorbing "alisa wheatley" through "lachlan
walley"). Here clusters grow by union-find, one pair at a time, and a union is refused when the two
clusters hold a **cannot-link**:

- a functional relation on which they hold clearly different values
  (:func:`kgr.resolution.compare.values_differ`: two birth dates sharing no component);
- two names the KG schema declares as distinct entities of the type;
- a reviewer's no-merge label between two of their entities;
- two entities **listed apart in one document**: both related to one entity by one relation in the
  same direction in the same document (two packages one changelog makes a package depend on, two
  projects one page says support Python), whose names are not one thing's
  (:func:`kgr.resolution.compare.listed_apart`: neither a short form nor a near-identical spelling
  of the other). A text that lists two names side by side means two things; sharing that
  neighbour and that document is what made the model pair them. A reviewer's *merge* label (a
  must-link) is not refused for it.

Pairs are taken in a fixed order, independent of how the units were read: *forced* links first
(units of one entity whose functional values differ but whose other context does not tell them
apart: extraction noise, not two entities; they join despite the values), then **must-links**
(units of one entity, and pairs a reviewer labelled *merge*), then the pairs the model accepted
(:math:`p \\ge \\tau`), last the **own** links (two units of one entity that the model alone would not
keep together); within each, by decreasing probability, ties by the unit ids. An own link rejoins a
unit that found no other home (one side holds units of a single entity: staging's grouping stands
unless a cannot-link separates them, so an entity with few sources is not cut into pieces); between
two clusters that both absorbed other entities it needs the support like any accepted pair, so a
common name's units that the model placed in two different people's clusters stay apart. So an
entity stays whole unless its units cannot-link (a split), a neutral unit joins the group it
matches best, and across entities only accepted pairs join clusters.

**Support.** A link (not a must-link, not an own link rejoining a homeless unit) joins two clusters
only if the mean probability of the scored pairs between them reaches ``support`` (0.3); when both
clusters already hold at least ``large`` sources (4) it must reach ``support_large`` (0.5: on
average more likely the same than not). One accepted link between two groups of several records
is one pair among many: when most of the others say "different", the link is the exception (two
painters born in the same town in the same year, with different names), not the groups. Small
clusters keep the lower bar, since their few pairs may all involve a corrupted record.

Each cluster keeps the union of
its members' functional values, declared names and entities, so a constraint check costs the product
of two small value sets, not a scan of the members.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgr.resolution.compare import listed_apart, values_differ
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
    own: bool = False  #: two units of one entity the model does not hold together (tried last, see below)


@dataclass(frozen=True)
class Blocked:
    """A link the constraints refused, and why."""

    i: int
    j: int
    p: float
    reason: str


@dataclass
class _Info:
    functional: dict[str, dict[str, int]] = field(default_factory=dict)  #: relation -> value -> sources
    declared: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    #: (relation and direction, other end, document) -> entity key -> canonical name (Unit.listed)
    listed: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)

    def absorb(self, other: "_Info") -> None:
        for rel, vals in other.functional.items():
            mine = self.functional.setdefault(rel, {})
            for v, n in vals.items():
                mine[v] = mine.get(v, 0) + n
        self.declared |= other.declared
        self.entities |= other.entities
        for slot, names in other.listed.items():
            self.listed.setdefault(slot, {}).update(names)


def _size(i: _Info) -> int:
    return len(i.entities) + len(i.listed) + sum(len(v) for v in i.functional.values())


def _listed_conflict(a: _Info, b: _Info) -> str | None:
    small, large = (a, b) if len(a.listed) <= len(b.listed) else (b, a)
    for slot in sorted(small.listed.keys() & large.listed.keys()):
        for ea, na in sorted(small.listed[slot].items()):
            for eb, nb in sorted(large.listed[slot].items()):
                if ea != eb and listed_apart(na, nb):
                    rel, other, doc = slot
                    return f"listed apart in one document: {na!r} and {nb!r} ({rel} {other}, document {doc})"
    return None


def _conflict(a: _Info, b: _Info, no_merge: Callable[[str, str], bool] | None, *, functional: bool = True,
              listed: bool = True) -> str | None:
    for rel in sorted(a.functional.keys() & b.functional.keys()) if functional else ():
        xs, ys = a.functional[rel], b.functional[rel]
        total = sum(xs.values()) * sum(ys.values())
        apart = sum(nx * ny for x, nx in xs.items() for y, ny in ys.items() if values_differ(x, y))
        if apart * 2 >= total:
            x, y = max(xs, key=lambda v: (xs[v], v)), max(ys, key=lambda v: (ys[v], v))
            return f"{rel}: {x!r} vs {y!r}"
    if a.declared and b.declared and a.declared != b.declared:
        return f"declared distinct: {sorted(a.declared)[0]!r} vs {sorted(b.declared)[0]!r}"
    if no_merge is not None:
        others = sorted(b.entities)
        for ea in sorted(a.entities):
            for eb in others:
                if ea != eb and no_merge(ea, eb):
                    return f"labelled no-merge: {ea} / {eb}"
    return _listed_conflict(a, b) if listed else None


#: Scored pairs: a mapping ``(i, j) -> p``, or the arrays ``(i, j, p)``.
Scores = Mapping[tuple[int, int], float] | tuple[np.ndarray, np.ndarray, np.ndarray]


def _score_arrays(scores: Scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``scores`` as the arrays ``(i, j, p)`` (a mapping's pairs in its order)."""
    if isinstance(scores, tuple):
        i, j, p = scores
        return np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64), np.asarray(p, dtype=np.float64)
    ij = np.array(list(scores.keys()), dtype=np.int64).reshape(-1, 2)
    return ij[:, 0], ij[:, 1], np.fromiter(scores.values(), dtype=np.float64, count=len(scores))


class _Between:
    """Sum and count of the scored pairs between clusters. Each cluster holds a table keyed by the
    clusters its members were scored against *when the entry was made*; tables are folded smaller into
    larger on a union and stale keys are resolved through union-find when read, so a union costs the
    smaller table and the mean link of two clusters the smaller of their tables. A cell's sum and count
    are one complex number, ``sum + count·1j``: adding two adds the sums and the counts, each exactly as
    float addition would (counts are small integers), at one table look-up instead of two."""

    def __init__(self, n: int, scores: Scores):
        self.t: list[dict[int, complex]] = [{} for _ in range(n)]
        i, j, p = _score_arrays(scores)
        if not len(p):
            return
        off = i != j
        a = np.concatenate([i[off], j[off]])
        b = np.concatenate([j[off], i[off]])
        # sum and count per ordered cell (a, b), cells grouped by a: one dict per unit, built in bulk
        cell, inverse = np.unique(a * n + b, return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate([p[off], p[off]]), minlength=len(cell))
        cells = (sums + 1j * np.bincount(inverse, minlength=len(cell))).tolist()
        rows, cols = (cell // n).tolist(), (cell % n).tolist()
        bounds = (np.flatnonzero(np.diff(cell // n)) + 1).tolist()
        for lo, hi in zip([0, *bounds], [*bounds, len(cell)]):
            self.t[rows[lo]] = dict(zip(cols[lo:hi], cells[lo:hi]))

    def mean(self, a: int, b: int, parent: list[int], find: Callable[[int], int]) -> float:
        """Mean probability of the scored pairs between clusters ``a`` and ``b`` (1.0 when none is scored).
        A key is read through ``parent`` when it is a root or a root's child, through ``find`` otherwise."""
        if len(self.t[a]) > len(self.t[b]):
            a, b = b, a
        s, c = 0.0, 0.0
        for other, cell in self.t[a].items():
            up = parent[other]
            if (up if parent[up] == up else find(other)) == b:
                s += cell.real
                c += cell.imag
        return s / c if c else 1.0

    def unite(self, keep: int, gone: int) -> None:
        k, g = (keep, gone) if len(self.t[keep]) >= len(self.t[gone]) else (gone, keep)
        big = self.t[k]
        cell_of = big.get
        big.update({other: cell_of(other, 0j) + cell for other, cell in self.t[g].items()})  # new keys last, in order
        self.t[keep], self.t[gone] = big, {}


def constrained_clusters(units: Sequence[Unit], links: Sequence[Link], *, support: float = 0.5,
                         support_large: float | None = None, large: int = 4,
                         scores: Scores | None = None, declared: Collection[str] = (),
                         no_merge: Callable[[str, str], bool] | None = None) -> tuple[list[int], list[Blocked]]:
    """Cluster ``units`` (module docstring).

    Parameters
    ----------
    units:
        The units, sorted by unit id.
    links:
        The pairs to join, with probabilities: the caller has chosen them (the merge cut, labels, an
        entity's own units); each is tried once, in the module docstring's order.
    support:
        Smallest mean probability of the scored pairs between two clusters for a link (not a
        must-link) to join them.
    support_large, large:
        The smallest mean when both clusters hold at least ``large`` sources (a unit without sources
        counts as one); ``None``: ``support``.
    scores:
        Every scored pair's probability (for ``support``): a mapping ``(i, j) -> p``, or the arrays
        ``(i, j, p)``.
    declared:
        Canonical names the schema declares for the type (distinct from each other).
    no_merge:
        Whether two entity keys carry a no-merge label; ``None``: no pair does.

    Returns
    -------
    labels, blocked
        Per unit, the index of its cluster's first unit (by unit id); the refused links.
    """
    parent = list(range(len(units)))
    size = [max(1, len(u.sources)) for u in units]  #: sources per cluster (at its root)
    bar_large = support if support_large is None else support_large
    names = frozenset(declared)
    info = [_Info(functional={r: dict.fromkeys(v, max(1, len(u.sources))) for r, v in u.functional.items()},
                  declared={u.name} & names, entities={u.entity},
                  listed={slot: {u.entity: u.name} for slot in u.listed}) for u in units]

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    between = _Between(len(units), scores or {})
    uid = [u.uid for u in units]
    order = sorted(links, key=lambda lk: (not lk.force, not lk.must, lk.own, -round(lk.p, 12), uid[lk.i], uid[lk.j]))
    blocked: list[Blocked] = []
    for lk in order:
        a, b = find(lk.i), find(lk.j)
        if a == b:
            continue
        why = _conflict(info[a], info[b], no_merge, functional=not lk.force, listed=not lk.must)
        if why is not None:
            blocked.append(Blocked(lk.i, lk.j, lk.p, why))
            continue
        alone = lk.own and (len(info[a].entities) == 1 or len(info[b].entities) == 1)
        bar = bar_large if min(size[a], size[b]) >= large else support
        if not lk.must and not alone and between.mean(a, b, parent, find) < bar:
            continue
        keep, gone = (a, b) if a < b else (b, a)
        parent[gone] = keep
        size[keep] += size[gone]
        big, small = (info[keep], info[gone]) if _size(info[keep]) >= _size(info[gone]) else (info[gone], info[keep])
        big.absorb(small)  # the smaller into the larger: a union costs the smaller cluster's tables
        info[keep], info[gone] = big, None  # type: ignore[call-overload]
        between.unite(keep, gone)
    return [find(i) for i in range(len(units))], blocked
