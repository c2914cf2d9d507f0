"""Whether a known name found in a sentence is a mention of it (rules extractor, step 2), whether
its case agrees with the name's (:func:`case_agrees`), and whether it modifies a noun.

A gazetteer match is a name's mention only when it is not part of a longer name or word:

- **followed by a capitalised word** it starts a longer, unknown name ("JSON Object Signing and
  Encryption", "Python Package Index");
- **run into a longer word**: a hyphenated compound ("X Window System-specific", "C-extensions", the
  "DNS" of "DNS-SD"), a longer name ("C" of "C++11", "C#") or a dotted token ("C" of the locale
  "C.UTF-8", "Node" of "Node.js");
- **preceded by a capitalised word inside the sentence** it ends a longer, unknown name: English
  writes a multi-word proper name with each word capitalised, so a capitalised word that does not
  open the sentence (or a clause, a list item) and is no known name itself is that name's first word
  ("Added support for Kernel TLS", "Linux Kernel TLS data-path": not TLS). Determiners and
  other function words that a title-case heading capitalises ("The MIT License", "Support For")
  are not name words.

A known name that is a mention may still **modify a noun** and so be no relation end of a closed
type (:func:`kgr.extract.pairs.fits`): a standard or a language directly before a product noun
(:func:`kgr.extract.phrases.modifier_of_product`), or after *other* / *another*, determiners that
need a common noun as head — "pip supports other Python packaging tools" speaks of tools, not of
Python (a language's name takes no "other").

A schema **pattern**'s match that is one plain lowercase word of common English is no name either
(:func:`common_word_match`): ``\blib[a-z0-9]+\b`` is meant for ``libcurl`` and ``libssl3``, and
also matches "The library has been written by Jean-loup Gailly". A gazetteer name is the schema's
own word and stays one ("shell" as a language).
"""

from __future__ import annotations

import re

from kgr.extract.lexicon import is_common_word
from kgr.extract.phrases import modifier_of_product

__all__ = ["case_agrees", "common_word_match", "continues", "ends_longer", "modifies_noun"]

#: A known name directly followed by a capitalised word is the start of a longer, unknown name.
_NAME_GOES_ON = re.compile(r" [A-Z][a-z]| [A-Z][A-Z0-9]*\d")
#: A known name run into a longer word.
_RUN_ON = re.compile(r"-[A-Za-z]|[+#]|\.[A-Za-z0-9]")
#: Before a known name (a window of the text ending at it): a capitalised word, and before it a
#: word of the same sentence (not a sentence, clause or list opening: ``. : ; ( * -`` or the start).
_NAME_BEFORE = re.compile(r"[\w,)]\s+([A-Z][a-z]+)\s$")
#: Capitalised words that are no part of a name: determiners, pronouns, prepositions and conjunctions
#: a title-case heading capitalises.
_FUNCTION = frozenset(
    "The A An This That These Those Its Our Your Their His Her My All Any Both Each Every No Some "
    "And Or Nor But For With Without In On Of To By From At As Into Over Under Via Per Than".split())
#: A determiner that needs a common noun as its head, then the name.
_OTHER_BEFORE = re.compile(r"(?:^|\s)(?:other|another)\s+$", re.IGNORECASE)
_NOUN_NEXT = re.compile(r"\s+[a-z][\w-]*")
#: A word after the name that makes it a kind, spaced as the hyphenated forms are joined ("MIT compatible
#: License", "BSD style licence": :func:`continues` already drops "MIT-compatible", "BSD-style").
_KIND_NEXT = re.compile(r"\s+(?:compatible|style|like)\b(?!\s+with\b)", re.IGNORECASE)


def continues(text: str, start: int, end: int) -> bool:
    """Whether the known name at ``text[start:end]`` starts a longer name or runs into a longer word
    (rules above): no mention.

    >>> continues("JSON Object Signing and Encryption", 0, 4)
    True
    >>> continues("C++11 support", 0, 1)
    True
    >>> continues("Added support for TLS 1.3.", 18, 21)
    False
    >>> continues("Support for the C.UTF-8 locale", 16, 17), continues("the mDNS/DNS-SD specification", 9, 12)
    (True, True)
    >>> continues("It is written in C. Then", 17, 18)
    False
    """
    return _NAME_GOES_ON.match(text, end) is not None or (_RUN_ON.match(text, end) is not None and text[end - 1].isalpha())


def ends_longer(text: str, start: int, end: int, name_ends: frozenset[int] | set[int] = frozenset()) -> bool:
    """Whether the known name at ``text[start:end]`` is the last word of a longer, unknown name (rules
    above): a mention that is no relation end and over which no other name may be guessed.
    ``name_ends``: where other known names end (a capitalised word that is one is its own name: "the
    Debian Python interpreter").

    >>> ends_longer("Added support for Kernel TLS (KTLS).", 25, 28)
    True
    >>> ends_longer("The MIT License (MIT)", 4, 15)
    False
    """
    lo = max(0, start - 40)
    m = _NAME_BEFORE.search(text[lo:start])
    return m is not None and m.group(1) not in _FUNCTION and lo + m.end(1) not in name_ends


def modifies_noun(text: str, start: int, end: int) -> bool:
    """Whether the name at ``text[start:end]`` modifies a noun after it (rules above).

    >>> modifies_noun("how pip supports other Python packaging tools", 23, 29)
    True
    >>> modifies_noun("pip supports Python 3.8", 13, 19)
    False
    >>> modifies_noun("MIT compatible License", 0, 3), modifies_noun("Python compatible with C", 0, 6)
    (True, False)
    """
    if modifier_of_product(text, end) or _KIND_NEXT.match(text, end):
        return True
    return _OTHER_BEFORE.search(text[max(0, start - 12):start]) is not None and _NOUN_NEXT.match(text, end) is not None


def case_agrees(got: str, surface: str) -> bool:
    """Whether the text ``got`` may stand for the declared one-word ``surface`` (several words: always).

    The first letters agree in case; or the name is written lowercase and the text capitalises it
    (a sentence start, a title: ``git`` / ``Git``); or the name has a capital after its first letter
    (``OpenSSL``, ``PyPI``: no common word is spelled so) and the text is all lowercase (a command
    or package name: ``openssl``).

    >>> case_agrees("Git", "git"), case_agrees("openssl", "OpenSSL"), case_agrees("engine", "Engine")
    (True, True, False)
    >>> case_agrees("http", "HTTP"), case_agrees("GIT", "git")
    (False, False)
    """
    if " " in surface or got[:1] == surface[:1]:
        return True
    if surface[:1].islower() and got[:1].isupper() and got[1:] == got[1:].lower():
        return True
    return got.islower() and any(c.isupper() for c in surface[1:]) and any(c.islower() for c in surface)


def common_word_match(surface: str) -> bool:
    """Whether a pattern's match ``surface`` is a plain lowercase word of common English (so no name;
    :func:`kgr.extract.lexicon.is_common_word`: with ``kgr[nlp]`` a frequent English word, else the
    built-in list of function words and changelog verbs).

    >>> common_word_match("release"), common_word_match("libcurl"), common_word_match("Library")
    (True, False, False)

    ("library" is one with ``kgr[nlp]``, whose list counts it 20,383 times.)
    """
    return surface.isalpha() and surface.islower() and is_common_word(surface)
