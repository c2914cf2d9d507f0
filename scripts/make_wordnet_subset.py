#!/usr/bin/env python3
"""Derive ``scripts/data/wordnet_subset.json.gz`` (the public-KG stream of the promotion benchmark)
from Princeton WordNet 3.0 as Debian's ``wordnet-base`` package ships it.

Usage (the exact command that produced the committed file; see ``scripts/data/README.md``)::

    apt-get download wordnet-base            # wordnet-base_1%3a3.0-37_all.deb
    dpkg-deb -x wordnet-base_*_all.deb /tmp/wordnet-base
    python scripts/make_wordnet_subset.py --wordnet /tmp/wordnet-base/usr/share/wordnet \\
        --out scripts/data/wordnet_subset.json.gz

The output is deterministic (no clock, sorted keys, gzip mtime 0): re-running it on the same
WordNet files gives the same bytes.

What it keeps
-------------
**Entities** are noun synsets of seven kgr types derived from WordNet's lexicographer files
(``lexnames(5WN)``) and its instance/class distinction (a synset with an *instance hypernym*
pointer ``@i`` is a named individual):

============  =====================================================  ==========================
kgr type      WordNet                                                 e.g.
============  =====================================================  ==========================
Person        ``noun.person`` instances                               Abraham Lincoln
Role          ``noun.person`` classes                                 physicist, Frenchman
Place         ``noun.location`` instances                             Paris, France
PlaceKind     ``noun.location`` classes                               national capital
Feature       ``noun.object`` instances                               Mississippi, Mont Blanc
FeatureKind   ``noun.object`` classes                                 river, mountain peak
Group         ``noun.group`` (instances and classes)                  NATO, army
============  =====================================================  ==========================

**Relations** are WordNet pointers restricted to a typed signature (domain → range), the rest of
each pointer's uses dropped:

================  ========  ==========================================  ===================
relation          pointer   domain → range                              reads
================  ========  ==========================================  ===================
HAS_ROLE          ``@i``    Person → Role                               Lincoln — president
INSTANCE_OF       ``@i``    Place, Feature → PlaceKind, FeatureKind     Paris — national capital
IS_A              ``@``     Role, Group, PlaceKind, FeatureKind → same  physicist — scientist
PART_OF           ``#p``    Place, Feature → Place                      Paris — France
MEMBER_OF         ``#m``    Place, Group, Person → Group                France — NATO
INHABITANT_OF     ``#m``    Role → Place                                Frenchman — France
IN_REGION         ``;r``    Role, Group → Place                         gaucho — Argentina
IN_TOPIC          ``;c``    Role, Person, Group → Group                 general — army
================  ========  ==========================================  ===================

**The subset**: the 3-core of the typed graph (every entity in at least three kept triples), then,
relation by relation, triples drawn (seeded, preferring triples that touch entities already kept)
until every relation has at least ``--quota`` triples, and finally every typed triple among the
kept entities (the induced subgraph). Domain and range declared by the benchmark's schema are
the (type, type) signatures that actually occur in the subset.

**Names**: a Person's first multi-word lemma without initials ("Abraham Lincoln", "George Bernard
Shaw"; else the first multi-word one), anyone else's first lemma
("Paris"), underscores as spaces; a name that canonicalises like another entity's of the same type
gets the first lemma of its first hypernym in brackets ("Georgia (American state)"), then a
number.

**Excluded triples**: WordNet *entails* more than it states: hypernymy, meronymy and holonymy are
transitive ("Paris PART_OF Europe" holds through France) and a class's pointers hold for its
members ("a Parisian is an INHABITANT_OF France" through Frenchman). Such a triple is true but not
a direct WordNet edge, so the benchmark must never label it false: every such triple between kept
entities (computed on the whole of WordNet, for each relation's closure below) is written to
``excluded`` and the stream never asserts it, neither as true nor as false.

- IS_A, INSTANCE_OF, HAS_ROLE: any hypernym ancestor (``@``/``@i``, transitively);
- PART_OF: the transitive part-holonym closure;
- MEMBER_OF, INHABITANT_OF: the member-holonym targets of the entity and of its ancestors, with
  their member- and part-holonym closure;
- IN_REGION: the regions of the entity and of its ancestors, with their part-holonym closure;
- IN_TOPIC: the topics of the entity and of its ancestors, with their ancestors.

Each entity's direct classes (its ``@``/``@i`` targets, kept or not) are written too, so that the
stream can find *siblings* (entities sharing a class: France and Germany are both European
countries) for its plausible false triples.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path

import networkx as nx

from kgr.model.canonical import entity_key

__all__ = ["LEXNAMES", "SIGNATURES", "WORDNET_LICENCE", "read_wordnet", "derive_subset", "main"]

#: WordNet 3.0's licence, which must accompany every copy (also in scripts/data/README.md)
WORDNET_LICENCE = """\
WordNet Release 3.0 This software and database is being provided to you, the LICENSEE, by Princeton \
University under the following license. By obtaining, using and/or copying this software and database, you \
agree that you have read, understood, and will comply with these terms and conditions.: Permission to use, \
copy, modify and distribute this software and database and its documentation for any purpose and without fee \
or royalty is hereby granted, provided that you agree to comply with the following copyright notice and \
statements, including the disclaimer, and that the same appear on ALL copies of the software, database and \
documentation, including modifications that you make for internal use or for distribution. WordNet 3.0 \
Copyright 2006 by Princeton University. All rights reserved. THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" \
AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT \
NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT- ABILITY OR FITNESS \
FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT \
INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS. The name of Princeton University or \
Princeton may not be used in advertising or publicity pertaining to distribution of the software and/or \
database. Title to copyright in this software, database and any associated documentation shall at all times \
remain with Princeton University and LICENSEE agrees to preserve same."""

