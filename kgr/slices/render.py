"""A slice as prompt text, and packing it into a token budget.

Token counts: with ``model`` given and known to litellm (``litellm.model_cost``), the model's own
tokenizer (``litellm.token_counter``); otherwise the estimate ``ceil(characters / 4)`` (the usual
average for English text with GPT-style tokenizers), reported as ``token_counter = "estimate"``.
The budget is respected exactly under the counter used: the final text is counted whole, and edges
are dropped from the end until it fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kgr.errors import KgrValidationError
from kgr.litellm_offline import load_litellm
from kgr.model.slices import NEUTRAL_WEIGHT, SliceQuote
from kgr.store.slices import EdgeRow, EntityRow

__all__ = ["TokenCounter", "Packed", "BareLines", "render", "pack"]


class TokenCounter:
    """Counts tokens with ``model``'s tokenizer when litellm knows it, else estimates."""

    def __init__(self, model: str | None = None):
        self.model = None
        if model:
            litellm = load_litellm("counting tokens with a model's tokenizer")
            name = model.split("/", 1)[-1]
            if model in litellm.model_cost or name in litellm.model_cost:
                self.model = model

    @property
    def name(self) -> str:
        return f"litellm:{self.model}" if self.model else "estimate"

    def __call__(self, text: str) -> int:
        if self.model:
            return int(load_litellm().token_counter(model=self.model, text=text))
        return -(-len(text) // 4)


def _header(policy_id: str, version: int, anchors: Sequence[EntityRow]) -> list[str]:
    names = ", ".join(f"{a.name} ({a.type})" for a in anchors)
    return [f"Facts from the knowledge graph (kgr, policy {policy_id}, graph version {version}), about: {names}"]


def _line(e: EdgeRow, quotes: Sequence[SliceQuote]) -> str:
    w = NEUTRAL_WEIGHT if e.outcome_weight is None else e.outcome_weight
    line = (f"- {e.subject.name} {e.relation} {e.object.name} (confidence {e.confidence:.2f}, {e.votes} "
            f"vote{'s' if e.votes != 1 else ''}{', reported useful' if w >= 0.6 else ''})")
    for q in quotes:
        where = q.path or q.document_id or q.source
        line += f"; {where}" + (f": \"{' '.join((q.quote or '').split())}\"" if q.quote else "")
    return line


def render(policy_id: str, version: int, anchors: Sequence[EntityRow], edges: Sequence[EdgeRow],
           quotes: dict[str, list[SliceQuote]], bare: "BareLines | None" = None) -> str:
    """The slice's text: the header, then one line per edge with its ``quotes`` (``bare``: the
    slice's bare lines, made once)."""
    def line(e: EdgeRow) -> str:
        qs = quotes.get(e.key)
        return _line(e, qs) if qs or bare is None else bare.line(e)

    return "\n".join(_header(policy_id, version, anchors) + [line(e) for e in edges]) + "\n"


class BareLines:
    """Each edge's line without quotes and its tokens, made once per slice (packing looks at each
    edge's bare line several times, and :func:`pack` runs twice a slice)."""

    def __init__(self, count: TokenCounter):
        self.count = count
        self._lines: dict[str, tuple[str, int]] = {}

    def line(self, e: EdgeRow) -> str:
        return self._get(e)[0]

    def cost(self, e: EdgeRow) -> int:
        """Tokens of the bare line and its newline."""
        return self._get(e)[1]

    def _get(self, e: EdgeRow) -> tuple[str, int]:
        got = self._lines.get(e.key)
        if got is None:
            line = _line(e, [])
            got = self._lines[e.key] = (line, self.count(line + "\n"))
        return got


class Packed(NamedTuple):
    """What :func:`pack` kept: the edges, the text and its tokens, and the edges quoted in the text."""

    edges: list[EdgeRow]
    text: str
    tokens: int
    quoted: frozenset[str] = frozenset()


def _fill(ranked: Sequence[EdgeRow], bare: BareLines, limit: float, used: int, kept: list[EdgeRow]) -> int:
    """Append to ``kept`` the next edges of ``ranked`` whose bare lines fit under ``limit``; the tokens used."""
    for e in ranked[len(kept):]:
        cost = bare.cost(e)
        if used + cost > limit:
            break
        kept.append(e)
        used += cost
    return used


def pack(policy_id: str, version: int, anchors: Sequence[EntityRow], ranked: Sequence[EdgeRow],
         quotes: dict[str, list[SliceQuote]], budget: int, count: TokenCounter,
         *, quote_share: float = 0.25, exact: bool = True, bare: BareLines | None = None) -> Packed:
    """Facts first, their provenance in a share of the budget, then more facts.

    With budget ``B`` and ``quote_share`` ``q``:

    1. facts: the longest prefix of ``ranked`` whose lines *without quotes* (and the header) fit in
       ``(1 − q)·B`` tokens;
    2. provenance: in rank order, each kept edge's quotes join its line when the extra tokens still
       fit in ``B`` (an edge whose quotes do not fit keeps its bare line; a later, shorter one may);
    3. facts again: further edges' bare lines while they fit in ``B``;
    4. (``exact``) the whole text is counted and, while it exceeds ``B`` (a tokenizer need not be
       additive across lines), quotes are dropped from the last quoted edge up, then edges from the
       end.

    Without ``exact``: the prefix of bare lines that fits in ``B``, with no text (which edges could
    be in the slice at all). A quote never pushes out a fact that fits in ``(1 − q)·B``. ``bare``
    lets two calls for one slice share the bare lines (they must share ``count``).

    Raises
    ------
    KgrValidationError
        Not even the header (the anchors) fits in the budget.
    """
    if bare is None or bare.count is not count:
        bare = BareLines(count)
    used = sum(count(h + "\n") for h in _header(policy_id, version, anchors))
    kept: list[EdgeRow] = []
    if not exact:
        return Packed(kept, "", _fill(ranked, bare, budget, used, kept))
    used = _fill(ranked, bare, (1.0 - quote_share) * budget, used, kept)
    quoted: dict[str, list[SliceQuote]] = {}
    for e in kept:
        qs = quotes.get(e.key)
        if qs:
            extra = count(_line(e, qs) + "\n") - bare.cost(e)
            if used + extra <= budget:
                quoted[e.key] = qs
                used += extra
    _fill(ranked, bare, budget, used, kept)
    while True:
        text = render(policy_id, version, anchors, kept, quoted, bare)
        tokens = count(text)
        if tokens <= budget:
            return Packed(kept, text, tokens, frozenset(quoted))
        if quoted:
            quoted.pop(next(e.key for e in reversed(kept) if e.key in quoted))
            continue
        if not kept:
            raise KgrValidationError(f"a budget of {budget} tokens does not hold the slice's header "
                                     f"({tokens} tokens); give more, or fewer anchors", field="budget_tokens")
        kept.pop()
