"""Lexical cues: which broad category a schema type belongs to, and what in a text hints at it.

Used by the coverage tool (is a missing type likely present in the text?) and the quality tool
(is ``"Acme Inc."`` typed ``Person`` a misclassification?). Deliberately small and transparent:
a type maps to a category when one of its words (``split_type_words``) is a category word, e.g.
``MedicalCondition`` → ``disease``, ``WORKS_AT`` → relation cues for ``work``.

Categories: ``person``, ``organization``, ``location``, ``date``, ``money``, ``percent``,
``disease``, ``drug``. A type with no category word gets only the generic cue: one of its words
(or its stem) appears in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgr.model.canonical import canonical_text
from kgr.tools._text import TextProfile, split_type_words

__all__ = ["category_of", "name_category", "TypeEvidence", "entity_type_evidence", "relation_type_evidence"]

CATEGORY_WORDS: dict[str, frozenset[str]] = {
    "person": frozenset("""person persons people human individual author scientist patient employee founder ceo
        actor player politician researcher doctor physician inventor writer artist character member""".split()),
    "organization": frozenset("""organization organisation org company companies corporation business institution
        university agency firm bank school team party enterprise employer manufacturer publisher
        startup ngo institute""".split()),
    "location": frozenset("""location place city country region state gpe address area town venue continent
        facility site loc headquarters""".split()),
    "date": frozenset("date time year period datetime day month era".split()),
    "money": frozenset("money amount price cost revenue currency salary funding".split()),
    "percent": frozenset("percent percentage".split()),
    "disease": frozenset("disease condition disorder illness symptom diagnosis syndrome".split()),
    "drug": frozenset("drug medication medicine treatment compound chemical".split()),
}

_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)"
_ORG_SUFFIX = r"(?:Inc|Corp|Corporation|Ltd|LLC|GmbH|plc|PLC|Co|Company|Group|University|Institute|Bank|Foundation|Agency|Association|AG|SA)"

#: Text patterns hinting that entities of a category are present. Each runs in linear time on any
#: text: texts may hold a million characters. Two shapes need care, each checked by a property
#: test against its plain form: an unbounded run that may start at any character of a longer run
#: (``\d+`` inside ``111…1``, ``[A-Z][\w&.-]*`` inside ``A.A.A…``) is anchored at the run's start
#: and never given back, so the run is scanned once, not once per character. When the cue itself
#: starts inside such a run, its start is the group ``at``.
TEXT_CUES: dict[str, list[re.Pattern[str]]] = {
    "person": [
        re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sir)\.?\s+[A-Z]\w+"),
        re.compile(r"\b(?:he|she|him|his|hers)\b", re.IGNORECASE),
        re.compile(r"\b(?:CEO|founder|president|professor|scientist|author|director|chairman)\b", re.IGNORECASE),
    ],
    "organization": [
        # = \b[A-Z][\w&.-]*\s+SUFFIX\b: the [\w&.-] run must reach its end (whitespace follows),
        # so the suffix is checked once per run and the cue starts at the run's first \b[A-Z]
        re.compile(rf"(?<![\w&.-])(?=[\w&.-]++\s+{_ORG_SUFFIX}\b)[\w&.-]*?(?P<at>\b[A-Z])[\w&.-]*+\s+{_ORG_SUFFIX}\b"),
        re.compile(r"\bUniversity of [A-Z]\w+"),
        re.compile(r"\b(?:company|corporation|firm|organi[sz]ation|agency|startup)\b", re.IGNORECASE),
    ],
    "location": [
        re.compile(r"\b(?:in|at|from|near|to)\s+(?:the\s+)?[A-Z][a-z]+"),
        re.compile(r"\b(?:city|country|capital|region|province|state of)\b", re.IGNORECASE),
    ],
    "date": [
        re.compile(r"\b(?:1\d{3}|20\d{2})\b"),
        re.compile(rf"\b{_MONTHS}\b"),
        re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    ],
    "money": [
        re.compile(r"[$\u20ac\u00a3\u00a5]\s?\d"),
        re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:dollars|euros|pounds|yen|USD|EUR|GBP|million|billion)\b", re.IGNORECASE),
    ],
    # = \d+(?:\.\d+)?\s?(?:%|…): a match inside a run of digits is also one from the run's start
    "percent": [re.compile(r"(?<!\d)\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b)", re.IGNORECASE)],
    "disease": [
        re.compile(r"\w(?:itis|osis|emia|oma|pathy)\b", re.IGNORECASE),
        re.compile(r"\b(?:disease|syndrome|disorder|cancer|infection|diabetes)\b", re.IGNORECASE),
    ],
    "drug": [
        re.compile(r"\w(?:mab|nib|vir|cillin|azole|pril|olol|statin|mycin)\b", re.IGNORECASE),
        re.compile(r"\b\d+\s?mg\b", re.IGNORECASE),
    ],
}

#: Extra phrases for relation types whose words are commonly paraphrased.
RELATION_SYNONYMS: dict[str, tuple[str, ...]] = {
    "work": ("employ", "join", "hired", "staff"),
    "employ": ("work", "join", "hired"),
    "born": ("birth", "native of"),
    "located": ("based in", "headquarter", "situated", "located"),
    "locat": ("based in", "headquarter", "situated"),
    "found": ("establish", "co-found", "created", "started"),
    "married": ("spouse", "wife", "husband", "wed"),
    "spouse": ("married", "wife", "husband"),
    "treat": ("therapy", "prescrib", "cure"),
    "cause": ("lead to", "leads to", "result in", "trigger"),
    "acquir": ("acquisition", "bought", "purchase", "takeover"),
    "ceo": ("chief executive",),
    "member": ("belongs to", "part of"),
    "author": ("wrote", "written", "writer"),
    "studi": ("studied", "graduat", "alumn", "student"),
    "live": ("resid", "lives in", "home in"),
}

_ORG_NAME_SUFFIX = frozenset("inc corp corporation ltd llc gmbh plc co company group university institute bank foundation agency association".split())
_PERSON_TITLES = frozenset("mr mrs ms dr prof sir".split())
_MONTH_WORDS = frozenset(canonical_text(m) for m in _MONTHS.strip("(?:)").split("|"))
_YEAR = re.compile(r"^(?:1\d{3}|20\d{2})$")
_ISO = re.compile(r"^\d{4} \d{1,2} \d{1,2}$")
_MONEY = re.compile(r"^[$\u20ac\u00a3\u00a5]\s?\d|\d\s?(?:dollars|euros|usd|eur|gbp)$", re.IGNORECASE)
_PERCENT = re.compile(r"\d\s?(?:%|percent)$", re.IGNORECASE)

_STOP = frozenset("a an the of in at on to by for with and or is has type rel relation entity".split())


def category_of(type_name: str) -> str | None:
    """The category of a schema type, from its words (``None`` when none applies).

    >>> category_of("Person"), category_of("MedicalCondition"), category_of("Widget")
    ('person', 'disease', None)
    """
    words = split_type_words(type_name)
    for w in words:
        for cat, vocab in CATEGORY_WORDS.items():
            if w in vocab or (w.endswith("s") and w[:-1] in vocab):
                return cat
    return None


def name_category(name: str) -> str | None:
    """The category a name's own form strongly signals (``"Acme Inc."`` → ``organization``), or ``None``.

    >>> name_category("Acme Inc."), name_category("1911"), name_category("Dr. Who"), name_category("Paris")
    ('organization', 'date', 'person', None)
    """
    canon = canonical_text(name)
    if not canon:
        return None
    toks = canon.split(" ")
    stripped = name.strip()
    if _MONEY.search(stripped):
        return "money"
    if _PERCENT.search(stripped):
        return "percent"
    if _YEAR.match(canon) or _ISO.match(canon) or (
        any(t in _MONTH_WORDS for t in toks) and any(t.isdigit() for t in toks)
    ):
        return "date"
    if len(toks) > 1 and (toks[-1] in _ORG_NAME_SUFFIX or toks[0] == "university"):
        return "organization"
    if len(toks) > 1 and toks[0] in _PERSON_TITLES:
        return "person"
    return None


@dataclass(frozen=True)
class TypeEvidence:
    """Why a type is likely present in the text: the cue kind and a short snippet."""

    type: str
    cue: str  # "category:<name>" or "word:<word>"
    snippet: str


def _snippet(text: str, start: int, end: int) -> str:
    lo = start
    while lo > 0 and start - lo < 40 and text[lo - 1].isalnum():  # back to the start of the word
        lo -= 1
    s = text[lo:end].strip()
    return s if len(s) <= 40 else s[:37] + "..."


def _stems(word: str) -> list[str]:
    stems = [word]
    if len(word) > 5:
        stems.append(word[: max(4, len(word) - 3)])
    elif len(word) >= 4 and word.endswith("s"):
        stems.append(word[:-1])
    return stems


def _word_evidence(type_name: str, words: list[str], profile: TextProfile) -> TypeEvidence | None:
    for w in words:
        if len(w) < 3 or w in _STOP:
            continue
        for stem in _stems(w):
            needle = f" {stem}"
            i = profile.canonical_text.find(needle)
            if i >= 0:
                m = re.search(rf"\b{re.escape(stem)}\w*", profile.text, re.IGNORECASE)
                snip = _snippet(profile.text, m.start(), m.end()) if m else stem
                return TypeEvidence(type_name, f"word:{w}", snip)
    return None


def entity_type_evidence(type_name: str, profile: TextProfile) -> TypeEvidence | None:
    """Evidence in the text that entities of ``type_name`` are present, or ``None``."""
    cat = category_of(type_name)
    if cat is not None:
        for pat in TEXT_CUES.get(cat, []):
            m = pat.search(profile.text)
            if m:
                start = m.start("at") if "at" in pat.groupindex else m.start()
                return TypeEvidence(type_name, f"category:{cat}", _snippet(profile.text, start, m.end()))
    return _word_evidence(type_name, split_type_words(type_name), profile)


def relation_type_evidence(type_name: str, profile: TextProfile) -> TypeEvidence | None:
    """Evidence in the text that relations of ``type_name`` are expressed, or ``None``."""
    words = [w for w in split_type_words(type_name) if len(w) >= 3 and w not in _STOP]
    ev = _word_evidence(type_name, words, profile)
    if ev is not None:
        return ev
    for w in words:
        for key, phrases in RELATION_SYNONYMS.items():
            if w.startswith(key):
                for ph in phrases:
                    m = re.search(rf"\b{re.escape(ph)}", profile.text, re.IGNORECASE)
                    if m:
                        return TypeEvidence(type_name, f"word:{w}", _snippet(profile.text, m.start(), m.end() + 20))
    return None
