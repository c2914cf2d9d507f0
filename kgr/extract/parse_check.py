"""Does a sentence's dependency parse support a triple the rules extractor read? (precision first)

:func:`veto` answers with the reason a triple is *not* supported (``None``: supported). Given the
sentence's :class:`kgr.text.parse.Parse`, the subject's and object's character spans and the
trigger's start (sentence offsets), a triple stands only when:

1. **Ends map to tokens**, each end's head (the covered token whose head is outside the mention);
   the subject's head is nominal (``NN*``, ``PRP``, ``FW``, ``CD``, ``SYM``, ``ADD``), never a verb,
   adjective or adverb ("Drop", "Removed", "Unless").
2. **A path through the trigger** ``T`` (the trigger's first content token; an auxiliary, copula,
   preposition or determiner stands for its head). From each end, ``conj``, ``appos``, ``flat``,
   ``nummod`` and ``compound`` (the latter not into ``T``, for the subject) climb to the phrase it
   belongs to. The **subject** is then the ``nsubj``/``csubj`` of a predicate ``P`` from which ``T``
   is reached down through at most 3 of ``obj obl nmod xcomp conj acl acl:relcl appos`` (``P`` may
   be ``T``: "X depends on Y", "X is licensed under Y", "X has support for Y", "X is a server which
   supports Y"), or ``T``'s possessor ("X's support for Y"), or the noun ``T`` hangs from by
   ``acl``/``appos`` ("X, a library written in Y"). The **object** hangs from ``T`` by any label
   but a subject's (``obj obl nmod compound amod advmod dep``…), through at most one noun between
   ("built on top of Y", "under the terms of the GPL"). ``…_BY`` relations read the other way: the
   object is the agent (``obl`` with *by*, or the active verb's ``nsubj``) and the subject the
   patient (``nsubj:pass``, ``obj``, or the noun an ``acl`` hangs from).
3. **No veto on the predicate**: on ``T``, the tokens between ``T`` and ``P``, ``P`` and ``P``'s
   ancestors — a negation (``not``, ``never``, ``n't``, ``no`` as determiner of ``T``, "no longer"),
   a change or removal (*drop, remove, deprecate, replace, delete, disable, discontinue, abandon,
   stop, revert …*, also as a compound or modifier: "Drop support", "Removed support"), a
   hypothetical or future (``mark`` *if/unless/whether*, modal *would/could/may/might/should/will/
   shall*, or a governing *plan/want/try/hope/intend/aim*), or a question (the sentence ends in ``?``).

A triple whose subject is the document's title, not spelled in the sentence (empty span), is
checked for the object's attachment to ``T`` and the vetoes, and no other ``nsubj`` of the
predicate than a pronoun. Triples read by other producers than a trigger (licence lines, notices,
"X is a Python library", "Added X support") get the vetoes on the object's governors only.
"""

from __future__ import annotations

from kgr.text.parse import Parse, Token

__all__ = ["CHANGE", "HEDGE", "veto"]

#: Lemmas (lower case) of a change that removes or replaces what the predicate states.
CHANGE = frozenset({"drop", "remove", "deprecate", "replace", "delete", "disable", "discontinue", "abandon", "stop",
                    "revert", "eliminate", "cease", "retire", "obsolete", "omit", "exclude", "strip", "purge", "kill",
                    "removal", "deprecation", "drops", "dropped", "removed", "deprecated", "unsupported", "lose",
                    "without"})
#: Modal or governing lemmas of a hypothetical, intended or future predicate.
HEDGE = frozenset({"would", "could", "may", "might", "should", "will", "shall", "'ll", "wo", "plan", "want", "try",
                   "hope", "intend", "aim", "propose", "consider", "expect"})
_NEG = frozenset({"not", "n't", "never", "neither", "nor"})
_MARK = frozenset({"if", "unless", "whether", "once", "until"})
_NOMINAL = ("NN", "PRP", "FW", "CD", "SYM", "ADD", "LS")
_CLIMB_SUBJ = frozenset({"conj", "appos", "flat", "nummod", "compound", "dep"})
_DOWN = frozenset({"obj", "obl", "nmod", "xcomp", "conj", "acl", "acl:relcl", "appos", "iobj", "ccomp"})
_FUNCTION = frozenset({"aux", "aux:pass", "cop", "case", "det", "mark", "cc"})
#: Nouns that name the class of the name compounded into them ("the Pallets organization", "the BSD
#: license", "License version 2.1"): the name's phrase is theirs.
CLASS_NOUNS = frozenset({"organization", "organisation", "project", "team", "foundation", "library", "package", "module",
                         "framework", "language", "license", "licence", "standard", "protocol", "format", "server",
                         "tool", "toolkit", "application", "program", "engine", "community", "group", "company",
                         "corporation", "developers", "version", "versions", "specification", "spec", "codec",
                         "compiler", "interpreter", "runtime", "api", "bindings", "extension", "plugin", "system",
                         "software", "suite", "toolset", "utility", "utilities", "daemon", "client", "backend", "platform"})


