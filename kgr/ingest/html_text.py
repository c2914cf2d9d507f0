"""HTML as the plain text the extractor reads: an incremental converter for the loaders.

A documentation site's page is HTML; read as text, its tags and scripts would be the words the
extractor sees. :class:`HtmlText` turns it into Markdown-like text, streamed (the loader feeds it one
decoded block at a time, memory stays bounded by the block and the open tag):

- headings ``<h1>``–``<h6>`` become ``#``–``######`` lines, so the first one can give the document's
  title (:mod:`kgr.ingest.titles`) and the chunker and the extractor see the sections;
- block elements (``<p>``, ``<div>``, ``<section>``, ``<table>`` …) end a paragraph (a blank line),
  ``<li>`` opens a ``- `` item, ``<br>``, ``<tr>``, ``<dt>``/``<dd>`` a line;
- the text of ``<script>``, ``<style>``, ``<noscript>``, ``<template>``, ``<svg>`` and ``<title>`` is
  dropped; character references are decoded (``&amp;`` → ``&``);
- whitespace inside a paragraph collapses to one space, except inside ``<pre>``.

Malformed markup (unclosed tags, stray end tags) is read as far as Python's :class:`html.parser.HTMLParser`
reads it; nothing raises.

>>> c = HtmlText()
>>> c.feed("<html><head><title>x</title><script>var a;</script></head><body><h1>Flask</h1>")
>>> c.feed("<p>Flask &amp; <b>Werkzeug</b>\\n  are  fast.</p><ul><li>one</li><li>two</li></ul>")
>>> print((c.take() + c.finish()).strip())
# Flask
<BLANKLINE>
Flask & Werkzeug are fast.
<BLANKLINE>
- one
- two
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["HtmlText"]

#: Elements whose text is no prose of the page.
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "title"})
#: Elements that end a paragraph.
_BLOCKS = frozenset({"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "table",
                     "ul", "ol", "dl", "blockquote", "figure", "figcaption", "form", "hr", "address", "details",
                     "summary", "body"})
#: Elements that end a line.
_LINES = frozenset({"br", "tr", "dt", "dd"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACES = re.compile(r"\s+")
_TRAILING = re.compile(r"[ \t]+(?=\n)")
_LEADING = re.compile(r"(?<=\n) (?=\S)")  # the one space a collapsed run leaves at a line's start
_BLANKS = re.compile(r"\n{3,}")


class HtmlText(HTMLParser):
    """Feed HTML (:meth:`feed`), take the text converted so far (:meth:`take`), and the rest at the end
    (:meth:`finish`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._out: list[str] = []
        self._dropped = 0  # depth inside dropped elements
        self._pre = 0  # depth inside <pre>
        self._started = False  # text taken already
        self._held = ""  # whitespace at the end of the text taken, not given out yet
        self._space = False  # the text given to the output so far ends with a collapsible space

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            self._dropped += 1
        elif not self._dropped:
            self._open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._dropped and tag not in _DROPPED:
            self._open(tag)  # <br/>, <hr/>: nothing to close

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._dropped = max(0, self._dropped - 1)
        elif self._dropped:
            return
        elif tag in _HEADINGS or tag in _BLOCKS:
            self._mark("\n\n")
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self._mark("\n\n")

    def handle_data(self, data: str) -> None:
        if self._dropped:
            return
        if not self._pre:  # one space for a run, also one split between two calls (a streamed page)
            data = _SPACES.sub(" ", data)
            if self._space and data.startswith(" "):
                data = data[1:]
        if data:
            self._out.append(data)
            self._space = data.endswith(" ")

    def _open(self, tag: str) -> None:
        if tag in _HEADINGS:
            self._mark("\n\n" + "#" * _HEADINGS[tag] + " ")
            self._space = True  # the heading's text follows one space
        elif tag == "pre":
            self._pre += 1
            self._mark("\n\n")
        elif tag == "li":
            self._mark("\n- ")
            self._space = True
        elif tag in _BLOCKS:
            self._mark("\n\n")
        elif tag in _LINES:
            self._mark("\n")

    def _mark(self, text: str) -> None:
        self._out.append(text)
        self._space = False

    def take(self) -> str:
        """The text converted since the last call (spaces at line ends and runs of blank lines tidied;
        the document's leading whitespace dropped). Whitespace at its end is held back until text
        follows, so that a run split between two calls is tidied as one."""
        text = self._held + "".join(self._out)
        self._out.clear()
        body = text.rstrip()
        self._held = text[len(body):]
        if not self._started:
            body = body.lstrip()
            self._started = bool(body)
        return _BLANKS.sub("\n\n", _LEADING.sub("", _TRAILING.sub("", body)))

    def finish(self) -> str:
        """The rest of the text, after the end of the input (ending with one newline)."""
        self.close()
        rest = self.take()
        self._held = ""
        return rest + "\n" if self._started else rest
