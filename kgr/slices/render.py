"""A slice as prompt text, and packing it into a token budget.

Token counts: with ``model`` given and known to litellm (``litellm.model_cost``), the model's own
tokenizer (``litellm.token_counter``); otherwise the estimate ``ceil(characters / 4)`` (the usual
average for English text with GPT-style tokenizers), reported as ``token_counter = "estimate"``.
The budget is respected exactly under the counter used: the final text is counted whole, and edges
are dropped from the end until it fits.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgr.errors import KgrValidationError
from kgr.model.slices import NEUTRAL_WEIGHT, SliceQuote
from kgr.store.slices import EdgeRow, EntityRow

__all__ = ["TokenCounter", "render", "pack"]


class TokenCounter:
    """Counts tokens with ``model``'s tokenizer when litellm knows it, else estimates."""

    def __init__(self, model: str | None = None):
        self.model = None
        if model:
            import litellm

            name = model.split("/", 1)[-1]
            if model in litellm.model_cost or name in litellm.model_cost:
                self.model = model

    @property
    def name(self) -> str:
        return f"litellm:{self.model}" if self.model else "estimate"

    def __call__(self, text: str) -> int:
        if self.model:
            import litellm

            return int(litellm.token_counter(model=self.model, text=text))
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
           quotes: dict[str, list[SliceQuote]]) -> str:
    return "\n".join(_header(policy_id, version, anchors) + [_line(e, quotes.get(e.key, [])) for e in edges]) + "\n"


def pack(policy_id: str, version: int, anchors: Sequence[EntityRow], ranked: Sequence[EdgeRow],
         quotes: dict[str, list[SliceQuote]], budget: int, count: TokenCounter,
         *, exact: bool = True) -> tuple[list[EdgeRow], str, int]:
    """The longest prefix of ``ranked`` whose rendering fits in ``budget`` tokens: (edges, text, tokens).

    Lines are added while the sum of their counts fits, then (``exact``) the whole text is counted
    and edges are dropped from the end until it fits (a tokenizer need not be additive across
    lines). Without ``exact``: the prefix by the sum of line counts only, with no text.

    Raises
    ------
    KgrValidationError
        Not even the header (the anchors) fits in the budget.
    """
    used = sum(count(h + "\n") for h in _header(policy_id, version, anchors))
    kept: list[EdgeRow] = []
    for e in ranked:
        cost = count(_line(e, quotes.get(e.key, [])) + "\n")
        if used + cost > budget:
            break
        kept.append(e)
        used += cost
    if not exact:
        return kept, "", used
    while True:
        text = render(policy_id, version, anchors, kept, quotes)
        tokens = count(text)
        if tokens <= budget:
            return kept, text, tokens
        if not kept:
            raise KgrValidationError(f"a budget of {budget} tokens does not hold the slice's header "
                                     f"({tokens} tokens); give more, or fewer anchors", field="budget_tokens")
        kept.pop()
