r"""Relation-path and inverse rules mined from the facts themselves (AMIE-style, body length ≤ 2).

A rule says that a relation :math:`r` between :math:`x` and :math:`y` tends to hold wherever
some pattern of other facts joins :math:`x` and :math:`y`. kgr mines two shapes, for every head
relation :math:`r`:

.. math::

    \text{length 1:}\quad & r(x, y) \leftarrow r'(x, y) \quad (r' \ne r), \qquad
                            r(x, y) \leftarrow r'(y, x) \quad (r' = r \text{ allowed: symmetry}) \\
    \text{length 2:}\quad & r(x, y) \leftarrow r_1(x \frown z) \wedge r_2(z \frown y),
                            \qquad z \notin \{x, y\},\ x \ne y

where :math:`r_1(x \frown z)` is :math:`r_1(x, z)` or :math:`r_1(z, x)` (each body atom may be
read in either direction). A candidate triple :math:`(h, r, t)` *fits what the graph knows* when
rules of :math:`r` with a high confidence have their body satisfied for :math:`(h, t)`.

Conventions
-----------
* Input is a :class:`~kgr.evidence.facts.FactTable`; each relation becomes a sparse 0/1 adjacency
  :math:`A_r` (``n × n``, row = head) of its facts with ``weight >= min_weight``. **Self loops are
  dropped** (every evidence module ignores them). A body atom is the matrix :math:`A_{r'}` or
  :math:`A_{r'}^\top`; a length-2 body holds for :math:`(x, y)` iff
  :math:`(M_1 M_2)_{xy} > 0` and :math:`x \ne y`. Without self loops, any middle :math:`z` of
  such a path differs from :math:`x` (:math:`M_1` has no diagonal) and from :math:`y`
  (:math:`M_2` has none), so :math:`z \notin \{x, y\}` holds by construction.
* Counts are over distinct entity pairs; weights above the threshold play no other part.
* **A fact never supports itself.** A length-1 body uses a fact :math:`r'(x, y)` with
  :math:`r' \ne r` or the reversed pair :math:`(y, x) \ne (x, y)`; a length-2 body uses
  facts on the pairs :math:`\{x, z\}` and :math:`\{z, y\}`, and since :math:`z \notin \{x, y\}`
  neither is the pair :math:`\{x, y\}` of the query. So a query :math:`(h, r, t)` that is itself
  a fact of the body table cannot be one of its own body atoms.
* Queries are three parallel integer arrays ``h, r, t`` with the table's ids.

Notes
-----
**Hubs.** A length-2 body's matrix product costs about its number of paths
:math:`\sum_z \operatorname{in}_{M_1}(z)\, \operatorname{out}_{M_2}(z)`; one node with thousands
of edges on both sides makes that millions. When this estimate exceeds ``max_body_paths``, the
middles with the largest contribution are **excluded from that body** (in decreasing order of
contribution, ties by id, until the estimate fits): the rule then reads "… through a middle
:math:`z` that is not one of these hubs". The exclusion is deterministic, recorded on the
rule (:attr:`Rule.excluded_middles`) and applied identically when the rule's body is checked
for queries, so mined statistics and evidence describe the same rule. Paths through a hub say
little anyway (everything located in one country is "co-located").

**Cost** (measured by hand on one core, ``OPENBLAS_NUM_THREADS=1``, Python 3.11, numpy 2.4,
scipy 1.17, best of 5): a synthetic table of 96,000 distinct facts over 30,000 entities and
12 relations (composition, inverse and symmetric patterns plus noise) with five hubs of
1,700–6,000 edges each (3,000 in *and* 3,000 out on one of them): mining all 24 length-1
and 576 length-2 bodies (about 300 sparse products, since a body and its reverse share one)
≈ 0.6 s, 71 rules; evidence for 5,000 queries (half of them facts of the table, 300 on a
hub) against the mining table ≈ 0.1 s (≈ 0.2 s under load). Adversarial case: one node
that is the tail of 495 facts of *every* relation, so that almost every body sits just under
the default cap of 250,000 paths: mining ≈ 1.3 s (≈ 2.4 s with a cap of 10⁶ and 900 facts
per relation). Worst case in general: about :math:`2R^2` products of ``max_body_paths``
paths each.

References
----------
.. [1] L. Galárraga, C. Teflioudi, K. Hose, F. Suchanek, "AMIE: Association Rule Mining under
   Incomplete Evidence in Ontological Knowledge Bases", WWW 2013 (support, head coverage,
   PCA confidence: Sections 4.1–4.3).
.. [2] L. Galárraga, C. Teflioudi, K. Hose, F. Suchanek, "Fast rule mining in ontological
   knowledge bases with AMIE+", VLDB Journal 24(6), 2015 (PCA confidence, Eq. 3; approximations
   for large bodies).

Examples
--------
>>> from kgr.evidence.facts import FactTable
>>> # parent chains 0->1->2, 3->4->5, 6->7->8; grandparent 0->2 and 3->5 only
>>> ft = FactTable.from_triples([(0, 0, 1), (1, 0, 2), (3, 0, 4), (4, 0, 5), (6, 0, 7), (7, 0, 8),
...                              (0, 1, 2), (3, 1, 5)], n_entities=9, n_relations=2)
>>> rs = mine_rules(ft, relation_names=("PARENT", "GRANDPARENT"))
>>> print(rs.rules[-1])
GRANDPARENT(x,y) <- PARENT(x,z) & PARENT(z,y)
>>> rs.rules[-1].support, rs.rules[-1].std_confidence, rs.rules[-1].pca_confidence
(2, 0.6666666666666666, 1.0)
>>> ev = rs.evidence([6, 6, 0], [1, 1, 1], [8, 7, 2])
>>> ev.best_confidence.tolist(), ev.n_fired.tolist()
([1.0, 0.0, 0.0], [1, 0, 0])

The known fact ``(0, GRANDPARENT, 2)`` gets no rule: without its own support instance the rule
would have support 1 < ``min_support``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgr.errors import KgrValidationError
from kgr.evidence.adjacency import Adjacency, HeadIndex, body_holds, relation_adjacency
from kgr.evidence.facts import FactTable, check_queries, lookup
from kgr.evidence.rule_mining import CONFIDENCE_MEASURES, RuleEmitter, mine_length1, mine_length2, mining_settings

__all__ = ["Rule", "RuleSet", "RuleEvidence", "mine_rules", "CONFIDENCE_MEASURES"]


def _atom_name(rel: int, names: tuple[str, ...] | None) -> str:
    return names[rel] if names is not None else f"r{rel}"


@dataclass(frozen=True)
class Rule:
    r"""One mined rule :math:`r(x, y) \leftarrow \text{body}` with its statistics.

    Attributes
    ----------
    head : int
        Head relation id :math:`r`.
    body : tuple of (int, bool)
        One or two atoms ``(relation, inverse)``. With one atom, ``inverse=False`` reads
        :math:`r'(x, y)` and ``True`` reads :math:`r'(y, x)`. With two, the first joins
        :math:`x` and :math:`z` (``r1(x,z)``, or ``r1(z,x)`` when inverse) and the second joins
        :math:`z` and :math:`y` (``r2(z,y)``, or ``r2(y,z)``).
    support : int
        Head facts :math:`r(x, y)` whose pair satisfies the body.
    body_size : int
        Distinct pairs :math:`(x, y)`, :math:`x \ne y`, satisfying the body.
    pca_body_size : int
        Those body pairs whose :math:`x` has at least one :math:`r`-fact.
    head_size : int
        :math:`|r|`, the number of :math:`r`-facts.
    excluded_middles : tuple of int
        Hub entities not allowed as the middle :math:`z` (length-2 bodies over
        ``max_body_paths``; empty otherwise).
    relation_names : tuple of str or None
        Names used by ``str(rule)`` (``r0, r1, …`` without them).
    """

    head: int
    body: tuple[tuple[int, bool], ...]
    support: int
    body_size: int
    pca_body_size: int
    head_size: int
    excluded_middles: tuple[int, ...] = ()
    relation_names: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def std_confidence(self) -> float:
        """``support / body_size``."""
        return self.support / self.body_size if self.body_size else 0.0

    @property
    def pca_confidence(self) -> float:
        """``support / pca_body_size`` (AMIE's partial-completeness confidence)."""
        return self.support / self.pca_body_size if self.pca_body_size else 0.0

    @property
    def head_coverage(self) -> float:
        """``support / head_size``."""
        return self.support / self.head_size if self.head_size else 0.0

    def __str__(self) -> str:
        nm = self.relation_names
        head = f"{_atom_name(self.head, nm)}(x,y)"
        if len(self.body) == 1:
            (rel, inv), = self.body
            return f"{head} <- {_atom_name(rel, nm)}({'y,x' if inv else 'x,y'})"
        (r1, i1), (r2, i2) = self.body
        a1 = f"{_atom_name(r1, nm)}({'z,x' if i1 else 'x,z'})"
        a2 = f"{_atom_name(r2, nm)}({'y,z' if i2 else 'z,y'})"
        return f"{head} <- {a1} & {a2}"


@dataclass(frozen=True)
class RuleEvidence:
    """Rule evidence per query (arrays of shape ``(q,)``).

    Attributes
    ----------
    best_confidence : numpy.ndarray of float64
        Largest confidence of a firing rule of the query's relation; 0 when none fires.
    noisy_or : numpy.ndarray of float64
        :math:`1 - \\prod_i (1 - c_i)` over the firing rules; 0 when none fires.
    n_fired : numpy.ndarray of int64
        Number of firing rules.
    best_support : numpy.ndarray of int64
        Largest support of a firing rule; 0 when none fires.
    """

    best_confidence: np.ndarray
    noisy_or: np.ndarray
    n_fired: np.ndarray
    best_support: np.ndarray


@dataclass(frozen=True)
class RuleSet:
    r"""Mined rules and the settings they were mined with; scores queries with :meth:`evidence`.

    Attributes
    ----------
    rules : tuple of Rule
        Sorted by head relation, then decreasing confidence (the ``confidence`` measure),
        then body.
    facts : FactTable
        The table the rules were mined from (the default body table of :meth:`evidence`);
        not part of equality (two rule sets are equal when their rules and settings are).
    confidence : {"pca", "std"}
        The measure used by the ``min_confidence`` filter and by :meth:`evidence`.
    min_support, min_head_coverage, min_confidence, min_weight, max_body_paths
        The mining settings (see :func:`mine_rules`).
    relation_names : tuple of str or None
        Relation names for printing.
    """

    rules: tuple[Rule, ...]
    facts: FactTable = field(repr=False, compare=False)
    confidence: str
    min_support: int
    min_head_coverage: float
    min_confidence: float
    min_weight: float
    max_body_paths: int
    relation_names: tuple[str, ...] | None = None
    _adj: Adjacency | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.rules)

    def __str__(self) -> str:
        lines = [f"{len(self.rules)} rules ({self.confidence} confidence)"]
        for rule in self.rules:
            lines.append(f"  {rule}   supp={rule.support} hc={rule.head_coverage:.3f} "
                         f"std={rule.std_confidence:.3f} pca={rule.pca_confidence:.3f}")
        return "\n".join(lines)

    def _mined_adjacency(self) -> Adjacency:
        if self._adj is None:
            object.__setattr__(self, "_adj", relation_adjacency(self.facts, self.min_weight))
        assert self._adj is not None
        return self._adj

    def _score(self, s: np.ndarray, body: np.ndarray, pca: np.ndarray) -> np.ndarray:
        den = pca if self.confidence == "pca" else body
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, s / np.maximum(den, 1), 0.0)

    def evidence(self, h: Any, r: Any, t: Any, *, facts: FactTable | None = None,
                 leave_one_out: bool = True) -> RuleEvidence:
        r"""Rule evidence for the queries :math:`(h_i, r_i, t_i)`, vectorised.

        .. math::

            F_i = \{\rho \text{ rule of } r_i : \text{body}_\rho(h_i, t_i)\}, \quad
            \text{best}_i = \max_{\rho \in F_i} c_\rho, \quad
            \text{noisy-or}_i = 1 - \prod_{\rho \in F_i} (1 - c_\rho)

        with :math:`c_\rho` the rule's confidence (``self.confidence``).

        Parameters
        ----------
        h, r, t : array_like of int, shape (q,)
            Queries: head entity, relation, tail entity ids.
        facts : FactTable, optional
            The table the bodies are checked on (same id spaces as the mining table, e.g. the
            promoted graph plus staged edges). Default: the mining table. Its facts with weight
            below ``min_weight`` and its self loops are ignored, as in mining.
        leave_one_out : bool, default True
            When a query is itself a fact of the *mining* table, remove its own contribution to
            the statistics of the rules whose body it satisfied there: support − 1 and
            :math:`|r|` − 1; a rule only fires if it still passes the mining thresholds. The
            body sizes are kept (see Notes).

        Returns
        -------
        RuleEvidence
            ``best_confidence``, ``noisy_or``, ``n_fired``, ``best_support``, each of shape
            ``(q,)``.

        Raises
        ------
        KgrValidationError
            Query arrays of different lengths, non-integer ids, ids outside the table's id
            spaces, or a body table with other id spaces.

        Notes
        -----
        A fact never fires a rule for itself (module docstring); self-loop queries
        (:math:`h = t`) fire nothing. ``best_support`` is the largest support of a firing
        rule (not necessarily the most confident one's). The noisy-or treats rules as
        independent; rules sharing atoms are not, so read it as a score, not a probability.

        Leave-one-out is exact for the support, the head coverage and the standard confidence
        when the body does not use :math:`r` itself (removing an :math:`r`-fact does not
        change such a body, and the body still holds for the query's pair). It is first
        order otherwise: a body through :math:`r` is not re-evaluated, and the PCA
        denominator is not reduced when :math:`h` had no other :math:`r`-fact.

        Cost: one key look-up per length-1 body and one row-wise sparse intersection
        :math:`O(\sum_i \deg h_i + \deg t_i)` per length-2 body, over the queries whose relation
        has rules with that body. About 0.1 s for 5,000 queries on 100,000 facts (module Notes).

        References
        ----------
        .. [1] Galárraga et al., AMIE, WWW 2013; AMIE+, VLDB J. 2015.

        Examples
        --------
        >>> ft = FactTable.from_triples([(0, 0, 1), (1, 0, 0), (2, 0, 3), (3, 0, 2), (4, 0, 5)],
        ...                             n_entities=6, n_relations=1)
        >>> rs = mine_rules(ft, relation_names=("SPOUSE",))
        >>> [str(x) for x in rs.rules]
        ['SPOUSE(x,y) <- SPOUSE(y,x)']
        >>> r0 = rs.rules[0]
        >>> r0.support, r0.body_size, r0.pca_body_size   # 5 has no SPOUSE fact of its own
        (4, 5, 4)
        >>> rs.evidence([5, 0], [0, 0], [4, 1]).best_confidence.tolist()   # (0,1) without itself
        [1.0, 0.75]
        """
        body_table = self.facts if facts is None else facts
        if body_table.n_relations != self.facts.n_relations or body_table.n_entities != self.facts.n_entities:
            raise KgrValidationError("the body table must have the mining table's n_entities and n_relations",
                                     field="facts")
        hq, rq, tq = check_queries(body_table, h, r, t)
        q = len(hq)
        best = np.zeros(q)
        keep_prob = np.ones(q)
        n_fired = np.zeros(q, dtype=np.int64)
        best_sup = np.zeros(q, dtype=np.int64)
        if q == 0 or not self.rules:
            return RuleEvidence(best, 1.0 - keep_prob, n_fired, best_sup)
        mined = self._mined_adjacency()
        adj = mined if body_table is self.facts else relation_adjacency(body_table, self.min_weight)
        n = adj.n
        in_mined = np.zeros(q, dtype=bool)
        if leave_one_out:
            _, in_mined = lookup(mined.gkeys, (rq * n + hq) * n + tq)
            in_mined &= hq != tq
        head_sizes = mined.sizes

        by_body: dict[tuple[tuple[tuple[int, bool], ...], tuple[int, ...]], list[Rule]] = {}
        for rule in self.rules:
            by_body.setdefault((rule.body, rule.excluded_middles), []).append(rule)
        for (body, excl), rules in by_body.items():
            heads = np.array(sorted({ru.head for ru in rules}))
            sel = np.flatnonzero(np.isin(rq, heads) & (hq != tq))
            if len(sel) == 0:
                continue
            hold = body_holds(adj, body, excl, hq[sel], tq[sel])
            # did the query's own fact count in this rule's support? (body held in the mining table)
            loo = in_mined[sel]
            if loo.any():
                if adj is mined:
                    loo = loo & hold
                else:
                    held = np.zeros(len(sel), dtype=bool)
                    held[loo] = body_holds(mined, body, excl, hq[sel][loo], tq[sel][loo])
                    loo = held
            for rule in rules:
                mask = hold & (rq[sel] == rule.head)
                if not mask.any():
                    continue
                idx = sel[mask]
                d = loo[mask].astype(np.int64)
                s = rule.support - d
                hs = head_sizes[rule.head] - d
                conf = self._score(s, np.full(len(idx), rule.body_size), np.full(len(idx), rule.pca_body_size))
                with np.errstate(divide="ignore", invalid="ignore"):
                    hc = np.where(hs > 0, s / np.maximum(hs, 1), 0.0)
                fire = (s >= self.min_support) & (hc >= self.min_head_coverage) & (conf >= self.min_confidence)
                if not fire.all():
                    idx, s, conf = idx[fire], s[fire], conf[fire]
                best[idx] = np.maximum(best[idx], conf)
                keep_prob[idx] *= 1.0 - conf
                n_fired[idx] += 1
                best_sup[idx] = np.maximum(best_sup[idx], s)
        return RuleEvidence(best, 1.0 - keep_prob, n_fired, best_sup)


