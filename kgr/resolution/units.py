"""Resolution units: what entity resolution compares, clusters and moves.

An entity of the staged graph is the set of sources (vote sources: chunk ids, a triple file's
``source`` field) that voted on its edges. Resolution does not compare entities whole: it cuts
each entity into **units**, one per *functional signature* of its sources:

- a source's signature is the set of ``(relation, value)`` pairs it asserts for the entity on the
  schema's **functional** relations, as the subject (``BORN_ON 1950-03-01``); sources that assert
  none share the empty signature (the *neutral* unit);
- the unit carries everything its sources said about the entity: the functional values, the other
  neighbours per relation and direction (entity keys), the documents of its sources, and where a
  document *listed* the entity: ``(relation and direction, other end, document)`` per non-functional
  edge of the entity, over all its sources (two entities one document relates to the same entity in
  the same way are listed side by side, which :mod:`kgr.resolution.cluster` reads as a cannot-link
  unless their names are one thing's).

An entity whose sources agree is then one unit or a few compatible ones; one whose sources assert
clearly different values of a functional relation ("jacob green" born 1950 and born 1962) is
several units that a cannot-link keeps apart (:mod:`kgr.resolution.cluster`): that is a split.

Unit ids are ``"<entity key>|<12 hex of sha256(signature)>"``: they do not depend on the order in
which anything was staged, so neither does resolution (everything downstream sorts by unit id).
Names are compared on the canonical form (the entity key's name part), never on the first surface
form staged, which is order-dependent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kgr.gc_freeze import cycle_collector_paused

__all__ = ["EdgeView", "EntityView", "Unit", "build_units", "key_name", "short_forms", "SPLIT_MARK"]

#: Separates an entity key's name from a split entity's suffix (``Person:jacob green#3fa2c01b``);
#: canonical names never contain it (rule 4 of :mod:`kgr.model.canonical` makes it a space).
SPLIT_MARK = "#"
#: Distinct source signatures an entity is cut into at most (beyond: by functional values only, which
#: pools every source without a functional value into one unit). An entity's units are all paired
#: (:mod:`kgr.resolution.blocking`, rule ``entity``), so the cap bounds those pairs at
#: :math:`256 \cdot 255 / 2 = 32{,}640` per entity. It was 64: a title used as a name ("sir baronet",
#: 118 records of 21 people in the benchmark's ``test`` set) was then pooled, and the pooled unit, the
#: context of many people at once, joined their clusters.
MAX_UNITS = 256


def key_name(key: str) -> str:
    """The canonical name of an entity key (without a split suffix).

    >>> key_name("Person:jacob green"), key_name("Person:jacob green#3fa2c01b")
    ('jacob green', 'jacob green')
    """
    return key.partition(":")[2].split(SPLIT_MARK, 1)[0]


@dataclass(frozen=True)
class EdgeView:
    """One staged edge at an entity, as resolution reads it."""

    relation: str
    outgoing: bool  #: the entity is the subject
    other: str  #: the other end's entity key
    sources: tuple[str, ...]


@dataclass(frozen=True)
class EntityView:
    """One live (not merged) entity with its staged edges and its sources' documents."""

    key: str
    type: str
    edges: tuple[EdgeView, ...] = ()
    documents: Mapping[str, str] = field(default_factory=dict)  #: source -> document id, where known


@dataclass(frozen=True)
class Unit:
    """A group of one entity's sources with one functional signature (see the module docstring)."""

    uid: str
    entity: str
    type: str
    name: str
    sources: frozenset[str]
    functional: Mapping[str, frozenset[str]]  #: relation -> values (canonical names of the objects)
    neighbours: Mapping[str, frozenset[str]]  #: "REL>" / "REL<" -> other entity keys
    documents: frozenset[str]
    #: (``"REL>"`` / ``"REL<"``, other entity key, document) of each non-functional edge of its *entity*
    #: (any unit's sources), where the source's document is known (see the module docstring)
    listed: frozenset[tuple[str, str, str]] = frozenset()


def _signature_id(sig: frozenset[tuple[str, str]]) -> str:
    text = "\x1f".join(f"{r}\x1e{v}" for r, v in sorted(sig))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@cycle_collector_paused()
