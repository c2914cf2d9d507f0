#!/usr/bin/env python3
"""Labelled streams of triple assertions for the promotion benchmark (``scripts/bench_promotion.py``).

Every policy is measured on the same streams; each stream knows, for every triple it can make a
policy see, whether it is true and, if not, what kind of falsehood it is. Three streams:

``networkx`` (:func:`build_stream`, :func:`networkx_stream`)
    The four graphs networkx ships (Davis' southern women, the Florentine families, Zachary's
    karate club, Les Misérables) plus a synthetic typed research world, as **assertions**: each
    true triple asserted by 1–4 of 2,000 sources, false triples of four kinds (``swap``,
    ``type``, ``neardup``, ``repeated``; :data:`VOTES`, :data:`FALSE_SHARE`). The content is
    exactly what ``bench_promotion.py`` used before these streams moved here (same assertions,
    same order, for the same seed; a test pins it).

``text`` (:func:`text_stream`)
    A synthetic corpus about a small typed world (people, companies, universities, cities; seven
    relations, two of them functional) as **documents**, to be ingested through kgr's real
    pipeline with :class:`HallucinatingExtractor` around kgr's offline ``RulesExtractor``. The
    sentences state true facts with the schema's trigger phrases; the extractor adds plausible
    false triples deterministically per chunk text. Re-reading the corpus (the chunks that mention
    both endpoints of a candidate) finds the statements of true facts in other chunks, and, for
    some of the repeated falsehoods, a sentence that denies them. The noise model is in
    :class:`HallucinatingExtractor` and :func:`text_stream`.

``wordnet`` (:func:`public_kg_stream`)
    A real public knowledge graph: a typed subset of Princeton WordNet 3.0 (people, roles,
    places, kinds of place, natural features, groups; eight relations; 3,971 true triples)
    committed under ``scripts/data/`` (its README says where it comes from and how to regenerate
    it), as **assertions** with the networkx stream's four false kinds plus ``sibling``: a true
    triple with an endpoint replaced by a sibling in WordNet's hierarchy (another entity sharing
    a class with it: "Lisbon PART_OF Spain"), the most plausible falsehood a KG of this kind
    has. WordNet ships no verified negatives (CoDEx does, but its entity labels are not
    obtainable here), so the fifth kind is generated, not curated.

Common shape: :class:`LabelledStream` — a name, the KG schema, ``truth``/``kind`` for every
triple the stream can produce, the ``waves`` (assertions and/or documents), the extractor for the
documents, ``votes`` (distinct sources per triple over the whole stream) and ``notes`` (sizes,
noise model, provenance). Triple identities are ``(subject key, relation, object key)`` with keys
from :func:`kgr.model.canonical.entity_key`, exactly as staging computes them.

:func:`oracle_frontier` takes any of them and traces the best (Acceptance, FMR) a policy can reach
deciding on votes, declared types, common neighbours in the complete true graph and novelty.

``python scripts/promotion_streams.py`` prints the sizes of the three streams (``--json`` for
all their notes).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import random
import string
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from kgr.extract.base import ExtractionResult, Extractor
from kgr.extract.rules import RulesExtractor
from kgr.ingest.chunking import ChunkingConfig, chunk_text
from kgr.model.canonical import canonical_name, entity_key, name_similarity
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion

__all__ = [
    # the networkx stream (moved from bench_promotion.py)
    "RELATIONS", "KINDS", "VOTES", "FALSE_SHARE", "Triple", "schema", "networkx_kg", "synthetic_kg", "Stream",
    "build_stream", "oracle_frontier",
    # the common stream type
    "Ident", "Wave", "LabelledStream", "networkx_stream",
    # the text stream
    "TEXT_RELATIONS", "TEXT_KINDS", "TextWorld", "text_world", "text_schema", "Hallucination",
    "HallucinatingExtractor", "extract_documents", "write_documents", "text_stream",
    # the public KG stream
    "WORDNET_SUBSET", "KG_KINDS", "KG_VOTES", "KG_FALSE_SHARE", "KGData", "load_wordnet_subset", "public_kg_stream",
    "all_streams",
]

Ident = tuple[str, str, str]

# --------------------------------------------------------------------------------------------
# The networkx stream (moved from bench_promotion.py; content unchanged)
# --------------------------------------------------------------------------------------------

#: relation -> (domain type, range type, functional)
RELATIONS: dict[str, tuple[str, str, bool]] = {
    "ATTENDED": ("Person", "Event", False),
    "MARRIED_INTO": ("Family", "Family", False),
    "FRIEND_OF": ("Member", "Member", False),
    "SIDED_WITH": ("Member", "Faction", True),
    "APPEARS_WITH": ("Character", "Character", False),
    "WORKS_AT": ("Researcher", "Organization", False),
    "LOCATED_IN": ("Organization", "City", True),
    "BORN_IN": ("Researcher", "City", True),
    "KNOWS": ("Researcher", "Researcher", False),
    "AUTHORED": ("Researcher", "Paper", False),
    "CITES": ("Paper", "Paper", False),
    "ABOUT": ("Paper", "Topic", False),
}

KINDS = ("true", "swap", "type", "neardup", "repeated")
#: votes (distinct sources) per kind: values and weights
VOTES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    "true": ((1, 2, 3, 4), (0.1, 0.3, 0.3, 0.3)),
    "swap": ((1, 2), (0.7, 0.3)),
    "type": ((1, 2, 3), (0.5, 0.3, 0.2)),
    "neardup": ((1, 2, 3), (0.4, 0.4, 0.2)),
    "repeated": ((2, 3, 4), (0.5, 0.3, 0.2)),
}
#: false triples of each kind per true triple
FALSE_SHARE = {"swap": 0.10, "type": 0.05, "neardup": 0.075, "repeated": 0.075}


@dataclass(frozen=True)
class Triple:
    s: str
    st: str
    r: str
    o: str
    ot: str

    @property
    def s_key(self) -> str:
        return entity_key(self.st, self.s)

    @property
    def o_key(self) -> str:
        return entity_key(self.ot, self.o)

    @property
    def ident(self) -> tuple[str, str, str]:
        return self.s_key, self.r, self.o_key


def schema(*, functional: bool = True) -> KGSchema:
    """The bench's KG schema: domain and range from the data; ``functional=False`` drops the flags."""
    types = sorted({t for d, r, _ in RELATIONS.values() for t in (d, r)})
    return KGSchema.model_validate({
        "name": "bench-promotion",
        "entity_types": {t: {} for t in types},
        "relation_types": {r: {"domain": [d], "range": [o], "functional": f and functional}
                           for r, (d, o, f) in RELATIONS.items()},
    })


def networkx_kg() -> list[Triple]:
    """The four graphs networkx ships, typed (475 facts)."""
    out: list[Triple] = []
    davis = nx.davis_southern_women_graph()
    for u, v in davis.edges():
        person, event = (u, v) if davis.nodes[u]["bipartite"] == 0 else (v, u)
        out.append(Triple(person, "Person", "ATTENDED", f"Event {event}", "Event"))
    for u, v in nx.florentine_families_graph().edges():
        out.append(Triple(u, "Family", "MARRIED_INTO", v, "Family"))
    karate = nx.karate_club_graph()
    for u, v in karate.edges():
        out.append(Triple(f"Member {u}", "Member", "FRIEND_OF", f"Member {v}", "Member"))
    for u, club in karate.nodes(data="club"):
        out.append(Triple(f"Member {u}", "Member", "SIDED_WITH", club, "Faction"))
    for u, v in nx.les_miserables_graph().edges():
        out.append(Triple(u, "Character", "APPEARS_WITH", v, "Character"))
    return out


_SYL = ["ka", "ro", "lin", "ve", "sto", "mar", "ti", "an", "del", "su", "be", "ra", "no", "qui", "ther", "ul",
        "fen", "da", "gor", "is", "mo", "pel", "za", "wen", "cor", "li", "has", "tu", "bri", "om"]


