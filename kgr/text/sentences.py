"""Sentences: where they start and end in a text, as the chunker and the extractors both need.

The rule is :func:`sentence_spans`'s; spans are ``(start, end)`` Python string indices with the
whitespace around the sentence stripped (:func:`strip_span`).

>>> text = "Dr. Ada wrote notes. Babbage built engines!"
>>> [text[s:e] for s, e in sentence_spans(text)]
['Dr. Ada wrote notes.', 'Babbage built engines!']
"""

from __future__ import annotations

import re

from kgr.text.headings import ATX

__all__ = ["sentence_spans", "strip_span", "run_before"]

# Words ending in "." that do not end a sentence (compared case-insensitively, without the dot).
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al fig no nos vol pp ed eds est approx
    dept univ inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt capt
    rev hon sen rep gov u.s u.k""".split()
)
# A terminator run is matched from its first character only (the lookbehind) and never given back
# (possessive quantifiers): a run of n dots not followed by whitespace costs O(n), not O(n²) — the
# unanchored ``[.!?…]+`` retried the whole rest of the run from each of its n characters. The
# boundaries are the same: a match needs whitespace right after the run and its closers, so a start
# inside a run could only succeed where the run's first character succeeds.
_SENT_END = re.compile(r"""(?<![.!?…])[.!?…]++["'”’)\]]*+(?=\s)""")
_PARA = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s))")
_WORD_CHARS = re.compile(r"[\w.]*")
_NEXT_CHAR = re.compile(r"\s+(\S)")


def strip_span(text: str, s: int, e: int) -> tuple[int, int] | None:
    """``(s, e)`` narrowed to exclude surrounding whitespace; None when only whitespace is left."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if s < e else None


def run_before(text: str, end: int, lo: int, chars: re.Pattern[str]) -> str:
    """The run of characters ``chars`` matches that ends at ``end``, starting no earlier than ``lo``.

    ``chars`` is a pattern ``[class]*``. The result is what ``re.search(rf"({class}+)$", text, lo,
    end)`` finds, ``$`` quirk included (it also matches before a newline at ``end - 1``), but in
    O(end - lo) steps instead of O((end - lo)²): the window is read backwards once.

    >>> run_before("see J. Presper", 5, 0, re.compile(r"[\\w.]*")), run_before("x e.g. y", 6, 0, re.compile(r"[\\w.]*"))
    ('J', 'e.g.')
    """
    if end > lo and text[end - 1] == "\n":
        end -= 1
    m = chars.match(text[lo:end][::-1])
    n = m.end() if m else 0
    return text[end - n : end]


def _is_sentence_end(text: str, dot_start: int, end: int) -> bool:
    """Whether the terminator ``text[dot_start:end]`` closes a sentence."""
    if text[dot_start] == ".":
        word = run_before(text, dot_start, max(0, dot_start - 40), _WORD_CHARS)
        if word.casefold() in _ABBREVIATIONS:
            return False
        if len(word) == 1 and word.isalpha() and word.isupper():  # an initial: "J. Presper Eckert"
            return False
        if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):  # "U.S.", "e.g."
            return False
    # the next non-space character should not be a lowercase letter ("approx. ten", "3.5 p.m. and")
    m = _NEXT_CHAR.match(text, end)
    return not (m and m.group(1).islower())


def sentence_spans(text: str, *, after_headings: bool = False) -> list[tuple[int, int]]:
    """Sentence boundaries of ``text`` as ``(start, end)`` offsets, whitespace trimmed, in order.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (plus closing quotes/brackets) followed by
    whitespace, unless the word before a ``.`` is a known abbreviation or a single capital initial,
    or the next word starts lowercase. Blank lines, Markdown headings and list items also separate
    sentences. With ``after_headings`` a heading also ends at its line break ("### Portable Hashing" then
    "Fully compatible with …" on the next line are two; the extractors ask for it, the chunker does not,
    so chunks and their ids stay as they were).

    >>> t = "Dr. Grace Hopper wrote code. J. Presper Eckert built ENIAC! Was it?"
    >>> [t[s:e] for s, e in sentence_spans(t)]
    ['Dr. Grace Hopper wrote code.', 'J. Presper Eckert built ENIAC!', 'Was it?']
    >>> h = "### Portable Hashing\\nFully compatible with C++."
    >>> len(sentence_spans(h)), len(sentence_spans(h, after_headings=True))
    (1, 2)
    """
    cuts: set[int] = set()
    for m in _PARA.finditer(text):
        cuts.add(m.start())
    if after_headings:
        cuts.update(e for m in ATX.finditer(text) if (e := text.find("\n", m.end())) >= 0)  # at its line break
    for m in _SENT_END.finditer(text):
        if _is_sentence_end(text, m.start(), m.end()):
            cuts.add(m.end())
    spans: list[tuple[int, int]] = []
    prev = 0
    for c in sorted(cuts) + [len(text)]:
        sp = strip_span(text, prev, c)
        if sp:
            spans.append(sp)
        prev = c
    return spans
