"""Where the document's title is the subject a sentence leaves out (rules extractor, with a title).

A changelog entry, a README list item or a package description often names no subject: "Add
support for X", "Requires Y", "It supports Z". The title stands for it:

- :data:`SELF` (the sentence opening): a pronoun or definite description of the document ("It",
  "This package|library|project|module|tool|program|command", not "It is a …"); a subjectless entry
  "Add/Added/Explicit/Full/Native/Initial/Improved/Better/Fixed support for X", "Hard/Add/New/Versioned … dependency on
  X"; and a subjectless entry that opens with the relation's verb or noun: "Support for X",
  "Supports X", "Requires X", "Depends on X", "Compatible with X", "Works with X", "Runs on X",
  "Make compatible with X" (the imperative of a changelog: "Make compatible with Python 2.5").
- :func:`feature_objects`: an opening "[Added / Initial / Official / Experimental / Basic / Full /
  Native / Better / Fixed / Improved / Verified / Enabled [one or two words]] <X> [version] support"
  — the feature noun after its object; a fixed or improved feature is one the software has — states
  ``<title> SUPPORTS X`` ("Added official Python 3.6 support.", "Fixed TLS support on Windows.",
  "- Python 3.12 support (Thanks Peter!)", "SSL support is provided by OpenSSL."); not when "support"
  modifies a noun ("JSON support files", "Python 2 support policy"), and a bare "<X> support" only
  with something after it (an item or heading "Python 2 support" names a topic: the entries under it
  may well drop it).
- The opening word may be lowercase ("- add support for C++Builder 3"); "It" and "This …" must be
  capitalised.
- :func:`item_of_another`: none of it applies to a sentence of a list item that opens with another
  project's name, linked or in bold, then a comma, colon or dash ("- [Geziyor](…), a fast web
  crawling framework for Go. Supports JS rendering.": a README's list of related projects).
- :data:`LICENSED_OPENING`: under a "License" heading, a sentence that opens with "Licensed under"
  (or "Dual-licensed", "Distributed", "Released under") names the document's licences ("Licensed
  under the Apache License, Version 2.0"); :func:`opens_licences`: so do the list items after
  "Licensed under either of" or "<title> is distributed under the following three licenses:" right
  under that heading. Not elsewhere: a page footer "Licensed under … at your option" of a book's
  chapter speaks of the book, which may be no software (the eighth sample's Rust book).
- :func:`labelled`: neither applies to a changelog line that opens with a label ("pstree: added
  support for …", "dselect: Require the Dpkg modules", "pam_selinux/pam_unix: Add SELinux support"):
  the label names the component the entry speaks of, which is not the document (precision first:
  the extractor abstains rather than guess whether the label is a program, a file or a category);
  nor to an added item that names its recipient, a binary package of the source ("Add dependency on
  x11proto-core-dev and libxext-dev to libxcomposite-dev": the dependency is that package's, and the
  document is the source package's changelog).
"""

from __future__ import annotations

import re

from kgr.extract.cues import line_label

__all__ = ["SELF", "LICENSED_OPENING", "feature_objects", "labelled", "item_of_another", "opens_licences"]

SELF = re.compile(
    r"""\s*(?:(?i:Add|Adds|Added|Explicit|Full|Native|Initial|Improve|Improves|Improved|Better|Fix|Fixed)(?=\s+support\s+for\b)
    |(?i:Hard|Add|Added|New|Versioned|Strict|Runtime)(?=\s+(?:build-)?dependenc(?:y|ies)\s+on\b)
    |(?:It|This\s+(?:package|library|project|module|tool|program|command))(?=\s+(?!is\s+(?:a|an|the|not)\b))
    |(?i:Make)(?=\s+compatible\s+with\b)
    |(?=(?i:Support\s+for|Supports|Requires?|Depends?\s+on|Compatible\s+with|Works\s+with|Runs\s+on)\s))""",
    re.VERBOSE)
_FEATURE_OPEN = re.compile(r"\s*(?:(?i:Add|Adds|Added|Initial|Official|Experimental|Basic|Full|Native|Better|Fix|"
                           r"Fixes|Fixed|Improve|Improves|Improved|Verified|Enable|Enables|Enabled)\s+(?:[a-z][\w-]*\s+){0,2})?$")
#: After the name (and its version): the noun "support", then the end of the entry, punctuation or a word that
#: does not make "support" a modifier ("JSON support files", "Python 2 support policy") or take an object ("for").
_FEATURE_NOUN = re.compile(r"(?:\.\d+)*\+?(?:\s+v?\d[\w.]*\+?)?\s+support(?=\s*(?:[.,;!(]|$)|\s+(?:and|or|on|in|with|"
                           r"under|via|is|was|has|have|now|from|by|through|when)\b)")
#: A bare "<X> support" (no opening verb) only with something after it: a list item or heading that is
#: nothing but "Python 2 support" names a topic (the entries under it may drop it).
_BARE_END = re.compile(r"\s*$")


#: A changelog item that adds something *to* a binary package: "Add [a] dependency on X … to <package>", the
#: package a hyphenated name, a ``lib…`` one or one with a Debian binary-package suffix.
_RECIPIENT = re.compile(r"\s*[-*+]\s+(?i:add|adds|added)\b[^\n]*?\bto\s+(?:lib[a-z0-9+.]*-[a-z0-9+.-]*[a-z0-9+.]"
                        r"|[a-z0-9][a-z0-9+.]*(?:-[a-z0-9+.]+)*-(?:dev|doc|common|bin|data|utils|tools|dbg|udeb))(?![\w+-])")


