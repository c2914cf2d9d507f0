"""Entity canonicalisation: how surface forms map to one entity key.

Rules, applied in order to a surface form ``name``:

1. Unicode NFKC normalisation (full-width letters, ligatures and compatibility forms fold).
2. ``casefold()`` (``"Straße"`` and ``"STRASSE"`` agree).
3. Dots and apostrophes are deleted (``"I.B.M."`` → ``"ibm"``, ``"O'Neil"`` → ``"oneil"``), except
   a dot between two digits, which is kept (``"Python 3.1"`` → ``"python 3.1"``, not ``"python 31"``).
4. A run of ``+`` or ``#`` that ends a word (right after a letter or digit, before anything that is
   not one) is kept: it is part of the name (``"C++"``, ``"C#"``, ``"GPL-2+"`` → ``"c++"``, ``"c#"``,
   ``"gpl 2+"``; without it the three languages would be one entity ``"c"``).
5. Every other character that is not a letter, digit or combining mark (punctuation, symbols,
   separators, controls, ``_``) becomes a space (``"New-York"`` → ``"new york"``).
6. Runs of such spaces collapse to one; leading and trailing space is stripped.

The entity key is ``"<Type>:<canonical>"``: the same name under two types is two entities.
Original surface forms are kept on the entity as ``aliases``; an alias map in the KG schema can send
a different name (``"International Business Machines"``) to a canonical one (``"IBM"``).

One function per meaning, all on the rules above:

* :func:`canonical_name` — the canonical form of an entity name; refuses names that are too long
  or have no letter or digit (what staging and the stores key entities by);
* :func:`canonical_text` — the same rules on any text, of any length, ``""`` when nothing is left
  (the tools' name lookup in whole texts);
* :func:`entity_key` — ``"<Type>:<canonical name>"``; :func:`normalise_entity_key` — the same for a
  key a user typed (``"Person:Ada  LOVELACE"``);
* :func:`name_key` — when two names in an extraction are the same name (the canonical form, or the
  casefolded name itself when nothing canonical is left);
* :func:`variant_key` — when two names are naming variants of one entity (no leading "the", no
  legal-form suffix);
* :func:`distinguishing_marks` — what tells numbered or generational namesakes apart (``UNIVAC I`` /
  ``UNIVAC II``, ``Alan Turing`` / ``Alan Turing Jr``): names whose marks differ are never one
  entity by similarity.

>>> canonical_name("  I.B.M. ")
'ibm'
>>> canonical_name("New-York   City")
'new york city'
>>> canonical_name("C++"), canonical_name("C#"), canonical_name("GPL-2.0+"), canonical_name("Apache-2.0")
('c++', 'c#', 'gpl 2.0+', 'apache 2.0')
>>> entity_key("Organization", "I.B.M.")
'Organization:ibm'
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from difflib import SequenceMatcher

from collections.abc import Iterable

from kgr.errors import KgrIdentifierError, KgrValidationError

__all__ = ["canonical_name", "canonical_text", "entity_key", "normalise_entity_key", "name_key", "variant_key",
           "edge_key", "name_similarity", "distinguishing_marks", "validate_identifier", "IDENTIFIER_RE", "MAX_NAME_CHARS", "MAX_CANONICAL_BYTES",
           "RESERVED_LABELS", "RESERVED_RELATION_TYPES", "reserved_name", "no_control_characters", "NO_CONTROL_CHARACTERS", "OWN_NON_ENTITY_RELATION_TYPES"]

#: Labels, relationship types and property keys must match this (``fullmatch``: Python's ``$`` also
#: matches before a trailing newline) before a template renders them.
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Labels kgr gives its own nodes. A user entity type becomes a label of its entities
#: (``(:Entity:<Type>)``), so these names are refused as entity types: an entity labelled
#: ``Snapshot`` would be listed as a snapshot, counted as a document, and so on.
RESERVED_LABELS: frozenset[str] = frozenset({
    "Entity", "Document", "Chunk", "Vote", "Decision", "Version", "Snapshot", "KgrState", "SchemaProposal",
    "ReviewLabel", "VerifierAnswer", "PolicyState", "IssuedSlice", "Outcome", "KgrSchema",
    "MatchCandidate", "MatchLabel", "AuditDraw",
})
#: Relationship types between entities that kgr writes itself; refused as relation types (a
#: relation named ``PENDING_REL`` would be promoted into a staged edge's own type). kgr's other
#: relationship types (``PART_OF``, ``MENTIONS``, ``FROM``, ``PROPOSES``) never join two entities
#: and every statement that reads them names their endpoint labels, so a user relation of the same
#: name (``PART_OF`` is a natural one) cannot be mistaken for them; they stay allowed.
RESERVED_RELATION_TYPES: frozenset[str] = frozenset({"PENDING_REL"})
#: kgr's relationship types that never join two entities (allowed as user relation types, see above).
OWN_NON_ENTITY_RELATION_TYPES: frozenset[str] = frozenset({"MENTIONS", "PART_OF", "FROM", "PROPOSES"})


#: A regular expression (JSON Schema ``pattern``) for text without control characters.
NO_CONTROL_CHARACTERS = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def no_control_characters(value: str) -> str:
    """``value`` unchanged, unless it holds a control character (NUL, escape, ...; tab and newlines
    are allowed): names and sources are text, and a NUL would reach the store and every export.

    >>> no_control_characters("Ada Lovelace")
    'Ada Lovelace'
    """
    found = _CONTROL.search(value)
    if found is not None:
        raise ValueError(f"contains the control character U+{ord(found.group()):04X} (names and sources are text)")
    return value


def reserved_name(name: str, *, relation: bool) -> str | None:
    """Why ``name`` may not be a user entity type (``relation=False``) or relation type, or None.

    The rule, one for everything kgr writes: kgr's own labels and relationship types, exactly as
    spelled (Neo4j names are case-sensitive), and any name beginning with ``Kgr``/``KGR_`` (kept
    for kgr's future own names).

    >>> reserved_name("Snapshot", relation=False), reserved_name("Snapshots", relation=False)
    ("'Snapshot' is one of kgr's own labels", None)
    >>> reserved_name("PENDING_REL", relation=True)
    "'PENDING_REL' is one of kgr's own relationship types"
    """
    own = RESERVED_RELATION_TYPES if relation else RESERVED_LABELS
    if name in own:
        return f"{name!r} is one of kgr's own {'relationship types' if relation else 'labels'}"
    if name.startswith(("Kgr", "KGR_")):
        return f"{name!r} begins with Kgr/KGR_, a prefix kgr keeps for its own names"
    return None
#: Longest entity name accepted (characters). Longer names are rejected with a clear error.
MAX_NAME_CHARS = 1024
#: Longest canonical form accepted (bytes of UTF-8). The entity key (``<Type>:<canonical>``, the type
#: at most 64 characters) is indexed, and Neo4j's range index refuses a key past 8,164 bytes (measured
#: on 5.26: "Property value is too large to index"); NFKC can expand a character eighteen-fold
#: (U+FDFA), so 1,024 characters may canonicalise to 33,799 bytes. 4,096 = 1,024 characters of the
#: longest UTF-8 (four bytes), so no name that NFKC leaves as long is refused, with half the
#: index's limit to spare.
MAX_CANONICAL_BYTES = 4096

_DELETE = frozenset(".'\u2018\u2019")  # rule 3
_LEGAL_SUFFIXES = frozenset("inc corp corporation ltd llc plc co gmbh ag sa limited company".split())


class _FoldTable(dict):
    """``str.translate`` table for rules 3 and 5 (delete, or a space unless a letter, mark or
    digit; rules 3 and 4's stand-ins pass), filled lazily one character at a time."""

    def __missing__(self, code: int) -> str | None:
        ch = chr(code)
        out: str | None
        if ch in _DELETE:
            out = None
        elif ch in _STAND_INS:  # rules 3 and 4's kept characters, restored after the table
            out = ch
        elif unicodedata.category(ch)[0] in "PSZC":  # punctuation, symbols, separators, controls
            out = " "
        else:  # letters (L), combining marks (M), digits and numbers (N)
            out = ch
        self[code] = out
        return out


_TABLE = _FoldTable()


#: What rules 3 and 4 keep (found by the character after; the one before is checked in Python, a
#: look-behind would make the engine try every position), and the private-use stand-ins that
#: carry them through rule 5's table.
_DOT_BEFORE_DIGIT = re.compile(r"\.(?=\d)")
_SUFFIX_RUN = re.compile(r"[+#]+(?![^\W_])")
_KEEP = str.maketrans({".": "\ue000", "+": "\ue001", "#": "\ue002"})
_STAND_INS = ("\ue000", "\ue001", "\ue002")


def _kept(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with each match of ``pattern`` that follows a letter or digit (rule 3: a digit)
    replaced by its stand-ins."""
    digit = pattern is _DOT_BEFORE_DIGIT

    def keep(m: re.Match[str]) -> str:
        before = text[m.start() - 1] if m.start() else ""
        ok = before.isdigit() if digit else (before.isalnum() and before != "_")
        return m.group(0).translate(_KEEP) if ok else m.group(0)
    return pattern.sub(keep, text)


def _fold(text: str) -> str:
    """The six rules of the module docstring, on any text."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    for ch in _STAND_INS:  # a stand-in in the input itself is a symbol (rule 5)
        if ch in folded:
            folded = folded.replace(ch, " ")
    kept = False
    if "." in folded:  # rule 3's exception
        folded = _kept(folded, _DOT_BEFORE_DIGIT)
        kept = True
    if "+" in folded or "#" in folded:  # rule 4
        folded = _kept(folded, _SUFFIX_RUN)
        kept = True
    out = " ".join(folded.translate(_TABLE).split())
    if kept:
        for ch, back in zip(_STAND_INS, ".+#"):
            if ch in out:
                out = out.replace(ch, back)
    return out


_fold_short = functools.lru_cache(maxsize=1 << 16)(_fold)


def canonical_text(text: str) -> str:
    """The canonical form of any text: the rules of :func:`canonical_name`, without its checks.

    Unlike :func:`canonical_name` it takes text of any length and returns ``""`` when no letter,
    mark or digit is left instead of raising, so it can canonicalise whole texts (the tools look
    names up in the canonical text) and names nobody has validated.

    >>> canonical_text("  I.B.M. "), canonical_text("!!!")
    ('ibm', '')
    """
    return _fold_short(text) if len(text) <= 256 else _fold(text)


@functools.lru_cache(maxsize=1 << 16)
def canonical_name(name: str) -> str:
    """Return the canonical form of an entity surface form (rules in the module docstring).

    Raises
    ------
    KgrValidationError
        If the name has no letter or digit, is longer than :data:`MAX_NAME_CHARS` characters, or
        its canonical form is longer than :data:`MAX_CANONICAL_BYTES` bytes of UTF-8.
    """
    if len(name) > MAX_NAME_CHARS:
        raise KgrValidationError(f"entity name longer than {MAX_NAME_CHARS} characters", field="name")
    canon = _fold(name)
    if not any(c.isalnum() for c in canon):
        raise KgrValidationError(f"entity name {name[:40]!r} has no letters or digits", field="name")
    size = len(canon.encode("utf-8", "surrogatepass"))
    if size > MAX_CANONICAL_BYTES:
        raise KgrValidationError(f"entity name {name[:20]!r}... canonicalises (NFKC) to {size} bytes of UTF-8, more than "
                                 f"{MAX_CANONICAL_BYTES} (the entity key must fit Neo4j's index)", field="name")
    return canon


def entity_key(entity_type: str, name: str) -> str:
    """Key of the entity ``name`` of type ``entity_type``: ``"<Type>:<canonical name>"``."""
    return f"{entity_type}:{canonical_name(name)}"


#: The suffix of a split entity's key (``Person:jacob green#3fa2c01b``, :mod:`kgr.resolution.operations`).
_SPLIT_SUFFIX = re.compile(r"#[0-9a-fA-F]{8}$")


def normalise_entity_key(key: str) -> str:
    """The entity key a ``"Type:name"`` string stands for (its name canonicalised as staging does;
    a split entity's ``#<8 hex>`` suffix kept).

    >>> normalise_entity_key("Person:Ada  LOVELACE"), normalise_entity_key("Person:Jacob Green#3fa2c01b")
    ('Person:ada lovelace', 'Person:jacob green#3fa2c01b')

    Raises
    ------
    KgrValidationError
        ``key`` is not ``TYPE:NAME``, or the name is not a valid entity name.
    """
    etype, sep, name = key.partition(":")
    if not sep or not etype or not name:
        raise KgrValidationError(f"entity key {key[:80]!r} is not TYPE:NAME", field="key")
    split = _SPLIT_SUFFIX.search(name)  # an entity split off another (kgr.resolution): keep its suffix
    if split is not None and split.start() > 0:
        return entity_key(etype, name[:split.start()]) + split.group(0).lower()
    return entity_key(etype, name)


def name_key(name: str) -> str:
    """The key by which two names in an extraction are the same name: the canonical form, or the
    casefolded, stripped name itself when nothing canonical is left (no letter, mark or digit: so
    ``"!!!"`` and ``"??"`` stay two names instead of both becoming ``""``). Never raises.

    >>> name_key("I.B.M."), name_key(" !!! ")
    ('ibm', '!!!')
    """
    return canonical_text(name) or name.casefold().strip()


def variant_key(name: str) -> str:
    """The key by which two names are naming variants of one entity: :func:`name_key` without a
    leading ``the`` and without a trailing legal-form suffix (``Inc``, ``Corp``, ``GmbH``...), as
    long as a word is left.

    >>> variant_key("The Microsoft Corp."), variant_key("Microsoft"), variant_key("Co")
    ('microsoft', 'microsoft', 'co')
    """
    toks = name_key(name).split(" ")
    if len(toks) > 1 and toks[0] == "the":
        toks = toks[1:]
    if len(toks) > 1 and toks[-1] in _LEGAL_SUFFIXES:
        toks = toks[:-1]
    return " ".join(toks)


def edge_key(subject_key: str, relation: str, object_key: str) -> str:
    """Key of the directed assertion ``(subject) -[relation]-> (object)``.

    A 24-hex-digit SHA-256 prefix of the three parts joined by the unit separator, so keys stay short
    whatever the names' lengths. The prefix has 96 bits: collisions need ~2^48 edges.

    >>> edge_key("Person:ada", "WORKS_AT", "Organization:ibm")
    '5d82a574fddba9b663dc6e6e'
    """
    digest = hashlib.sha256(f"{subject_key}\x1f{relation}\x1f{object_key}".encode()).hexdigest()
    return digest[:24]


_DIGIT_RUN = re.compile(r"\d+")
_ROMAN = re.compile(r"m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"m": 1000, "d": 500, "c": 100, "l": 50, "x": 10, "v": 5, "i": 1}
_GENERATIONS = {"jr": "jr", "jnr": "jr", "junior": "jr", "sr": "sr", "snr": "sr", "senior": "sr"}


def _roman(token: str) -> int:
    """The value of a valid roman numeral (lowercase)."""
    vals = [_ROMAN_VALUES[c] for c in token]
    return sum(-v if i + 1 < len(vals) and v < vals[i + 1] else v for i, v in enumerate(vals))


@functools.lru_cache(maxsize=1 << 16)
def distinguishing_marks(name: str) -> tuple[str, ...]:
    """What tells numbered and generational namesakes apart, in order: every digit run (as its
    number), every roman numeral after the first word (as its number; a one-letter one only as the
    last word, or before a generational suffix, since ``John C. Reilly``'s ``C`` is an initial) and
    every generational suffix (``Jr``/``Junior``, ``Sr``/``Senior``) and every ``+``/``#`` suffix a
    word keeps (rule 4: ``C++``, ``C#``, ``GPL-2+``), on the canonical form.

    Two names whose marks differ are different entities however similar they read: numbered items
    (``Paper 12`` / ``Paper 13``), models and versions (``UNIVAC I`` / ``UNIVAC II``, ``Mark II`` /
    ``Mark 2`` agree), regnal numbers (``Louis XIV`` / ``Louis XV``), a father and his son
    (``Alan Turing`` / ``Alan Turing Jr``), a language and its successor (``C`` / ``C++``). Fuzzy
    matching (disambiguation, the near-duplicate constraint) never joins them; an exact match or an
    alias still does.

    >>> distinguishing_marks("UNIVAC II"), distinguishing_marks("Harvard Mark 2"), distinguishing_marks("Alan Turing Jr.")
    (('2',), ('2',), ('jr',))
    >>> distinguishing_marks("John C. Reilly"), distinguishing_marks("Xi Jinping"), distinguishing_marks("Louis XIV")
    ((), (), ('14',))
    """
    toks = canonical_text(name).split(" ")
    marks: list[str] = []
    for i, t in enumerate(toks):
        if not t:
            continue
        if t in _GENERATIONS and i > 0:
            marks.append(_GENERATIONS[t])
        elif i > 0 and t.isascii() and _ROMAN.fullmatch(t) and (
                len(t) > 1 or i == len(toks) - 1 or toks[i + 1] in _GENERATIONS):
            marks.append(str(_roman(t)))
        else:
            marks.extend(str(int(run)) for run in _DIGIT_RUN.findall(t))
        suffix = len(t) - len(t.rstrip("+#"))
        if suffix and suffix < len(t):  # C / C++ / C#, GPL-2 / GPL-2+
            marks.append(t[-suffix:])
    return tuple(marks)


def name_similarity(a: str, b: str) -> float:
    """Similarity in [0, 1] of two *canonical* names: the best difflib ratio of the forms and of
    their sorted tokens, ``2·M / (|a| + |b|)`` with ``M`` the matched characters.

    Callers canonicalise first (:func:`canonical_name`); this only compares. Word order does not
    matter (``"lovelace ada"`` ≡ ``"ada lovelace"``); a transposed or dropped letter costs about
    one character in twenty for a 20-character name.

    >>> round(name_similarity("rowen mogorpel", "rowen mogropel"), 4)
    0.9286
    >>> name_similarity("lovelace ada", "ada lovelace"), name_similarity("", "x")
    (1.0, 0.0)
    """
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    best = SequenceMatcher(None, a, b).ratio()
    ta, tb = " ".join(sorted(a.split(" "))), " ".join(sorted(b.split(" ")))
    if (ta, tb) != (a, b):
        best = max(best, SequenceMatcher(None, ta, tb).ratio())
    return best


def validate_identifier(name: object, *, kind: str = "identifier", allowed: Iterable[str] | None = None) -> str:
    """Return ``name`` if it is a safe Cypher identifier (and in ``allowed``, when given).

    Raises
    ------
    KgrIdentifierError
        Naming the kind (``label``, ``relationship type``...) and the offending value.
    """
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise KgrIdentifierError(f"{kind} {str(name)[:80]!r} is not an identifier [A-Za-z_][A-Za-z0-9_]*", field=kind)
    if allowed is not None and name not in set(allowed):
        raise KgrIdentifierError(f"{kind} {name!r} is not in the KG schema", field=kind)
    return name
