"""Strict JSON for everything a user hands kgr: label lines, triple lines, corpus lines, tool input,
slice files, KG schema files and HTTP bodies. One reading everywhere:

- **RFC 8259 JSON only**: ``NaN``, ``Infinity`` and ``-Infinity`` are refused (Python's ``json``
  accepts them); an integer longer than Python's conversion limit (4,300 digits) is refused;
- **duplicate keys are refused** (``json`` keeps the last one silently: a label line
  ``{"label": true, ..., "label": false}`` would count as ``false``);
- **nesting at most** :data:`MAX_DEPTH` arrays and objects deep (deeper input, e.g. 100,000 ``[``,
  is one error, never a ``RecursionError``);
- **a byte-order mark** (U+FEFF) at the start of the text is ignored (RFC 8259 §8.1 allows a parser
  to), and raw U+2028 / U+2029 inside strings are JSON like any other character.

A JSON Lines text is split on ``"\\n"`` only (:func:`json_lines`): ``str.splitlines`` also splits
on U+2028, U+2029, U+0085, ``\\v``, ``\\f`` and U+001C–U+001E, all of which may stand raw inside a
valid JSON string.

>>> loads_strict('\\ufeff{"a": [1, 2]}')
{'a': [1, 2]}
>>> loads_strict('{"label": true, "label": false}')
Traceback (most recent call last):
...
kgr.errors.KgrValidationError: duplicate key 'label' in a JSON object
>>> [n for n, _ in json_lines('{"a": "x\\u2028y"}\\r\\n\\n{}')]
[1, 3]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from kgr.errors import KgrValidationError

__all__ = ["loads_strict", "json_lines", "MAX_DEPTH"]

#: Deepest nesting of arrays and objects accepted (kgr's own formats need 5).
MAX_DEPTH = 64


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            shown = k if len(k) <= 60 else k[:57] + "..."
            raise KgrValidationError(f"duplicate key {shown!r} in a JSON object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise KgrValidationError(f"{name} is not valid JSON")


def _depth_at_most(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects at most ``limit`` deep (iterative: no recursion)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return False
        children = v.values() if isinstance(v, dict) else v
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True


#: One decoder for every text (``json.loads`` with hooks builds a new one per call: half its time on a
#: short line such as a staged triple's).
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def _openers(text: str) -> int:
    """How many ``[`` and ``{`` ``text`` holds: a bound on its nesting depth (strings' brackets count too)."""
    return text.count("[") + text.count("{")


def loads_strict(text: str | bytes, *, where: str = "", max_depth: int | None = MAX_DEPTH) -> Any:
    """Parse one JSON text under the rules of the module docstring.

    Parameters
    ----------
    text:
        The JSON text (bytes are decoded as UTF-8).
    where:
        Named in the message of a syntax error (``"malformed JSON in stdin at line 1 column 10"``).
    max_depth:
        Deepest nesting accepted; None leaves the depth to the caller (the tool server's validator
        answers it with a 422), past what the parser itself can nest (about 1,000) aside.

    Raises
    ------
    KgrValidationError
        One line: not UTF-8, malformed JSON (with line and column), a duplicate key, NaN or
        Infinity, an integer too long, or nesting deeper than ``max_depth``.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KgrValidationError(f"not UTF-8 (undecodable byte at offset {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        if text.startswith("\ufeff"):  # a second mark: what json.loads says of it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        inside = f" in {where}" if where else ""
        raise KgrValidationError(f"malformed JSON{inside} at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise KgrValidationError(f"JSON nested deeper than {max_depth or 'the parser can follow'} levels") from None
    except KgrValidationError:
        raise
    except ValueError as exc:  # an integer past Python's digit limit
        raise KgrValidationError(f"not valid JSON here: {str(exc).splitlines()[0][:120]}") from None
    # a text with no more openers than the limit cannot nest deeper (a C-speed count skips the walk)
    if max_depth is not None and _openers(text) > max_depth and not _depth_at_most(value, max_depth):
        raise KgrValidationError(f"JSON nested deeper than {max_depth} levels")
    return value


def json_lines(text: str | Iterable[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSON Lines text (or of an iterable of ``"\\n"``-terminated lines),
    with their 1-based numbers, split on ``"\\n"`` only; a trailing ``"\\r"`` is dropped."""
    lines = text.split("\n") if isinstance(text, str) else text
    for n, line in enumerate(lines, start=1):
        line = line.removesuffix("\n").removesuffix("\r")
        if line.strip(" \t\r\ufeff"):  # blank: JSON whitespace (a lone byte-order mark too)
            yield n, line
