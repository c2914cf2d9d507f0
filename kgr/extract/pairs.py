"""How the rules extractor finds the two ends of a trigger in a sentence (:mod:`kgr.extract.rules`'
step 3): mentions, overlaps, possessives, coordination, the forward and reversed readings, and how
close an end must be to its trigger."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgr.extract.cues import BOUNDARY
from kgr.extract.ends import participle_of_noun
from kgr.extract.guesses import Roles, guess_type

__all__ = ["Mention", "resolve_overlaps", "mark_possessives", "close", "find_pair", "fits", "shared_subject"]

_COORD = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*)(?:the\s+|an?\s+)?", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s?(?!\w)")
_CONJ = re.compile(r"\b(?:and|or)\b|&", re.IGNORECASE)
_SECOND_PREDICATE = re.compile(r"\b(?:and|or)\s+(?:is|are|was|were|has|have|had|can|will|also|then)\b", re.IGNORECASE)


@dataclass(eq=False)  # identity semantics: mentions are dictionary keys
class Mention:
    start: int
    end: int
    types: list[str]
    names: dict[str, str]  # type -> reported name
    guess: bool = False
    shape: str = "other"  # a guess's name shape (kgr.extract.guesses)
    possessive: bool = False  # followed by "'s": a modifier ("Turing's methods"), never a relation end
    modifier: bool = False  # before a product noun ("an SQL database engine"): no end of a closed type
    part: bool = False  # the last word of a longer unknown name ("Kernel TLS"): no relation end (kgr.extract.mentions)
    own: bool = False  # the document's title standing for "It", "Add …" (:data:`kgr.extract.carried.SELF`)


def resolve_overlaps(cands: list[tuple[int, int, int, Mention]]) -> list[Mention]:
    """Longest span wins; equal spans merge their types (lower priority number first)."""
    cands.sort(key=lambda c: (-(c[1] - c[0]), c[0], c[2]))
    kept: list[Mention] = []
    for s, e, _prio, m in cands:
        same = next((k for k in kept if k.start == s and k.end == e), None)
        if same is not None:
            for t in m.types:
                if t not in same.types:
                    same.types.append(t)
                    same.names[t] = m.names[t]
            continue
        if any(k.start < e and s < k.end for k in kept):
            continue
        kept.append(m)
    kept.sort(key=lambda m: m.start)
    return kept


def mark_possessives(text: str, mentions: list[Mention]) -> list[Mention]:
    for m in mentions:
        m.possessive = _POSSESSIVE.match(text, m.end) is not None
    return mentions


def fits(m: Mention, allowed: list[str], widened: list[str] | None, roles: Roles) -> str | None:
    """The first of ``m``'s types that ``allowed`` accepts; a guess gets its one type
    (:func:`kgr.extract.guesses.guess_type`), which ``allowed`` must accept."""
    if m.possessive or m.part:
        return None
    if m.guess:
        t = guess_type(m.shape, allowed, widened or [], roles)
        if t is not None:
            m.names.setdefault(t, m.names["*"])
        return t
    types = [t for t in m.types if not (m.modifier and t in roles.closed)]
    if not allowed:
        return types[0] if types else None
    return next((t for t in types if t in allowed), None)


def close(text: str, a: int, b: int, most: int) -> bool:
    """Whether ``text[a:b]`` (between a relation end and its trigger) holds at most ``most`` tokens,
    no clause boundary and no second predicate ("SciPy and is distributed under": SciPy is the object
    of the first predicate, not the subject of the second)."""
    gap = text[a:b]
    return len(gap.split()) <= most and BOUNDARY.search(gap) is None and _SECOND_PREDICATE.search(gap) is None


def _side(
    sentence: str,
    seq: list[Mention],
    allowed: list[str],
    widened: list[str] | None,
    *,
    leftwards: bool,
    roles: Roles,
) -> list[tuple[Mention, str]]:
    """The nearest mention in ``seq`` (ordered nearest first) fitting ``allowed``, plus coordinated ones.

    Coordination needs a conjunction: "A, B and C" joins all three, "A and B" both, but a bare comma
    ("At the request of Newman, Flowers designed ...") joins nothing. Left of a trigger the gap next
    to the nearest mention must be the conjunction; right of it the chain is cut after the last one.
    """
    for i, m in enumerate(seq):
        t = fits(m, allowed, widened, roles)
        if t is None:
            continue
        chain = [(m, t)]
        conj_at = 0  # chain length up to and including the last conjunction gap
        prev = m
        for nxt in seq[i + 1 :]:
            gap = sentence[nxt.end : prev.start] if leftwards else sentence[prev.end : nxt.start]
            if not _COORD.fullmatch(gap):
                break
            t2 = fits(nxt, allowed, widened, roles)
            if t2 is None:
                break
            has_conj = _CONJ.search(gap) is not None
            if leftwards and len(chain) == 1 and not has_conj:
                break
            chain.append((nxt, t2))
            if has_conj:
                conj_at = len(chain)
            prev = nxt
        return chain if leftwards else chain[: max(1, conj_at)]
    return []


def find_pair(
    sentence: str,
    mentions: list[Mention],
    ts: int,
    te: int,
    dom: list[str],
    rng: list[str],
    passive: bool,
    *,
    guesses: list[Mention] | None = None,
    widened: list[str] | None = None,
    roles: Roles = Roles(None, None),
    order: list[str] | None = None,
) -> tuple[list[tuple[Mention, str]], list[tuple[Mention, str]]] | None:
    left = [m for m in mentions if m.end <= ts][::-1]
    right = [m for m in mentions if m.start >= te]
    g_left = [m for m in (guesses or []) if m.end <= ts][::-1]
    g_right = [m for m in (guesses or []) if m.start >= te]

    def pick(known: list[Mention], guessed: list[Mention], allowed: list[str], leftwards: bool):
        got = _side(sentence, known, allowed, None, leftwards=leftwards, roles=roles)
        if not got and guessed:
            got = _side(sentence, guessed, allowed, widened, leftwards=leftwards, roles=roles)
        return got

    readings = order or (["reversed", "forward"] if passive else ["forward", "reversed"])
    for reading in readings:
        if reading == "forward":
            subs = pick(left, g_left, dom, True)
            objs = pick(right, g_right, rng, False) if subs else []
        else:
            objs = pick(left, g_left, rng, True)
            subs = pick(right, g_right, dom, False) if objs else []
        if subs and objs:
            return subs, objs
    return None


_COPULA_RELATIVE = re.compile(r"\s*(?:is|are|was|were)\s+(?:a|an|the)\b[^,;:]*(?:\b(?:which|that)|,(?:\s*[a-z]+ly)?)\s*$",
                               re.IGNORECASE)


def shared_subject(text: str, cands: list[Mention], ts: int, allowed: list[str], widened: list[str] | None,
                   roles: Roles) -> tuple[Mention, str] | None:
    """The subject a trigger shares with an earlier predicate of its clause, when the nearer left
    mention belongs to that predicate: the mention opening the clause, followed by "is a … which"
    ("Granian is an ASGI compatible Rust HTTP server which supports HTTP/2"), by "is a …," before a
    participle ("Requests is an HTTP library, written in Python") or by a coordinated
    predicate ("scikit-learn is … built on top of SciPy and is distributed under the BSD license").
    None when the clause does not open with a mention that ``allowed`` accepts."""
    lo = 0
    for m in BOUNDARY.finditer(text, 0, ts):
        lo = m.end()
    first = min((m for m in cands if lo <= m.start and m.end <= ts), key=lambda m: m.start, default=None)
    if first is None or text[lo:first.start].strip():
        return None
    gap = text[first.end:ts]
    if not (_COPULA_RELATIVE.match(gap) or _SECOND_PREDICATE.search(gap)):
        return None
    if participle_of_noun(gap, text[ts:ts + 40]):  # "… and is extensible via plugins written in"
        return None
    t = fits(first, allowed, widened, roles)
    return (first, t) if t is not None else None