def labelled(sentence: str) -> bool:
    """Whether ``sentence`` (unmasked) is a changelog line opening with a label, or naming the binary
    package it adds something to (rules above).

    >>> labelled("* dselect: Require the Dpkg modules for the ftp access method.")
    True
    >>> labelled("* Requires Java 7, supports Java 8, 9, 10.")
    False
    >>> labelled("* Add dependency on libxext-dev to libxcomposite-dev, as xcomposite.pc needs it.")
    True
    >>> labelled("* Add dependency on libxext-dev to fix the build."), labelled("* Add foo to build-depends.")
    (False, False)
    """
    return line_label(sentence) or _RECIPIENT.match(sentence) is not None


def feature_objects(masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Of the name ``spans`` in ``masked``, the one an opening "Added [official] X support" names as
    the feature added (rule above), as a one-item list, else empty.

    >>> feature_objects("  Added official Python 3.6 support.", [(17, 27)])
    [(17, 27)]
    >>> feature_objects("Add Python support for the build", [(4, 10)])
    []
    >>> feature_objects("  Python 2 support", [(2, 10)]), feature_objects("  Python 2 support.", [(2, 10)])
    ([], [(2, 10)])
    >>> feature_objects("  JSON support files from the JSON Schema Specifications", [(2, 6)])
    []
    """
    for s, e in sorted(spans)[:1]:  # the entry's first name (one match over the line: linear time)
        opening, noun = _FEATURE_OPEN.fullmatch(masked, 0, s), _FEATURE_NOUN.match(masked, e)
        if opening and noun and (masked[:s].strip() or not _BARE_END.fullmatch(masked, noun.end())):
            return [(s, e)]
    return []


#: A list item opening with a name, linked or in bold, then a comma, colon or dash.
_NAMED_ITEM = re.compile(r"[ \t]*[-*+][ \t]+(?:\[([^\]\n]{1,80})\]\([^)\n]*\)|\*\*([^*\n]{1,80})\*\*)[ \t]*[,:—–-]")


def item_of_another(text: str, at: int, title: str | None) -> bool:
    """Whether the sentence at offset ``at`` of ``text`` is in a list item (on its first line) that opens
    with a name other than ``title`` (rule above): the title is no subject there.

    >>> t = "- [Geziyor](https://x), a crawler for Go. Supports JS rendering."
    >>> item_of_another(t, 42, "goquery"), item_of_another(t, 42, "Geziyor"), item_of_another("Supports JS.", 0, "x")
    (True, False, False)
    """
    if not title:
        return False
    m = _NAMED_ITEM.match(text, text.rfind("\n", 0, at) + 1)
    return m is not None and m.end() <= at and (m.group(1) or m.group(2)).strip().casefold() != title.casefold()


#: A sentence opening that names the document's licences next: "Licensed under [the terms of] [either of] [the]".
LICENSED_OPENING = (r"\W{0,3}(?i:(?:dual[- ]?)?licen[cs]ed|distributed|released)\s+under\s+(?:the\s+terms\s+of\s+)?"
                    r"(?:(?:either|one|any|both)(?:\s+of)?\s+)?")
#: A "License" heading standing alone: the sentence after it names the document's licence ("The MIT License (MIT)").
_LICENSE_HEADING = re.compile(r"\s*(?:#{1,6}[ \t]*)?Licen[cs](?:e|es|ing)(?:[ \t]*\n[ \t]*[-=~^*#]{3,})?\s*")
#: A sentence that announces the licences listed after it, said of the document: "Licensed under either of",
#: "This project is dual-licensed under the following licenses:", "<title> is distributed under the following
#: three licenses:".
_LICENCE_LEAD = re.compile(
    r"\W{0,3}(?:(?P<subject>[^\n]{1,60}?)\s+(?:is|are)\s+)?(?i:(?:dual[- ]?)?licen[cs]ed|distributed|released|available)\s+"
    r"under\s+(?:the\s+terms\s+of\s+)?(?:(?:either|one|any|both)(?:\s+of)?(?:\s+the)?(?:\s+following)?"
    r"(?:\s+(?:\w+\s+)?licen[cs]es)?|the\s+following(?:\s+\w+)?\s+licen[cs]es)\s*:?\s*")
_OWN_SUBJECT = re.compile(r"(?i:it|this\s+(?:project|crate|library|package|module|software|code|repository|work))")
_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")


def opens_licences(sentence: str, opened: bool, title: str | None) -> bool:
    """Whether the sentence after ``sentence`` names the document's licences: ``sentence`` is a "License"
    heading, or (``opened``: right after one) announces the licences listed after it (of the document:
    no subject, "It", "This project", the ``title``), or it is a list item after such a sentence.

    >>> opens_licences("## License", False, "x"), opens_licences("Licensed under either of", True, "x")
    (True, True)
    >>> opens_licences("* MIT license", True, "x"), opens_licences("Licensed under either of", False, "x")
    (True, False)
    >>> opens_licences("Bar is released under either of", True, "x"), opens_licences("MIT", True, "x")
    (False, False)
    """
    if _LICENSE_HEADING.fullmatch(sentence) or (opened and _ITEM.match(sentence)):
        return True
    m = _LICENCE_LEAD.fullmatch(sentence)
    if m is None or not title or not opened:
        return False
    subject = m.group("subject")
    return subject is None or _OWN_SUBJECT.fullmatch(subject.strip("*`_ ")) is not None \
        or subject.strip("*`_ ").casefold() == title.casefold()