def _names(n: int, rng: random.Random, parts: int, suffix: str = "") -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        words = ["".join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).capitalize() for _ in range(parts)]
        name = " ".join(words) + suffix
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def synthetic_kg(n_triples: int, rng: random.Random) -> list[Triple]:
    """A typed research-world graph with communities, about ``n_triples`` facts (~5.8 per researcher)."""
    if n_triples <= 0:
        return []
    n_people = max(20, round(n_triples / 5.8))
    n_orgs = max(3, n_people // 15)
    people = _names(n_people, rng, 2)
    orgs = _names(n_orgs, rng, 1, " Institute")
    cities = _names(max(3, n_orgs // 4 + 2), rng, 1)
    topics = _names(20, rng, 1, " Theory")
    out: list[Triple] = []
    org_of = {}
    for o in orgs:
        out.append(Triple(o, "Organization", "LOCATED_IN", rng.choice(cities), "City"))
    members: dict[str, list[str]] = defaultdict(list)
    for p in people:
        org = rng.choice(orgs)
        org_of[p] = org
        members[org].append(p)
        out.append(Triple(p, "Researcher", "WORKS_AT", org, "Organization"))
        if rng.random() < 0.5:
            out.append(Triple(p, "Researcher", "BORN_IN", rng.choice(cities), "City"))
    knows: set[tuple[str, str]] = set()
    for p in people:
        for _ in range(2):
            pool = members[org_of[p]] if rng.random() < 0.8 and len(members[org_of[p]]) > 1 else people
            q = rng.choice(pool)
            if q != p and (p, q) not in knows and (q, p) not in knows:
                knows.add((p, q))
                out.append(Triple(p, "Researcher", "KNOWS", q, "Researcher"))
    papers: list[str] = []
    for i in range(n_people // 2):
        title = f"Paper {i} on {rng.choice(topics).split()[0]}"
        org = rng.choice(orgs)
        authors = rng.sample(members[org], min(len(members[org]), rng.randint(1, 3))) or [rng.choice(people)]
        for a in authors:
            out.append(Triple(a, "Researcher", "AUTHORED", title, "Paper"))
        out.append(Triple(title, "Paper", "ABOUT", rng.choice(topics), "Topic"))
        if papers:
            for cited in {papers[int(len(papers) * rng.random() ** 2)] for _ in range(rng.randint(0, 3))}:
                out.append(Triple(title, "Paper", "CITES", cited, "Paper"))
        papers.append(title)
    return out


def _typo(name: str, rng: random.Random, taken: set[str], etype: str) -> str | None:
    """A plausible misspelling whose canonical key differs from every known entity's."""
    letters = [i for i, ch in enumerate(name) if ch.isalpha()]
    for _ in range(20):
        i = rng.choice(letters)
        op = rng.randrange(4)
        if op == 0 and i + 1 < len(name) and name[i + 1].isalpha():  # swap two letters
            cand = name[:i] + name[i + 1] + name[i] + name[i + 2:]
        elif op == 1 and len(letters) > 3:  # drop a letter
            cand = name[:i] + name[i + 1:]
        elif op == 2:  # double a letter
            cand = name[:i] + name[i] + name[i:]
        else:  # a neighbouring letter
            cand = name[:i] + rng.choice(string.ascii_lowercase) + name[i + 1:]
        if entity_key(etype, cand) not in taken:
            return cand
    return None


@dataclass
class Stream:
    assertions: list[TripleAssertion]
    kind: dict[tuple[str, str, str], str]   # triple ident -> kind
    votes: dict[tuple[str, str, str], int]
    schema: KGSchema
    n_real: int
    n_synthetic: int


def _false_triples(
    true: dict[Ident, Triple],
    rng: random.Random,
    shares: dict[str, float],
    *,
    taken: set[str],
    entities: dict[str, dict[str, str]],
    adj: dict[str, set[str]],
    forbidden: frozenset[Ident] | set[Ident] = frozenset(),
    ranges: dict[str, set[str]] | None = None,
    siblings: dict[str, list[str]] | None = None,
) -> dict[Ident, tuple[Triple, str]]:
    """False triples of each kind in ``shares`` (per true triple), drawn from the true ones.

    ``swap``: one endpoint replaced by a random entity of its type; ``type``: the object replaced
    by an entity of a type outside the relation's range (``ranges``; the true object's type when
    not given); ``neardup``: an endpoint replaced by a misspelling that canonicalises to a new key
    (added to ``taken``); ``repeated``: the object replaced by an entity of its type two hops away
    in the true graph (half the time) or anywhere (the other half); ``sibling``: an endpoint
    replaced by one of its ``siblings`` (entities of its type sharing a class with it). Never a
    true triple, a self loop, or one in ``forbidden`` (triples known to be true although not
    listed as such). With ``forbidden``, ``ranges`` and ``siblings`` left out and the networkx
    stream's shares, the random draws are exactly those of the original ``build_stream``.
    """
    names_by_type = {k: sorted(v.values()) for k, v in entities.items()}
    true_list = sorted(true.values(), key=lambda t: t.ident)
    false: dict[Ident, tuple[Triple, str]] = {}

    def add_false(t: Triple | None, kind: str) -> bool:
        if t is None or t.ident in true or t.ident in false or t.s_key == t.o_key or t.ident in forbidden:
            return False
        false[t.ident] = (t, kind)
        return True

    all_types = sorted(names_by_type)
    for kind, share in shares.items():
        want, tries = round(share * len(true_list)), 0
        made = 0
        while made < want and tries < 50 * want + 100:
            tries += 1
            t = rng.choice(true_list)
            f: Triple | None = None
            if kind == "swap":
                if rng.random() < 0.5:
                    f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[t.ot]), t.ot)
                else:
                    f = Triple(rng.choice(names_by_type[t.st]), t.st, t.r, t.o, t.ot)
            elif kind == "type":
                allowed = ranges[t.r] if ranges is not None else {t.ot}
                bad = [x for x in all_types if x not in allowed]
                if bad:
                    ot = rng.choice(bad)
                    f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[ot]), ot)
            elif kind == "neardup":
                if rng.random() < 0.5:
                    name = _typo(t.s, rng, taken, t.st)
                    f = Triple(name, t.st, t.r, t.o, t.ot) if name else None
                else:
                    name = _typo(t.o, rng, taken, t.ot)
                    f = Triple(t.s, t.st, t.r, name, t.ot) if name else None
                if f is not None:
                    taken.add(f.s_key if name == f.s else f.o_key)
            elif kind == "sibling":
                if siblings is None:
                    raise ValueError("the sibling kind needs siblings")
                if rng.random() < 0.5:
                    sib = siblings.get(t.o_key, [])
                    if sib:
                        f = Triple(t.s, t.st, t.r, entities[t.ot][rng.choice(sib)], t.ot)
                else:
                    sib = siblings.get(t.s_key, [])
                    if sib:
                        f = Triple(entities[t.st][rng.choice(sib)], t.st, t.r, t.o, t.ot)
            elif kind == "repeated":  # a type-consistent false fact between known entities
                if rng.random() < 0.5:  # friend of a friend: two hops away, same type as the object
                    two = {z for y in adj[t.s_key] for z in adj[y]} - adj[t.s_key] - {t.s_key}
                    two = sorted(z for z in two if z.split(":", 1)[0] == t.ot)
                    if two:
                        key = rng.choice(two)
                        f = Triple(t.s, t.st, t.r, entities[t.ot][key], t.ot)
                else:
                    f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[t.ot]), t.ot)
            else:
                raise ValueError(f"unknown false kind {kind!r}")
            made += add_false(f, kind)
    return false


def _assert_triples(
    triples: Sequence[tuple[Triple, str]],
    rng: random.Random,
    votes_by_kind: dict[str, tuple[tuple[int, ...], tuple[float, ...]]],
    *,
    n_sources: int,
    waves: int,
) -> tuple[list[TripleAssertion], dict[Ident, int], list[list[TripleAssertion]]]:
    """Each triple asserted by as many distinct sources ``doc-<n>`` as its kind draws, with a random
    confidence in [0.5, 1]; all assertions shuffled and cut into ``waves`` equal waves."""
    assertions: list[tuple[float, TripleAssertion]] = []
    votes: dict[Ident, int] = {}
    for t, k in triples:
        values, weights = votes_by_kind[k]
        n = rng.choices(values, weights)[0]
        votes[t.ident] = n
        for src in rng.sample(range(n_sources), n):
            a = TripleAssertion(subject=t.s, subject_type=t.st, relation=t.r, object=t.o, object_type=t.ot,
                                source=f"doc-{src}", confidence=round(rng.uniform(0.5, 1.0), 3))
            assertions.append((rng.random(), a))
    assertions.sort(key=lambda x: x[0])
    flat = [a for _, a in assertions]
    per = math.ceil(len(flat) / waves)
    chunks = [flat[i:i + per] for i in range(0, len(flat), per)]
    return flat, votes, chunks


