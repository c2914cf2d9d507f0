"""Which end of a trigger may be its subject or object (rules extractor, after :func:`kgr.extract.pairs.find_pair`).

Each rule abstains (precision first) where a name stands near a trigger without being its end:

- :func:`readings`: the direction follows the verb's voice, not the types alone. An active trigger
  reads forward (subject, trigger, object); a passive one ("built by", or "by" after it) reversed;
  for a relation whose name ends in ``_BY`` (``DEVELOPED_BY``: its object is the agent) the other
  way round. "Python Cookbook, published by O'Reilly" is no ``O'Reilly DEVELOPED_BY Python Cookbook``.
- :func:`left_subject_ok`: the subject left of its trigger is not one when a pronoun stands between
  ("Since September 2002 *it* has been maintained by"), when it is the object of a preposition other
  than *of* ("*via* GdkOwnerChange events requires", "Building *from* a Git checkout requires"; "The
  main features *of* Pexpect require" is read as said of Pexpect), when the
  trigger is the bare noun *support* with no verb before it ("Key exchange support for",
  "Configuration support currently exists"), or when the trigger is a participle after a comma
  and the name is not the noun just before that comma ("an Apache2 licensed containers library,
  written in pure-Python").
- :func:`participle_of_noun`: a participle right after a lowercase noun that ends a prepositional
  phrase is said of that noun, not of the clause's subject ("Rhythmbox … is extensible via *plugins
  written in* Python or C", "a tool for concurrent *programs written in* a subset of C").
- :func:`right_object_ok`: the object right of its trigger is not one when another name stands
  between (unless both are items of one list), when the words between end in a preposition or a passive participle ("implements the
  PRF *used by* TLS", "the long double datatype *with* 128bit") or name another thing made from the
  object ("licensed under *a variant of* Apache 2.0"), or hold a relative pronoun
  ("supports new options *that* enable …"), or when a comparison "the same … as" precedes it.
- :func:`license_chain`: the licences a "License: X" line names are those of its licence
  expression (the names right after the label, joined by *or*, *and*, *with* or commas), not the
  ones in the text after it ("License: GPL-3+ On Debian systems the full text of the GNU General
  Public License …"); and none when that text speaks of a part ("*This file* is dual-licensed",
  "*These scripts* are free software").
- :func:`said_of_another`: a trigger in a relative clause of another noun is not said of the subject
  ("X … to *architectures that* support Y", "Xarray bundles portions of *CPython, which* is available
  under the PSF License").
"""

from __future__ import annotations

import re

from kgr.extract.carried import LICENSED_OPENING

__all__ = ["readings", "left_subject_ok", "right_object_ok", "participle_of_noun", "license_chain", "said_of_another"]

_PRONOUN = re.compile(r"\b(?:it|they|he|she|we|you|i)\b")
_PREPOSITION_BEFORE = re.compile(
    r"(?:^|\s)(?:via|in|on|for|with|from|by|to|at|using|through|behind|into|about|beyond|within|without|since|"
    r"after|before|until|unlike|than|per|including|except|like|over|under|between|among|against)\s+"
    r"(?:(?:a|an|the|this|that|its|their|his|her|our|each|every|all)\s+)?$", re.IGNORECASE)
#: A verb that gives the bare noun "support" its owner ("X has support for", "X adds support for"), or an
#: auxiliary that makes "support" the verb ("X can support Y", "to support").
_SUPPORT_VERB = re.compile(r"\b(?:can|could|will|would|to|does|do|did|has|have|had|having|with|provides?|provided|providing|adds?|added|adding|offers?|"
                           r"offered|includes?|included|including|gains?|gained|got|gets|brings?|brought|contains?|"
                           r"ships?|shipped|enables?|enabled|introduces?|introduced|comes\s+with|came\s+with)\b",
                           re.IGNORECASE)
#: A lowercase noun right after the name, before the trigger: the name modifies it ("SystemVerilog *parser*
#: supports", "The gdk-pixbuf *tiff loader* now requires"); not an auxiliary, an adverb, a word in -s or -ed
#: (a verb more often than not: "GnuPG *provides*") or the name's own kind ("The Pallets *organization* develops").
_MODIFIES_NEXT = re.compile(
    r"\s+(?!(?:is|are|was|were|be|been|has|have|had|can|could|will|would|shall|should|may|might|must|does|do|did|"
    r"also|now|still|only|already|then|even|again|not|never|itself|themselves|first|originally|initially|mainly|"
    r"and|or|but|which|that|who|as|to|in|on|of|for|with|by|from|at|under|since|library|libraries|package|packages|"
    r"module|modules|project|projects|tool|tools|toolkit|framework|organi[sz]ation|team|community|developers|"
    r"maintainers|authors|foundation|program|application|software|system|ecosystem|suite|family|stack|platform|"
    r"codebase|repository|source|distribution)\b)[a-z]+(?<!ly)(?<!s)(?<!ed)\b")
