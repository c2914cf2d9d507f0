r"""Constraint values :math:`g_j` of candidate edges, from the schema and the promoted graph.

Pure: the inputs are the candidates (:class:`kgr.model.promotion.CandidateRow`), the KG schema
and what :class:`PromotedIndex` derives from the current promoted edges. The values feed
:math:`R_{\text{contr}} = \sum_j \max(0, g_j)^2` (:func:`kgr.gauge.reward.constraint_penalty`).

Per candidate :math:`(s{:}T_s) \xrightarrow{r} (o{:}T_o)`:

- **declared** domain / range: :math:`T_s` outside the schema's domain of :math:`r` →
  ``domain_violation = 1``; likewise the range;
- **learned** when the schema declares neither: if :math:`r` already has at least
  :data:`LEARN_MIN` promoted edges and the share of them whose endpoint types are
  :math:`(T_s, T_o)` is :math:`p`, then ``domain_violation`` :math:`= 1 - p` (a relation that
  always joined people to organisations makes a person→city edge suspicious, however many
  sources repeat it);
- **functional** relations: how many *other* objects the subject already has for :math:`r`;
- **self loops**: 1 when subject and object are one entity;
- **near-duplicate entities**: an endpoint new to the promoted graph whose canonical name is at
  least ``threshold`` similar (:func:`kgr.model.canonical.name_similarity`) to an entity of the
  same type that already holds :math:`r` with the other endpoint (``Rowen Mogropel WORKS_AT X``
  when ``Rowen Mogorpel WORKS_AT X`` is promoted) → ``duplicate_entity = 1``, the twin named in a
  note. The twin may also be an established entity for which this round has a candidate with
  the same relation and other endpoint. Names whose numbers, roman numerals or generational
  suffixes differ (``Member 1`` / ``Member 11``, ``UNIVAC I`` / ``UNIVAC II``, ``Alan Turing`` /
  ``Alan Turing Jr``: :func:`kgr.model.canonical.distinguishing_marks`) are never twins.

Within a round, at most one promotion per (subject, functional relation) survives
(:func:`functional_losers`): the best supported, and none when the subject already has an object.

Examples
--------
>>> from kgr.model.promotion import CandidateRow, EdgeList
>>> idx = PromotedIndex(EdgeList(["P:ann"], ["WORKS_AT"], ["O:acme"], [2.0]), {"P:ann": "P", "O:acme": "O"})
>>> c = CandidateRow(key="k", relation="WORKS_AT", subject_key="P:ann", subject_type="P",
...                  object_key="C:paris", object_type="C", votes=2, documents=2, confidence=0.9,
...                  mean_confidence=0.7)
>>> idx.constraints(c, None).domain_violation   # learned only from LEARN_MIN = 5 edges on
0.0
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from kgr.gauge.reward import ConstraintInputs
from kgr.model.canonical import distinguishing_marks, name_similarity
from kgr.model.promotion import CandidateRow, EdgeList
from kgr.model.schema import KGSchema

__all__ = ["LEARN_MIN", "FactHolders", "PromotedIndex", "functional_relations", "functional_losers"]

#: Promoted edges of a relation needed before its endpoint types are learned.
LEARN_MIN = 5


def functional_relations(schema: KGSchema | None) -> frozenset[str]:
    """Names of the schema's functional relations (none without a schema)."""
    if schema is None:
        return frozenset()
    return frozenset(r for r, spec in schema.relation_types.items() if spec.functional)


class FactHolders:
    """Who holds a relation with a given entity (the near-duplicate check's index).

    ``_by[(r, y, "subject")]`` are the subjects ``x`` of ``(x)-[r]->(y)``; ``_by[(r, y, "object")]``
    the objects of ``(y)-[r]->(x)``. ``known`` is every entity with an indexed edge.
    """

    def __init__(self) -> None:
        self._by: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self.known: set[str] = set()

    def add(self, subject_key: str, relation: str, object_key: str) -> None:
        """Index one edge (its endpoints become known)."""
        self._by[(relation, object_key, "subject")].append(subject_key)
        self._by[(relation, subject_key, "object")].append(object_key)
        self.known.update((subject_key, object_key))

    def twin(self, cand: CandidateRow, threshold: float, *, known: set[str] | None = None,
             schema: KGSchema | None = None) -> tuple[str, str, float] | None:
        """(new endpoint, its likely twin, similarity) for the first endpoint that has one, or None.

        ``known`` (default: this index's own) decides which endpoints are established: only an
        endpoint outside it is checked. When given, a twin must be in it too (used for the
        round's other candidates: a new entity is a duplicate of an *established* one, never of
        another newcomer). Two entities the ``schema`` names (``HTTP``, ``HTTPS``) are never twins.
        """
        established = self.known if known is None else known
        for key, other, side in ((cand.subject_key, cand.object_key, "subject"),
                                 (cand.object_key, cand.subject_key, "object")):
            if key in established:
                continue
            etype, _, name = key.partition(":")
            marks = distinguishing_marks(name)
            mine_declared = schema is not None and schema.declares(etype, name)
            best: tuple[float, str] | None = None
            for holder in self._by.get((cand.relation, other, side), ()):
                htype, _, hname = holder.partition(":")
                if htype != etype or holder == key or distinguishing_marks(hname) != marks:
                    continue
                if (known is not None and holder not in known) or (mine_declared and schema.declares(htype, hname)):
                    continue
                sim = name_similarity(name, hname)
                if sim >= threshold and (best is None or (sim, holder) > best):
                    best = (sim, holder)
            if best is not None:
                return key, best[1], best[0]
        return None