def _base(dep: str) -> str:
    return dep.split(":")[0]


def trigger_token(p: Parse, at: int) -> Token | None:
    """The content token of the trigger starting at sentence offset ``at``: the token there, or its head
    when it is an auxiliary, copula, preposition or determiner ("is written in" → written)."""
    toks = [t for t in p.tokens if t.start <= at < t.end] or [t for t in p.tokens if t.start >= at][:1]
    if not toks:
        return None
    t = toks[0]
    for _ in range(3):
        if t.dep in _FUNCTION and t.head >= 0:
            nxt = p.tokens[t.head]
            if nxt.start < t.start:
                break
            t = nxt
    return t


def _climb(p: Parse, tok: Token, stop: Token | None, labels: frozenset[str]) -> Token:
    """From a name's head up through ``labels`` (and ``compound`` into a :data:`CLASS_NOUNS` noun), not into ``stop``."""
    for _ in range(4):
        up = p.parent(tok)
        if up is None or (stop is not None and up.i == stop.i):
            break
        if tok.dep not in labels and not (tok.dep == "compound" and up.lemma.lower() in CLASS_NOUNS):
            break
        tok = up
    return tok


def _down_path(p: Parse, top: Token, target: Token, depth: int = 3) -> list[Token] | None:
    """The tokens from ``target`` up to ``top`` (both included) through :data:`_DOWN` labels, else None.
    A relative clause (``acl``) must hang from ``top`` itself ("X is a server which supports Y", not "X
    standardized an API based on Y"); a relative pronoun the parser left as ``dep`` counts as one."""
    chain, cur = [target], target
    for _ in range(depth):
        if cur.i == top.i:
            return chain
        up = p.parent(cur)
        relative = cur.dep == "dep" and up is not None and (up.pos.startswith("W") or cur.pos.startswith("W"))
        if up is None or not (relative or cur.dep in _DOWN or _base(cur.dep) in _DOWN):
            return None
        near = up.i == top.i or (_base(up.dep) == "nmod" and up.head == top.i and top.pos.startswith("NN"))
        if (_base(cur.dep) == "acl" or relative) and not near and not up.pos.startswith("W"):
            return None  # (an acl on an nmod of a nominal predicate: "a module for X built on Y", PP attachment)
        cur = up
        chain.append(cur)
    return chain if cur.i == top.i else None


def _is_agent(p: Parse, tok: Token) -> bool:
    """An agent end: the ``nsubj`` of an active verb, or an ``obl``/``nmod`` marked *by*."""
    if tok.dep in ("nsubj", "csubj"):
        return True
    return _base(tok.dep) in ("obl", "nmod") and any(c.lemma.lower() == "by" for c in p.children(tok, "case"))


def _vetoed_tokens(p: Parse, sentence: str, chain: list[Token]) -> str | None:
    """A negation, change, hedge or question over ``chain`` (the predicate's tokens) and their ancestors."""
    if sentence.rstrip().endswith("?"):
        return "question"
    seen = {t.i for t in chain}
    tops = list(chain)
    for t in chain[-1:]:
        for a in p.ancestors(t):
            if a.i not in seen and _base(a.dep) not in ("nmod", "obl"):
                seen.add(a.i)
                tops.append(a)
    for t in tops:
        words = [t, *p.children(t, "advmod", "aux", "mark", "compound", "amod", "det", "neg", "case", "xcomp", "cc")]
        for w in words:
            lem, low = w.lemma.lower(), w.word.lower()
            if (lem in _NEG or low in _NEG) and w is not t or (w.dep == "det" and low == "no"):
                return f"negation ({w.word})"
            if low == "longer" and any(c.word.lower() == "no" for c in p.children(w)):
                return "negation (no longer)"
            if lem in CHANGE or low in CHANGE:
                return f"change ({w.word})"
            if (w.dep == "mark" and low in _MARK) or ((w is not t or t.pos == "MD") and lem in HEDGE):
                return f"hypothetical ({w.word})"
            if w is t and lem in HEDGE and t.pos.startswith("VB"):
                return f"hypothetical ({w.word})"
    return None