#: WordNet 3.0's lexicographer file names by number (lexnames(5WN); Debian ships no ``lexnames`` file).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body noun.cognition "
    "noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive noun.object "
    "noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation noun.shape "
    "noun.state noun.substance noun.time verb.body verb.change verb.cognition verb.communication verb.competition "
    "verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession "
    "verb.social verb.stative verb.weather adj.ppl"
).split()

_CLASS_TYPES = ("Role", "Group", "PlaceKind", "FeatureKind")
#: relation -> (WordNet pointer symbol, domain types, range types, description)
SIGNATURES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], str]] = {
    "HAS_ROLE": ("@i", ("Person",), ("Role",), "a named person is an instance of a role (WordNet instance hypernym)"),
    "INSTANCE_OF": ("@i", ("Place", "Feature"), ("PlaceKind", "FeatureKind"),
                    "a named place or natural feature is an instance of a kind (WordNet instance hypernym)"),
    "IS_A": ("@", _CLASS_TYPES, _CLASS_TYPES, "a class is a kind of another class (WordNet hypernym)"),
    "PART_OF": ("#p", ("Place", "Feature"), ("Place",), "a place is part of a larger place (WordNet part holonym)"),
    "MEMBER_OF": ("#m", ("Place", "Group", "Person"), ("Group",),
                  "a place, group or person is a member of a group (WordNet member holonym)"),
    "INHABITANT_OF": ("#m", ("Role",), ("Place",), "people of a role belong to a place (WordNet member holonym)"),
    "IN_REGION": (";r", ("Role", "Group"), ("Place",), "a term belongs to a geographic region (WordNet domain region)"),
    "IN_TOPIC": (";c", ("Role", "Person", "Group"), ("Group",),
                 "a role, person or group belongs to the topic of a group (WordNet domain topic)"),
}


class Synset:
    __slots__ = ("id", "lex", "words", "ptrs")

    def __init__(self, sid: str, lex: str, words: list[str], ptrs: list[tuple[str, str]]):
        self.id, self.lex, self.words, self.ptrs = sid, lex, words, ptrs

    def targets(self, symbol: str) -> list[str]:
        return [t for s, t in self.ptrs if s == symbol]


