"""An offline, deterministic extractor driven entirely by the KG schema.

It needs no model and no network, so ``kgr demo`` and tests run anywhere; it is the default extractor
when no LLM is configured. Same text + same schema + same guidance → same result, always.

How it reads a chunk
--------------------
1. **Sentences** are found with :func:`kgr.text.sentences.sentence_spans`; relations never cross a
   sentence boundary.
2. **Mentions** come from each entity type's gazetteer and patterns:

   - ``names`` and both sides of ``aliases`` (an alias is reported under its canonical name). Matching
     ignores case and runs of whitespace, except that a one-word surface form must agree on the case
     of its first letter (so the alias ``"Engine"`` does not fire on "the engine"), with two
     exceptions (:func:`kgr.extract.mentions.case_agrees`): a lowercase name also matches capitalised ("git" on "Git
     supports HTTP"), and a name with a capital inside it also matches all lowercase ("OpenSSL" on
     "openssl").
   - ``patterns``: regular expressions (Python syntax, compiled by the ``regex`` library when the
     schema loads), matched case-sensitively as written, each with a bound on its CPU time per chunk
     (:func:`kgr.model.schema.pattern_matches`: a busy machine's waits do not count; a pattern that
     backtracks catastrophically matches nothing in that chunk and is logged). When a pattern has a
     named group ``name``, that group is the mention; otherwise the whole match is.
   - Overlapping candidates: the longest wins; at equal spans gazetteer types come before pattern
     types, and a span can carry several types (resolved by relation context, else the first).
3. **Relations** come from each relation type's ``triggers`` (phrases, case-insensitive, matched on
   word boundaries; the longest trigger wins where triggers overlap). For a trigger in a sentence:

   - *forward*: the subject is the nearest mention before the trigger whose type is in the domain,
     the object the nearest mention after it whose type is in the range (empty domain/range = any);
   - *reversed*: the object before and the subject after ("the Z3 was designed by Konrad Zuse").
     The voice picks one reading (:func:`kgr.extract.ends.readings`): a passive trigger (its last
     word is ``by``, or ``by`` follows it) reads reversed, an active one forward, and the other way
     round for a relation named ``…_BY``: "ENIAC was built by Eckert" yields
     ``(Eckert)-[BUILT]->(ENIAC)``, "X, published by Y" never ``Y DEVELOPED_BY X``;
   - coordinated mentions ("Eckert and Mauchly", "A, B and C") next to the chosen end join it;
   - self loops are dropped unless the schema allows them.
   - the ends lie at most :data:`MAX_LEFT_GAP` / :data:`MAX_RIGHT_GAP` tokens from the trigger with
     no clause boundary or second predicate between, and the clause is not negated, removed or
     hedged (:mod:`kgr.extract.cues`: "does not require", "Drop support for", "no longer"), and
     each end is one of the trigger's (:mod:`kgr.extract.ends`: no pronoun, preposition or other
     name between, not a modifier of a noun);
     licence boilerplate asserts nothing, and markup, list markers and changelog labels are blanked
     first (offsets kept). Each relation keeps the span of its sentence (``result.spans``).
   - with a title, it stands for the subject a sentence leaves out ("It supports", "Add support
     for", "Requires X", "Added X support": :mod:`kgr.extract.carried`), and a "License:" label or
     heading names its licence; the free-software notice names its own (:mod:`kgr.extract.notices`).
   - a known name that starts, ends or runs into a longer name is none (:mod:`kgr.extract.mentions`).
   - each relation names its path (how it was read, :mod:`kgr.extract.paths`, ``RelationSpan.path``);
     the extractor abstains from the paths the calibrated table does not keep (``abstain=False`` keeps all).
4. **Guidance** (recommendations from ``query_extraction_density`` and the other tools; which
   types, :func:`guided_types`) widens the search in a second pass: names no gazetteer or pattern
   knows may fill a trigger slot of those types (:mod:`kgr.extract.guesses`: name-like tokens,
   one type per name from its shape, closed types never guessed). Such a name becomes an entity
   only when it fills a relation slot.

Everything passes through :func:`kgr.extract.validate.sanitize_extraction` at the end, so the result
follows the same rules as an LLM's output. The rules extractor never proposes new types.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kgr.errors import KgrValidationError
from kgr.extract.base import ExtractionResult, RelationSpan
from kgr.extract.carried import SELF, feature_objects, item_of_another, labelled, opens_licences
from kgr.extract.cues import BOUNDARY, is_boilerplate, mask_markup, negated
from kgr.extract.ends import left_subject_ok, license_chain, readings, right_object_ok, said_of_another
from kgr.extract.guesses import Roles, find_guesses, schema_roles
from kgr.extract.guidance import guided_types
from kgr.extract.pairs import Mention, close, find_pair, mark_possessives, resolve_overlaps, shared_subject
from kgr.extract.mentions import case_agrees, common_word_match, continues, ends_longer, modifies_noun
from kgr.extract.notices import notice
from kgr.extract.paths import abstains, end_kind, path_of
from kgr.extract.phrases import title_mention, written_in
from kgr.extract.sections import changelog_spans
from kgr.extract.validate import sanitize_extraction
from kgr.text.sentences import sentence_spans
from kgr.model.canonical import canonical_name
from kgr.model.schema import PATTERN_SECONDS, KGSchema, compile_pattern, pattern_matches

__all__ = ["RulesExtractor", "guided_types"]

log = logging.getLogger("kgr.extract")

_CODE = re.compile(r"`+[^`]+`+")
_ARTICLE = re.compile(r"\s*(?:(?:the|a|an|both|all|its|their|optional|full|native)\s+)*", re.IGNORECASE)
#: Tokens at most between a relation's left end and its trigger, and between the trigger and its right end.
MAX_LEFT_GAP, MAX_RIGHT_GAP = 8, 5
#: After a trigger noun: what provides it is not its subject.
_PROVIDED_BY = re.compile(r"\s+(?:is|are)\s+(?:provided|offered|implemented)\s+by\b", re.IGNORECASE)
#: Between a trigger and its right end: a coordinator first ("formats that PIL supports and ANSI
#: sequences": the verb's object is before it; "develops and supports X" shares X) or a comparison
#: ("higher compression than JPEG").
_NO_RIGHT_END = re.compile(r"\s*(?:,|and\b|or\b)(?!\s+[a-z]+s\s*$)|.*\b(?:than|unlike|like|similar\s+to|compared\s+(?:to|with)|"
                           r"as\s+opposed\s+to)\b", re.IGNORECASE | re.DOTALL)
#: After a trigger word, a preposition (other than its own): the word is a noun there and its ends are
#: elsewhere ("C++ exception support only on i386": i386 is where, not what, it supports). Lower case
#: only: a capital starts a name ("wrote On Computable Numbers").
_PREPOSITION_NEXT = re.compile(r"\s+(?:only\s+)?(?:on|in|at|from|to|of|within|since|until|across|for|with|as|via|"
                               r"under|inside|between)\b")
#: A trigger inside a path or identifier ("lib/support/plausible.c", "license_file").
_IN_WORD_BEFORE, _IN_WORD_AFTER = re.compile(r"[/_]"), re.compile(r"[/_]|\.\w|-[A-Z0-9]{2,}\b")  # "LICENSE-MIT": a file name
#: After a trigger noun, a noun it modifies: "support libraries", "the license file", "license terms".
_NOUN_TRIGGER = frozenset({"support", "license", "licence", "encoder"})
_NOUN_AFTER = re.compile(r"\s+(?:librar(?:y|ies)|files?|code|routines?|functions?|modules?|packages?|scripts?|tools?|"
                         r"texts?|terms|headers?|class(?:es)?|programs?|teams?|matrix|status|levels?|polic(?:y|ies)|"
                         r"information|tickets?|requests?|contracts?|issues?|questions?|channels?|lists?|notices?|"
                         r"agreements?|fees?|keys?|servers?|contracts?|plans?|engineers?)\b", re.IGNORECASE)
#: A "License: X" line of a README or package description (its subject is the document's).
_LICENSE_LINE = re.compile(r"(?:^|(?<=\s))(?:\W{0,3}Licen[cs]e:|#{1,6}[ \t]*Licen[cs]e)\s")


@dataclass
class _Compiled:
    gazetteer: re.Pattern[str] | None
    surfaces: dict[str, list[tuple[str, str, str]]]  # key -> [(type, reported name, surface)]
    patterns: list[tuple[str, Any]]
    triggers: re.Pattern[str] | None
    trigger_rel: dict[str, list[tuple[str, bool]]]  # normalised trigger -> [(relation, passive)]
    aliases: dict[tuple[str, str], str] = field(default_factory=dict)
    roles: Roles = field(default_factory=lambda: Roles(None, None))


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def _phrase_regex(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


def _compile(schema: KGSchema) -> _Compiled:
    surfaces: dict[str, list[tuple[str, str, str]]] = {}

    def add(surface: str, etype: str, reported: str) -> None:
        if not surface.strip():
            return
        lst = surfaces.setdefault(_norm(surface), [])
        if not any(t == etype and r == reported for t, r, _ in lst):
            lst.append((etype, reported, " ".join(surface.split())))

    for etype, spec in schema.entity_types.items():
        for name in spec.names:
            add(name, etype, name.strip())
        for target, forms in spec.aliases.items():
            add(target, etype, target.strip())
            for form in forms:
                add(form, etype, target.strip())
    gaz = None
    if surfaces:
        alts = sorted({s for lst in surfaces.values() for _, _, s in lst}, key=lambda s: (-len(s), s))
        gaz = re.compile(r"(?<!\w)(?:" + "|".join(_phrase_regex(a) for a in alts) + r")(?!\w)", re.IGNORECASE)

    patterns: list[tuple[str, Any]] = []
    for etype, spec in schema.entity_types.items():
        for i, pat in enumerate(spec.patterns):
            try:
                patterns.append((etype, compile_pattern(pat)))
            except ValueError as exc:
                raise KgrValidationError(str(exc), field=f"entity_types.{etype}.patterns.{i}") from exc

    trigger_rel: dict[str, list[tuple[str, bool]]] = {}
    for rel, spec in schema.relation_types.items():
        for trig in spec.triggers:
            if not trig.strip():
                continue
            key = _norm(trig)
            passive = key.split()[-1] == "by"
            trigger_rel.setdefault(key, [])
            if (rel, passive) not in trigger_rel[key]:
                trigger_rel[key].append((rel, passive))
    trig_re = None
    if trigger_rel:
        alts = sorted(trigger_rel, key=lambda s: (-len(s), s))
        trig_re = re.compile(r"(?<!\w)(?:" + "|".join(_phrase_regex(a) for a in alts) + r")(?!\w)", re.IGNORECASE)
    return _Compiled(gaz, surfaces, patterns, trig_re, trigger_rel, schema.alias_map(), schema_roles(schema))


class RulesExtractor:
    """The offline extractor (behaviour in the module docstring).

    Examples
    --------
    >>> schema = KGSchema.model_validate({
    ...     "entity_types": {"Person": {"names": ["Charles Babbage"], "aliases": {"Charles Babbage": ["Babbage"]}},
    ...                      "Machine": {"names": ["Analytical Engine"]}},
    ...     "relation_types": {"DESIGNED": {"domain": ["Person"], "range": ["Machine"], "triggers": ["designed"]}}})
    >>> r = RulesExtractor().extract("The Analytical Engine was designed by Babbage.", schema)
    >>> r.kg.relations["DESIGNED"][0].model_dump()
    {'subject': 'Charles Babbage', 'object': 'Analytical Engine'}
    """

    name = "rules"

    def __init__(self, *, cache_size: int = 8, abstain: bool = True):
        self._cache: OrderedDict[str, _Compiled] = OrderedDict()
        self._cache_size, self.abstain = cache_size, abstain  # abstain: from the paths of kgr.extract.paths

    # -- compilation cache -------------------------------------------------------------------
    def _compiled(self, schema: KGSchema) -> _Compiled:
        key = hashlib.sha256(schema.model_dump_json().encode()).hexdigest()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        comp = _compile(schema)
        self._cache[key] = comp
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return comp

    # -- mentions ----------------------------------------------------------------------------
    def _mentions(self, text: str, comp: _Compiled) -> list[Mention]:
        cands: list[tuple[int, int, int, Mention]] = []  # (start, end, priority, mention)
        if comp.gazetteer is not None:
            for m in comp.gazetteer.finditer(text):
                got = m.group(0)
                entries = comp.surfaces.get(_norm(got), [])
                types: list[str] = []
                names: dict[str, str] = {}
                for etype, reported, surface in entries:
                    if not case_agrees(got, surface):
                        continue
                    if etype not in names:
                        types.append(etype)
                        names[etype] = reported
                if types:
                    cands.append((m.start(), m.end(), 0, Mention(m.start(), m.end(), types, names)))
        for etype, pat in comp.patterns:
            try:
                found = pattern_matches(pat, text)
            except TimeoutError:
                log.warning("schema pattern %r of %s gave up after %s s on a %d-character chunk (catastrophic "
                            "backtracking?); it matched nothing there", pat.pattern, etype, PATTERN_SECONDS, len(text))
                continue
            for m in found:
                grp = "name" if "name" in pat.groupindex else 0
                s, e = m.span(grp)
                if s < 0 or e <= s:
                    continue
                surface = " ".join(text[s:e].split())
                if common_word_match(surface):
                    continue
                try:
                    canon = canonical_name(surface)
                except KgrValidationError:
                    continue
                reported = comp.aliases.get((etype, canon), surface)
                cands.append((s, e, 1, Mention(s, e, [etype], {etype: reported})))
        resolved = resolve_overlaps(cands)
        name_ends = {m.end for m in resolved}
        kept = [m for m in resolved if not continues(text, m.start, m.end)]
        for m in kept:
            m.modifier, m.part = modifies_noun(text, m.start, m.end), ends_longer(text, m.start, m.end, name_ends)
        return mark_possessives(text, kept)

    @staticmethod
    def _guesses(sentence: str, masked: str, taken: list[Mention], starts: set[int],
                 expect: set[int]) -> list[Mention]:
        codes = [m.span() for m in _CODE.finditer(sentence)]
        out = []
        for g in find_guesses(sentence, masked, codes, starts, expect):
            if any(t.start < g.end and g.start < t.end for t in taken):
                continue
            out.append(Mention(g.start, g.end, [], {}, guess=True, shape=g.shape))
            out[-1].names["*"] = g.name
        return mark_possessives(masked, out)

    # -- relations ---------------------------------------------------------------------------
    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None,
                title: str | None = None, headings: tuple = ()) -> ExtractionResult:
        """Extract entities and relations from ``chunk_text`` (rules in the module docstring).

        ``title``, the document's title when a loader knows it, is the name of a sentence-initial
        "It" / "This package|library|project|module|tool|program|command" (typed as the first
        relation domain type it fits; "It is a …" is left alone), the missing subject of a list
        item or changelog entry ("Add support for X", "Requires X", "Added X support";
        :mod:`kgr.extract.carried`, not after a line label) and the subject of a "License: X" line
        or of the licence under a "License" heading. ``headings``, those in force at the chunk's start (``(level,
        words)``, :func:`kgr.text.headings.trail`), and the chunk's own tell its changelog sections, not read.
        """
        comp = self._compiled(schema)
        widened = guided_types(schema, guidance)
        found: list[tuple[int, str, str]] = []  # (offset, type, name) of entities in relations
        relations: dict[str, list[dict[str, str]]] = {}
        spans: dict[tuple[str, str, str], tuple] = {}  # (relation, subject, object) -> sentence span, path, anchors
        typed: dict[Mention, str] = {}  # type chosen through a relation
        offsets: dict[Mention, int] = {}  # offset in the chunk

        all_mentions: list[Mention] = []
        under_heading = False  # the sentence before opens the licences (carried.opens_licences)
        skip = changelog_spans(chunk_text, tuple(headings or ()))
        doc_title = title
        for s0, e0 in (se for se in sentence_spans(chunk_text, after_headings=True) if not any(a <= se[0] < b for a, b in skip)):
            sentence, title = chunk_text[s0:e0], None if item_of_another(chunk_text, s0, doc_title) else doc_title
            masked = mask_markup(sentence)
            mentions = self._mentions(masked, comp)
            own = SELF.match(masked) if title and not labelled(sentence) else None
            if own is not None and title:
                mentions.insert(0, self._title_mention(own.end(), title, schema))
            else:
                mentions = self._own_name(masked, mentions, title, schema)
            all_mentions.extend(m for m in mentions if not m.part)
            for m in mentions:
                offsets[m] = s0 + m.start
            label = _LICENSE_LINE.search(sentence) if title else None
            at = label.start() if label is not None else (0 if under_heading and title else None)
            found_here = [] if at is None or not title else \
                [(*f, "license", 0) for f in self._license_line(sentence, at, mentions, title, schema, label is None)]
            under_heading = opens_licences(sentence, under_heading, doc_title)
            found_here += [(*f, "notice", 0) for f in self._notice(masked, mentions, title, schema, comp)] if at is None else []
            if not is_boilerplate(sentence):  # licence text after a "License:" label says nothing more
                found_here += [(*f[:5], "trigger", f[5]) for f in self._sentence_relations(sentence, masked, mentions, comp, schema, widened)]
                found_here += [(*f, "written", 0) for f in self._written_in(masked, mentions, title, schema)]
                found_here += [(*f, "feature", 0) for f in self._features(masked, mentions, title, schema, comp) if own is None]
            for rel, sm, st, om, ot, producer, ts in found_here:
                sname, oname = sm.names[st], om.names[ot]
                if st == ot and canonical_name(sname) == canonical_name(oname) and not schema.allow_self_loops:
                    continue
                path = path_of(producer, rel, end_kind(sm, own is not None, masked[sm.end:ts]), end_kind(om, own is not None))
                if self.abstain and abstains(path):
                    continue
                typed.setdefault(sm, st)
                typed.setdefault(om, ot)
                found.append((s0 + sm.start, st, sname))
                found.append((s0 + om.start, ot, oname))
                pair = {"subject": sname, "object": oname}
                lst = relations.setdefault(rel, [])
                if pair not in lst:
                    lst.append(pair)
                    anchors = [s0 + sm.start, s0 + sm.end, s0 + om.start, s0 + om.end, s0 + ts if producer == "trigger" else -1]
                    spans.setdefault((rel, sname, oname), (s0, e0, path, anchors))
        for m in all_mentions:
            t = typed.get(m, m.types[0])
            found.append((offsets[m], t, m.names[t]))
        ordered: dict[str, list[str]] = {}
        for _, t, name in sorted(found, key=lambda f: f[0]):
            lst = ordered.setdefault(t, [])
            if name not in lst:
                lst.append(name)
        clean = sanitize_extraction(ordered, relations, schema)
        # the sanitizer may respell a name as another mention of it ("typer" -> "Typer"): spans follow by canonical form
        kept = {(r, canonical_name(p.subject), canonical_name(p.object)): (p.subject, p.object)
                for r, ps in clean.kg.relations.items() for p in ps}
        named = {(r, *kept[k]): sp for (r, sn, on), sp in spans.items() if (k := (r, canonical_name(sn), canonical_name(on))) in kept}
        return ExtractionResult(kg=clean.kg, proposed_types=clean.proposed, rejected=clean.rejected, extractor="rules",
                                spans=[RelationSpan(relation=r, subject=sn, object=on, start=a, end=b, path=p, anchors=x)
                                       for (r, sn, on), (a, b, p, x) in named.items()])

    @staticmethod
    def _title_mention(end: int, title: str, schema: KGSchema) -> Mention:
        """The document's title standing at ``[0, end)`` of a sentence (or for its missing subject), with every relation domain type."""
        types = list(dict.fromkeys(t for spec in schema.relation_types.values() for t in spec.domain))
        return Mention(0, end, types, {t: title for t in types}, own=True)

    @classmethod
    def _own_name(cls, masked: str, mentions: list[Mention], title: str | None, schema: KGSchema) -> list[Mention]:
        """``mentions`` and, opening the sentence, the document's own name as the text spells it
        (:func:`kgr.extract.phrases.title_mention`), unless a known name stands there."""
        own = title_mention(masked, title)
        if own is None or any(m.start < own[1] and own[0] < m.end for m in mentions) \
                or re.match(r" [A-Z]", masked[own[1]:own[1] + 2]):  # "Tcl Dev Kit", "GoogleTest UI": not the title
            return mentions
        me = cls._title_mention(own[1], own[2], schema)
        me.start = own[0]
        return [*mark_possessives(masked, [me]), *mentions]  # "Glob's logo was created by": the logo's maker

    @classmethod
    def _written_in(cls, masked: str, mentions: list[Mention], title: str | None, schema: KGSchema):
        """``WRITTEN_IN`` said by a product noun phrase ("X is a Python library"; rules in
        :func:`kgr.extract.phrases.written_in`), not negated."""
        spec = schema.relation_types.get("WRITTEN_IN")
        if spec is None or not spec.domain or not spec.range:
            return []
        langs = {(m.start, m.end): (m, t) for m in mentions if not (m.guess or m.possessive or m.part)
                 for t in m.types[:1] if t in spec.range}
        subs = {(m.start, m.end): (m, t) for m in mentions if not m.guess
                for t in [next((t for t in m.types if t in spec.domain), None)] if t is not None}
        out = []
        for sub, lang in written_in(masked, list(langs), list(subs), bool(title)):
            sm, st = subs[sub] if sub is not None else (cls._title_mention(0, title or "", schema), spec.domain[0])
            lm, lt = langs[lang]
            if not negated(masked, [(sm.start, sm.end), (lm.start, lm.end)], [(lm.start, lm.end)]):
                out.append(("WRITTEN_IN", sm, st, lm, lt))
        return out

    def _features(self, masked: str, mentions: list[Mention], title: str | None, schema: KGSchema, comp: _Compiled):
        """``<title> <relation of the trigger "support"> X`` from "Added [official] X support"
        (:func:`kgr.extract.carried.feature_objects`), not negated, not after a line label."""
        out = []
        for rel, _ in comp.trigger_rel.get("support", []) if title else []:
            spec = schema.relation_types[rel]
            objs = {(m.start, m.end): (m, t) for m in mentions if not (m.guess or m.possessive or m.part)
                    for t in m.types[:1] if t in spec.range}
            for span in feature_objects(masked, sorted(objs)) if spec.domain else []:
                if not negated(masked, [span], list(objs)):
                    out.append((rel, self._title_mention(0, title or "", schema), spec.domain[0], *objs[span]))
        return out

    def _notice(self, masked: str, mentions: list[Mention], title: str | None, schema: KGSchema, comp: _Compiled):
        """``<S> <relation of the trigger "under the terms of"> <licence>`` from a free-software licence
        notice (:func:`kgr.extract.notices.notice`; its subject, or the title for "This program")."""
        for rel, _ in comp.trigger_rel.get("under the terms of", []):
            spec = schema.relation_types[rel]
            lics = {(m.start, m.end): (m, t) for m in mentions if not m.part for t in m.types[:1] if t in spec.range}
            got = notice(masked, sorted(lics)) if spec.domain else None
            if got is None or (got[0] is None and not title):
                continue
            st = spec.domain[0]
            sm = self._title_mention(0, title or "", schema) if got[0] is None else \
                Mention(*got[0], [st], {st: " ".join(masked[got[0][0]:got[0][1]].split())})
            return [(rel, sm, st, *lics[got[1]])]
        return []

    @staticmethod
    def _license_line(sentence: str, at: int, mentions: list[Mention], title: str, schema: KGSchema, opened: bool = False):
        """``LICENSED_UNDER`` from the document (``title``) to each licence of a "License: …" line's
        licence expression, or of the sentence after a "License" heading (``opened``; :func:`kgr.extract.ends.license_chain`)."""
        spec = schema.relation_types.get("LICENSED_UNDER")
        if spec is None or not spec.domain:
            return
        me = Mention(0, 0, [spec.domain[0]], {spec.domain[0]: title})
        licences = {(m.start, m.end): (m, t) for m in mentions if not (m.part or m.modifier) for t in m.types[:1] if t in spec.range}
        for span in license_chain(sentence, sorted(licences), at, opened):
            m, t = licences[span]
            yield "LICENSED_UNDER", me, spec.domain[0], m, t

    def _sentence_relations(self, sentence: str, masked: str, mentions: list[Mention], comp: _Compiled,
                            schema: KGSchema, widened: list[str]):
        """``(relation, subject mention, its type, object mention, its type)`` read in one sentence:
        the trigger's ends within :data:`MAX_LEFT_GAP` / :data:`MAX_RIGHT_GAP` tokens and no clause
        boundary of it, and the clause not negated (:func:`kgr.extract.cues.negated`)."""
        triggers = list(self._triggers(masked, comp, mentions))
        guesses: list[Mention] = []
        if widened:
            starts = {0} | {m.end() for m in BOUNDARY.finditer(masked)} | {m.end() for m in re.finditer(r",\s*", masked)}
            after = {te + len(_ARTICLE.match(masked, te).group(0)) for _, _, _, te in triggers}
            starts, after = ({i + len(masked[i:]) - len(masked[i:].lstrip()) for i in pos} for pos in (starts, after))
            guesses = self._guesses(sentence, masked, mentions, starts, starts | after)
        ends_at = sorted([(m.start, m.end) for m in [*mentions, *guesses]])
        for rel, passive, ts, te in triggers:
            spec = schema.relation_types[rel]
            dom, rng = list(spec.domain), list(spec.range)
            order = readings(rel, passive)
            ends = find_pair(masked, mentions, ts, te, dom, rng, passive, roles=comp.roles, order=order)
            if ends is None and guesses:
                ends = find_pair(masked, mentions, ts, te, dom, rng, passive, guesses=guesses, widened=widened,
                                  roles=comp.roles, order=order)
            if ends is None:
                continue
            subjects, objects = (sorted(side, key=lambda mt: mt[0].start) for side in ends)
            left = subjects if subjects[0][0].end <= ts else objects
            right = objects if left is subjects else subjects
            lm = left[-1][0]
            left_ok = close(masked, lm.end, ts, MAX_LEFT_GAP) and left_subject_ok(
                masked, lm.start, lm.end, ts, te, masked[ts:te], lm.own)
            if left is subjects and left_ok and said_of_another(masked, lm.end, ts, ends_at):
                left_ok = False  # "X … to architectures that support Y", "X bundles CPython, which is …"
            if left is subjects and not left_ok:  # the clause's subject, shared with an earlier predicate?
                shared = shared_subject(masked, [*mentions, *guesses], ts, dom, widened, comp.roles)
                subjects, left_ok = ([shared], True) if shared is not None else (subjects, False)
            if not (left_ok and close(masked, te, right[0][0].start, MAX_RIGHT_GAP)):
                continue
            if _NO_RIGHT_END.match(masked, te, right[0][0].start) or not right_object_ok(
                    masked, te, right[0][0].start, [sp for sp in ends_at if sp != (right[0][0].start, right[0][0].end)]):
                continue
            for sm, st in subjects:
                for om, ot in objects:
                    if negated(masked, [(ts, te), (sm.start, sm.end), (om.start, om.end)], ends_at):
                        continue
                    yield rel, sm, st, om, ot, ts

    @staticmethod
    def _triggers(sentence: str, comp: _Compiled, mentions: list[Mention]):
        if comp.triggers is None:
            return
        for m in comp.triggers.finditer(sentence):
            ts, te = m.span()
            if any(x.start < te and ts < x.end for x in mentions):
                continue  # a trigger word inside a name ("Bell Telephone Laboratories" vs "telephone")
            if _PREPOSITION_NEXT.match(sentence, te) and not re.search(r"\s(?:on|in|at|to|of|for|with|under)$", m.group(0)):
                continue
            if _IN_WORD_BEFORE.match(sentence, max(0, ts - 1), ts) or _IN_WORD_AFTER.match(sentence, te):
                continue
            if _norm(m.group(0)) in _NOUN_TRIGGER and _NOUN_AFTER.match(sentence, te):
                continue
            if _PROVIDED_BY.match(sentence, te):
                continue  # "SSL support is provided by OpenSSL": the document supports SSL through OpenSSL
            after_by = re.match(r"\s+by\b", sentence[te:], re.IGNORECASE) is not None
            for rel, passive in comp.trigger_rel.get(_norm(m.group(0)), []):
                yield rel, passive or after_by, ts, te
