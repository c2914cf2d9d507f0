"""Extractors: turning chunk text into an extracted KG under a schema.

- :class:`~kgr.extract.base.Extractor` — the interface; :class:`~kgr.extract.base.ExtractionResult` —
  what every extractor returns (accepted KG, proposed types, rejected items, tokens, cost).
- :class:`~kgr.extract.rules.RulesExtractor` — offline and deterministic, driven by the schema's
  names, aliases, patterns and triggers; the default when no model is configured.
- :class:`~kgr.extract.llm.LLMExtractor` — any chat model through litellm.

:func:`make_extractor` picks one by name. The LLM module (and litellm) is imported only when needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

from kgr.errors import KgrExtractionError

if TYPE_CHECKING:
    from kgr.extract.base import Extractor

#: The package's names and the modules that define them, imported on first use (:func:`__getattr__`):
#: ``import kgr.extract.embedding`` (``kgr resolve``) then does not import the rules extractor, ~0.07 s.
_LAZY = {
    **dict.fromkeys(["AsyncExtractor", "ExtractionResult", "Extractor", "ProposedTypes", "RejectedItem",
                     "TokenUsage", "TypedRelation", "extract_concurrently"], "kgr.extract.base"),
    "RulesExtractor": "kgr.extract.rules",
    **dict.fromkeys(["SanitizedExtraction", "sanitize_extraction"], "kgr.extract.validate"),
}


def __getattr__(name: str) -> Any:
    """``kgr.extract.<name>`` for the names of :data:`_LAZY`, imported from their module and kept."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kgr.extract' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Extractor",
    "AsyncExtractor",
    "ExtractionResult",
    "ProposedTypes",
    "RejectedItem",
    "TokenUsage",
    "TypedRelation",
    "RulesExtractor",
    "SanitizedExtraction",
    "sanitize_extraction",
    "extract_concurrently",
    "make_extractor",
]


def make_extractor(
    kind: Literal["rules", "llm"] | None = None, *, model: str | None = None, parser: str | None = None,
    **llm_options: Any
) -> Extractor:
    """The extractor for ``kind``; with ``kind=None``, ``llm`` when a ``model`` is given, else ``rules``.

    ``parser`` (rules only): ``"corenlp"`` checks each triple with a dependency parse
    (:class:`kgr.extract.parsed.ParsedRulesExtractor`; a local Stanford CoreNLP server started on first
    use); ``None`` reads ``KGR_EXTRACT_PARSER`` (default ``"none"``).

    ``llm_options`` go to :class:`kgr.extract.llm.LLMExtractor` (``api_base``, ``api_key``, ``timeout``,
    ``retry``, ``max_concurrency``...).

    Raises
    ------
    KgrExtractionError
        ``kind="llm"`` without a model, or an unknown kind.

    >>> type(make_extractor()).__name__
    'RulesExtractor'
    """
    if kind is None:
        kind = "llm" if model else "rules"
    if kind == "rules":
        from kgr.extract.parsed import ParsedRulesExtractor, parser_from_env

        if (parser or parser_from_env()) == "corenlp":
            return ParsedRulesExtractor()
        if parser not in (None, "none"):
            raise KgrExtractionError(f"unknown parser {parser!r}; choose 'none' or 'corenlp'")
        from kgr.extract.rules import RulesExtractor

        return RulesExtractor()
    if kind == "llm":
        if not model:
            raise KgrExtractionError("the llm extractor needs --model (a litellm model name, e.g. openai/gpt-4o-mini)")
        from kgr.extract.llm import LLMExtractor

        return LLMExtractor(model, **llm_options)
    raise KgrExtractionError(f"unknown extractor {kind!r}; choose 'rules' or 'llm'")