def read_wordnet(wordnet_dir: Path) -> dict[str, Synset]:
    """Every synset of ``data.noun`` (the only part of WordNet the subset uses), keyed ``<offset>n``."""
    out: dict[str, Synset] = {}
    with open(wordnet_dir / "data.noun", encoding="latin-1") as fh:
        for line in fh:
            if line.startswith("  "):  # the licence header
                continue
            f = line.partition(" | ")[0].split()
            n_words = int(f[3], 16)
            words = [f[4 + 2 * i] for i in range(n_words)]
            i = 4 + 2 * n_words
            ptrs = []
            for _ in range(int(f[i])):
                sym, off, pos = f[i + 1:i + 4]
                ptrs.append((sym, off + pos))
                i += 4
            out[f[0] + "n"] = Synset(f[0] + "n", LEXNAMES[int(f[1])], words, ptrs)
    return out


def _types(wn: dict[str, Synset]) -> dict[str, str]:
    out = {}
    for sid, s in wn.items():
        inst = any(sym == "@i" for sym, _ in s.ptrs)
        t = {"noun.person": "Person" if inst else "Role", "noun.location": "Place" if inst else "PlaceKind",
             "noun.object": "Feature" if inst else "FeatureKind", "noun.group": "Group"}.get(s.lex)
        if t is not None:
            out[sid] = t
    return out


def _typed_triples(wn: dict[str, Synset], types: dict[str, str]) -> set[tuple[str, str, str]]:
    out = set()
    for sid, s in wn.items():
        st = types.get(sid)
        if st is None:
            continue
        for sym, t in s.ptrs:
            ot = types.get(t)
            if ot is None or t == sid:
                continue
            for rel, (ptr, dom, rng, _) in SIGNATURES.items():
                if sym == ptr and st in dom and ot in rng:
                    out.add((sid, rel, t))
    return out


