"""A sentence's dependency parse as kgr reads it: tokens with character offsets, one head each.

Built from CoreNLP's JSON (:func:`Parse.from_corenlp`, Universal Dependencies ``basicDependencies``)
by :mod:`kgr.runtime.corenlp_client`; read by :mod:`kgr.extract.parse_check`. Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Parse", "Token"]


@dataclass(frozen=True)
class Token:
    """One token: its index in the sentence (0-based), text, lemma, Penn POS tag, character span
    ``[start, end)`` in the sentence text, head index (-1 for the root) and dependency label."""

    i: int
    word: str
    lemma: str
    pos: str
    start: int
    end: int
    head: int
    dep: str


@dataclass(frozen=True)
class Parse:
    """The tokens of one sentence; ``tokens[k].head`` is an index into ``tokens`` (or -1)."""

    tokens: tuple[Token, ...]

    @classmethod
    def from_corenlp(cls, sentence: dict, base: int, to_py: "list[int] | None" = None) -> "Parse":
        """From one ``sentences[k]`` of CoreNLP's JSON; ``base`` is the sentence's start in the request text
        (offsets become sentence-relative); ``to_py`` maps UTF-16 offsets to Python offsets when they differ.

        >>> s = {"tokens": [{"index": 1, "word": "X", "lemma": "x", "pos": "NNP", "characterOffsetBegin": 5,
        ...                  "characterOffsetEnd": 6}],
        ...      "basicDependencies": [{"dep": "ROOT", "governor": 0, "dependent": 1}]}
        >>> Parse.from_corenlp(s, 5).tokens[0]
        Token(i=0, word='X', lemma='x', pos='NNP', start=0, end=1, head=-1, dep='ROOT')
        """
        heads = {d["dependent"]: (d["governor"] - 1, d["dep"]) for d in sentence.get("basicDependencies", [])}
        conv = (lambda o: to_py[o]) if to_py is not None else (lambda o: o)
        toks = []
        for t in sentence["tokens"]:
            head, dep = heads.get(t["index"], (-1, "dep"))
            toks.append(Token(t["index"] - 1, t.get("originalText") or t["word"], t.get("lemma", t["word"]), t["pos"],
                              conv(t["characterOffsetBegin"]) - base, conv(t["characterOffsetEnd"]) - base, head, dep))
        return cls(tuple(toks))

    def covering(self, start: int, end: int) -> list[Token]:
        """The tokens overlapping ``[start, end)`` (sentence offsets)."""
        return [t for t in self.tokens if t.start < end and start < t.end]

    def head_of(self, start: int, end: int) -> Token | None:
        """The head token of the phrase ``[start, end)``: the covered token whose head is outside it
        (the first such, which is the highest in the tree); None when no token is covered."""
        toks = self.covering(start, end)
        inside = {t.i for t in toks}
        outside = [t for t in toks if t.head not in inside]
        return outside[0] if outside else (toks[0] if toks else None)

    def children(self, tok: Token, *deps: str) -> list[Token]:
        """``tok``'s dependents (with a label among ``deps``, or any; ``nsubj`` matches ``nsubj:pass``)."""
        return [t for t in self.tokens if t.head == tok.i and (not deps or t.dep.split(":")[0] in deps or t.dep in deps)]

    def parent(self, tok: Token) -> Token | None:
        return self.tokens[tok.head] if tok.head >= 0 else None

    def ancestors(self, tok: Token) -> list[Token]:
        """``tok``'s head, its head's head ... up to the root."""
        out, cur = [], self.parent(tok)
        while cur is not None and len(out) < len(self.tokens):
            out.append(cur)
            cur = self.parent(cur)
        return out
