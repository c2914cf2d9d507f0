"""Text analysis shared by the agent tools: tokens, sentences, mentions, terms, name lookup.

Conventions (the tools' documented numbers depend on them):

* **Tokens** are runs of letters/digits (``[^\\W_]+``), each CJK ideograph, kana or hangul syllable
  on its own, and each other non-space character (punctuation, symbols). No subword model: an LLM
  tokenizer gives roughly 1.2-1.4 times more tokens on English prose.
* **Words** are the tokens made of letters or digits (``"COVID-19"`` is two words and three tokens).
* **Sentences** end at ``.``, ``!``, ``?`` or ``…`` (plus closing quotes/brackets) followed by
  whitespace and then an upper-case letter, a digit, an opening quote or bracket or a CJK character,
  or by the end of the text; at ``。！？``; and at blank lines. A period right after a known
  abbreviation (``Dr.``, ``Inc.``, ``e.g.``) or a single letter (the initial in ``J. Smith``) does not
  end a sentence. Only segments containing a word count.
* **Entity mentions** are maximal runs of capitalised words joined by single spaces (or, without
  spaces, by ``.``, ``-``, ``&``, ``'`` as in ``I.B.M.`` or ``AT&T``; by ``". "`` after a title such
  as ``Dr``) that do not cross a sentence start, minus a leading function word that stands apart
  (a sentence-initial ``The``), plus stand-alone years (1000-2099).
* **Technical terms** are words mixing letters and digits (``H2O``), all-capital words of two or more
  letters (``DNA``), camelCase words, and words of 13 or more characters.
* **Name lookup**: a name occurs in the text when its canonical form
  (:func:`kgr.model.canonical.canonical_text`) occurs as a whole-token sequence in the canonical
  text. Names with CJK characters are looked up as substrings of the NFKC-casefolded text.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from kgr.model.canonical import canonical_text
from kgr.text.sentences import run_before

__all__ = [
    "TextProfile",
    "RunIndex",
    "WorkBudget",
    "MATCH_BUDGET",
    "analyze_text",
    "split_type_words",
    "has_cjk",
    "ABBREVIATIONS",
    "MENTION_STOPWORDS",
]

T = TypeVar("T")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+|[^\s]")
_CJK_RE = re.compile(rf"[{_CJK}]")
_WORDCHAR_RE = re.compile(r"[^\W_]")
# Linear on any text: a run of terminators is matched only from its first character and never given
# back (see :data:`kgr.text.sentences._SENT_END`; the same boundaries as the unanchored pattern).
_SENT_END_RE = re.compile("(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019)\\]]*+(?=\\s|$)|[\u3002\uff01\uff1f]+|\\n[ \\t]*\\n")
_YEAR_RE = re.compile(r"^(?:1\d{3}|20\d{2})$")
_NEXT_CHAR_RE = re.compile(r"\s*(\S)")
_WORD_RUN_RE = re.compile(r"\w*")

#: A period right after one of these (case-insensitive) does not end a sentence.
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt inc corp ltd co llc plc vs etc eg ie al fig no vol dept univ gen col lt sgt rev".split()
)
#: Capitalised words that do not start a mention (sentence-initial function words, pronouns).
MENTION_STOPWORDS = frozenset(
    """a an the this that these those it its he she they we i you his her their our my your
    in on at of for from by with as to into onto after before during when while since until
    but and or nor so yet however although though because if then there here also thus hence
    yesterday today tomorrow meanwhile moreover furthermore finally first second third next last
    many most some several all both each every no not one two three""".split()
)
_TITLES = frozenset("mr mrs ms dr prof sir st".split())


def has_cjk(s: str) -> bool:
    """Whether ``s`` contains a CJK ideograph, kana or hangul syllable."""
    return _CJK_RE.search(s) is not None


_CAMEL_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_type_words(type_name: str) -> list[str]:
    """Words of a type name, lower-cased.

    >>> split_type_words("MedicalCondition"), split_type_words("HTTPServer"), split_type_words("BORN_IN")
    (['medical', 'condition'], ['http', 'server'], ['born', 'in'])
    """
    out: list[str] = []
    for part in re.split(r"[_\W]+", type_name):
        if not part:
            continue
        if part.isupper() or part.islower() or part.isdigit():
            out.append(part.lower())
        else:
            out.extend(w.lower() for w in _CAMEL_SPLIT.findall(part))
    return out


def _is_word(tok: str) -> bool:
    return tok[0].isalnum() or has_cjk(tok)


def _count_technical(words: list[str]) -> int:
    n = 0
    for w in words:
        if len(w) == 1:  # one character (incl. CJK) is never a technical term
            continue
        if w.islower() and w.isalpha():  # the common case, decided by C string methods
            n += len(w) >= 13 and not has_cjk(w)
        elif _is_technical(w):
            n += 1
    return n


def _is_technical(word: str) -> bool:
    if has_cjk(word) or not any(c.isalpha() for c in word):
        return False
    if any(c.isdigit() for c in word):
        return True
    if len(word) >= 2 and word.isupper():
        return True
    if len(word) >= 13:
        return True
    return any(a.islower() and b.isupper() for a, b in zip(word, word[1:]))


@dataclass
class TextProfile:
    """Everything the tools need to know about one text, computed once per text."""

    text: str
    token_count: int
    word_count: int
    character_count: int
    sentences: list[tuple[int, int]]  # (start, end) character spans of the sentences
    mentions: list[str]  # surface forms of entity mentions, in order of appearance
    technical_terms: int
    canonical_text: str  # " " + canonical text + " "
    canonical_sentences: list[str]  # " " + canonical sentence + " "
    folded_text: str  # NFKC-casefolded text, whitespace collapsed (CJK lookup)
    folded_sentences: list[str]
    _found: dict[str, bool] = field(default_factory=dict, repr=False)
    _sent: dict[str, frozenset[int]] = field(default_factory=dict, repr=False)
    _memo: dict[str, object] = field(default_factory=dict, repr=False)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, once per profile and key (derived data the tools reuse)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    @property
    def sentence_count(self) -> int:
        return len(self.sentences)

    @property
    def avg_sentence_length(self) -> float:
        """Words per sentence (0.0 without sentences)."""
        return self.word_count / self.sentence_count if self.sentences else 0.0

    def _index(self) -> dict[str, list[int]]:
        """Canonical token (and CJK character) → ids of the sentences containing it."""
        def build() -> dict[str, list[int]]:
            idx: dict[str, list[int]] = {}
            for i, sent in enumerate(self.canonical_sentences):
                keys = set(sent.split())
                keys.update(_CJK_RE.findall(self.folded_sentences[i]))
                for k in keys:
                    idx.setdefault(k, []).append(i)
            return idx

        return self.memo("_index", build)

    def _candidates(self, needle: str, raw: bool) -> list[int]:
        """Sentences that may contain ``needle``: those holding its rarest token (CJK: character)."""
        idx = self._index()
        keys = [c for c in needle if has_cjk(c)] if raw else needle.split()
        if not keys:
            return list(range(len(self.sentences)))
        return min((idx.get(k, []) for k in keys), key=len)

    def _needle(self, name: str) -> tuple[str, bool]:
        if has_cjk(name):
            return " ".join(unicodedata.normalize("NFKC", name).casefold().split()), True
        canon = canonical_text(name)
        return (f" {canon} " if canon else ""), False

    def contains(self, name: str) -> bool:
        """Whether ``name`` occurs in a sentence of the text (whole tokens; see the module docstring).

        Lookups go through an index of sentences by token, so many names on a long text stay cheap.
        """
        hit = self._found.get(name)
        if hit is None:
            hit = bool(self.sentences_with(name))
            self._found[name] = hit
        return hit

    def contains_fragment(self, name: str) -> bool:
        """Whether the canonical form of ``name`` occurs in the canonical text at all, even inside a word."""
        needle = canonical_text(name)
        return bool(needle) and needle in self.canonical_text

    def sentences_with(self, name: str) -> frozenset[int]:
        """Indices of the sentences in which ``name`` occurs (same matching as :meth:`contains`)."""
        got = self._sent.get(name)
        if got is None:
            needle, raw = self._needle(name)
            pool = self.folded_sentences if raw else self.canonical_sentences
            got = frozenset(i for i in self._candidates(needle, raw) if needle in pool[i]) if needle else frozenset()
            self._sent[name] = got
        return got


    def near(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` occur in one sentence or in two neighbouring ones.

        O(min(|A|, |B|)) set lookups over the sentence sets ``A``, ``B`` of the two names (a pairwise
        test is quadratic when both names fill many sentences).
        """
        sa, sb = self.sentences_with(a), self.sentences_with(b)
        small, large = (sa, sb) if len(sa) <= len(sb) else (sb, sa)
        return any(i in large or i - 1 in large or i + 1 in large for i in small)


