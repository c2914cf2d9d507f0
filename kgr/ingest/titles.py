"""A document's title: the name its own sentences mean by "It", "This package" and "License: X".

The offline extractor (:meth:`kgr.extract.rules.RulesExtractor.extract`) resolves a sentence-initial
"It" / "This library", the missing subject of "Added support for X" and the subject of a
"License: X" line to the document's title; without one it extracts nothing there. The title is
found, first match wins, in:

1. ``metadata["title"]`` (a PDF's title, a JSONL line's ``"title"`` field);
2. a package metadata header (``Name: flask`` in a ``PKG-INFO`` / ``METADATA`` file);
3. the first Markdown or HTML heading of level 1 in the first :data:`HEAD_CHARS` characters
   (``# Flask``, ``Flask`` underlined with ``===``, ``<h1>Flask</h1>``; not inside a fenced code
   block), markup and leading or trailing symbols (emoji) stripped — when it names something: a
   heading "<Name> - <tagline>" (also ``—``, ``–``, ``:``) gives the name before the dash, and a
   heading that reads as a phrase (:func:`is_tagline`: "Charset Detection, for Everyone", "Docker SDK
   for Python", "OpenAI Python API library") or names a section (its words all in
   :data:`GENERIC_STEMS`: "Introduction", "About") is no title, so the next rule answers; a heading
   that begins with the file's name and goes on ("Pydantic Validation" in ``pydantic.md``), or ends
   with it after lowercase words ("packaged angular" in ``angular.md``), gives that name; a heading
   that names a kind of API element, then the element (a javadoc page's "Class Base64Variant", "Enum
   Class JsonToken", "Package org.apache.commons.lang3") that the file's name spells too, gives the
   element without its type parameters (not "Module Federation" in ``README.md``);
4. the file's name without its file-type suffixes (:data:`FILE_SUFFIXES`: ``.md.txt`` goes, the dots of
   ``http.client`` or ``libpango-1.0-0`` stay) and without the words that name a kind of file
   (:data:`GENERIC_STEMS`: ``README``, ``index``, ``CHANGELOG``, ``copyright``, ``man`` ...:
   ``copyright-curl.txt`` → ``curl``), unless nothing else is left.

A title longer than :data:`MAX_TITLE` characters, or with no letter or digit, is none.

>>> from kgr.ingest.loaders import Document
>>> document_title(Document(id="d", path="/x/README.md", text="# Flask\\n\\nIt depends on Werkzeug."))
'Flask'
>>> document_title(Document(id="d", path="/x/httpx.md", text="A next-generation HTTP client."))
'httpx'
>>> document_title(Document(id="d", path="/x/README.rst", text="no heading here")) is None
True
>>> document_title(Document(id="d", path="/x/charset-normalizer.md", text="# Charset Detection, for Everyone 👋"))
'charset-normalizer'
>>> document_title(Document(id="d", path="/x/README.md", text="Distro - an OS platform information API\\n==="))
'Distro'
>>> document_title(Document(id="d", path="/x/bluebird.md", text="# Introduction\\n\\nBluebird is a promise library."))
'bluebird'
>>> document_title(Document(id="d", path="/x/angular.md", text="# packaged angular"))
'angular'
>>> document_title(Document(id="d", path="/x/a.b.Pair.html", text="# Class Pair<L, R>"))
'Pair'
>>> document_title(Document(id="d", path="/x/README.md", text="# Module Federation"))
'Module Federation'
"""

from __future__ import annotations

import html
import re
from pathlib import PurePath
from typing import Any

from kgr.text.headings import FENCE, MD_LINK, TAGS

__all__ = ["document_title", "is_tagline", "FILE_SUFFIXES", "GENERIC_STEMS", "HEAD_CHARS", "MAX_TITLE"]

