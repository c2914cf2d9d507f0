r"""The evidence graph of a settle: every staged edge in play as integer facts, built from evidence only.

A settle (:mod:`kgr.promotion.settle`) scores every *managed* staged edge — pending, held,
promoted by the calibrated policy, or rejected by a constraint — and cuts once. Its structural
evidence (rules, role profiles, degrees, the embedding, the constraint checks) is computed on
one graph:

.. math::

    G = \{(s, r, o, w)\ :\ \text{managed rows}\} \cup \{(s, r, o, w)\ :\ \text{pinned edges}\},

vote-weighted (:math:`w` = distinct sources), where *pinned* edges are the current promoted edges
another policy (or a person, ``apply_decisions``) promoted: the calibrated policy reads them as
given and never retires them. :math:`G` depends on the staged evidence only — never on which
managed edges are promoted at the moment — so the features of a settle, and therefore its cut,
are the same whatever history led to the evidence (the order independence of issue 29).

Conventions: ids follow sorted keys (:class:`~kgr.evidence.facts.Vocabulary`); a fact both pinned and
managed counts once with the larger weight; self loops are kept in the table and ignored by every
evidence module. :attr:`EvidenceGraph.digest` names the table's content (keys and weights): the
cache key of everything fitted on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kgr.evidence.facts import FactTable, Vocabulary
from kgr.model.promotion import CandidateRow, EdgeList
from kgr.model.schema import KGSchema

__all__ = ["Evidence", "EvidenceGraph", "build_graph"]


@dataclass(frozen=True)
class Evidence:
    """What a settle knows: the managed rows, the pinned promoted edges, entity types, the schema.

    Attributes
    ----------
    rows : sequence of CandidateRow
        Every managed staged edge (one row each), in a deterministic order (by key).
    pinned : EdgeList
        Current promoted edges the policy does not manage (given).
    entity_types : dict of str to str
        Entity key → type, for every endpoint.
    schema : KGSchema or None
        Declared domain, range and functional relations.
    """

    rows: Sequence[CandidateRow]
    pinned: EdgeList = field(default_factory=EdgeList)
    entity_types: dict[str, str] = field(default_factory=dict)
    schema: KGSchema | None = None


@dataclass(frozen=True)
class EvidenceGraph:
    """:class:`Evidence` as integer facts.

    Attributes
    ----------
    vocab : Vocabulary
    facts : FactTable
        Managed rows and pinned edges, each ``(h, r, t)`` once, vote-weighted.
    pinned : numpy.ndarray of bool
        Per fact: a pinned edge.
    h, r, t : numpy.ndarray of int64
        The managed rows' ids (parallel to ``Evidence.rows``).
    row : numpy.ndarray of int64
        Each managed row's position in ``facts``.
    digest : str
        SHA-256 of the facts and their names (the cache key of what is fitted on them).
    """

    vocab: Vocabulary
    facts: FactTable
    pinned: np.ndarray
    h: np.ndarray
    r: np.ndarray
    t: np.ndarray
    row: np.ndarray
    digest: str

    @property
    def degree(self) -> np.ndarray:
        """Distinct facts (self loops aside) each entity takes part in, as head or tail."""
        f = self.facts
        keep = f.head != f.tail
        return np.bincount(np.concatenate([f.head[keep], f.tail[keep]]), minlength=f.n_entities)


def _ids(subject: Sequence[str], relation: Sequence[str], obj: Sequence[str], eid: dict[str, int],
         rid: dict[str, int]) -> np.ndarray:
    """``(h, r, t)`` ids of parallel key lists, shape (n, 3) (dict lookups mapped in C, no per-edge tuples)."""
    n = len(subject)
    out = np.empty((n, 3), dtype=np.int64)
    for col, names, index in ((0, subject, eid), (1, relation, rid), (2, obj, eid)):
        out[:, col] = np.fromiter(map(index.__getitem__, names), dtype=np.int64, count=n)
    return out


def build_graph(ev: Evidence) -> EvidenceGraph:
    """The evidence graph of ``ev`` (see the module docstring).

    Parameters
    ----------
    ev : Evidence
        The managed rows and the pinned edges.

    Returns
    -------
    EvidenceGraph
    """
    keys: dict[str, str] = {}
    for c in ev.rows:  # a row's own endpoint types first; then the pinned-only endpoints'
        keys.setdefault(c.subject_key, c.subject_type)
        keys.setdefault(c.object_key, c.object_type)
    pinned_keys = set(ev.pinned.subject)
    pinned_keys.update(ev.pinned.object)
    for k in pinned_keys.difference(keys):
        keys[k] = ev.entity_types.get(k, k.partition(":")[0])
    vocab = Vocabulary.build(keys.items(), {c.relation for c in ev.rows} | set(ev.pinned.relation))
    eid, rid = vocab.entity_index(), vocab.relation_index()
    c_ids = _ids([c.subject_key for c in ev.rows], [c.relation for c in ev.rows], [c.object_key for c in ev.rows],
                 eid, rid)
    c_w = np.array([max(1, c.votes) for c in ev.rows], dtype=np.float64)
    p_ids = _ids(ev.pinned.subject, ev.pinned.relation, ev.pinned.object, eid, rid)
    p_w = np.asarray(ev.pinned.weight, dtype=np.float64).clip(min=1.0)
    all_ids, all_w = np.concatenate([c_ids, p_ids]), np.concatenate([c_w, p_w])
    is_pinned = np.concatenate([np.zeros(len(c_ids), bool), np.ones(len(p_ids), bool)])
    n, R = vocab.n_entities, vocab.n_relations
    if len(all_ids):
        code = (all_ids[:, 0] * R + all_ids[:, 1]) * n + all_ids[:, 2]
        uniq, inv = np.unique(code, return_inverse=True)
        w = np.zeros(len(uniq))
        np.maximum.at(w, inv, all_w)
        pinned = np.zeros(len(uniq), bool)
        np.logical_or.at(pinned, inv, is_pinned)
        h, rest = np.divmod(uniq, R * n)
        r, t = np.divmod(rest, n)
        facts = FactTable(h, r, t, w, n, R)
        rows = inv[:len(c_ids)].astype(np.int64)
    else:
        facts = FactTable.from_triples([], n_entities=n, n_relations=R)
        pinned, rows = np.zeros(0, bool), np.zeros(0, dtype=np.int64)
    digest = hashlib.sha256()
    for part in (vocab.entities, vocab.relations):
        digest.update("\x1f".join(part).encode())
        digest.update(b"\x1e")
    for arr in (facts.head, facts.rel, facts.tail, facts.weight, pinned):
        digest.update(np.ascontiguousarray(arr).tobytes())
    return EvidenceGraph(vocab=vocab, facts=facts, pinned=pinned, h=c_ids[:, 0].copy(), r=c_ids[:, 1].copy(),
                         t=c_ids[:, 2].copy(), row=rows, digest=digest.hexdigest())