#: Comparisons per tool call for the name-in-name searches (:class:`RunIndex`): about a second of
#: Python; a normal call needs a few per name.
MATCH_BUDGET = 2_000_000


class WorkBudget:
    """Comparisons one tool call may still spend on a search whose cost an input can make quadratic.

    Past the budget the search stops and reports nothing more: the call's result then covers the
    part it examined (only adversarial inputs get there; normal ones need far less).
    """

    def __init__(self, limit: int):
        self.left = limit

    def spend(self, n: int = 1) -> bool:
        """Take ``n`` comparisons; False once the budget is spent."""
        self.left -= n
        return self.left >= 0


class RunIndex:
    """Canonical keys (tokens joined by single spaces) indexed by token, to find the keys in which
    another key occurs as a run of whole tokens (``"b c"`` in ``"a b c d"``).

    :meth:`holding` compares only the keys that hold the query's rarest token (any key holding the
    run holds all its tokens, so no key is missed). Inputs can still make every key hold every
    token, so each comparison is paid from the caller's :class:`WorkBudget`.
    """

    def __init__(self, keys: Iterable[str]):
        self.keys = set(keys)
        self._by_token: dict[str, list[str]] = {}
        for k in self.keys:
            for tok in set(k.split(" ")):
                self._by_token.setdefault(tok, []).append(k)

    def holding(self, key: str, budget: WorkBudget) -> Iterator[str]:
        """The indexed keys containing ``key`` as a whole-token run (``key`` itself included), while ``budget`` lasts."""
        pool = min((self._by_token.get(t, []) for t in set(key.split(" "))), key=len)
        padded = f" {key} "
        for k in pool:
            if not budget.spend():
                return
            if padded in f" {k} ":
                yield k


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END_RE.finditer(text):
        end = m.end()
        mark = m.group(0)
        # looked up only after a Western terminator: after each blank line of a run of newlines it
        # would scan the rest of the run (quadratic in the run's length)
        follow = _NEXT_CHAR_RE.match(text, end) if mark[0] in ".!?\u2026" else None
        if follow:
            nxt = follow.group(1)
            if nxt.isalpha() and not nxt.isupper() and not has_cjk(nxt):
                continue  # "approx. the": a lower-case word follows
            if mark[0] == ".":
                word = run_before(text, m.start(), max(start, m.start() - 64), _WORD_RUN_RE)
                if word.casefold() in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                    continue  # "Dr. Smith", "J. Smith"
        spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    return [(a, b) for a, b in spans if _WORDCHAR_RE.search(text, a, b)]