def _entity_index(true: Iterable[Triple]) -> tuple[dict[str, dict[str, str]], set[str], dict[str, set[str]]]:
    """type -> key -> name, every key, and the undirected adjacency of the true triples."""
    entities: dict[str, dict[str, str]] = defaultdict(dict)  # type -> key -> name
    adj: dict[str, set[str]] = defaultdict(set)
    for t in true:
        entities[t.st][t.s_key] = t.s
        entities[t.ot][t.o_key] = t.o
        adj[t.s_key].add(t.o_key)
        adj[t.o_key].add(t.s_key)
    taken = {k for v in entities.values() for k in v}
    return entities, taken, adj


def build_stream(*, n_synthetic: int, seed: int, waves: int) -> tuple[Stream, list[list[TripleAssertion]]]:
    """The networkx stream: the four networkx graphs plus ``n_synthetic`` synthetic facts, false
    triples of four kinds, every triple asserted by its kind's number of sources (module docstring)."""
    rng = random.Random(seed)
    real = networkx_kg()
    synth = synthetic_kg(n_synthetic, rng)
    true: dict[Ident, Triple] = {}
    for t in real + synth:
        if t.s_key != t.o_key:
            true.setdefault(t.ident, t)
    entities, taken, adj = _entity_index(true.values())
    false = _false_triples(true, rng, FALSE_SHARE, taken=taken, entities=entities, adj=adj)
    kind: dict[Ident, str] = {i: "true" for i in true}
    kind.update({i: k for i, (_, k) in false.items()})
    true_list = sorted(true.values(), key=lambda t: t.ident)
    triples = [(t, "true") for t in true_list] + sorted(false.values(), key=lambda x: x[0].ident)
    flat, votes, chunks = _assert_triples(triples, rng, VOTES, n_sources=2000, waves=waves)
    return Stream(flat, kind, votes, schema(), n_real=len(real), n_synthetic=len(synth)), chunks


def oracle_frontier(stream, *, quorum: int = 2, by: str = "sources") -> dict:
    """The best (Acceptance, FMR) any policy can reach that decides on what this stream lets it see.

    ``stream`` is a :class:`Stream` or a :class:`LabelledStream` (anything with ``kind``, ``votes``
    and ``schema``). Features per triple: votes (capped at 4), whether the endpoint types match the
    declared domain and range, how many common neighbours its endpoints have in the **complete true
    graph** (0, 1, 2, 3 or more: more than any real policy knows while the graph is still being
    built), and whether it introduces an entity that no true triple mentions. Triples with the same
    features are indistinguishable to such a policy, so it can only promote whole groups or
    fractions of them; promoting groups in order of their true share (Neyman–Pearson) traces the
    best acceptance for every FMR. Returns the largest acceptance with FMR ≤ 0.01, the smallest
    FMR at acceptance ≥ 0.5, 0.75, 0.9 and 0.97 (with fractional groups), and the same with votes
    ≥ ``quorum`` required. A triple of ``kind`` that the stream never made visible (no votes: a
    text-stream fact no chunk yields) counts as true but unreachable, at votes 0. ``by="documents"``
    counts a :class:`LabelledStream`'s ``document_votes`` instead of its ``votes`` (distinct
    documents rather than chunks: the same for assertion streams).
    """
    if by not in ("sources", "documents"):
        raise ValueError(f"by must be 'sources' or 'documents', got {by!r}")
    votes = stream.document_votes if by == "documents" else stream.votes
    true_adj: dict[str, set[str]] = defaultdict(set)
    known: set[str] = set()
    for (s_key, _, o_key), k in stream.kind.items():
        if k == "true":
            true_adj[s_key].add(o_key)
            true_adj[o_key].add(s_key)
            known.update((s_key, o_key))
    spec = {r: (set(s.domain), set(s.range)) for r, s in stream.schema.relation_types.items()}
    groups: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # features -> [true, false]
    for (s_key, rel, o_key), k in stream.kind.items():
        st, ot = s_key.split(":", 1)[0], o_key.split(":", 1)[0]
        dom, rng = spec.get(rel, ({st}, {ot}))
        common = len((true_adj[s_key] - {o_key}) & (true_adj[o_key] - {s_key}))
        feats = (min(votes.get((s_key, rel, o_key), 0), 4), (not dom or st in dom) and (not rng or ot in rng),
                 min(common, 3), s_key not in known or o_key not in known)
        groups[feats][0 if k == "true" else 1] += 1
    n_true = sum(t for t, _ in groups.values())

    def frontier(allowed) -> dict:
        ranked = sorted((g for f, g in groups.items() if allowed(f)), key=lambda g: -(g[0] / (g[0] + g[1])))
        levels = (0.5, 0.75, 0.9, 0.97)
        at: dict[float, float | None] = {level: None for level in levels}
        best_acc, tp, fp, full = 0.0, 0.0, 0.0, False
        for t, f in ranked:
            # largest fraction x of this group keeping FMR <= 1%: (fp + x f) <= 0.01 (tp + fp + x (t + f));
            # groups come in decreasing true share, so the first one that only fits in part ends it
            if not full:
                room, slope = 0.01 * (tp + fp) - fp, 0.99 * f - 0.01 * t
                x = 1.0 if slope <= 0 else max(0.0, min(1.0, room / slope))
                full = x < 1.0
                best_acc = (tp + x * t) / n_true
            for level in levels:  # the fraction of this group still needed to reach each acceptance level
                need = level * n_true - tp
                if at[level] is None and t > 0 and need <= t:
                    y = max(0.0, need / t)
                    at[level] = (fp + y * f) / (tp + fp + y * (t + f))
            tp, fp = tp + t, fp + f
        return {"max_acceptance_at_fmr_0.01": best_acc, "min_fmr_at_acceptance_0.97": at[0.97],
                "min_fmr_at_acceptance": {str(k): v for k, v in at.items()}}

    return {"any votes": frontier(lambda f: f[0] >= 1), f"votes >= {quorum}": frontier(lambda f: f[0] >= quorum),
            "groups": len(groups)}


# --------------------------------------------------------------------------------------------
# The common stream type
# --------------------------------------------------------------------------------------------


@dataclass
class Wave:
    """What arrives at once: assertions to stage, documents to ingest (``(document id, text)``), or both."""

    assertions: list[TripleAssertion] = field(default_factory=list)
    documents: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class LabelledStream:
    """One benchmark stream with its labels (module docstring).

    ``truth`` and ``kind`` cover every triple the stream can make a policy see: every asserted one,
    and for a text stream every triple the extractor emits on the corpus (chunked with
    ``chunking``), plus every true fact of the world whether or not a chunk yields it. ``label``
    answers for any other identity (``None``: the stream cannot say). ``votes`` counts distinct
    sources per triple over the whole stream: ``doc-<n>`` for assertion streams, chunks for a text
    stream; ``document_votes`` counts distinct documents (the independent sources: two chunks of
    one document are one), the same as ``votes`` for assertion streams.
    """

    name: str
    schema: KGSchema
    truth: dict[Ident, bool]
    kind: dict[Ident, str]
    waves: list[Wave]
    extractor: Extractor | None = None
    notes: dict = field(default_factory=dict)
    votes: dict[Ident, int] = field(default_factory=dict)
    label: Callable[[Ident], bool | None] | None = None
    chunking: ChunkingConfig | None = None
    document_votes: dict[Ident, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.document_votes and not self.documents:
            self.document_votes = dict(self.votes)

    def is_true(self, ident: Ident) -> bool | None:
        """Whether the triple is true (``truth`` first, then ``label``; ``None`` when unknown)."""
        if ident in self.truth:
            return self.truth[ident]
        return self.label(ident) if self.label is not None else None

    @property
    def assertions(self) -> list[TripleAssertion]:
        """Every assertion of every wave, in order (empty for a pure text stream)."""
        return [a for w in self.waves for a in w.assertions]

    @property
    def documents(self) -> list[tuple[str, str]]:
        return [d for w in self.waves for d in w.documents]

    def kind_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.kind.values()).items()))


def _kind_counts(kind: dict[Ident, str], order: Sequence[str]) -> dict[str, int]:
    c = Counter(kind.values())
    return {k: c.get(k, 0) for k in order}


