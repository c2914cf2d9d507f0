"""Where in a chunk a relation was said, for whoever does not read it sentence by sentence.

The LLM extractor asks the model to copy, for each relation, the sentence of the text that states
it (``"quote"`` in the reply's JSON); ``query_kg_storage`` in an agent session knows only the
chunk's text and the names. :func:`locate` turns either into a span of the chunk:

1. the quote is searched in the chunk, ignoring case and differences in whitespace (its first
   :data:`QUOTE_CHARS` characters); found, the span is that of the sentences
   (:func:`kgr.text.sentences.sentence_spans`) the match overlaps, so a quote cut short or
   starting mid-sentence still gives whole sentences;
2. without a quote, or when it is not in the text (a paraphrase), the first sentence that contains
   both the subject's and the object's name (ignoring case);
3. else the shortest run of at most :data:`MAX_WINDOW` consecutive sentences containing both
   (the earliest of equal length);
4. else no span: the vote is staged without one, and its quote is the chunk's start.
"""

from __future__ import annotations

import re

from kgr.text.sentences import sentence_spans

__all__ = ["locate", "QUOTE_CHARS", "MAX_WINDOW"]

#: Characters of a quote that are searched for.
QUOTE_CHARS = 300
#: Consecutive sentences a rule-3 span may cover at most.
MAX_WINDOW = 3


def _pattern(quote: str) -> re.Pattern[str] | None:
    words = quote[:QUOTE_CHARS].split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def locate(text: str, subject: str, obj: str, quote: str | None = None,
           sentences: list[tuple[int, int]] | None = None) -> tuple[int, int] | None:
    """The span ``(start, end)`` in ``text`` of the sentence stating ``subject``–``obj`` (rules in the
    module docstring), or None. ``sentences``: ``sentence_spans(text)`` when the caller has them.

    >>> t = "Flask is small. Flask depends on Werkzeug. It is fast."
    >>> locate(t, "Flask", "Werkzeug", "flask  depends on werkzeug")
    (16, 42)
    >>> locate(t, "Flask", "Werkzeug")
    (16, 42)
    >>> locate(t, "Flask", "Django") is None
    True
    """
    sents = sentence_spans(text) if sentences is None else sentences
    pat = _pattern(quote) if quote else None
    m = pat.search(text) if pat is not None else None
    if m is not None:
        hit = [(s, e) for s, e in sents if s < m.end() and m.start() < e]
        return (hit[0][0], hit[-1][1]) if hit else m.span()
    a, b = subject.casefold(), obj.casefold()
    folded = text.casefold()
    for width in range(1, MAX_WINDOW + 1):
        for i in range(len(sents) - width + 1):
            s, e = sents[i][0], sents[i + width - 1][1]
            if a in folded[s:e] and b in folded[s:e]:
                return s, e
    return None
