"""What a sentence says about its own relations, read before any trigger fires (rules extractor).

- :func:`mask_markup` blanks Markdown/reST markup, list markers and changelog line labels
  (``"d/control: "``, ``"Build-Depends: "``) with spaces, so offsets stay those of the chunk while
  mentions and triggers see plain words.
- :func:`is_boilerplate`: licence and copyright boilerplate ("you may not use this file except in
  compliance with the License", "WITHOUT WARRANTIES …") states no relation of the document's
  software; its sentences are read for nothing.
- :func:`negated`: a relation is not asserted when its clause carries a negation, a change that
  removes it, or a hedge or a future: "does not require numpy", "Drop support for Python 3.8",
  "Support for (p)nacl has been removed", "no longer depends on", "may depend on", "support for new
  Python versions will be added", "X instead of Y" (for Y). The
  clause is the stretch between clause boundaries (``;``, ``:``, dashes, brackets, "but",
  "although", "whereas", "while", "except") around the trigger and both ends, cut after the last
  end at a comma or a relative clause ("Zuse designed the Z3, which Babbage never designed" asserts
  the first); the mentions' own text is not read ("NoDB" is no negation).
"""

from __future__ import annotations

import re

__all__ = ["mask_markup", "line_label", "is_boilerplate", "negated", "clause_bounds", "BOUNDARY"]

_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_LABEL = re.compile(r"^\s*(?:[-*+•]\s+)?(?:\[[^\]]{1,40}\]\s*)?[\w./+-]+(?:\s[\w./+-]+)?:\s+(?=\S)")
_MARKUP = re.compile(r"\]\[[^\]]{0,60}\]|`+|\*+|(?<!\w)_+|_+(?!\w)|[\[\]|]|<[^<>]{0,40}>|:[a-z]+:(?=`)")
_BOILERPLATE = re.compile(
    r"without warrant|\bas is\b|you may not use this file|permission is hereby granted|redistribution and use in "
    r"source|the software is provided|either express or implied|for more details|this program is free software|"
    r"spdx-license-identifier|all rights reserved|copyright \(c\)|limitations under the license|"
    r"see the license|license for the specific language|contributor license agreement|warranty|common-licenses|"
    r"(?:full|complete)\s+text\s+of|a\s+copy\s+of\s+the\s+(?:\w+\s+){0,6}licen[cs]e",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|nor|neither|cannot|can't|don't|doesn't|isn't|aren't|won't|wasn't|n't|"
    r"no\s+longer|any\s*more|instead\s+of|rather\s+than|drop(?:s|ped|ping)?|remov(?:e|es|ed|ing|al)|"
    r"deprecat(?:e|es|ed|ing|ion)|disabl(?:e|es|ed|ing)|re-disable|stop(?:s|ped|ping)?|lack(?:s|ing)?|"
    r"los(?:e|es|t|ing)|obsolete|unused|formerly|used\s+to|may|might|could|would|should|will|if|unless|whether|"
    r"avoid(?:s|ed)?|replac(?:e|es|ed|ing)|revert(?:s|ed)?|unsupported|incompatible|except)\b",
    re.IGNORECASE,
)
#: Characters and words that end a clause (see the module docstring).
BOUNDARY = re.compile(r"[;:()\[\]—–]|\s-\s|\b(?:but|although|though|whereas|while|except)\b", re.IGNORECASE)


_TAIL_END = re.compile(r",|\b(?:which|that|who|whose|where|when)\b", re.IGNORECASE)


def mask_markup(sentence: str) -> str:
    """``sentence`` with markup (reference-link labels ``][label]`` included), a leading list marker
    and a leading line label blanked (same length).

    >>> mask_markup("* d/control: Add ``valgrind`` to **Depends**.")
    '               Add   valgrind   to   Depends  .'
    """
    out = _MARKUP.sub(lambda m: " " * len(m.group(0)), sentence)
    m = _LIST_MARKER.match(out)
    if m:
        out = " " * m.end() + out[m.end():]
    m = _LABEL.match(out)
    if m and len(out) - m.end() > 12:  # a label before a clause, not a sentence that is a label
        out = " " * m.end() + out[m.end():]
    return out


def line_label(sentence: str) -> bool:
    """Whether ``sentence`` opens with a line label (``d/control: ``, ``pstree: ``) that
    :func:`mask_markup` blanks."""
    out = _MARKUP.sub(lambda m: " " * len(m.group(0)), sentence)
    m = _LIST_MARKER.match(out)
    if m:
        out = " " * m.end() + out[m.end():]
    m = _LABEL.match(out)
    return m is not None and len(out) - m.end() > 12


def is_boilerplate(sentence: str) -> bool:
    """Whether ``sentence`` is licence or copyright boilerplate (no relation is read from it)."""
    return _BOILERPLATE.search(sentence) is not None


def clause_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause of ``text`` around ``[start, end)``: from the last boundary before ``start`` to the
    first one at or after ``end`` (the whole text when there is none)."""
    lo, hi = 0, len(text)
    for m in BOUNDARY.finditer(text):
        if m.end() <= start:
            lo = m.end()
        elif m.start() >= end:
            hi = m.start()
            break
    return lo, hi


def negated(text: str, spans: list[tuple[int, int]], mentions: list[tuple[int, int]]) -> bool:
    """Whether the clause holding ``spans`` (the trigger and both ends) negates, removes or hedges
    the relation; the text of ``mentions`` is skipped.

    >>> t = "Drop support for Python 3.8."
    >>> negated(t, [(5, 16), (17, 23)], [(17, 23)])
    True
    >>> negated("Six supports Python.", [(0, 3), (4, 12), (13, 19)], [(0, 3), (13, 19)])
    False
    """
    end = max(e for _, e in spans)
    lo, hi = clause_bounds(text, min(s for s, _ in spans), end)
    tail = _TAIL_END.search(text, end, hi)  # after the relation: up to a comma or a relative clause
    hi = tail.start() if tail else hi
    chars = list(text[lo:hi])
    for s, e in mentions:
        for i in range(max(s, lo), min(e, hi)):
            chars[i - lo] = " "
    return _NEGATION.search("".join(chars)) is not None
