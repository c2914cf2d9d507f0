"""Characters that change how text is shown rather than what it says: controls and bidi overrides.

A name a person types (a reviewer's) must not hold them, and text kgr prints to a terminal or a
log (names, quotes, decision reasons read back from the store) shows them as escapes, so that
stored text can neither move the cursor, recolour or clear a terminal (ESC sequences), end a log
line early (newlines, U+2028) nor reverse what a reader sees (Trojan Source, CVE-2021-42574).

The characters, :func:`unsafe_character`:

- every control character, Unicode category ``Cc``: C0 (U+0000–U+001F: NUL, ESC, tab and
  newlines included), DEL (U+007F) and C1 (U+0080–U+009F);
- the line and paragraph separators U+2028 and U+2029 (categories ``Zl``, ``Zp``);
- the bidirectional formatting characters: the Arabic letter mark U+061C, the marks U+200E and
  U+200F, the embeddings and overrides U+202A–U+202E and the isolates U+2066–U+2069;
- lone surrogates (category ``Cs``: not text at all).

Other format characters (the zero-width joiner and non-joiner U+200D/U+200C, which Persian and
Indic names need) are left alone.

>>> unsafe_character("Ada Lovelace"), unsafe_character("ada\\x1b[2J"), unsafe_character("abc\\u202edcba")
(None, '\\x1b', '\\u202e')
>>> print(escape_unsafe("ada\\x1b[31m\\nnext\\u202e"))
ada\\x1b[31m\\nnext\\u202e
"""

from __future__ import annotations

import unicodedata

__all__ = ["unsafe_character", "escape_unsafe", "BIDI_CONTROLS"]

#: The bidirectional formatting characters (marks, embeddings, overrides, isolates).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_UNSAFE_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})


def _unsafe(c: str) -> bool:
    return c in BIDI_CONTROLS or unicodedata.category(c) in _UNSAFE_CATEGORIES


def unsafe_character(text: str) -> str | None:
    """The first character of ``text`` listed in the module docstring, or None."""
    if text.isprintable() and not any(c in BIDI_CONTROLS for c in text):  # the common case, at C speed
        return None
    return next((c for c in text if _unsafe(c)), None)


def escape_unsafe(text: str) -> str:
    """``text`` with each character of :func:`unsafe_character`'s kinds written as a Python escape
    (``\\x1b``, ``\\n``, ``\\u202e``); a backslash already in the text is left as it is."""
    if unsafe_character(text) is None:
        return text
    return "".join(c.encode("unicode_escape", "backslashreplace").decode("ascii") if _unsafe(c) else c
                   for c in text)