#: How far into a document its heading is looked for (characters).
HEAD_CHARS = 4000
#: Longest title kept (characters); a longer "heading" is a sentence.
MAX_TITLE = 80
#: File names (lower case, suffix removed) that name a kind of file, not its subject.
GENERIC_STEMS = frozenset({
    "readme", "index", "changelog", "changes", "history", "news", "license", "licence", "copying", "notice",
    "metadata", "pkg-info", "description", "document", "doc", "docs", "main", "intro", "introduction", "about",
    "contributing", "authors", "todo", "notes", "untitled", "text", "input", "data", "page", "content",
    "copyright", "man", "manpage", "pydoc", "manual", "faq", "guide", "tutorial", "install", "usage", "info",
})

#: The suffixes that name a file's type (any case; also ``info-2``, a part of an info manual), removed
#: from a file's name before it is read as a title. A version's digits are no suffix (``python3.11``).
FILE_SUFFIXES = frozenset({"txt", "text", "md", "markdown", "rst", "adoc", "org", "html", "htm", "xhtml", "pdf",
                           "json", "jsonl", "ndjson", "gz", "bz2", "xz", "zst", "tar", "info", "pod", "tex", "man"})
_FILE_SUFFIX = re.compile(r"(?i)(?:" + "|".join(sorted(FILE_SUFFIXES)) + r"|info-\d+)")

_PKG_NAME = re.compile(r"^Metadata-Version:[^\n]*\n(?:[^\n]+\n)*?Name:[ \t]*([^\n]+)$", re.M)
_ATX = re.compile(r"^[ \t]{0,3}#[ \t]+(.+?)[ \t#]*$", re.M)
#: A line with a letter or digit, underlined with "=". The letter is found by a lookahead, not by
#: ``[^\n]*\w[^\n]*``: that form tries every split of a line that is not a heading (quadratic in the
#: line's length, a paragraph-long line is common), this one reads a line once.
_SETEXT = re.compile(r"^(?=[^\n]*?\w)([^\n]+)\n[ \t]{0,3}=+[ \t]*$", re.M)
_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.I | re.S)
#: A javadoc page's heading: the kind of API element, then its name (type parameters after "<").
_API_ELEMENT = re.compile(r"(?:(?:Enum|Record|Abstract)\s+)?(?:Class|Interface|Enum|Record|Annotation\s+(?:Interface|Type)|"
                          r"Exception|Error|Package|Module)\s+([A-Za-z_$][\w$.]*)(?:<.*)?")
#: A badge: a linked image, inline or by reference ("[![CircleCI](…svg)][circleci]"), or an image from a
#: badge service; no words of a title. A heading that is a logo ("# ![jsii](logo.png)") keeps its alt text.
_IMAGE = r"!\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])"
_BADGE = re.compile(r"\[" + _IMAGE + r"\](?:\([^)]*\)|\[[^\]]*\])|!\[[^\]]*\]\([^)]*(?:badge|shields\.io)[^)]*\)")
_MARKS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")  # emphasis and code marks; "stack_data" keeps its "_"


def _clean(raw: str) -> str | None:
    text = _MARKS.sub("", MD_LINK.sub(r"\1", TAGS.sub(" ", html.unescape(raw))))
    text = " ".join(text.split()).strip(" :-|")
    if not text or len(text) > MAX_TITLE or not any(c.isalnum() for c in text):
        return None
    return text


#: "<Name> - <tagline>": the name before a spaced dash or a colon.
_NAME_DASH = re.compile(r"^(.{1,40}?)\s+[-–—]\s+\S|^([^:]{1,40}):\s+\S")
#: Lowercase function words that make a heading a phrase ("… for Python", "… of the Web").
_FUNCTION_WORDS = frozenset("a an the for of and or to with in on by from your you our its as at into is are".split())
_EDGE_SYMBOLS = re.compile(r"^[^\w(\[]+|[^\w)\]+#!?.]+$")  # emoji, arrows, bullets at either end


def is_tagline(heading: str) -> bool:
    """Whether a (cleaned) heading reads as a phrase rather than a name: it has a comma or sentence
    punctuation, more than four words, a lowercase function word after its first word ("Docker SDK
    *for* Python"), or a plain lowercase common noun after a capitalised first word ("OpenAI Python
    API *library*").

    >>> [is_tagline(h) for h in ("Flask", "HTTPCore 2", "Typing Extensions", "MessagePack for Python",
    ...                          "OpenAI Python API library", "Charset Detection, for Everyone")]
    [False, False, False, True, True, True]
    """
    words = heading.split()
    if re.search(r"[,;!?]|\.\s", heading) or len(words) > 4:
        return True
    rest = words[1:]
    if any(w in _FUNCTION_WORDS for w in rest):
        return True
    return words[0][:1].isupper() and any(w.isalpha() and w.islower() and len(w) > 2 for w in rest)