def _mentions(text: str, words: list[re.Match[str]], first_words: set[int]) -> list[str]:
    out: list[str] = []
    run: list[re.Match[str]] = []

    def flush() -> None:
        # a leading function word is dropped only when it stands apart ("The Hague" -> "Hague",
        # but "AT&T" and "I.B.M." stay whole)
        i = 0
        while i < len(run) and run[i].group(0).casefold() in MENTION_STOPWORDS and (
            i == len(run) - 1 or text[run[i].end() : run[i + 1].start()] == " "
        ):
            i += 1
        if i < len(run):
            out.append(text[run[i].start() : run[-1].end()])
        run.clear()

    prev_end = -1
    for m in words:
        w = m.group(0)
        c = w[0]
        if c.isupper():
            gap = text[prev_end : m.start()] if prev_end >= 0 else None
            joined = gap is not None and (
                gap == " "
                or (0 < len(gap) <= 2 and all(ch in ".-&'\u2019" for ch in gap))
                or (gap == ". " and run and run[-1].group(0).casefold() in _TITLES)
            )
            if run and not (joined and m.start() not in first_words):
                flush()
            run.append(m)
            prev_end = m.end()
        elif c.isdigit() and len(w) == 4 and _YEAR_RE.match(w):
            if run:
                flush()
            out.append(w)
            prev_end = -1
        else:  # lower-case words, numbers, CJK characters (no case) end a run
            if run:
                flush()
            prev_end = -1
    if run:
        flush()
    return out


@functools.lru_cache(maxsize=8)
def analyze_text(text: str) -> TextProfile:
    """Profile ``text`` (cached: one agent turn calls several tools on the same text)."""
    tokens = [m for m in _TOKEN_RE.finditer(text)]
    words = [m for m in tokens if _is_word(m.group(0))]
    spans = _sentence_spans(text)
    starts = [m.start() for m in words]
    first_words: set[int] = set()
    for a, _ in spans:
        i = bisect.bisect_left(starts, a)
        if i < len(starts):
            first_words.add(starts[i])
    mentions = _mentions(text, words, first_words)
    tech = _count_technical([m.group(0) for m in words])
    folded = unicodedata.normalize("NFKC", text).casefold()
    canon = canonical_text(text)
    return TextProfile(
        text=text,
        token_count=len(tokens),
        word_count=len(words),
        character_count=len(text),
        sentences=spans,
        mentions=mentions,
        technical_terms=tech,
        canonical_text=f" {canon} " if canon else " ",
        canonical_sentences=[f" {canonical_text(text[a:b])} " for a, b in spans],
        folded_text=" ".join(folded.split()),
        folded_sentences=[" ".join(unicodedata.normalize("NFKC", text[a:b]).casefold().split()) for a, b in spans],
    )