def networkx_stream(*, seed: int = 7, n_synthetic: int = 1000, waves: int = 4) -> LabelledStream:
    """:func:`build_stream` as a :class:`LabelledStream` (same assertions, same waves)."""
    stream, chunks = build_stream(n_synthetic=n_synthetic, seed=seed, waves=waves)
    return LabelledStream(
        name="networkx", schema=stream.schema, truth={i: k == "true" for i, k in stream.kind.items()},
        kind=dict(stream.kind), waves=[Wave(assertions=c) for c in chunks], votes=dict(stream.votes),
        notes={
            "source": "the four graphs networkx ships (Davis southern women, Florentine families, karate club, "
                      "Les Miserables) plus a synthetic typed research world",
            "seed": seed, "real_facts": stream.n_real, "synthetic_facts": stream.n_synthetic,
            "triples": _kind_counts(stream.kind, KINDS), "assertions": len(stream.assertions), "waves": len(chunks),
            "sources": 2000, "votes_per_kind": {k: dict(zip(*VOTES[k])) for k in KINDS},
            "false_share": dict(FALSE_SHARE),
        },
    )


# --------------------------------------------------------------------------------------------
# The text stream: a synthetic world, a corpus stating it, an extractor that hallucinates
# --------------------------------------------------------------------------------------------

#: relation -> (domain, range, functional, trigger phrases of the schema)
TEXT_RELATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool, tuple[str, ...]]] = {
    "WORKS_AT": (("Person",), ("Company",), False, ("works at", "works for", "joined")),
    "STUDIED_AT": (("Person",), ("University",), False, ("studied at", "graduated from")),
    "BORN_IN": (("Person",), ("City",), True, ("was born in",)),
    "FOUNDED": (("Person",), ("Company",), False, ("founded", "co-founded")),
    "MENTORED": (("Person",), ("Person",), False, ("mentored", "supervised")),
    "LOCATED_IN": (("Company", "University"), ("City",), True, ("is headquartered in", "is based in")),
    "ACQUIRED": (("Company",), ("Company",), False, ("acquired",)),
}
TEXT_TYPES = ("City", "Company", "Person", "University")
#: false kinds of the text stream, in the order a triple made in several ways is labelled
TEXT_KINDS = ("true", "repeated", "comention", "swap", "world")

# Sentences stating a fact: every one triggers exactly its relation in RulesExtractor, and mentions
# nothing but its two endpoints.
_STATE: dict[str, tuple[str, ...]] = {
    "WORKS_AT": ("{s} works at {o}.", "{s} joined {o} in {year}.", "These days {s} works for {o}."),
    "STUDIED_AT": ("{s} studied at {o}.", "{s} graduated from {o} in {year}."),
    "BORN_IN": ("{s} was born in {o}.", "{s} was born in {o} in {year}."),
    "FOUNDED": ("{s} founded {o} in {year}.", "{s} co-founded {o} with a small group of friends."),
    "MENTORED": ("{s} mentored {o}.", "{o} was mentored by {s} for several years.",
                 "{s} supervised {o} during a long apprenticeship."),
    "LOCATED_IN": ("{s} is headquartered in {o}.", "{s} is based in {o}."),
    "ACQUIRED": ("{s} acquired {o} in {year}.", "{o} was acquired by {s} after long negotiations."),
}
# Sentences denying a (repeated) falsehood, in words no trigger matches.
_DENY: dict[str, str] = {
    "WORKS_AT": "Contrary to some reports, {s} never worked at {o}.",
    "STUDIED_AT": "{s} was never a student at {o}, whatever the rumours say.",
    "BORN_IN": "{s} is often said to come from {o}, but that is a mistake.",
    "FOUNDED": "{s} had no part in the creation of {o}.",
    "MENTORED": "{o} was never a protege of {s}.",
    "LOCATED_IN": "{s} has never had an office in {o}.",
    "ACQUIRED": "{s} never bought {o}; the rumoured deal fell through.",
}
# Two entities together, no relation stated.
_TOGETHER = (
    "{a} and {b} appeared together at a trade fair last year.",
    "A local newspaper once compared {a} with {b}.",
    "{a} was photographed next to {b} at a charity dinner.",
    "Critics often mention {a} in the same breath as {b}.",
    "{a} sent a short note of congratulations to {b}.",
    "Few people remember that {a} and {b} once shared a stage.",
)
# Filler: no entity, no trigger. Long sentences (more than the default chunk overlap of 256
# characters) open and close every paragraph, so that no chunk overlap carries a sentence over and
# no paragraph's first sentence fits into the previous paragraph's chunk.
_LONG_OPEN = (
    "This account, put together from interviews, annual reports, local newspapers, conference programmes, "
    "a handful of private letters and the recollections of people who were there at the time, tries to set down "
    "{what} as plainly as possible, without taking sides in the quarrels that followed.",
    "Anyone who has spent an afternoon in the reading room of a regional archive, turning over boxes of minutes, "
    "invoices, press cuttings and photographs, will know how hard it is to reconstruct {what} with any confidence, "
    "and the pages that follow are no exception to that rule.",
    "What follows is a summary of {what}, written for readers who have no time for the full record and who would "
    "rather have the names, places and dates in one short section than spread over the many volumes of notes, "
    "tables and correspondence on which it rests.",
    "Over the years a great deal has been written about {what}, some of it careful and some of it careless, and "
    "the purpose of this section is simply to collect the facts that most sources agree on, to mark the points "
    "where they differ, and to leave the rest to the specialists.",
)
_WHAT = ("the people and firms of the region", "a small corner of the industry", "the careers described here",
         "the companies that grew up in these towns", "a generation of engineers and managers",
         "the universities and their graduates")
_LONG_CLOSE = (
    "None of this, of course, settles the larger questions about why some ventures prospered while others faded, "
    "and the reader who wants those answers will have to look at prices, wages, transport costs, interest rates "
    "and the weather of several unusually dry summers, which are beyond the scope of this short note.",
    "The record for these years is patchy, the dates in the older sources are not always reliable, and several "
    "of the anecdotes that circulate in the trade press could not be checked against any document at all, so they "
    "have been left out here even where they make a better story than the facts do.",
    "Much more could be said about the buildings, the machines, the meetings and the long evenings of argument "
    "that filled those years, but the aim here is narrower, and the section ends, as it began, with a reminder "
    "that every list of names leaves out many of the people who did the actual work.",
    "Later accounts added colour, invented dialogue and a good deal of hindsight to this story, and while some of "
    "those additions are harmless, others have hardened into a kind of folklore that is repeated at every "
    "anniversary dinner without anyone asking where it came from in the first place.",
)
_SHORT = (
    "The details are worth recalling.", "Not everything went according to plan.", "The winters were long.",
    "Several of these stories are still told today.", "Money was often short.", "Travel was slow and expensive.",
    "The local press followed every step with interest.", "Some of the records were lost in a flood.",
    "Few of the original buildings survive.", "Opinions about this period still differ.",
    "The numbers involved were small at first.", "It was a time of rapid change.",
    "Much of the early correspondence has been preserved.", "The town grew quickly in those years.",
    "Public interest faded after a while.", "There were many disagreements about money.",
)
_MIDDLE = (
    "Most of the correspondence from those years is dry, practical and full of figures, but here and there a "
    "sharper remark survives.",
    "Visitors from abroad were often surprised by how small the offices were and by how late the lights stayed on.",
    "The railway line, the river port and a good supply of cheap land all played a part in what happened next.",
    "Contemporary observers disagreed about almost everything, from the quality of the products to the wisdom of "
    "the prices charged.",
    "Several of the original ledgers have been digitised, although the handwriting in them is not always easy "
    "to read.",
    "There is no single archive for this period, and the sources are scattered across many private and public "
    "collections.",
    "A number of small firms appeared and disappeared within a few years, leaving hardly a trace in the records.",
    "The regional newspapers covered the story closely, sometimes with more enthusiasm than accuracy.",
    "It is easy, looking back, to forget how uncertain every one of these decisions seemed at the time.",
    "The surviving photographs show crowded workshops, long tables covered in drawings and a great many bicycles.",
    "Prices rose steadily through the decade, and wages followed only slowly and unevenly.",
    "Much of the early work was done in rented rooms above shops, in sheds and in converted warehouses.",
)
#: paragraph length bounds (characters): above 2,046 minus the shortest opening sentence (277), so
#: no paragraph shares a chunk with the next one's first sentence; below the default chunk size
_PARA_MIN, _PARA_MAX = 1790, 2040
_SUFFIXES = ("Systems", "Labs", "Analytics", "Dynamics", "Robotics", "Foods", "Energy", "Materials")
_ACADEMIES = ("University", "Institute", "College")


