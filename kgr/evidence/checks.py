r"""Constraint checks of the managed rows, on the evidence graph (never on the current promoted set).

Per managed row :math:`(s{:}T_s) \xrightarrow{r} (o{:}T_o)` of :class:`~kgr.evidence.graph.EvidenceGraph`:

- **declared** domain / range: :math:`T_s` outside the schema's domain of :math:`r` →
  ``domain = 1``; likewise ``range``;
- **self loop**: :math:`s = o`;
- **near-duplicate entity**: an endpoint :math:`e` of degree :math:`\le` ``max_degree`` in the
  evidence graph with a *twin* :math:`e'` — same type, the same distinguishing marks
  (:func:`kgr.model.canonical.distinguishing_marks`: digit runs, numerals, ``+``/``#`` suffixes),
  not both named by the schema, name similarity :math:`\ge` ``threshold`` (:func:`kgr.model.canonical.name_similarity`) — that holds
  :math:`r` with the other endpoint on the same side and is *stronger*: more facts, then more
  votes, then the smaller key (``Rowen Mogropel WORKS_AT X`` when ``Rowen Mogorpel WORKS_AT X``
  has more support). The weaker of two twins is flagged, whichever arrived first;
- **functional** relations: ``functional_others`` = the other objects the subject has for
  :math:`r` in the evidence graph, and ``pinned_object`` whether one of them is a pinned edge
  (then none of the managed rows of that subject and relation may be promoted).

The penalty :math:`R_{\text{contr}} = \text{domain}^2 + \text{range}^2 + \text{duplicate}^2`
(hard violations only; a competing functional object is evidence, weighed by the scorer, and the
cut keeps at most one object per subject, :mod:`kgr.promotion.cut`).

Cost: :math:`O(m)` for :math:`m` facts, plus, per checked endpoint, one
:class:`difflib.SequenceMatcher` upper bound per same-type holder (only low-degree endpoints are
checked: a typo'd entity appears in few facts).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from kgr.evidence.graph import Evidence, EvidenceGraph
from kgr.model.canonical import distinguishing_marks, name_similarity

__all__ = ["Checks", "check_rows", "functional_relations"]



def functional_relations(schema) -> frozenset[str]:  # noqa: ANN001 - a KGSchema or None
    """Names of the schema's functional relations (none without a schema).

    Parameters
    ----------
    schema : KGSchema or None
        The schema.

    Returns
    -------
    frozenset of str
    """
    if schema is None:
        return frozenset()
    return frozenset(r for r, spec in schema.relation_types.items() if spec.functional)


@dataclass(frozen=True)
class Checks:
    """The checks of every managed row (arrays parallel to ``Evidence.rows``)."""

    domain: np.ndarray
    range: np.ndarray
    self_loop: np.ndarray
    duplicate: np.ndarray
    functional: np.ndarray
    functional_others: np.ndarray
    pinned_object: np.ndarray
    notes: dict[int, str]

    @property
    def r_contr(self) -> np.ndarray:
        r""":math:`R_{\text{contr}}` per row (see the module docstring)."""
        return self.domain ** 2 + self.range ** 2 + self.duplicate.astype(np.float64)

    def violated(self, i: int) -> list[str]:
        """The names of the hard checks row ``i`` fails.

        Parameters
        ----------
        i : int
            Row index in the evidence.

        Returns
        -------
        list of str
        """
        names = (("domain", self.domain[i] > 0), ("range", self.range[i] > 0), ("self_loop", self.self_loop[i]),
                 ("duplicate_entity", self.duplicate[i]))
        return [n for n, bad in names if bad]

    def violations(self) -> list[list[str]]:
        """:meth:`violated` of every row, in one pass.

        Returns
        -------
        list of list of str
        """
        cols = ((self.domain > 0).tolist(), (self.range > 0).tolist(), self.self_loop.astype(bool).tolist(),
                self.duplicate.astype(bool).tolist())
        names = ("domain", "range", "self_loop", "duplicate_entity")
        return [[n for n, bad in zip(names, flags) if bad] for flags in zip(*cols)]


def _declared(ev: Evidence) -> tuple[np.ndarray, np.ndarray]:
    dom = np.zeros(len(ev.rows))
    rng = np.zeros(len(ev.rows))
    if ev.schema is None:
        return dom, rng
    for i, c in enumerate(ev.rows):
        spec = ev.schema.relation_types.get(c.relation)
        if spec is not None and spec.domain and c.subject_type not in spec.domain:
            dom[i] = 1.0
        if spec is not None and spec.range and c.object_type not in spec.range:
            rng[i] = 1.0
    return dom, rng


def _strength(g: EvidenceGraph) -> tuple[np.ndarray, np.ndarray]:
    f = g.facts
    keep = f.head != f.tail
    votes = np.bincount(np.concatenate([f.head[keep], f.tail[keep]]),
                        weights=np.concatenate([f.weight[keep], f.weight[keep]]), minlength=f.n_entities)
    return g.degree, votes


def _holders(g: EvidenceGraph, wanted: set[tuple[int, int, int]]) -> dict[tuple[int, int, int], list[int]]:
    """For each wanted (relation, other endpoint, side) the entities holding it (side 0: as subject)."""
    f = g.facts
    out: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    if not wanted:
        return out
    n = f.n_entities
    keep = f.head != f.tail
    for side, other, me in ((0, f.tail, f.head), (1, f.head, f.tail)):
        codes = {r * n + o for (r, o, s) in wanted if s == side}
        if not codes:
            continue
        code = f.rel * n + other
        hit = keep & np.isin(code, np.fromiter(codes, dtype=np.int64, count=len(codes)))
        for c, e in zip(code[hit].tolist(), me[hit].tolist()):
            out[(c // n, c % n, side)].append(e)
    return out


def _duplicates(g: EvidenceGraph, threshold: float | None, max_degree: int,
                declared: Callable[[str], bool] | None = None) -> tuple[np.ndarray, dict[int, str]]:
    dup = np.zeros(len(g.h), bool)
    notes: dict[int, str] = {}
    if not threshold or not len(g.h):
        return dup, notes
    deg, votes = _strength(g)
    names = g.vocab.entities
    types = g.vocab.entity_types
    checks = []
    for i, (h, r, t) in enumerate(zip(g.h.tolist(), g.r.tolist(), g.t.tolist())):
        if h == t:
            continue
        for e, other, side in ((h, t, 0), (t, h, 1)):
            if deg[e] <= max_degree:
                checks.append((i, e, other, side, r))
    holders = _holders(g, {(r, o, s) for _, _, o, s, r in checks})
    for i, e, other, side, r in checks:
        if dup[i]:
            continue
        twin = _twin(e, holders.get((r, other, side), ()), names, types, deg, votes, threshold, declared)
        if twin is not None:
            dup[i] = True
            notes[i] = (f"entity {names[e]} looks like {names[twin[0]]} (name similarity {twin[1]:.2f}), which has more "
                        f"support and holds the same relation with the other endpoint; if they are one entity: "
                        f"kgr merge '{names[twin[0]]}' '{names[e]}'")
    return dup, notes


def _twin(e: int, holders, names, types, deg, votes, threshold: float,  # noqa: ANN001
          declared: Callable[[str], bool] | None = None) -> tuple[int, float] | None:
    """The best-supported entity that ``e`` looks like a misspelling of, or None. Never one whose
    distinguishing marks differ (``C`` / ``C++``, ``UNIVAC I`` / ``UNIVAC II``), and never when both
    are entities the schema names (``declared``: ``HTTP`` and ``HTTPS`` are two protocols)."""
    etype, _, name = names[e].partition(":")
    marks: tuple[str, ...] | None = None  # computed for the first holder that reads alike
    mine_declared: bool | None = None
    mine = (deg[e], votes[e])
    best: tuple[float, int] | None = None
    for x in holders:
        if x == e or types[x] != types[e] or not ((deg[x], votes[x]) > mine or ((deg[x], votes[x]) == mine
                                                                             and names[x] < names[e])):
            continue
        other = names[x].partition(":")[2]
        sm = SequenceMatcher(None, name, other)  # the cheap bounds first: most holders are far off
        if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
            continue
        if marks is None:
            marks, mine_declared = distinguishing_marks(name), declared is not None and declared(names[e])
        if distinguishing_marks(other) != marks or (mine_declared and declared(names[x])):
            continue
        sim = name_similarity(name, other)
        if sim >= threshold and (best is None or (sim, -x) > (best[0], -best[1])):
            best = (sim, x)
    return None if best is None else (best[1], best[0])


def _functional(ev: Evidence, g: EvidenceGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    fun_names = functional_relations(ev.schema)
    rel_ids = [i for i, r in enumerate(g.vocab.relations) if r in fun_names]
    is_fun = np.isin(g.r, rel_ids)
    others = np.zeros(len(g.h), np.int64)
    pinned = np.zeros(len(g.h), bool)
    if not is_fun.any():
        return is_fun, others, pinned
    f = g.facts
    fmask = np.isin(f.rel, rel_ids) & (f.head != f.tail)
    objects: dict[tuple[int, int], set[int]] = defaultdict(set)
    pinned_obj: dict[tuple[int, int], set[int]] = defaultdict(set)
    for h, r, t, p in zip(f.head[fmask].tolist(), f.rel[fmask].tolist(), f.tail[fmask].tolist(),
                          g.pinned[fmask].tolist()):
        objects[(h, r)].add(t)
        if p:
            pinned_obj[(h, r)].add(t)
    for i in np.nonzero(is_fun)[0]:
        key = (int(g.h[i]), int(g.r[i]))
        others[i] = len(objects[key] - {int(g.t[i])})
        pinned[i] = bool(pinned_obj.get(key, set()) - {int(g.t[i])})
    return is_fun, others, pinned


def check_rows(ev: Evidence, g: EvidenceGraph, *, duplicate_similarity: float | None = 0.85,
               duplicate_max_degree: int = 3) -> Checks:
    """The checks of every managed row of ``ev`` (see the module docstring).

    Parameters
    ----------
    ev : Evidence
        The managed rows and the pinned edges.
    g : EvidenceGraph
        Their evidence graph (:func:`kgr.evidence.graph.build_graph`).
    duplicate_similarity : float or None, default 0.85
        Name similarity above which two objects of a functional subject count as one (None: off).
    duplicate_max_degree : int, default 3
        Only objects with at most this many facts are compared as duplicates.

    Returns
    -------
    Checks
        One row of check flags per managed row.
    """
    dom, rng = _declared(ev)
    schema = ev.schema
    declared = None if schema is None else (lambda key: schema.declares(*key.split(":", 1)))
    dup, notes = _duplicates(g, duplicate_similarity, duplicate_max_degree, declared)
    is_fun, others, pinned = _functional(ev, g)
    return Checks(domain=dom, range=rng, self_loop=g.h == g.t, duplicate=dup, functional=is_fun,
                  functional_others=others, pinned_object=pinned, notes=notes)
