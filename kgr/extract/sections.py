"""Changelog sections: the parts of a document the offline extractor does not read.

A README's changelog or release notes list what changed in each version ("Add support for PEP 728
by @Viicos", "Fix type hint of `Field.default` to be compatible with Python 3.8"): entries with no
subject, code identifiers and contributors' handles, about versions rather than the project as it
is. On real READMEs they were the largest source of wrong triples (issue 32), so the rules extractor
skips them. A position is in a changelog section when any heading in force there
(:func:`kgr.text.headings.trail`) is

- a changelog heading: its words begin with *Changelog, Change log, Changes, Release notes, Release
  history, History, Version history, What's new, What's changed, News, Recent changes, Unreleased*, or
  are *Changed in <version>*;
- a version heading: a version number, alone or with a date or a name: ``v2.13.4 (2026-05-06)``,
  ``1.2.3``, ``[1.3.9](…) (2021-05-13)``, ``Version 2.0``, ``Release 0.4 - 2024-01-02``.

Headings whose words merely contain such a word ("Design & History", "Pydantic V1.10 vs. V2") are
not. The section ends at the next heading of the same or a lower level that is neither.

>>> text = "# Tool\\n\\nTool supports JSON.\\n\\n## Changelog\\n\\n- Add support for YAML.\\n\\n## License\\n\\nMIT."
>>> [text[a:b] for a, b in changelog_spans(text)]
['## Changelog\\n\\n- Add support for YAML.\\n\\n']
>>> is_changelog_heading("v2.13.4 (2026-05-06)"), is_changelog_heading("Design & History")
(True, False)
"""

from __future__ import annotations

import re

from kgr.text.headings import MD_LINK, headings, push

__all__ = ["is_changelog_heading", "changelog_spans"]

_MARKS = re.compile(r"[*_`]+|:[a-z_]+:")  # emphasis, code marks, :emoji: shortcodes
_WORDS = re.compile(
    r"(?:change\s*-?\s*log|changes|release\s+notes|release\s+history|history|version\s+history|"
    r"what'?’?s\s+(?:new|changed)|news|recent\s+changes|unreleased)\b|changed\s+in\s+v?\d", re.I)
_VERSION = re.compile(r"\[?(?:(?:version|release|v)\s*)?v?\d+(?:\.\d+)+[\w.+-]*\]?(?:\s*(?:[-–—:(,]|\(|$).*)?$", re.I)


def _words(heading: str) -> str:
    text = _MARKS.sub("", MD_LINK.sub(r"\1", heading))
    return re.sub(r"^[^\w\[]+", "", " ".join(text.split()))  # leading emoji and symbols


def is_changelog_heading(heading: str) -> bool:
    """Whether ``heading`` (its words) opens a changelog section (module docstring)."""
    words = _words(heading)
    return bool(_WORDS.match(words) or _VERSION.match(words))


def changelog_spans(text: str, inherited: tuple[tuple[int, str], ...] = ()) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of ``text`` inside changelog sections, given the headings in force
    at its start (``inherited``: ``(level, words)`` pairs, outermost first, as a chunk carries them)."""
    stack = tuple(inherited)
    spans: list[tuple[int, int]] = []
    opened = 0 if any(is_changelog_heading(w) for _, w in stack) else None
    for h in headings(text):
        stack = push(stack, h.level, h.text)
        inside = any(is_changelog_heading(w) for _, w in stack)
        if inside and opened is None:
            opened = h.start
        elif not inside and opened is not None:
            spans.append((opened, h.start))
            opened = None
    if opened is not None:
        spans.append((opened, len(text)))
    return spans