def _closure(wn: dict[str, Synset], start: Iterable[str], symbols: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        x = todo.pop()
        for sym, t in wn[x].ptrs:
            if sym in symbols and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def _entailed(wn: dict[str, Synset], sid: str, rel: str) -> set[str]:
    """What WordNet entails as objects of ``(sid, rel, ·)`` (module docstring), direct ones included."""
    anc = _closure(wn, [sid], ("@", "@i"))
    selves = [sid, *sorted(anc)]
    if rel in ("IS_A", "INSTANCE_OF", "HAS_ROLE"):
        return anc
    if rel == "PART_OF":
        return _closure(wn, [sid], ("#p",))
    if rel in ("MEMBER_OF", "INHABITANT_OF"):
        direct = {t for x in selves for t in wn[x].targets("#m")}
        return direct | _closure(wn, direct, ("#m", "#p"))
    if rel == "IN_REGION":
        direct = {t for x in selves for t in wn[x].targets(";r")}
        return direct | _closure(wn, direct, ("#p",))
    if rel == "IN_TOPIC":
        direct = {t for x in selves for t in wn[x].targets(";c")}
        return direct | _closure(wn, direct, ("@", "@i"))
    raise ValueError(rel)


def _names(wn: dict[str, Synset], types: dict[str, str], keep: list[str]) -> dict[str, str]:
    """Readable names, unique per type after canonicalisation (module docstring)."""
    def base(sid: str) -> str:
        words = [w.replace("_", " ") for w in wn[sid].words]
        if types[sid] == "Person":  # a full name without initials, else any full name
            return next((w for w in words if " " in w and "." not in w), next((w for w in words if " " in w), words[0]))
        return words[0]

    def hyper(sid: str) -> str | None:
        up = wn[sid].targets("@i") or wn[sid].targets("@")
        return wn[up[0]].words[0].replace("_", " ") if up else None

    first = collections.Counter((types[s], entity_key(types[s], base(s))) for s in keep)
    out: dict[str, str] = {}
    taken: set[str] = set()
    for sid in sorted(keep):
        name = base(sid)
        if first[(types[sid], entity_key(types[sid], name))] > 1 and hyper(sid):
            name = f"{name} ({hyper(sid)})"
        cand, n = name, 2
        while entity_key(types[sid], cand) in taken:
            cand, n = f"{name} {n}", n + 1
        taken.add(entity_key(types[sid], cand))
        out[sid] = cand
    return out


def derive_subset(wn: dict[str, Synset], *, quota: int = 300, seed: int = 0) -> dict:
    """The subset as a JSON-able dict (module docstring)."""
    types = _types(wn)
    typed = _typed_triples(wn, types)
    G = nx.Graph()
    G.add_edges_from((s, o) for s, _, o in typed)
    core2 = set(nx.k_core(G, 2))
    keep = set(nx.k_core(G, 3))
    rng = random.Random(seed)
    by_rel: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for s, r, o in sorted(typed):
        by_rel[r].append((s, o))
    for rel in sorted(by_rel):
        have = sum(1 for s, o in by_rel[rel] if s in keep and o in keep)
        cands = list(by_rel[rel])
        rng.shuffle(cands)
        # triples touching kept entities first, then those inside the 2-core (a stable sort keeps the shuffle)
        cands.sort(key=lambda so: -((so[0] in keep) + (so[1] in keep) + 0.5 * ((so[0] in core2) + (so[1] in core2))))
        for s, o in cands:
            if have >= quota:
                break
            if s in keep and o in keep:
                continue
            keep.update((s, o))
            have += 1
    triples = sorted((s, r, o) for s, r, o in typed if s in keep and o in keep)
    kept = sorted(keep)
    names = _names(wn, types, kept)
    true = set(triples)
    excluded = []
    for sid in kept:
        for rel, (_, dom, rng_types, _) in SIGNATURES.items():
            for o in sorted(_entailed(wn, sid, rel)):
                if o in keep and o != sid and (sid, rel, o) not in true:
                    excluded.append((sid, rel, o))
    classes = {sid: sorted(set(wn[sid].targets("@i") + wn[sid].targets("@"))) for sid in kept}
    signatures = collections.Counter((r, types[s], types[o]) for s, r, o in triples)
    return {
        "source": {
            "name": "WordNet 3.0 (Princeton University), Debian package wordnet-base 1:3.0-37",
            "licence": "WordNet 3.0 licence (permissive; text in scripts/data/README.md and licence_text)",
            "copyright": "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.",
            "licence_text": WORDNET_LICENCE,
            "file": "data.noun",
            "generator": "scripts/make_wordnet_subset.py",
            "quota": quota,
            "seed": seed,
        },
        "relations": {r: {"pointer": p, "description": d,
                          "signatures": sorted([st, ot] for (rr, st, ot) in signatures if rr == r)}
                      for r, (p, _, _, d) in SIGNATURES.items()},
        "entities": {sid: [types[sid], names[sid]] for sid in kept},
        "classes": classes,
        "triples": [list(t) for t in triples],
        "excluded": [list(t) for t in excluded],
    }


def write(data: dict, out: Path) -> None:
    raw = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    out.write_bytes(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"),
                    help="directory holding WordNet's data.noun (wordnet-base)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "wordnet_subset.json.gz")
    ap.add_argument("--quota", type=int, default=300, help="triples per relation at least (where WordNet has them)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    data = derive_subset(read_wordnet(args.wordnet), quota=args.quota, seed=args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write(data, args.out)
    per = collections.Counter(r for _, r, _ in data["triples"])
    kinds = collections.Counter(t for t, _ in data["entities"].values())
    print(f"{args.out}: {len(data['entities'])} entities ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), "
          f"{len(data['triples'])} triples ({', '.join(f'{k} {v}' for k, v in sorted(per.items()))}), "
          f"{len(data['excluded'])} excluded, {args.out.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
