"""Names no gazetteer knows, and the one type each gets (rules extractor, guided second pass).

A **guess** is a run of name-like tokens in a sentence (after :func:`kgr.extract.cues.mask_markup`):

- *shaped* tokens are names wherever they stand: an inner capital ("PyYAML", "SciPy"), letters
  mixed with digits ("libde265", "H.264", "urllib3"), an inner hyphen, dot, slash or plus between
  letters ("scikit-learn", "libdrm-dev", "HTTP/2"), or text that was in backticks;
- *capitalised* tokens ("Werkzeug", "Cory") are names except at the start of a sentence, a list
  item or a labelled changelog line, where they must not be common English words
  (:func:`kgr.extract.lexicon.is_common_word`: "Drop", "Removed", "Currently" are not names),
  unless they open a person-shaped name ("Grace Hopper") and are not function words or changelog verbs;
- *plain lowercase* words ("hyperframe", "valgrind") are names only with the ``nlp`` extra's word
  list, only where a name is expected (the first word of a clause, or right after a trigger), and
  only when they are not common words;
- never: acronyms of three letters or fewer and their plurals ("API", "CLI", "CA", "IDs" are generic
  terms far more often than names), numbers and words with a version glued on ("Perl5.005"), runs of common words alone, and a name cut short by an
  apostrophe ("Theodore Ts’o": the guess would be "Theodore Ts"), and a name that modifies a noun
  of design lineage ("the LZ77 family", "the Raft algorithm").

Consecutive capitalised or shaped tokens (and initials such as "A.") form one name ("Amazon Web
Services", "Sybren A. Stüvel"); an acronym right before such a name opens it ("KDE Frameworks", not
"Frameworks").

**Types** (:func:`guess_type`): one name gets one type across a corpus because the type is a
function of the name's shape and the schema, never of the slot alone. A *person-shaped* name (two
to four capitalised words or initials, the last no common word: "Grace Hopper" but not "Amazon
Web Services") takes the schema's person type (an
entity type named or described as a person, people, author or human); an *organization-shaped* one
(a word such as Foundation, Inc, Team, Project, Institute, Labs, Services among its words, or
followed by "organization", "team", "project" or "community") the organization type; a name of
capitalised words followed by an e-mail address in angle brackets the person type too (an author
line: "Mark Leisher <mleisher@…> added"); any other name the first type of the slot, in schema
order, that is neither and is *open*: a type whose schema lists no names. A type with a gazetteer
(languages, licences, standards …) is a closed class: a name it does not list is no evidence for
it, and guessing it is how "Linux" became a Language. The guess fills the slot only when its type is allowed there; otherwise it is dropped
(precision first).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from kgr.extract.lexicon import BUILTIN_COMMON, has_lexicon, is_common_word, is_known_word
from kgr.model.schema import KGSchema

__all__ = ["Guess", "find_guesses", "guess_type", "Roles", "schema_roles"]

#: A token; an apostrophe after one letter before a capital is inside it ("O'Reilly", "d'Alembert").
_TOKEN = re.compile(r"(?:[A-Za-z]['’](?=[A-Z]))?[A-Za-z0-9\u00c0-\u024f][\w\u00c0-\u024f.+/#-]*[\w\u00c0-\u024f+#]|"
                    r"[A-Za-z\u00c0-\u024f]\.?")
_SHAPED = re.compile(r"[a-z0-9][A-Z]|[A-Za-z].*\d|\d.*[A-Za-z]|[A-Za-z][-_./+][A-Za-z0-9]")
_ABBREVIATION = re.compile(r"(?:[a-z]\.)+[a-z]?\.?", re.IGNORECASE)  # "i.e", "e.g.", "a.k.a"
_COMPOUND_WORD = re.compile(r"[a-z]+(?:-[a-z]+)+")  # "work-in-progress", "look-and-feel"
_PREFIXED = re.compile(r"(?:auto|multi|non|pre|re|co|self|cross|sub|inter|semi|anti|de|un|post|over|under)-[a-z]")
_MODIFIER_SUFFIX = re.compile(r"-(?:based|compatible|like|style|aware|only|specific|friendly|agnostic|level|wide|free|"
                              r"safe|enabled|related|oriented|powered|driven|ready|side|compliant|conformant|"
                              r"accelerated|grained|licen[cs]ed|derived|independent|dependent|capable|native)$",
                              re.IGNORECASE)
_INITIAL = re.compile(r"[A-Z]\.")
_ACRONYMS = re.compile(r"[A-Z]{1,3}(?:/[A-Z]{1,3})+")  # "API/ABI", "TLS/SSL": generic terms, as single acronyms
#: Words joined by slashes ("and/or", "Read/write", "input/output"): an alternation of words, not a name.
_WORD_ALTERNATION = re.compile(r"[A-Za-z][a-z]*(?:/[a-z]+)+")
#: A path ("debugfs/xattrs.c", "lib/support/plausible.c"): two slashes, or a file name after one.
_PATH = re.compile(r"[\w.+-]*/[\w.+-]*/[\w./+-]*|[\w.+-]*/[\w+-]+\.[a-z]{1,4}")
#: A version or a quantity, not a name: "v6b", "v2.1", "2.x", "128bit", "3rd".
_VERSION = re.compile(r"v\d[\w.]*|\d+(?:\.\w+)+|\d+[a-z]{1,4}", re.IGNORECASE)
#: A word with a dotted version glued on ("Perl5.005", "Python3.8"): a version of the word's thing, not
#: a name of its own (the known name inside it is no mention either: :func:`kgr.extract.mentions.continues`).
_FUSED_VERSION = re.compile(r"[A-Z][a-z]{2,}\d+(?:\.\d+)+")
#: The last word of a legal document's name ("Runtime Library Exception", "Contributor License Agreement"),
#: or a name followed by "licensed" ("an Apache2 licensed library"): a licence term, not software.
_LEGAL_WORDS = frozenset("license licence exception agreement notice terms policy clause".split())
_LICENSED_AFTER = re.compile(r"\s*-?\s*(?:licen[cs]ed\b|(?:version\s+[\d.]+\s+)?licen[cs]e\b)", re.IGNORECASE)
#: An indefinite article (and at most one lowercase word) before a capitalised word: the word names a
#: kind of thing there ("a simple BaseHTTPServer that supports WSGI"), not one thing.
_INDEFINITE_BEFORE = re.compile(r"(?:^|\s)(?:a|an|A|An)\s+(?:[a-z][\w-]*\s+)?$")
#: After a capitalised word opening a sentence: a verb or a clause's end ("Werkzeug is", "Flask depends",
#: "Valgrind, a …"), which lets an English-looking word ("Key exchange", "Recursive downloading") be a name.
_VERB_NEXT = re.compile(r"\s*(?:[,;:.)]|$)|\s+(?:(?:also|now|still|only|then|[a-z]+ly)\s+)?(?:is|are|was|were|has|have|had|can|could|"
                        r"will|would|does|do|did|must|may|should|[a-z]+s)\b")
#: A file's name ("opengl.pc", "glu.h", "setup.py"): a file, not the software.
_FILE_NAME = re.compile(r"[a-z0-9_+-]+\.(?:pc|h|hh|hpp|c|cc|cpp|py|so|a|o|txt|md|rst|json|ya?ml|xml|gir|conf|cfg|ini|"
                        r"sh|pl|pm|in|am|ac|mk|lock|toml|diff|patch|log|gz|tar|deb|service)")
#: A sentence-initial adverb: "Manually enable", "Specifically, it" (not "Plotly is", "Plotly supports").
_ADVERB_NEXT = re.compile(r"\s*,|\s+(?!(?:is|are|was|has|can|will)\b)[a-z]+(?<!s)\b")
#: Code, not a name: an attribute of a class or object (``Field.default``, ``BaseModel.model_dump``,
#: ``oauthlib.common.generate_signed_token``): a dotted identifier whose first part is capitalised and a
#: later part starts lowercase, or with a snake_case part; a name's own suffix (Node.js, socket.io,
#: ASN.1) is no attribute.
_CODE_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_NAME_SUFFIX = frozenset("js ts io net org com py rs jl ai dev app sh so NET".split())
#: An environment variable or constant: capitals and digits joined by underscores (``GIT_WORK_TREE``,
#: ``DOTENV_PATH``); one after ``$`` or ``%`` is caught by the character before it.
_ENV_VAR = re.compile(r"_*[A-Z][A-Z0-9]*(?:_+[A-Z0-9]+)+_*")
#: A plain lowercase word with an English adjective's or participle's ending ("replayable", "serializable",
#: "asynchronous", "pluggable"): a property, not a name.
_ADJECTIVE = re.compile(r"[a-z]{3,}(?:able|ible|ous|ful|less|ive|ical|ized|ised|izing|ising)")
_PERSON_WORD = re.compile(r"[A-Z][a-z\u00c0-\u024f'’-]+")
ORG_WORDS = frozenset("""foundation inc inc. ltd ltd. llc gmbh corporation corp corp. company team project consortium
labs laboratory laboratories organization organisation community group university institute services systems
technologies association society agency""".split())
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,4}s")
#: After a name: an apostrophe and a letter that is no possessive "s" ("Theodore Ts’o"): the name goes on.
_APOSTROPHE_NEXT = re.compile(r"['’](?![sS]\b)[A-Za-z]")
#: After a name: an e-mail address in angle brackets ("Mark Leisher <mleisher@…>"): an author, a person.
_EMAIL_AFTER = re.compile(r"\s*<[^<>\s@]+@[^<>\s]+>")
#: After a name: a noun of design lineage it modifies ("the LZ77 family", "the Raft algorithm"): the thing is
#: an idea, not a program ("based on the LZ77 family" is no dependency).
_IDEA_AFTER = re.compile(r"\s+(?:family|algorithms?|model|design|idea|concept|approach|architecture|principles?|"
                         r"method|technique|paper|scheme|theory)\b")
#: An institution's name goes on with "for" / "of" and capitalised words: "EPFL Laboratory for Data
#: Security", "Massachusetts Institute of Technology" (not "… Laboratory for the project").
_INSTITUTION = frozenset("laboratory laboratories lab institute university center centre school department academy "
                         "council society association agency office ministry".split())
_OF_NAME = re.compile(r"\s+(?:for|of)\s+(?:the\s+)?[A-Z][\w-]*(?:\s+(?:and\s+|&\s+)?[A-Z][\w-]*)*")
_ORG_AFTER = re.compile(r"\s+(?:organization|organisation|team|project|community|foundation|developers)\b")
# "classpath scanning": a lowercase word modifying the next one, unless that is a kind of software
_NOUN_NEXT = re.compile(r" +(?!(?:module|package|library|crate|plugin|extension|tool|command|binary|daemon|program|"
                        r"utility|framework)s?\b)[a-z]")
_PERSON_TYPE = re.compile(r"\b(?:person|people|human|author|individual)s?\b", re.IGNORECASE)
_ORG_TYPE = re.compile(r"\b(?:organi[sz]ation|company|companies|institution)s?\b", re.IGNORECASE)


@dataclass(frozen=True)
class Roles:
    """The schema's person and organization types (None when it has none), and its *closed* types:
    those whose schema lists names (a gazetteer), which no guess of other shape may fill."""

    person: str | None
    organization: str | None
    closed: frozenset[str] = frozenset()


def schema_roles(schema: KGSchema) -> Roles:
    """Which entity types play the person and organization roles (by name, else by description)."""

    def find(rx: re.Pattern[str]) -> str | None:
        by_name = [t for t in schema.entity_types if rx.search(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", t))]
        if by_name:
            return by_name[0]
        return next((t for t, s in schema.entity_types.items() if rx.search(s.description)), None)

    closed = frozenset(t for t, spec in schema.entity_types.items() if spec.names)
    return Roles(person=find(_PERSON_TYPE), organization=find(_ORG_TYPE), closed=closed)


@dataclass(frozen=True)
class Guess:
    start: int
    end: int
    name: str
    shape: str  # "person", "organization" or "other"


def _code_identifier(tok: str) -> bool:
    """Whether ``tok`` is a dotted code identifier or an environment variable (see ``_CODE_DOTTED``, ``_ENV_VAR``)."""
    if _ENV_VAR.fullmatch(tok):
        return True
    if not _CODE_DOTTED.fullmatch(tok):
        return False
    parts = tok.split(".")
    if parts[-1] in _NAME_SUFFIX:
        return False
    return any("_" in p.strip("_") for p in parts) or (parts[0][:1].isupper() and any(p[:1].islower() for p in parts[1:]))


def _kind(tok: str, code: bool) -> str:
    if _MODIFIER_SUFFIX.search(tok) or _ABBREVIATION.fullmatch(tok) or _FILE_NAME.fullmatch(tok):
        return "modifier"
    if _code_identifier(tok):
        return "modifier"
    if _WORD_ALTERNATION.fullmatch(tok) or _PATH.fullmatch(tok):
        return "modifier"
    if _VERSION.fullmatch(tok) or tok.isdigit() or _FUSED_VERSION.fullmatch(tok):
        return "number"  # in backticks too: "Require node `20`" names a version, not a thing
    if tok.isalpha() and tok.isupper() and len(tok) > 3 and (not has_lexicon() or is_common_word(tok)):
        return "lower"  # "LOCK", "DELETE", "ENGINE": a shouted word, unless the word list knows it is no word
    if _ACRONYMS.fullmatch(tok):
        return "acronym"
    if _COMPOUND_WORD.fullmatch(tok) and (_PREFIXED.match(tok) or not has_lexicon()
                                          or all(map(is_common_word, tok.split("-")))):
        return "lower"  # an English compound, unless the word list knows a part is no common word
    if code or _SHAPED.search(tok):
        return "shaped"
    if _INITIAL.fullmatch(tok):
        return "initial"
    if tok[:1].isupper():
        if tok.isupper() and len(tok) <= 3 or _PLURAL_ACRONYM.fullmatch(tok):
            return "acronym"  # "API", "CA"; "IDs", "URLs", "CPUs": generic terms
        return "cap"
    if tok[:1].isdigit():
        return "number"
    return "lower"


@functools.lru_cache(maxsize=1 << 16)
def _kind_memo(tok: str, code: bool, lexicon: bool) -> str:
    """:func:`_kind`, remembered: a token's kind depends only on the token, whether it was code and the
    word list in use (``lexicon``, :func:`~kgr.extract.lexicon.has_lexicon`; a key only). Words recur
    across sentences, and the guided rounds of a chunk read its sentences again."""
    return _kind(tok, code)


def _shape(words: list[str], org_after: bool, licensed_after: bool = False) -> str:
    folded = [w.casefold() for w in words]
    if licensed_after or folded[-1] in _LEGAL_WORDS:
        return "legal"
    if org_after or any(w in ORG_WORDS for w in folded):
        return "organization"
    if 2 <= len(words) <= 4 and all(_PERSON_WORD.fullmatch(w) or _INITIAL.fullmatch(w) for w in words) \
            and _PERSON_WORD.fullmatch(words[0]) and not is_common_word(words[-1]):
        return "person"
    return "other"


def find_guesses(text: str, masked: str, code_spans: list[tuple[int, int]], starts: set[int],
                 expect: set[int]) -> list[Guess]:
    """Guessed names in ``masked`` (the sentence with markup blanked; offsets as in ``text``).

    ``code_spans``: spans that were in backticks; ``starts``: offsets where a clause starts (a
    common word there is no name); ``expect``: offsets where a name is expected (clause starts, the
    first word after a trigger), which admits plain lowercase words there.
    """
    toks = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(masked)]
    first = toks[0][0] if toks else 0
    out: list[Guess] = []
    run: list[tuple[int, int, str]] = []
    acronym: tuple[int, int, str] | None = None  # the token before, when it was an acronym outside a run
    skip = [0]  # tokens before this offset belong to a name already taken

    def flush() -> None:
        while run and _drop_head(run[0], first, starts) and not _person_run(run):
            run.pop(0)
        if run and run[0][0] == first and _english_opening(run, masked):
            run.clear()
        if len(run) == 1 and run[0][2].isalpha() and run[0][2].isupper() and len(run[0][2]) <= 3:
            run.clear()  # "The SDK is …": the head dropped, a lone acronym is left, a generic term
        if run:
            s, e = run[0][0], run[-1][1]
            if run[-1][2].casefold() in _INSTITUTION and (of := _OF_NAME.match(masked, e)):
                e = skip[0] = of.end()  # the words after "for" / "of" are the name's, not names of their own
            words = masked[s:e].split()
            if not all(is_common_word(w) for w in words) and not _INDEFINITE_BEFORE.search(masked, 0, s) \
                    and not _APOSTROPHE_NEXT.match(masked, e) and not _IDEA_AFTER.match(masked, e):
                shape = _shape(words, bool(_ORG_AFTER.match(masked, e)), bool(_LICENSED_AFTER.match(masked, e)))
                if _EMAIL_AFTER.match(text, e) and shape == "other" and all(w[:1].isupper() for w in words):
                    shape = "person"
                out.append(Guess(s, e, " ".join(masked[s:e].split()), shape))
        run.clear()

    for s, e, tok in toks:
        if s < skip[0]:
            continue
        in_code = any(cs <= s and e <= ce for cs, ce in code_spans)
        kind = _kind_memo(tok, in_code, has_lexicon())
        if masked[max(0, s - 2):s].endswith("-") and not masked[max(0, s - 2):s - 1].isalnum():
            kind = "modifier"  # a command-line option ("-ansiC", "--macho")
        elif masked[max(0, s - 1):s] in ("/", "~", "$", "%") or masked[e:e + 1] == "(" \
                or (masked[max(0, s - 1):s] == "." and not masked[max(0, s - 2):s - 1].isalnum()):
            kind = "modifier"  # a path, variable, call or dotfile ("/dev/shm", "$HOME", "fopen(", ".env")
        elif s == first and _adverb(tok) and _ADVERB_NEXT.match(masked, e):
            kind = "modifier"
        gap = masked[run[-1][1]:s] if run else ""
        if run and not gap.strip() and len(gap) <= 2 and kind == "shaped" and "_" in tok and tok[:1].islower() \
                and not in_code:
            run.clear()  # a snake_case word after a name: a variant or a module of it ("Guice no_aop",
            kind = "modifier"  # "Apache mod_wsgi"); which part names the thing is unclear: no guess
        if run and (gap.strip() or len(gap) > 2):
            flush()
        if kind in ("shaped", "cap") or (kind in ("initial", "acronym") and run):  # "GoogleTest UI" goes on
            if not run and acronym is not None and masked[acronym[1]:s] == " ":
                run.append(acronym)  # an acronym opens the name it stands before ("KDE Frameworks", "GNU Emacs")
            run.append((s, e, tok))
            if kind == "shaped" and len(run) == 1 and not tok[:1].isupper():
                flush()  # a lowercase shaped name stands alone ("libdrm-dev")
        elif kind == "lower" and tok.isalpha() and not run and s in expect and has_lexicon() and not is_common_word(tok) \
                and not _NOUN_NEXT.match(masked, e) and not _ADJECTIVE.fullmatch(tok):
            run.append((s, e, tok))
            flush()
        else:
            flush()
        acronym = (s, e, tok) if kind == "acronym" and not run else None
    flush()
    return out


def _english_opening(run: list[tuple[int, int, str]], masked: str) -> bool:
    """Whether a run of capitalised words opening the sentence reads as English there: its first word
    may be English (:func:`kgr.extract.lexicon.is_known_word`) and no verb follows the run ("Key
    exchange support", "Configuration support currently exists", "Recursive downloading"; not
    "Sorted Containers is", "Werkzeug provides"); person-shaped runs are names."""
    word = run[0][2]
    if _SHAPED.search(word) or not word[:1].isupper() or _person_run(run) or _ORG_AFTER.match(masked, run[-1][1]):
        return False
    return is_known_word(word) and not _VERB_NEXT.match(masked, run[-1][1])


def _adverb(word: str) -> bool:
    """Whether ``word`` is an English adverb in -ly of a common word ("Manually", "Specifically", "Easily")."""
    w = word.casefold()
    if not (w.endswith("ly") and w.isalpha() and len(w) > 4):
        return False
    stems = {w[:-2], w[:-4] if w.endswith("ally") else "", w[:-3] + "y" if w.endswith("ily") else "",
             w[:-2] + "e" if w.endswith("bly") else ""}
    return any(st and is_common_word(st) for st in stems)


def _person_run(run: list[tuple[int, int, str]]) -> bool:
    """A run opening with a common word that is a first name ("Grace Hopper"): person-shaped, and
    its first word not one of the built-in list's function words and changelog verbs."""
    return run[0][2].casefold() not in BUILTIN_COMMON and _shape([w for _, _, w in run], False) == "person"


def _drop_head(tok: tuple[int, int, str], first: int, starts: set[int]) -> bool:
    """Whether a run's first token is a common word opening a sentence or clause ("Drop", "Currently")."""
    s, _, word = tok
    if _SHAPED.search(word):
        return False
    at_start = s == first or s in starts
    return is_common_word(word) and (at_start or word[:1].islower())


def guess_type(shape: str, allowed: list[str], widened: list[str], roles: Roles) -> str | None:
    """The one type of a guess of name shape ``shape`` in a slot that allows ``allowed`` (empty: any)
    of the ``widened`` types (rules in the module docstring), or None when the slot cannot take it."""
    pool = [t for t in (allowed or widened) if t in widened]
    if shape == "legal":
        return None
    if shape == "person" and roles.person:
        return roles.person if roles.person in pool else None
    if shape == "organization" and roles.organization:
        return roles.organization if roles.organization in pool else None
    return next((t for t in pool if t not in (roles.person, roles.organization) and t not in roles.closed), None)