def _subject_predicate(p: Parse, s: Token, t: Token, by_rel: bool) -> Token | None:
    """The predicate ``s`` is the subject of (see the module docstring), or None."""
    if by_rel:
        if s.dep in ("nsubj:pass", "obj"):
            return p.parent(s)
    elif _base(s.dep) in ("nsubj", "csubj"):
        return p.parent(s)
    if s.dep == "nmod:poss" and s.head == t.i:
        return t
    return None


def veto(p: Parse, sentence: str, relation: str, subj: tuple[int, int] | None, obj: tuple[int, int],
         trigger: int | None, carried: tuple[int, int] = (0, 0)) -> str | None:
    """Why the parse does not support ``relation(subj, obj)`` in ``sentence`` (None: it does); the rules in the
    module docstring. ``subj`` None: the subject is the document's title, not spelled in the sentence
    (``carried``: the words standing for it, "It", "This package", or an empty span)."""
    if not p.tokens:
        return "no parse"
    oh = p.head_of(*obj)
    if oh is None:
        return "object not a token"
    sh = p.head_of(*subj) if subj is not None and subj[1] > subj[0] else None
    if subj is not None and subj[1] > subj[0] and sh is None:
        return "subject not a token"
    if sh is not None and len(p.covering(*subj)) == 1 and not sh.pos.startswith(_NOMINAL) and (
            not sh.pos.startswith("JJ") or (sh.word[:1].isupper() and not any(t.pos[:1].isalpha() for t in p.tokens[:sh.i]))):
        return f"subject head {sh.word} is {sh.pos}"  # "Drop", "Removed", "Unless"; "systemd" (JJ) is a name
    if trigger is None or trigger < 0:
        return _vetoed_tokens(p, sentence, [oh, *p.ancestors(oh)][:4])
    t = trigger_token(p, trigger)
    if t is None:
        return "trigger not a token"
    by_rel = relation.endswith("_BY")
    adjective = t.pos.startswith("JJ") and t.dep == "amod"
    if adjective:  # "pure Python": the adjective's noun carries it
        t = p.parent(t) or t
    o = _climb(p, oh, t, frozenset({"conj", "appos", "flat", "nummod"}))
    if o.i == t.i and not adjective:
        return "the trigger is no predicate"  # "an API based on the System V API": "based on" parsed as a preposition
    o_up = [o, *p.ancestors(o)]
    o_chain = next((o_up[:k + 1] for k in range(1, 3) if len(o_up) > k and o_up[k].i == t.i), None)
    if o.i == t.i:
        o_chain = [o]
    if o_chain is None:
        return "object not attached to the trigger"
    shared = len(o_chain) == 3 and o_chain[1].dep == "conj" and o_chain[1].pos.startswith("VB")  # "maintained and published by Y"
    if len(o_chain) == 3 and not shared and (_base(o_chain[1].dep) not in ("nmod", "obl", "obj") or _base(o.dep) not in ("nmod", "obl")):
        return "object too far from the trigger"  # "support for JSON web tokens": JSON qualifies tokens
    role = o if shared or len(o_chain) == 1 else o_chain[-2]
    if by_rel != _is_agent(p, role) and not (by_rel and t.dep == "acl"):
        return "object in the wrong role"
    if not by_rel and _base(role.dep) in ("nsubj", "csubj") and role.i != o.i or o.dep.startswith(("nsubj", "csubj")) and not by_rel:
        return "object is the subject"
    if sh is None:
        others = [c for c in [*p.children(t, "nsubj"), *p.children(t, "nmod:poss")] if not c.pos.startswith("PRP")
                  and c.i != o.i and not carried[0] <= c.start < max(carried[1], carried[0] + 1)]
        up = p.parent(t)
        if t.dep == "acl" and t.pos in ("VBN", "VBG") and up is not None \
                and not carried[0] <= up.start < max(carried[1], carried[0] + 1):
            others.append(up)  # a participle's subject is its noun: "utilities for CGI scripts written in Python"
        if others:
            return f"the predicate's subject is {others[0].word}, not the title"
        return _vetoed_tokens(p, sentence, [t])
    s = _climb(p, sh, t, _CLIMB_SUBJ)
    pred = _subject_predicate(p, s, t, by_rel)
    chain = _down_path(p, pred, t) if pred is not None else None
    if chain is None and pred is not None and pred.dep == "conj" and pred.head == t.i:
        chain = [t, pred]  # "develops and supports X": X is the object of both verbs
    if chain is None:  # "X, a library written in Y": the trigger hangs from the subject by acl / appos
        up = [t, *p.ancestors(t)][:4]
        k = next((k for k, a in enumerate(up) if a.i == s.i), None)
        if k is None or not any(_base(a.dep) in ("acl", "appos") for a in up[:k]):
            return "no subject-predicate path through the trigger"
        chain = up[:k]
    return _vetoed_tokens(p, sentence, chain)