#: ... and a plural noun in -s right before a trigger verb in its plural form: "SigV4 *requests* require",
#: "the Foo *bindings* depend on" (two finite verbs do not stand side by side, so the -s word is a noun).
_PLURAL_HEAD = re.compile(r"\s+(?!(?:is|was|has|does|its|this|thus|also|always|perhaps|as|us|yes|plus|less|unless|"
                          r"news|series|always|sometimes|nevertheless)\s)[a-z]{3,}s\s+")
#: ... and a plural noun in -s right before a plural auxiliary: "Current *releases are* licensed under" (a
#: verb in -s is never followed by "are"), so the capitalised word before it modifies that noun.
_PLURAL_SUBJECT = re.compile(_PLURAL_HEAD.pattern + r"(?:are|were|have|had|do|did)\b")
#: ... and a plural noun in -s right after the name, then a comma: "the CPU and CUDA *plugins,* is licensed
#: under" (a verb in -s takes no comma before its object).
_PLURAL_COMMA = re.compile(_PLURAL_HEAD.pattern[:-3] + r"\s*,")
_PARTICIPLE = re.compile(r"[a-z]+(?:ed|en|wn)\b|built\b|made\b|based\b", re.IGNORECASE)
_ADVERB_ONLY = re.compile(r"\s*(?:[a-z]+ly\s+)?")
#: A participle right after a lowercase noun that ends a prepositional phrase is said of that noun (a
#: reduced relative clause): "extensible via *plugins written in* Python", "a tool for concurrent
#: *programs written in* C" — not of the clause's subject ("an environment written in Python" is).
_PREPOSITION_NOUN_END = re.compile(
    r"\b(?:via|for|with|of|to|from|in|on|by|through|using|into|about|between|among)\s+"
    r"(?:[\w+#/.'-]+\s+){0,3}(?!(?:is|are|was|were|be|been|being|has|have|had|and|or|but|also|now|then|not|still|"
    r"only|first|originally|mainly|can|will|may|must|should|could|would)\s)[a-z][a-z-]*\s+$")
#: Words between a trigger and its object that make the object another noun's: a relative pronoun, a
#: preposition (other than "of": "the terms of", "version 2 of") or a passive participle ending the gap.
_RIGHT_GAP_STOP = re.compile(
    r"\b(?:that|which|who|whom|whose|where)\b|"
    r"\s(?:with|on|in|at|from|by|via|under|over|beyond|between|into|for|to|as)\s+(?:(?:a|an|the)\s+)?$|"
    r"\b[a-z]+ed\s+by\s*$|"
    # another thing made from the object: "licensed under a variant of Apache 2.0" (eighteenth census)
    r"\b(?:variant|derivative|modification|modified\s+version|fork)s?\s+of\s+(?:the\s+)?$", re.IGNORECASE)
_LIST_REST = re.compile(r"(?:[\s,;/&]|\b(?:and|or|the|a|an|v?\d[\w.]*)\b)*", re.IGNORECASE)
_BY_FIRST = re.compile(r"^\s*by\b", re.IGNORECASE)
_SAME_AS = re.compile(r"\bsame\b[^,;:]*\bas\s*$", re.IGNORECASE)
_CHAIN_GAP = re.compile(r"\s*(?:,|\bor\b|\band\b|\bwith\b|/|\|)?\s*(?:(?:the|later|any)\s+)*", re.IGNORECASE)
_CHAIN_OPEN = re.compile(r"(?:\W{0,3}Licen[cs]e:|#{1,6}[ \t]*Licen[cs]e(?=\s))\s*(?:(?:your\s+)?choice\s+of\s+)?", re.IGNORECASE)
#: The start of the sentence after a "License" heading: a list item's marker (the items after "Licensed under
#: either of") or "Licensed under [the terms of] [either of] [the]" (not in a page's footer: only under the heading).
_CHAIN_START = re.compile(r"\s*(?:[-*+]\s+)?(?:" + LICENSED_OPENING + r"(?:the\s+)?)?")
_PART = re.compile(r"\b(?:this|these|those|some|the\s+following)\s+(?:files?|scripts?|source\s+files?|source\s+code|"
                   r"code|portions?|parts?|fonts?|icons?|images?|documentation|manual|headers?|tests?|examples?)\b|"
                   r"\bportions?\s+of\b", re.IGNORECASE)


def readings(relation: str, passive: bool) -> list[str]:
    """The one reading (``"forward"``: subject before the trigger; ``"reversed"``) of a trigger of
    ``relation`` in the voice ``passive`` (rule in the module docstring).

    >>> readings("DESIGNED", True), readings("DEVELOPED_BY", True), readings("DEVELOPED_BY", False)
    (['reversed'], ['forward'], ['reversed'])
    """
    agent_object = relation.upper().endswith("_BY")
    return ["forward"] if passive == agent_object else ["reversed"]


