"""The embedding function kgr accepts wherever it can use one (semantic disambiguation, slice anchors)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["EmbedFn"]

#: Maps texts to vectors (one per text, in order, all of one dimension). An embedder that tags the
#: vectors it stores names its model in an attribute ``model`` (e.g.
#: :class:`kgr.extract.embedding.LiteLLMEmbedder`).
EmbedFn = Callable[[Sequence[str]], Sequence[Sequence[float]]]
