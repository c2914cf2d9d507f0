"""The free-software licence notice: who is under which licence (rules extractor).

The Free Software Foundation's notice, copied into countless READMEs, source headers and
copyright files, is boilerplate for :func:`kgr.extract.cues.is_boilerplate` (it says nothing
through a trigger: "…; you can redistribute it and/or modify it under the terms of …" puts a
clause boundary and two pronouns between the subject and the licence). It does state one fact,
in a fixed form:

    <S> is free software[;,:] [you can redistribute it and/or modify it | distributed] under the
    terms of [the] <Licence> …

:func:`notice` reads it: the licence is the name right after "the terms of"; the subject is the
name the notice opens with ("GNU Make", "The GNU MPFR Library", "Libgpg-error"), or the document
(its title) for "This program / library / package / software / module". A part of the document
("These scripts", "This file", "This header") or any other wording gives nothing.
"""

from __future__ import annotations

import re

__all__ = ["notice"]

_NOTICE = re.compile(
    r"\s*\W{0,3}(?P<subject>[^\s;,:]+(?:\s+[^\s;,:]+){0,3}?)\s+(?:is|are)\s+free\s+software\s*[;,:]\s*"
    r"(?:you\s+can\s+redistribute\s+(?:it|them)\s+and/or\s+modify\s+(?:it|them)\s+|(?:and\s+)?(?:is\s+)?distributed\s+)?"
    r"under\s+the\s+terms\s+of\s+(?:the\s+)?", re.IGNORECASE)
_SELF = re.compile(r"This\s+(?:program|library|package|software|module)", re.IGNORECASE)
#: A name: one token, or up to four capitalised ones (an article first is dropped).
_NAME = re.compile(r"(?:The\s+)?(?P<name>[^\s\W][\w+.-]*|[A-Z][\w+.-]*(?:\s+[A-Z][\w+.-]*){1,3})")
_DETERMINER = re.compile(r"(?:this|these|those|that|it|they|the|each|all|any)$", re.IGNORECASE)


def notice(masked: str, licences: list[tuple[int, int]]) -> tuple[tuple[int, int] | None, tuple[int, int]] | None:
    """``(subject span, or None for the document's title; licence span)`` of a free-software notice
    opening ``masked`` whose licence is one of ``licences`` (spans of licence mentions), else None.

    >>> s = "GNU Make is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License"
    >>> notice(s, [(91, 117)])
    ((0, 8), (91, 117))
    >>> notice("These scripts are free software; you can redistribute it and/or modify it under the terms of the GPL", [(97, 100)])
    """
    m = _NOTICE.match(masked)
    if m is None:
        return None
    lic = next((sp for sp in licences if sp[0] == m.end()), None)
    if lic is None:
        return None
    subject = m.group("subject")
    if _SELF.fullmatch(subject):
        return None, lic
    name = _NAME.fullmatch(subject)
    if name is None or _DETERMINER.match(name.group("name")):
        return None
    return (m.start("subject") + name.start("name"), m.start("subject") + name.end("name")), lic