@dataclass
class TextWorld:
    """The text stream's world: entities by type and the true facts ``(relation, subject, object)``
    (names), each with the company community it belongs to (documents are about communities)."""

    entities: dict[str, list[str]]
    facts: list[tuple[str, str, str]]
    community: dict[tuple[str, str, str], int]
    types: dict[str, str]  # name -> type

    def ident(self, rel: str, s: str, o: str) -> Ident:
        return entity_key(self.types[s], s), rel, entity_key(self.types[o], o)

    @property
    def true_idents(self) -> set[Ident]:
        return {self.ident(*f) for f in self.facts}


def _distinct_names(n: int, rng: random.Random, make: Callable[[], str], avoid: Iterable[str] = (),
                    *, max_similarity: float = 0.75) -> list[str]:
    """``n`` names from ``make`` whose canonical forms are pairwise less than ``max_similarity``
    similar (:func:`name_similarity`) and share no word with ``avoid``: kgr's disambiguation
    (threshold 0.8) can then never merge two of them."""
    out: list[str] = []
    canon: list[str] = []
    words = {w for a in avoid for w in canonical_name(a).split()}
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 200 * n + 1000:
            raise RuntimeError(f"cannot find {n} distinct names")
        name = make()
        c = canonical_name(name)
        if set(c.split()) & words or any(name_similarity(c, x) >= max_similarity for x in canon):
            continue
        out.append(name)
        canon.append(c)
    return out


