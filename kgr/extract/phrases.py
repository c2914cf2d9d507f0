"""Relations said by a noun phrase, not a trigger verb (rules extractor), and the document's own name.

- :func:`written_in`: "X is a Python library", "X is a collection of Perl modules", "X is the
  testing library for Python", "X is a C language binding" state ``X WRITTEN_IN <Language>``; a
  sentence with no subject that opens with the noun phrase ("A Python library for the Docker
  Engine API.", a package description's first line) states it of the document (its title). The
  language must stand in a product noun phrase (article, at most three modifiers, the language,
  then *library, module, package, binding, framework, toolkit, implementation, extension, wrapper,
  client, port* …; or the product noun, then "for" / "in" and the language); the subject opens the
  sentence and is followed by "is/are (also) a/an/the/one of the".
- :func:`title_mention`: at the start of a sentence, the document's own name as its text writes it
  ("SQLite" in the description of ``libsqlite3-0``, "Hypothesis" in ``hypothesis``'s README): the
  title without a ``lib`` / ``python3-`` prefix, a ``-dev`` / ``-perl`` … suffix or a trailing
  version, compared case-insensitively; a variant that is a common English word counts only when
  "is"/"are" follows ("Hypothesis is …", not "Time passes").
- :func:`modifier_of_product`: a standard or language directly before a product noun ("an SQL
  database engine", "the IJG JPEG library", "the XML security library"), or before a noun naming an
  API's members or parts ("HTML views", "a specific XML mechanism type", "the JFC/Swing component
  architecture"), modifies that noun; it is no relation end of a closed type (:func:`kgr.extract.pairs.fits`).
"""

from __future__ import annotations

import re

from kgr.extract.lexicon import is_common_word

__all__ = ["written_in", "title_variants", "title_mention", "modifier_of_product"]

_PRODUCT = (r"(?:librar(?:y|ies)|modules?|packages?|bindings?|frameworks?|toolkits?|implementations?|extensions?|"
            r"wrappers?|clients?|ports?|interfaces?|programs?|tools?|applications?|utilit(?:y|ies)|scripts?)")
#: Before the language: an article (or "of"), then at most three modifier words.
_NP_BEFORE = re.compile(r"(?:\b(?:a|an|the|of)\s+)(?:[\w-]+\s+){0,3}$", re.IGNORECASE)
_NP_AFTER = re.compile(r"\s+(?:language\s+)?" + _PRODUCT + r"\b", re.IGNORECASE)
_FOR_LANGUAGE = re.compile(r"\b" + _PRODUCT + r"\s+(?:for|in)\s+$", re.IGNORECASE)
#: Between the subject and the noun phrase: a copula and the phrase's first words (no clause boundary).
_COPULA = re.compile(r"\s+(?:is|are)\s+(?:(?:also|now|still|just)\s+)?(?:a|an|the|one\s+of\s+the)\s+[^,;:()]*$",
                     re.IGNORECASE)
_PRODUCT_WORD = re.compile(r"\b" + _PRODUCT + r"\b", re.IGNORECASE)
_FRAGMENT = re.compile(r"\s*(?:A|An)\s+[^,;:()]*$")
_PRODUCT_AFTER = re.compile(r"\s+(?:[a-z][\w-]*\s+)?(?:database|engine|librar(?:y|ies)|servers?|clients?|framework|"
                            r"toolkit|compiler|interpreter|applications?|drivers?|daemon|"
                            # the members and parts of an API ("HTML views", "a specific XML mechanism type",
                            # "the JFC/Swing component architecture"): the ninth sample's reference text
                            r"views?|widgets?|components?|mechanisms?|classe?s|subclass(?:es)?|hooks?|interfaces?|"
                            # what plugs into the software ("all DNS providers", "the CPU and CUDA plugins",
                            # "Support for Go modules"): the eighteenth census (Go READMEs)
                            r"providers?|plugins?|plug-ins?|backends?|modules)\b")
_PREFIX = re.compile(r"^(?:lib|python3?-|py)(?=[a-z0-9])", re.IGNORECASE)
_SUFFIX = re.compile(r"(?:-(?:dev|perl|bin|common|utils|tools|doc|data|runtime|modules))+$|[-.\d]+$", re.IGNORECASE)
_STARTWORD = re.compile(r"\s*([A-Za-z][\w+.-]*[\w+]|[A-Za-z])")
_IS = re.compile(r"\s+(?:is|are)\b")


def modifier_of_product(text: str, end: int) -> bool:
    """Whether a name ending at ``end`` stands before a product noun (at most one word between)."""
    return _PRODUCT_AFTER.match(text, end) is not None


def title_variants(title: str) -> set[str]:
    """The spellings of the document's name its text may use (casefolded, at least 3 characters).

    >>> sorted(title_variants("libsqlite3-0"))
    ['libsqlite3-0', 'sqlite', 'sqlite3-0']
    >>> sorted(title_variants("libtimedate-perl"))
    ['libtimedate-perl', 'timedate', 'timedate-perl']
    """
    out = {title.casefold()}
    base = _PREFIX.sub("", title.casefold())
    out.add(base)
    for _ in range(3):
        base = _SUFFIX.sub("", base)
        out.add(base)
    return {v for v in out if len(v) >= 3}


def title_mention(masked: str, title: str | None) -> tuple[int, int, str] | None:
    """``(start, end, surface)`` of the document's own name opening ``masked``, or None (rules above)."""
    if not title:
        return None
    m = _STARTWORD.match(masked)
    if m is None or m.group(1).casefold() not in title_variants(title):
        return None
    word = m.group(1)
    if is_common_word(word) and not _IS.match(masked, m.end(1)):
        return None
    return m.start(1), m.end(1), word


def written_in(masked: str, languages: list[tuple[int, int]], subjects: list[tuple[int, int]],
               has_title: bool) -> list[tuple[tuple[int, int] | None, tuple[int, int]]]:
    """``(subject span or None for the title, language span)`` for each language named in a product
    noun phrase that ``masked`` says its subject is (rules above).

    ``languages``: spans of the language mentions; ``subjects``: spans of the mentions that may be a
    subject (the sentence's first one counts only when it opens the sentence).
    """
    out: list[tuple[tuple[int, int] | None, tuple[int, int]]] = []
    opening = next((s for s in sorted(subjects) if not masked[:s[0]].strip()), None)
    for ls, le in languages:
        before = masked[:ls]
        trailing = _FOR_LANGUAGE.search(before)
        if not ((_NP_BEFORE.search(before) and _NP_AFTER.match(masked, le)) or trailing):
            continue
        lead = before[:trailing.start()] if trailing else before
        if _PRODUCT_WORD.search(lead):
            continue  # "a C binding of the original C++ implementation": C++ belongs to another noun
        if opening is not None and opening[1] <= ls and _COPULA.match(masked[opening[1]:ls]) \
                and len(masked[opening[1]:ls].split()) <= 10:
            out.append((opening, (ls, le)))
        elif opening is None and has_title and _FRAGMENT.fullmatch(before):
            out.append((None, (ls, le)))
    return out