class PromotedIndex:
    """What the constraints need of the promoted graph: relation signatures, functional objects,
    fact holders.

    Parameters
    ----------
    promoted : EdgeList
        The current promoted edges.
    entity_types : dict of str to str
        Entity key → type (at least every promoted endpoint).
    """

    def __init__(self, promoted: EdgeList, entity_types: dict[str, str]):
        self.signatures: dict[str, Counter] = defaultdict(Counter)
        self.objects: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.holders = FactHolders()
        self.extend(promoted, entity_types)

    def extend(self, promoted: EdgeList, entity_types: dict[str, str]) -> None:
        """Index more promoted edges."""
        for s, r, o in zip(promoted.subject, promoted.relation, promoted.object):
            self.signatures[r][(entity_types.get(s, s.partition(":")[0]), entity_types.get(o, o.partition(":")[0]))] += 1
            self.objects[(s, r)].add(o)
            self.holders.add(s, r, o)

    def peers(self, candidates: Iterable[CandidateRow], quorum: int) -> FactHolders:
        """An index of this round's candidates with at least ``quorum`` votes (their twins count too)."""
        out = FactHolders()
        for c in candidates:
            if c.votes >= quorum:
                out.add(c.subject_key, c.relation, c.object_key)
        return out

    def constraints(self, cand: CandidateRow, schema: KGSchema | None, *, duplicate_similarity: float | None = None,
                    peers: FactHolders | None = None) -> ConstraintInputs:
        """Constraint values :math:`g_j` for one candidate (see the module docstring)."""
        rel, st, ot = cand.relation, cand.subject_type, cand.object_type
        dom = rng = 0.0
        spec = schema.relation_types.get(rel) if schema is not None else None
        if spec is not None and spec.domain:
            dom = 0.0 if st in spec.domain else 1.0
        if spec is not None and spec.range:
            rng = 0.0 if ot in spec.range else 1.0
        sig = self.signatures.get(rel)
        if sig is not None and (spec is None or (not spec.domain and not spec.range)):
            total = sum(sig.values())
            if total >= LEARN_MIN:
                dom = max(dom, 1.0 - sig.get((st, ot), 0) / total)
        functional = 0.0
        if spec is not None and spec.functional:
            functional = float(len(self.objects.get((cand.subject_key, rel), set()) - {cand.object_key}))
        loop = 1.0 if cand.subject_key == cand.object_key else 0.0
        duplicate, notes = 0.0, ()
        twin, where = None, ""
        if duplicate_similarity:
            twin, where = self.holders.twin(cand, duplicate_similarity, schema=schema), "already has"
            if twin is None and peers is not None:
                twin, where = (peers.twin(cand, duplicate_similarity, known=self.holders.known, schema=schema),
                               "is a candidate for")
        if twin is not None:
            new, old, sim = twin
            duplicate = 1.0
            notes = (f"new entity {new} looks like {old} (name similarity {sim:.2f}), which {where} "
                     f"{cand.relation} with the other endpoint; if they are one entity: kgr merge '{old}' '{new}'",)
        return ConstraintInputs(domain_violation=dom, range_violation=rng, functional_conflict=functional,
                                self_loop=loop, duplicate_entity=duplicate, notes=notes)


def functional_losers(promoted: Sequence[CandidateRow], functional: frozenset[str],
                      objects: dict[tuple[str, str], set[str]]) -> dict[str, str]:
    """Promotions that would give a subject a second object on a functional relation this round.

    Per (subject, relation) the candidate with the most votes (then confidence, then key) keeps
    its promotion unless the subject already has a current object (``objects``); the others
    are returned, key → the reason to hold them.
    """
    groups: dict[tuple[str, str], list[CandidateRow]] = defaultdict(list)
    for c in promoted:
        if c.relation in functional:
            groups[(c.subject_key, c.relation)].append(c)
    out: dict[str, str] = {}
    for (subject, rel), cs in groups.items():
        existing = objects.get((subject, rel), set())
        ranked = sorted(cs, key=lambda c: (-c.votes, -c.confidence, c.key))
        keep = None if existing else ranked[0]
        for c in ranked:
            if c is not keep:
                out[c.key] = (f"functional relation {rel}: {subject} already has an object"
                              + (" promoted" if existing else f" with more support this round ({keep.object_key})"))
    return out