def left_subject_ok(text: str, start: int, end: int, ts: int, te: int, trigger: str, own: bool = False) -> bool:
    """Whether the mention at ``[start, end)`` before the trigger at ``[ts, te)`` may be its subject
    (``own``: the document's title standing for "It" or the missing subject of "Add support for")."""
    gap = text[end:ts]
    if _PRONOUN.search(gap) or _PREPOSITION_BEFORE.search(text, 0, start):
        return False
    if _MODIFIES_NEXT.match(gap) or _PLURAL_SUBJECT.match(gap) or _PLURAL_COMMA.match(gap) or (
            _PLURAL_HEAD.fullmatch(gap) and not trigger.split()[0].casefold().endswith("s")):
        return False
    if " ".join(trigger.casefold().split()) in ("support", "support for") and not _SUPPORT_VERB.search(gap) \
            and not (own and not gap.strip()):
        return False
    if participle_of_noun(gap, trigger):
        return False
    comma = gap.rfind(",")
    if comma >= 0 and _PARTICIPLE.match(trigger) and _ADVERB_ONLY.fullmatch(gap[comma + 1:]):
        return not gap[:comma].strip(" \"'”’)")  # ", written in": said of the noun just before the comma
    return True


def right_object_ok(text: str, te: int, start: int, others: list[tuple[int, int]]) -> bool:
    """Whether the mention starting at ``start`` after a trigger ending at ``te`` may be its object;
    ``others``: spans of the sentence's other names (known or guessed)."""
    gap = _BY_FIRST.sub("", text[te:start])  # "designed by X": the trigger's own "by"
    between = [(s, e) for s, e in others if te <= s and e <= start]
    if between:  # another name first: only as an item of a list the object ends ("SSLv2 and v4, TLS")
        rest = list(text[te:start])
        for s, e in between:
            rest[s - te:e - te] = " " * (e - s)
        if not _LIST_REST.fullmatch("".join(rest)):
            return False
    return _RIGHT_GAP_STOP.search(gap) is None and _SAME_AS.search(text, 0, te) is None


def participle_of_noun(before: str, trigger: str) -> bool:
    """Whether the participle ``trigger`` is said of the lowercase noun ending a prepositional phrase
    at the end of ``before`` (the text before the trigger), not of the clause's subject.

    >>> participle_of_noun("Rhythmbox is extensible via plugins ", "written in")
    True
    >>> participle_of_noun("Spyder is a scientific environment ", "written in")
    False
    >>> participle_of_noun("a tool for X, ", "written in")
    False
    """
    return _PARTICIPLE.match(trigger) is not None and _PREPOSITION_NOUN_END.search(before) is not None


def license_chain(text: str, spans: list[tuple[int, int]], label: int = 0, opened: bool = False) -> list[tuple[int, int]]:
    """Of the licence mentions ``spans`` (sorted) of a "License: …" label (or a Markdown heading "##
    License" before the text) at ``label``, those of its licence expression; ``opened``: the text
    follows a "License" heading of its own, and the expression opens it.

    >>> t = "License: GPL-3+ On Debian systems the full text of the GNU General Public License is in"
    >>> license_chain(t, [(9, 14), (51, 77)])
    [(9, 14)]
    >>> license_chain("License: MIT or Apache 2, your choice", [(9, 12), (16, 24)])
    [(9, 12), (16, 24)]
    >>> license_chain("License: LGPL This file may be redistributed under the LGPL.", [(9, 13), (55, 59)])
    []
    >>> license_chain("## License The MIT License (MIT)", [(15, 26)]), license_chain("The MIT License (MIT)", [(4, 15)], 0, True)
    ([(15, 26)], [(4, 15)])
    """
    m = (_CHAIN_START if opened else _CHAIN_OPEN).match(text, label)
    if m is None or _PART.search(text, label):
        return []
    at, out = m.end(), []
    for s, e in spans:
        if s < at:
            continue
        gap = _CHAIN_GAP.match(text, at)
        if gap is None or gap.end() < s and text[gap.end():s].strip(" -+.0-9"):
            break
        out.append((s, e))
        at = e
    return out


#: A word that opens a relative clause whose antecedent is the word before it ("architectures that support").
_RELATIVE = re.compile(r"\w[\w-]*\s+(?:that|which|who)\s+$")
#: A relative clause opened after a comma: ", which is available under".
_COMMA_RELATIVE = re.compile(r"""["'”’)]?\s*,\s*(?:which|that|who)\b""", re.IGNORECASE)


def said_of_another(masked: str, end: int, ts: int, names: list[tuple[int, int]]) -> bool:
    """Whether the trigger at ``ts`` is in a relative clause of another noun than the subject ending at
    ``end``: a relative pronoun right before the trigger whose antecedent is the word before it ("X …
    to architectures *that* support Y"), or a relative clause opened right after another name (one of
    ``names``, the spans of the sentence's mentions and guesses: "Xarray bundles portions of *CPython,
    which* is available under the PSF License"). "Xarray, which is licensed under …" and "Flask is a
    framework, which …" keep their subject."""
    if _RELATIVE.search(masked, end, ts):
        return True
    return any(end <= s and e < ts and _COMMA_RELATIVE.match(masked, e) is not None
               and masked.find(",", e, ts) >= 0 for s, e in names)
