"""Headings of a Markdown, reStructuredText or HTML text: where they are, their level, their words.

The chunker gives each chunk the headings in force at its start (:func:`trail`), so that a reader of
the chunk knows which section it is in (the offline extractor skips changelog sections:
:mod:`kgr.extract.sections`). Forms read, levels 1 (outermost) to 6:

- ATX: ``## Changelog`` (level = number of ``#``), not inside a fenced code block;
- setext / reST: a text line underlined by 3 or more of one punctuation character, the line before
  it not blank; level by the character, as most projects use them: ``=`` ``#`` ``*`` 1, ``-`` 2,
  ``~`` 3, ``^`` 4, any other 5 (reST assigns levels by order of appearance; a fixed table keeps a
  chunk's levels the same as its document's);
- HTML: ``<h2>…</h2>``.

>>> text = "# Flask\\n\\nA framework.\\n\\n## Changelog\\n\\n### 2.0\\n\\n- Add support for X.\\n"
>>> [(h.level, h.text) for h in headings(text)]
[(1, 'Flask'), (2, 'Changelog'), (3, '2.0')]
>>> trail(text, text.index("- Add"))
((1, 'Flask'), (2, 'Changelog'), (3, '2.0'))
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Heading", "headings", "trail", "push", "ATX", "FENCE", "TAGS", "MD_LINK"]

#: Level of a setext / reST underline character (others: 5).
UNDERLINE_LEVEL = {"=": 1, "#": 1, "*": 1, "-": 2, "~": 3, "^": 4}

#: A Markdown (ATX) heading line: its hashes (the level) and its text.
ATX = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
#: An underline line (the line before it, not blank, is the heading); lines are read one by one, so a
#: long line costs linear time (a regex spanning two lines backtracked quadratically on a 23 kB line).
_UNDERLINE = re.compile(r"[ \t]{0,3}([=#*~^\"'`:.+_-])\1{2,}[ \t]*")
_HTML = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
#: A fenced code block (to its closing fence or the end): what it holds is no heading.
FENCE = re.compile(r"^[ \t]{0,3}(```|~~~).*?(?:^[ \t]{0,3}\1|\Z)", re.M | re.S)
#: An HTML tag (bounded, so a stray "<" costs linear time).
TAGS = re.compile(r"<[^>]{0,500}>")
#: A Markdown link or image; group 1 is its text.
MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+|]|\d+[.)])\s")


class Heading(NamedTuple):
    """A heading: ``text[start:end]`` is its whole source (underline included), ``level`` 1-6."""

    start: int
    end: int
    level: int
    text: str


def headings(text: str) -> list[Heading]:
    """The headings of ``text`` in order (forms and levels in the module docstring)."""
    fenced = [(m.start(), m.end()) for m in FENCE.finditer(text)]

    def in_fence(i: int) -> bool:
        return any(a <= i < b for a, b in fenced)

    found: dict[int, Heading] = {}
    for m in ATX.finditer(text):
        if not in_fence(m.start()):
            found[m.start()] = Heading(m.start(), m.end(), len(m.group(1)), m.group(2).strip())
    prev, prev_at, at = "", 0, 0
    for line in text.split("\n"):
        m = _UNDERLINE.fullmatch(line) if prev.strip() else None
        if m and not in_fence(prev_at) and prev_at not in found and not _LIST_OR_TABLE.match(prev) \
                and not set(prev.strip()) <= set(m.group(1)):
            found[prev_at] = Heading(prev_at, at + len(line), UNDERLINE_LEVEL.get(m.group(1), 5), prev.strip())
        prev, prev_at, at = line, at, at + len(line) + 1
    for m in _HTML.finditer(text):
        words = " ".join(TAGS.sub(" ", m.group(2)).split())
        if words and not in_fence(m.start()):
            found.setdefault(m.start(), Heading(m.start(), m.end(), int(m.group(1)), words))
    return [found[k] for k in sorted(found)]


def push(stack: tuple[tuple[int, str], ...], level: int, words: str) -> tuple[tuple[int, str], ...]:
    """``stack`` (outermost first) after a heading of ``level``: the headings of a lower level stay."""
    return tuple(h for h in stack if h[0] < level) + ((level, words),)


def trail(text: str, at: int) -> tuple[tuple[int, str], ...]:
    """The headings in force at offset ``at`` of ``text``: ``(level, text)`` pairs, outermost first."""
    stack: tuple[tuple[int, str], ...] = ()
    for h in headings(text):
        if h.start >= at:
            break
        stack = push(stack, h.level, h.text)
    return stack