def _heading(head: str, stem: str = "") -> str | None:
    """The first level-1 heading of ``head`` (whichever form comes first), cleaned, when it names
    something (module docstring, rule 3); None otherwise. A heading of badges only ("[![Known
    Vulnerabilities](…badge.svg)](…)") names nothing; "<A>: <B>" gives B when B is the file's name
    ``stem`` ("Node.js: fs-extra" in ``fs-extra.md``), else A."""
    found = [(m.start(), m.group(1)) for rx in (_ATX, _SETEXT, _H1) if (m := rx.search(head))]
    for _, raw in sorted(found):
        title = _clean(_BADGE.sub(" ", raw))
        if title:
            title = _EDGE_SYMBOLS.sub("", title).strip() or title
            if m := _NAME_DASH.match(title):
                rest = title[m.end() - 1:].strip()
                title = rest if stem and rest.casefold() == stem.casefold() else (m.group(1) or m.group(2)).strip()
            if all(w.casefold() in GENERIC_STEMS for w in title.split()):
                return None  # a section's name ("Introduction", "About"), not the document's
            return None if is_tagline(title) else title
    return None


def _stem_name(path: str | None) -> str:
    """What a file's name says its document is about: the name without its file-type suffixes
    (:data:`FILE_SUFFIXES`, as many as it ends with: ``.md.txt``, ``.info.gz``; a dot inside a name
    stays: ``http.client``, ``libpango-1.0-0``, ``python3.11``) and without the words that name a kind
    of file (:data:`GENERIC_STEMS`; ``copyright-curl`` → ``curl``, ``man-tar`` → ``tar``, ``README`` →
    nothing), or ``""``.

    >>> _stem_name("/x/copyright-curl.txt"), _stem_name("/x/README.md"), _stem_name("/x/charset-normalizer.md")
    ('curl', '', 'charset-normalizer')
    >>> _stem_name("/x/pydoc-http.client.txt"), _stem_name("/x/readme-git-README.md.txt"), _stem_name("/x/find.info-1")
    ('http.client', 'git', 'find')
    """
    stem = PurePath(path).name if path else ""
    while (cut := stem.rpartition("."))[1] and _FILE_SUFFIX.fullmatch(cut[2]):
        stem = cut[0]
    words = [w for w in re.split(r"[-_ ]+", stem) if w]
    kept = [w for w in words if w.lower() not in GENERIC_STEMS]
    return stem if len(kept) == len(words) else "-".join(kept)


def document_title(document: Any) -> str | None:
    """The title of ``document`` (a :class:`kgr.ingest.loaders.Document`), by the rules of the module
    docstring; None when none is found."""
    meta = document.metadata.get("title") if isinstance(document.metadata, dict) else None
    if isinstance(meta, str) and (title := _clean(meta)):
        return title
    head = document.text[:HEAD_CHARS]
    if (m := _PKG_NAME.search(head)) and (title := _clean(m.group(1))):
        return title
    stem = _stem_name(document.path)
    if title := _heading(FENCE.sub("", head), stem):  # a shell comment in a fence is no heading
        if (m := _API_ELEMENT.fullmatch(title)) and m.group(1) in stem:
            return m.group(1)  # "Class Base64Variant" in …Base64Variant.html: the class, not the phrase
        if stem and title.casefold().startswith(stem.casefold() + " "):
            return title[:len(stem)]  # "Pydantic Validation" in pydantic.md: the name, not its product line
        before, _, last = title.rpartition(" ")
        if stem and last.casefold() == stem.casefold() and before.islower():
            return last  # "packaged angular" in angular.md: the name, after words about it
        return title
    return _clean(stem) if stem else None