def mine_rules(
    facts: FactTable,
    *,
    min_support: int = 2,
    min_head_coverage: float = 0.01,
    min_confidence: float = 0.05,
    confidence: str = "pca",
    min_weight: float = 0.0,
    max_body_paths: int = 250_000,
    relation_names: tuple[str, ...] | None = None,
) -> RuleSet:
    r"""Mine all length-1 and length-2 rules of every relation that pass the thresholds.

    For a rule :math:`\rho: r(x, y) \leftarrow B(x, y)` over the 0/1 adjacencies
    (:math:`B = A_{r'}`, :math:`A_{r'}^\top` or a product :math:`M_1 M_2` of two of them,
    diagonal removed):

    .. math::

        \operatorname{supp}(\rho) &= \#\{(x, y) : B(x, y) \wedge r(x, y)\} \\
        \operatorname{hc}(\rho) &= \operatorname{supp}(\rho) / |r| \\
        \operatorname{conf}(\rho) &= \operatorname{supp}(\rho) / \#\{(x, y) : B(x, y)\} \\
        \operatorname{conf}_{\mathrm{pca}}(\rho) &=
            \operatorname{supp}(\rho) / \#\{(x, y) : B(x, y) \wedge \exists y' : r(x, y')\}

    A rule is kept when :math:`\operatorname{supp} \ge` ``min_support``,
    :math:`\operatorname{hc} \ge` ``min_head_coverage`` and the ``confidence`` measure
    :math:`\ge` ``min_confidence``.

    Parameters
    ----------
    facts : FactTable
        The facts to mine (typically the promoted graph).
    min_support : int, default 2
        A rule seen once is an anecdote; 2 also keeps a rule alive when leave-one-out scoring
        removes a query's own support instance.
    min_head_coverage : float in [0, 1], default 0.01
        AMIE's default: the rule must explain at least 1 % of the head relation's facts.
    min_confidence : float in [0, 1], default 0.05
        Low on purpose: weak rules add little to the noisy-or and the scorer learns their
        weight; it removes the bodies that are noise (confidence near the base rate).
    confidence : {"pca", "std"}, default "pca"
        Which confidence filters and scores. PCA confidence (AMIE) does not count a body pair
        as a counter-example when :math:`x` has no :math:`r`-fact at all (the graph is
        incomplete, not contradicting); it is the better predictor of precision [2]_.
    min_weight : float >= 0, default 0
        Only facts with ``weight >= min_weight`` are mined and used as bodies.
    max_body_paths : int >= 1, default 250,000
        Cap on a length-2 body's path count :math:`\sum_z \operatorname{in}_{M_1}(z)
        \operatorname{out}_{M_2}(z)`; above it the largest-contribution middles are excluded
        (module Notes). A body at the cap costs about 5 ms, so the worst case for
        :math:`R = 12` stays near 1.5 s; ordinary bodies of a 100,000-fact table have a few
        thousand paths. Raise it for larger tables if the hub exclusions matter.
    relation_names : tuple of str, optional
        One name per relation, for ``str(rule)``.

    Returns
    -------
    RuleSet
        The rules, sorted by head, decreasing confidence, body; and the settings.

    Raises
    ------
    KgrValidationError
        A threshold out of range, an unknown ``confidence`` measure, ``relation_names`` of the
        wrong length, or a table too large for int64 pair keys
        (:math:`R n^2 \ge 2^{62}`).

    Notes
    -----
    Every relation's 0/1 adjacency is built once. Length-1 bodies are the :math:`2R`
    atoms. The :math:`4R^2` length-2 bodies come in pairs: :math:`(a_1, a_2)` and
    :math:`(a_2^{-1}, a_1^{-1})` have matrices :math:`B` and :math:`B^\top`, so one product
    serves both (about :math:`2R^2` products). A body's pairs are matched against all head
    relations at once (binary search of the keys of a small body, one sparse elementwise
    product for a large one); PCA denominators are row counts of :math:`B`
    against the "has an :math:`r`-fact" indicator. Cost: :math:`O(\sum_\text{bodies}
    \text{paths} + R^2 (n + m))`; 100,000 facts, 30,000 entities, 12 relations with hubs:
    ≈ 0.6 s on one core (module Notes).

    An empty table, or one whose facts are all self loops or under ``min_weight``, gives an
    empty rule set.

    References
    ----------
    .. [1] L. Galárraga et al., "AMIE: Association Rule Mining under Incomplete Evidence in
       Ontological Knowledge Bases", WWW 2013, Sections 4.1–4.3.
    .. [2] L. Galárraga et al., "Fast rule mining in ontological knowledge bases with AMIE+",
       VLDB Journal 24(6), 2015, Section 4 (PCA confidence).

    Examples
    --------
    >>> ft = FactTable.from_triples([(0, 0, 1), (1, 0, 0), (2, 0, 3), (0, 1, 1)],
    ...                             n_entities=4, n_relations=2)
    >>> rs = mine_rules(ft, min_support=1, relation_names=("SPOUSE", "HUSBAND"))
    >>> for x in rs.rules:
    ...     print(f"{str(x):30} supp={x.support} std={x.std_confidence:.2f} pca={x.pca_confidence:.2f}")
    SPOUSE(x,y) <- SPOUSE(y,x)     supp=2 std=0.67 pca=1.00
    SPOUSE(x,y) <- HUSBAND(x,y)    supp=1 std=1.00 pca=1.00
    SPOUSE(x,y) <- HUSBAND(y,x)    supp=1 std=1.00 pca=1.00
    HUSBAND(x,y) <- SPOUSE(x,y)    supp=1 std=0.33 pca=1.00
    HUSBAND(x,y) <- SPOUSE(y,x)    supp=1 std=0.33 pca=1.00
    """
    settings = mining_settings(facts, min_support=min_support, min_head_coverage=min_head_coverage,
                                min_confidence=min_confidence, confidence=confidence, min_weight=min_weight,
                                max_body_paths=max_body_paths, relation_names=relation_names)
    adj = relation_adjacency(facts, settings["min_weight"])
    if adj.sizes.sum() == 0:
        return RuleSet(rules=(), facts=facts, _adj=adj, **settings)
    emit = RuleEmitter(adj.sizes, settings)
    index = HeadIndex.build(adj)
    mine_length1(adj, index, emit)
    mine_length2(adj, index, emit, settings["min_support"], settings["max_body_paths"])
    rules = [Rule(*found, settings["relation_names"]) for found in emit.rules]
    measure = (lambda ru: ru.pca_confidence) if confidence == "pca" else (lambda ru: ru.std_confidence)
    rules.sort(key=lambda ru: (ru.head, -measure(ru), len(ru.body), ru.body))
    return RuleSet(rules=tuple(rules), facts=facts, _adj=adj, **settings)