def build_units(entities: Iterable[EntityView], functional: Iterable[str]) -> list[Unit]:
    """The units of ``entities`` (see the module docstring), sorted by unit id.

    Parameters
    ----------
    entities:
        The live entities with their edges.
    functional:
        The schema's functional relation types.

    Returns
    -------
    list of Unit
        One per (entity, functional signature); an entity with no edges is one unit with no sources.
    """
    func = frozenset(functional)
    out: list[Unit] = []
    for ent in entities:
        full: dict[str, set[tuple[str, str]]] = {}
        for e in ent.edges:
            for s in e.sources:
                full.setdefault(s, set()).add((f"{e.relation}{'>' if e.outgoing else '<'}", key_name(e.other)
                                               if e.outgoing and e.relation in func else e.other))
        groups: dict[frozenset[tuple[str, str]], set[str]] = {}
        for s, sig in full.items():
            groups.setdefault(frozenset(sig), set()).add(s)
        if len(groups) > MAX_UNITS:  # too many distinct mentions: group by the functional values only
            coarse: dict[frozenset[tuple[str, str]], set[str]] = {}
            for sig, sources in groups.items():
                coarse.setdefault(frozenset(x for x in sig if x[0].rstrip(">") in func and x[0].endswith(">")),
                                  set()).update(sources)
            groups = coarse
        if not groups:
            groups[frozenset()] = set()
        # where a document listed the entity: over all its sources (every unit carries them, so a unit
        # of another document cannot let a listed sibling in), functional relations left out (two values
        # one text gives for one person's birth place are one place, spelt twice)
        listed = frozenset((f"{e.relation}{'>' if e.outgoing else '<'}", e.other, ent.documents[s])
                           for e in ent.edges if e.relation not in func for s in e.sources if s in ent.documents)
        for signature, sources in groups.items():
            out.append(_unit(ent, signature, frozenset(sources), func, listed))
    return sorted(out, key=lambda u: u.uid)


def _unit(ent: EntityView, signature: frozenset[tuple[str, str]], sources: frozenset[str],
          func: frozenset[str], listed: frozenset[tuple[str, str, str]]) -> Unit:
    functional: dict[str, set[str]] = {}
    for e in ent.edges:
        if e.outgoing and e.relation in func and not sources.isdisjoint(e.sources):
            functional.setdefault(e.relation, set()).add(key_name(e.other))
    neighbours: dict[str, set[str]] = {}
    for e in ent.edges:
        if sources.isdisjoint(e.sources):
            continue
        neighbours.setdefault(f"{e.relation}{'>' if e.outgoing else '<'}", set()).add(e.other)
    docs = frozenset(ent.documents[s] for s in sources if s in ent.documents)
    return Unit(uid=f"{ent.key}|{_signature_id(signature)}", entity=ent.key, type=ent.type, name=key_name(ent.key),
                sources=sources, functional={r: frozenset(v) for r, v in functional.items()},
                neighbours={r: frozenset(v) for r, v in neighbours.items()}, documents=docs, listed=listed)


def sources_of(units: Sequence[Unit]) -> frozenset[str]:
    """Every source of ``units``."""
    return frozenset(s for u in units for s in u.sources)


def short_forms(names: Iterable[str], *, at_least: int = 2) -> set[str]:
    """The names that are a short form of ``at_least`` other names: their words a proper subset of
    each one's words ("edward" of "edward phipson" and "edward cocker", "sir baronet" of "sir charles
    baronet" and "sir hugh baronet"). Such a name may stand for any of them, so the sources staging
    keyed under it are not one thing by their spelling alone (:mod:`kgr.resolution.plan`).

    >>> sorted(short_forms(["edward", "edward phipson", "edward cocker", "phipson", "libasm java"]))
    ['edward']
    """
    distinct = sorted(set(names))
    by_word: dict[str, set[str]] = {}
    for n in distinct:
        for w in set(n.split(" ")):
            by_word.setdefault(w, set()).add(n)
    out: set[str] = set()
    for n in distinct:
        words = set(n.split(" "))
        holders = sorted((by_word[w] for w in words), key=len)
        if len(holders[0]) <= at_least:  # the name itself is among its rarest word's holders
            continue
        longer = [m for m in set.intersection(*holders) if m != n and words < set(m.split(" "))]
        if len(longer) >= at_least:
            out.add(n)
    return out