def text_world(seed: int, *, n_people: int = 160, n_companies: int = 30, n_universities: int = 8,
               n_cities: int = 12) -> TextWorld:
    """A small typed world with company communities: every person works at one company (a fifth at
    two), most were born in a city and studied at a university, colleagues mentor each other, some
    employees founded their company, companies and universities are located in cities (the two
    functional relations), a few companies acquired others."""
    rng = random.Random(seed)

    def word(lo: int = 2, hi: int = 3) -> str:
        return "".join(rng.choice(_SYL) for _ in range(rng.randint(lo, hi))).capitalize()

    prose = [*_LONG_OPEN, *_WHAT, *_LONG_CLOSE, *_SHORT, *_MIDDLE, *_TOGETHER, *_DENY.values(),
             *(s for v in _STATE.values() for s in v)]
    prose = [p.replace("{", " ").replace("}", " ") for p in prose]  # the slots' names are words too
    cities = _distinct_names(n_cities, rng, lambda: word(2, 3), prose)
    companies = _distinct_names(n_companies, rng, lambda: f"{word(2, 2)} {rng.choice(_SUFFIXES)}",
                                [*prose, *cities])
    universities = _distinct_names(n_universities, rng, lambda: f"{word(3, 3)} {rng.choice(_ACADEMIES)}",
                                   [*prose, *cities, *companies])
    people = _distinct_names(n_people, rng, lambda: f"{word(2, 2)} {word(2, 3)}",
                             [*prose, *cities, *companies, *universities])
    facts: list[tuple[str, str, str]] = []
    community: dict[tuple[str, str, str], int] = {}

    def fact(rel: str, s: str, o: str, com: int) -> None:
        f = (rel, s, o)
        if f not in community and s != o:
            facts.append(f)
            community[f] = com

    staff: dict[int, list[str]] = defaultdict(list)
    for i, c in enumerate(companies):
        fact("LOCATED_IN", c, rng.choice(cities), i)
    for u in universities:
        fact("LOCATED_IN", u, rng.choice(cities), rng.randrange(n_companies))
    for p in people:
        i = rng.randrange(n_companies)
        staff[i].append(p)
        fact("WORKS_AT", p, companies[i], i)
        if rng.random() < 0.2:
            j = rng.randrange(n_companies)
            if j != i:
                staff[j].append(p)
                fact("WORKS_AT", p, companies[j], j)
        if rng.random() < 0.7:
            fact("BORN_IN", p, rng.choice(cities), i)
        if rng.random() < 0.6:
            fact("STUDIED_AT", p, rng.choice(universities), i)
    for i in range(n_companies):
        team = staff[i]
        if team and rng.random() < 0.6:
            for p in rng.sample(team, min(len(team), rng.choice((1, 1, 2)))):
                fact("FOUNDED", p, companies[i], i)
        for p in team:
            if rng.random() < 0.6 and len(team) > 1:
                q = rng.choice([x for x in team if x != p])
                if (("MENTORED", q, p)) not in community:  # no mentoring both ways
                    fact("MENTORED", p, q, i)
    for _ in range(max(2, n_companies // 4)):
        a, b = rng.sample(range(n_companies), 2)
        if ("ACQUIRED", companies[b], companies[a]) not in community:
            fact("ACQUIRED", companies[a], companies[b], a)
    types = {**{n: "City" for n in cities}, **{n: "Company" for n in companies},
             **{n: "University" for n in universities}, **{n: "Person" for n in people}}
    ents = {"City": cities, "Company": companies, "University": universities, "Person": people}
    return TextWorld(entities=ents, facts=facts, community=community, types=types)


def text_schema(world: TextWorld) -> KGSchema:
    """The text stream's KG schema: the world's names as gazetteers, :data:`TEXT_RELATIONS`'
    domains, ranges, functional flags and trigger phrases."""
    return KGSchema.model_validate({
        "name": "bench-promotion-text",
        "entity_types": {t: {"names": sorted(world.entities[t])} for t in TEXT_TYPES},
        "relation_types": {r: {"domain": list(d), "range": list(o), "functional": f, "triggers": list(trig)}
                           for r, (d, o, f, trig) in TEXT_RELATIONS.items()},
    })


@dataclass(frozen=True)
class Hallucination:
    """One false-or-not triple :class:`HallucinatingExtractor` adds to a chunk's extraction, and how."""

    relation: str
    subject: str
    subject_type: str
    object: str
    object_type: str
    mode: str  # "repeated", "comention", "swap" or "world"


def _seeded(seed: int, text: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{text}".encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class HallucinatingExtractor:
    """An :class:`~kgr.extract.base.Extractor` that returns what ``base`` extracts plus plausible false
    triples, the same ones for the same chunk text every time.

    Noise model, per chunk (all draws from a generator seeded by ``seed`` and the chunk text, so
    re-ingesting, re-reading or re-extracting a chunk with guidance gives the same hallucinations):

    - **swap** / **world**: for each relation ``base`` extracted, with probability ``rate`` a copy
      with its object (or, half the time, its subject) replaced by another entity of the same type
      — one mentioned in the same chunk (``swap``) with probability ``1 − world_share`` when the
      chunk has one, else any entity of the type from ``pool`` (``world``);
    - **comention**: with probability ``rate``, twice per chunk, a relation invented between two
      entities the chunk mentions (any relation whose domain and range fit them, not already
      extracted) — the error of reading a relation into "A and B appeared together";
    - **repeated**: ``confusions`` maps true triples ``(relation, subject, object)`` to a wrong
      object an LLM tends to give instead; whenever ``base`` extracts such a triple, or the chunk
      mentions both the subject and the wrong object (a sentence denying it, say), the wrong
      triple is added with probability ``repeat_rate``. Across the documents that state a fact,
      its confusion therefore collects several votes, like a true fact.

    Only domain- and range-consistent triples are made (the pipeline rejects the others before
    staging anyway), never a self loop. A hallucination may happen to be true (a swap to another
    company the person also works at): labels come from the world, not from this class.
    ``pool`` defaults to the schema's gazetteer names per type.
    """

    name = "hallucinating"

    def __init__(self, base: Extractor, *, rate: float = 0.15, seed: int = 0,
                 pool: dict[str, list[str]] | None = None,
                 confusions: dict[tuple[str, str, str], str] | None = None,
                 repeat_rate: float = 0.5, world_share: float = 0.3, cache_size: int = 4096):
        for nm, v in (("rate", rate), ("repeat_rate", repeat_rate), ("world_share", world_share)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{nm} must be in [0, 1], got {v}")
        self.base, self.rate, self.seed = base, rate, seed
        self.pool = pool
        self.confusions = dict(confusions or {})
        # (subject, wrong object) -> [(relation, true object)]
        self._by_pair: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for (rel, s, o), wrong in sorted(self.confusions.items()):
            self._by_pair[(s, wrong)].append((rel, o))
        self.repeat_rate, self.world_share = repeat_rate, world_share
        self._cache: dict[str, tuple[Hallucination, ...]] = {}
        self._cache_size = cache_size

    # -- the Extractor protocol ------------------------------------------------------------
    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        res = self.base.extract(chunk_text, schema, guidance=guidance)
        extra = self.hallucinations(chunk_text, schema, _base=res if guidance is None else None)
        if not extra:
            return res
        ents = {t: list(v) for t, v in res.kg.entities.items()}
        rels = {r: list(v) for r, v in res.kg.relations.items()}
        for h in extra:
            for t, n in ((h.subject_type, h.subject), (h.object_type, h.object)):
                lst = ents.setdefault(t, [])
                if n not in lst:
                    lst.append(n)
            pair = RelationPair(subject=h.subject, object=h.object)
            lst2 = rels.setdefault(h.relation, [])
            if pair not in lst2:
                lst2.append(pair)
        name = f"{res.extractor or 'base'}+hallucinating"
        return res.model_copy(update={"kg": ExtractedKG(entities=ents, relations=rels), "extractor": name})

    # -- the noise -------------------------------------------------------------------------
    def hallucinations(self, chunk_text: str, schema: KGSchema, *, _base: ExtractionResult | None = None
                       ) -> tuple[Hallucination, ...]:
        """The triples this extractor adds to ``chunk_text``'s extraction (class docstring)."""
        key = hashlib.sha256(f"{schema.name}\x1f{chunk_text}".encode("utf-8", "surrogatepass")).hexdigest()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        base = _base if _base is not None else self.base.extract(chunk_text, schema)
        out = self._make(chunk_text, schema, base.kg)
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = out
        return out

    def _make(self, text: str, schema: KGSchema, kg: ExtractedKG) -> tuple[Hallucination, ...]:
        rng = _seeded(self.seed, text)
        mentioned = {t: sorted(v) for t, v in kg.entities.items()}
        type_of = {n: t for t, names in mentioned.items() for n in names}
        pool = self.pool or {t: sorted(spec.names) for t, spec in schema.entity_types.items()}
        extracted = sorted((r, p.subject, p.object) for r, pairs in kg.relations.items() for p in pairs)
        have = set(extracted)
        out: dict[tuple[str, str, str], Hallucination] = {}

        def add(rel: str, s: str, st: str, o: str, ot: str, mode: str) -> None:
            spec = schema.relation_types.get(rel)
            if spec is None or s == o or (rel, s, o) in have or (rel, s, o) in out:
                return
            if (spec.domain and st not in spec.domain) or (spec.range and ot not in spec.range):
                return
            out[(rel, s, o)] = Hallucination(rel, s, st, o, ot, mode)

        # repeated: known confusions, when the fact is read or both ends of the falsehood are mentioned
        for rel, s, o in extracted:
            wrong = self.confusions.get((rel, s, o))
            if wrong is not None and rng.random() < self.repeat_rate:
                add(rel, s, type_of.get(s, ""), wrong, self._type_in(wrong, mentioned, pool), "repeated")
        for (s, wrong), rels in sorted(self._by_pair.items()):
            if s in type_of and wrong in type_of:
                for rel, _ in rels:
                    if rng.random() < self.repeat_rate:
                        add(rel, s, type_of[s], wrong, type_of[wrong], "repeated")
        # comention: a relation read into two co-mentioned entities
        names = sorted(type_of)
        for _ in range(2):
            if len(names) >= 2 and rng.random() < self.rate:
                a, b = rng.sample(names, 2)
                fits = sorted(r for r, spec in schema.relation_types.items()
                              if (not spec.domain or type_of[a] in spec.domain)
                              and (not spec.range or type_of[b] in spec.range))
                if fits:
                    add(rng.choice(fits), a, type_of[a], b, type_of[b], "comention")
        # swap / world: an extracted relation with one end replaced
        for rel, s, o in extracted:
            if rng.random() >= self.rate:
                continue
            obj_side = rng.random() < 0.5
            keep, old = (s, o) if obj_side else (o, s)
            t = type_of.get(old)
            if t is None:
                continue
            local = [n for n in mentioned.get(t, []) if n not in (old, keep)]
            if local and rng.random() >= self.world_share:
                new, mode = rng.choice(local), "swap"
            else:
                choices = [n for n in pool.get(t, []) if n not in (old, keep)]
                if not choices:
                    continue
                new, mode = rng.choice(choices), "world"
            if obj_side:
                add(rel, s, type_of[s], new, t, mode)
            else:
                add(rel, new, t, o, type_of[o], mode)
        return tuple(out.values())

    @staticmethod
    def _type_in(name: str, mentioned: dict[str, list[str]], pool: dict[str, list[str]]) -> str:
        for src in (mentioned, pool):
            for t, names in src.items():
                if name in names:
                    return t
        return ""


def extract_documents(
    documents: Iterable[tuple[str, str]],
    extractor: Extractor,
    schema: KGSchema,
    *,
    chunking: ChunkingConfig | None = None,
) -> list[tuple[TripleAssertion, str, str | None]]:
    """What ``extractor`` yields on ``documents`` without a database: every chunk (chunked as the
    pipeline chunks, ``chunking`` or the default) extracted once, its relations as assertions whose
    source is the chunk id (as the pipeline stages them), each with its document id and, for a
    :class:`HallucinatingExtractor`, the hallucination mode that made it (``None`` otherwise).

    The real pipeline adds guided re-extraction rounds and disambiguation against the store; on
    the text stream's corpus neither changes anything (every name is in the gazetteer and no two
    are 0.8 similar; guidance only fills trigger slots no known name fills, and every trigger in
    the corpus has known names on both sides).
    """
    cfg = chunking or ChunkingConfig()
    out: list[tuple[TripleAssertion, str, str | None]] = []
    for doc_id, text in documents:
        for ch in chunk_text(text, doc_id, config=cfg):
            res = extractor.extract(ch.text, schema)
            modes: dict[tuple[str, str, str], str] = {}
            if isinstance(extractor, HallucinatingExtractor):
                modes = {(h.relation, h.subject, h.object): h.mode for h in extractor.hallucinations(ch.text, schema)}
            for rel, pairs in res.kg.relations.items():
                spec = schema.relation_types[rel]
                for p in pairs:
                    st = [t for t in res.kg.entity_types_of(p.subject) if not spec.domain or t in spec.domain]
                    ot = [t for t in res.kg.entity_types_of(p.object) if not spec.range or t in spec.range]
                    if not st or not ot:
                        continue
                    a = TripleAssertion(subject=p.subject, subject_type=st[0], relation=rel, object=p.object,
                                        object_type=ot[0], source=ch.id)
                    out.append((a, doc_id, modes.get((rel, p.subject, p.object))))
    return out


def write_documents(documents: Iterable[tuple[str, str]], path: str | Path) -> Path:
    """Write documents as the JSONL kgr's loaders read (``{"id", "text"}`` per line) and return the path."""
    p = Path(path)
    with open(p, "w", encoding="utf-8") as fh:
        for doc_id, text in documents:
            fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    return p


def _layout(items: list[tuple[str, Ident | None]], rng: random.Random, *, lo: int = _PARA_MIN,
            hi: int = _PARA_MAX, per_paragraph: tuple[int, int] = (3, 7)) -> list[str]:
    """Content sentences laid out in paragraphs of ``lo``–``hi`` characters: a long opening filler,
    3–7 content sentences among medium and short fillers, a long closing filler. A sentence whose
    fact a paragraph already states waits for the next paragraph (one more is made if needed), so
    that a fact stated twice in a document is stated in two chunks."""
    paras: list[str] = []
    pending = list(items)
    while pending or not paras:
        head = rng.choice(_LONG_OPEN).format(what=rng.choice(_WHAT))
        tail = rng.choice(_LONG_CLOSE)
        cap = rng.randint(*per_paragraph)
        body: list[str] = []
        keys: set[Ident] = set()
        size = len(head) + len(tail) + 1
        rest: list[tuple[str, Ident | None]] = []
        for sent, key in pending:
            if len(body) < cap and (key is None or key not in keys) and size + len(sent) + 1 <= hi - 100:
                body.append(sent)
                size += len(sent) + 1
                if key is not None:
                    keys.add(key)
            else:
                rest.append((sent, key))
        pending = rest
        fillers = list(_MIDDLE) + list(_SHORT)
        rng.shuffle(fillers)
        for s in fillers:
            if size >= lo:
                break
            if size + len(s) + 1 <= hi:
                body.insert(rng.randrange(len(body) + 1), s)
                size += len(s) + 1
        if not lo <= size <= hi:
            raise AssertionError(f"paragraph of {size} characters")
        paras.append(" ".join([head, *body, tail]))
    return paras


def text_stream(seed: int = 7, *, n_docs: int = 120, waves: int = 4, rate: float = 0.15,
                repeat_rate: float = 0.5, confusion_share: float = 0.1, deny_share: float = 0.3,
                twice_share: float = 0.15, world: TextWorld | None = None) -> LabelledStream:
    """The text stream (module docstring): documents about :func:`text_world`, to be ingested with
    ``stream.extractor`` (a :class:`HallucinatingExtractor` around ``RulesExtractor``).

    Corpus model:

    - every fact is stated in 1–4 documents (10 % / 30 % / 30 % / 30 %), 70 % of them about the
      fact's company community; with probability ``twice_share`` a second time in one of them, in
      another paragraph (two chunks of one document: two chunk votes, one independent source);
    - a document has one co-mention sentence ("A and B appeared together ...") per six content
      sentences (at least one), between entities of its own facts, stating no relation;
    - ``confusion_share`` of the facts get a **confusion**: a wrong object of the right type two
      hops from the subject in the true graph (or any, when there is none) that the extractor
      repeats (mode ``repeated``); ``deny_share`` of the confusions are explicitly denied in one of
      the fact's documents ("Contrary to some reports, X never worked at Y.");
    - every paragraph is 1,790–2,040 characters, opened and closed by sentences longer than the
      default chunk overlap, so that with kgr's default chunking (512 tokens ≈ 2,048 characters,
      64 tokens of overlap) each paragraph is exactly one chunk (checked here);
    - documents are shuffled and cut into ``waves`` waves of whole documents.

    ``truth``/``kind`` hold every world fact (true; ``votes`` 0 if no chunk yields it) and every
    triple the extractor emits on the corpus under the default chunking (labelled by the world:
    false unless a fact), with the kind of the first of ``repeated``, ``comention``, ``swap``,
    ``world`` that made it; ``label`` answers for any other triple between world entities.
    """
    if n_docs < 4:
        raise ValueError(f"n_docs must be at least 4 (a fact is stated in up to 4 documents), got {n_docs}")
    rng = random.Random(seed)
    world = world or text_world(seed)
    sch = text_schema(world)
    facts = list(world.facts)
    by_key = {entity_key(t, n): n for n, t in world.types.items()}
    n_com = max(world.community.values()) + 1
    # documents and their communities
    doc_com = [i % n_com for i in range(n_docs)]
    rng.shuffle(doc_com)
    docs_of: dict[int, list[int]] = defaultdict(list)
    for d, c in enumerate(doc_com):
        docs_of[c].append(d)
    content: list[list[tuple[str, Ident | None]]] = [[] for _ in range(n_docs)]  # (sentence, fact stated)
    twice = 0

    def state(f: tuple[str, str, str]) -> str:
        rel, s, o = f
        return rng.choice(_STATE[rel]).format(s=s, o=o, year=rng.randint(1950, 2020))

    stated_in: dict[tuple[str, str, str], list[int]] = {}
    for f in facts:
        n = rng.choices((1, 2, 3, 4), (0.1, 0.3, 0.3, 0.3))[0]
        local = docs_of.get(world.community[f], [])
        chosen: list[int] = []
        while len(chosen) < n:
            d = rng.choice(local) if local and rng.random() < 0.7 else rng.randrange(n_docs)
            if d not in chosen:
                chosen.append(d)
        stated_in[f] = chosen
        for d in chosen:
            content[d].append((state(f), world.ident(*f)))
        if rng.random() < twice_share:  # once more in one of its documents (another chunk: _layout)
            content[rng.choice(chosen)].append((state(f), world.ident(*f)))
            twice += 1
    # confusions: a plausible wrong object per chosen fact
    adj: dict[str, set[str]] = defaultdict(set)
    for rel, s, o in facts:
        adj[s].add(o)
        adj[o].add(s)
    fact_set = set(facts)
    confusions: dict[tuple[str, str, str], str] = {}
    for f in rng.sample(facts, round(confusion_share * len(facts))):
        rel, s, o = f
        rtype = world.types[o]
        two = sorted({z for y in adj[s] for z in adj[y]} - adj[s] - {s, o})
        cands = [z for z in two if world.types[z] == rtype and (rel, s, z) not in fact_set]
        if not cands:
            cands = [z for z in world.entities[rtype] if z not in (s, o) and (rel, s, z) not in fact_set]
        if cands:
            confusions[f] = rng.choice(cands)
    denied = 0
    for f, wrong in sorted(confusions.items()):
        if rng.random() < deny_share:
            rel, s, _ = f
            d = rng.choice(stated_in[f])
            content[d].append((_DENY[rel].format(s=s, o=wrong), None))
            denied += 1
    # lay documents out: content shuffled, co-mention sentences added, paragraphs
    documents: list[tuple[str, str]] = []
    paragraphs_per_doc: list[int] = []
    together = 0
    for d in range(n_docs):
        items = content[d]
        rng.shuffle(items)
        names = sorted({n for _, ident in items if ident is not None for n in (by_key[ident[0]], by_key[ident[2]])})
        for _ in range(max(1, len(items) // 6)):
            if len(names) >= 2:
                a, b = rng.sample(names, 2)
                items.insert(rng.randrange(len(items) + 1), (rng.choice(_TOGETHER).format(a=a, b=b), None))
                together += 1
        paras = _layout(items, rng)
        paragraphs_per_doc.append(len(paras))
        documents.append((f"text-{seed}-{d:04d}", "\n\n".join(paras) + "\n"))
    # the check: with kgr's default chunking every paragraph is one chunk
    cfg = ChunkingConfig()
    n_chunks = 0
    for doc_id, text in documents:
        chunks = [c.text for c in chunk_text(text, doc_id, config=cfg)]
        if chunks != text.strip().split("\n\n"):
            raise AssertionError(f"{doc_id}: paragraphs and default chunks differ")
        n_chunks += len(chunks)
    extractor = HallucinatingExtractor(RulesExtractor(), rate=rate, seed=seed, confusions=confusions,
                                       repeat_rate=repeat_rate)
    emitted = extract_documents(documents, extractor, sch, chunking=cfg)
    true_ids = world.true_idents
    truth: dict[Ident, bool] = {i: True for i in true_ids}
    kind: dict[Ident, str] = {i: "true" for i in true_ids}
    rank = {k: n for n, k in enumerate(TEXT_KINDS)}
    sources: dict[Ident, set[str]] = defaultdict(set)
    docs: dict[Ident, set[str]] = defaultdict(set)
    for a, doc_id, mode in emitted:
        ident = (a.subject_key, a.relation, a.object_key)
        sources[ident].add(a.source)
        docs[ident].add(doc_id)
        if ident in true_ids:
            continue
        k = mode or "extraction"  # a false triple the base extractor made (none on this corpus)
        truth[ident] = False
        if ident not in kind or rank.get(k, 99) < rank.get(kind[ident], 99):
            kind[ident] = k
    order = list(range(n_docs))
    rng.shuffle(order)
    per = math.ceil(n_docs / waves)
    wave_list = [Wave(documents=[documents[d] for d in order[i:i + per]]) for i in range(0, n_docs, per)]
    keyed = {entity_key(t, n): t for n, t in world.types.items()}

    def label(ident: Ident) -> bool | None:
        s, rel, o = ident
        if rel not in sch.relation_types or s not in keyed or o not in keyed:
            return None
        return ident in true_ids

    base_recall = sum(1 for i in true_ids if sources.get(i)) / len(true_ids)
    emitted_false = Counter(k for i, k in kind.items() if k != "true")
    return LabelledStream(
        name="text", schema=sch, truth=truth, kind=kind, waves=wave_list, extractor=extractor,
        votes={i: len(v) for i, v in sources.items()}, label=label, chunking=cfg,
        document_votes={i: len(v) for i, v in docs.items()},
        notes={
            "source": "synthetic world and corpus (scripts/promotion_streams.py text_world/text_stream)",
            "seed": seed, "entities": {t: len(v) for t, v in world.entities.items()},
            "facts": len(facts), "facts_by_relation": dict(sorted(Counter(r for r, _, _ in facts).items())),
            "documents": n_docs, "chunks": n_chunks,
            "chunks_per_document": dict(sorted(Counter(paragraphs_per_doc).items())),
            "fact_statements": sum(len(v) for v in stated_in.values()) + twice,
            "facts_stated_twice_in_one_document": twice, "comention_sentences": together,
            "confusions": len(confusions), "denials": denied,
            "triples": _kind_counts(kind, TEXT_KINDS), "false_emitted": dict(sorted(emitted_false.items())),
            "facts_extracted": round(base_recall, 4), "assertions_offline": len(emitted),
            "noise": {"rate": rate, "repeat_rate": repeat_rate, "world_share": extractor.world_share,
                      "confusion_share": confusion_share, "deny_share": deny_share},
            "document_votes": {k: dict(sorted(Counter(len(docs[i]) for i, kk in kind.items() if kk == k).items()))
                               for k in TEXT_KINDS},
        },
    )

# --------------------------------------------------------------------------------------------
# The public KG stream: a typed WordNet subset
# --------------------------------------------------------------------------------------------

#: the committed subset (scripts/data/README.md; regenerate with scripts/make_wordnet_subset.py)
WORDNET_SUBSET = Path(__file__).resolve().parent / "data" / "wordnet_subset.json.gz"
KG_KINDS = ("true", "swap", "type", "neardup", "repeated", "sibling")
#: votes per kind: the networkx stream's, plus ``sibling``, spread like a true fact's (a plausible
#: confusion is repeated by as many sources as a fact, sometimes by one)
KG_VOTES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    **VOTES, "sibling": ((1, 2, 3, 4), (0.2, 0.3, 0.3, 0.2)),
}
#: false triples of each kind per true triple: the networkx stream's, plus ``sibling``
KG_FALSE_SHARE = {**FALSE_SHARE, "sibling": 0.075}


@dataclass
class KGData:
    """The committed WordNet subset: ``entities`` id -> (type, name), ``triples`` (s id, relation,
    o id), ``excluded`` (true by entailment, never asserted), ``classes`` id -> direct class ids,
    ``relations`` name -> {pointer, description, signatures}, ``source`` provenance."""

    entities: dict[str, tuple[str, str]]
    triples: list[tuple[str, str, str]]
    excluded: list[tuple[str, str, str]]
    classes: dict[str, list[str]]
    relations: dict[str, dict]
    source: dict

    def triple(self, s: str, r: str, o: str) -> Triple:
        (st, sn), (ot, on) = self.entities[s], self.entities[o]
        return Triple(sn, st, r, on, ot)


def load_wordnet_subset(path: str | Path | None = None) -> KGData:
    """Read the committed subset (``path``: another file made by ``scripts/make_wordnet_subset.py``)."""
    with gzip.open(path or WORDNET_SUBSET, "rt", encoding="utf-8") as fh:
        raw = json.load(fh)
    return KGData(
        entities={k: (v[0], v[1]) for k, v in raw["entities"].items()},
        triples=[(s, r, o) for s, r, o in raw["triples"]],
        excluded=[(s, r, o) for s, r, o in raw["excluded"]],
        classes=raw["classes"], relations=raw["relations"], source=raw["source"],
    )


def _kg_schema(data: KGData) -> KGSchema:
    types = sorted({t for t, _ in data.entities.values()})
    rels = {}
    for r, spec in sorted(data.relations.items()):
        sigs = spec["signatures"]
        rels[r] = {"description": spec["description"], "domain": sorted({st for st, _ in sigs}),
                   "range": sorted({ot for _, ot in sigs})}
    return KGSchema.model_validate({"name": "bench-promotion-wordnet", "entity_types": {t: {} for t in types},
                                    "relation_types": rels})


def public_kg_stream(seed: int = 7, *, waves: int = 4, n_sources: int = 2000, path: str | Path | None = None,
                     false_share: dict[str, float] | None = None) -> LabelledStream:
    """The WordNet stream: the subset's true triples and false ones of :data:`KG_KINDS`, asserted as
    the networkx stream asserts its own (:data:`KG_VOTES` sources each, from ``n_sources``
    documents ``doc-<n>``, shuffled, in ``waves`` waves).

    False kinds as in the networkx stream (``swap``, ``type``: an object of a type outside the
    relation's declared range, ``neardup``, ``repeated``) plus ``sibling`` (an endpoint replaced by
    an entity of its type sharing a WordNet class with it). No false triple is one WordNet entails
    (the subset's ``excluded`` list: "Lisbon PART_OF Europe" holds through Portugal) or states.
    Domain and range are the type signatures the subset uses; no relation is declared functional
    (none is, in WordNet: Istanbul is an instance of city and of port).
    """
    data = load_wordnet_subset(path)
    shares = dict(KG_FALSE_SHARE if false_share is None else false_share)
    sch = _kg_schema(data)
    rng = random.Random(seed)
    true: dict[Ident, Triple] = {}
    for s, r, o in data.triples:
        t = data.triple(s, r, o)
        true.setdefault(t.ident, t)
    excluded = {data.triple(s, r, o).ident for s, r, o in data.excluded}
    entities, taken, adj = _entity_index(true.values())
    # siblings: same type, a shared direct class
    members: dict[str, set[str]] = defaultdict(set)
    for eid, cls in data.classes.items():
        for c in cls:
            members[c].add(eid)
    siblings: dict[str, list[str]] = {}
    for eid, cls in data.classes.items():
        t, name = data.entities[eid]
        key = entity_key(t, name)
        sib = {entity_key(*data.entities[x]) for c in cls for x in members[c]
               if x != eid and data.entities[x][0] == t}
        sib &= set(entities.get(t, {}))
        if sib:
            siblings[key] = sorted(sib)
    ranges = {r: set(spec.range) for r, spec in sch.relation_types.items()}
    false = _false_triples(true, rng, shares, taken=taken, entities=entities, adj=adj, forbidden=excluded,
                           ranges=ranges, siblings=siblings)
    kind: dict[Ident, str] = {i: "true" for i in true}
    kind.update({i: k for i, (_, k) in false.items()})
    triples = [(t, "true") for t in sorted(true.values(), key=lambda t: t.ident)]
    triples += sorted(false.values(), key=lambda x: x[0].ident)
    flat, votes, chunks = _assert_triples(triples, rng, KG_VOTES, n_sources=n_sources, waves=waves)

    def label(ident: Ident) -> bool | None:
        if ident in kind:
            return kind[ident] == "true"
        return True if ident in excluded else None

    return LabelledStream(
        name="wordnet", schema=sch, truth={i: k == "true" for i, k in kind.items()}, kind=kind,
        waves=[Wave(assertions=c) for c in chunks], votes=votes, label=label,
        notes={
            "source": {k: v for k, v in data.source.items() if k != "licence_text"}, "seed": seed,
            "entities": dict(sorted(Counter(t for t, _ in data.entities.values()).items())),
            "true_by_relation": dict(sorted(Counter(r for _, r, _ in data.triples).items())),
            "excluded_entailed": len(excluded), "triples": _kind_counts(kind, KG_KINDS),
            "assertions": len(flat), "waves": len(chunks), "sources": n_sources,
            "votes_per_kind": {k: dict(zip(*KG_VOTES[k])) for k in KG_KINDS}, "false_share": shares,
            "types_from": "WordNet lexicographer files (noun.person/location/object/group), split into "
                          "instances (instance-hypernym pointer) and classes",
        },
    )


def all_streams(seed: int = 7, *, waves: int = 4) -> list[LabelledStream]:
    """The benchmark's three streams with their default sizes."""
    return [networkx_stream(seed=seed, waves=waves), text_stream(seed, waves=waves),
            public_kg_stream(seed, waves=waves)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Sizes of the promotion benchmark's streams.")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--waves", type=int, default=4)
    ap.add_argument("--json", action="store_true", help="print every stream's notes as JSON")
    ap.add_argument("--oracle", action="store_true", help="also the oracle frontier of each stream")
    args = ap.parse_args(argv)
    out = {}
    for st in all_streams(args.seed, waves=args.waves):
        info = {"kinds": st.kind_counts(), "waves": len(st.waves), "assertions": len(st.assertions),
                "documents": len(st.documents), "notes": st.notes}
        if args.oracle:
            info["oracle"] = oracle_frontier(st)
        out[st.name] = info
        if not args.json:
            print(f"{st.name}: " + ", ".join(f"{k} {v}" for k, v in st.kind_counts().items())
                  + f"; {len(st.assertions)} assertions, {len(st.documents)} documents"
                  + (f" ({st.notes['chunks']} chunks)" if "chunks" in st.notes else "") + f", {len(st.waves)} waves")
            if args.oracle:
                for name, fr in info["oracle"].items():
                    if name != "groups":
                        print(f"  oracle ({name}): max Acceptance at FMR <= 0.01 = "
                              f"{fr['max_acceptance_at_fmr_0.01']:.3f}; min FMR at Acceptance >= " + ", ".join(
                                  f"{lvl}: {'unreachable' if v is None else f'{v:.3f}'}"
                                  for lvl, v in fr["min_fmr_at_acceptance"].items()))
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
