"""kgr's GraSS style for Neo4j Browser: the shipped ``kgr.grass`` plus colours for the schema's
entity types, and the one-line ``:style`` command that applies it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from kgr.browser.queries import browser_dir
from kgr.model.canonical import validate_identifier

__all__ = ["grass", "style_command", "GRASS_FILE", "styled_entity_types"]

GRASS_FILE = "kgr.grass"

_SELECTOR_RE = re.compile(r"^node\.([A-Za-z_][A-Za-z0-9_]*)\s*\{", re.MULTILINE)
#: Labels of kgr's own bookkeeping nodes (styled too, but not entity types).
_NON_ENTITY_LABELS = frozenset({"Entity", "Document", "Chunk", "Vote", "Decision", "Version", "Snapshot", "KgrState",
                                "IssuedSlice", "Outcome",
                                "SchemaProposal"})
#: Colours for entity types the shipped style does not name (Browser's own palette, in order).
_PALETTE = (
    ("#F16667", "#EB2728", "#FFFFFF"), ("#FFC454", "#D7A013", "#2A2C34"), ("#8DCC93", "#5DB665", "#2A2C34"),
    ("#C990C0", "#B261A5", "#FFFFFF"), ("#F79767", "#F36924", "#FFFFFF"), ("#57C7E3", "#23B3D7", "#2A2C34"),
    ("#D9C8AE", "#C0A378", "#2A2C34"), ("#ECB5C9", "#DA7298", "#2A2C34"), ("#4C8EDA", "#2870C2", "#FFFFFF"),
    ("#6DCE9E", "#3FBB7E", "#2A2C34"), ("#DA7194", "#CC3C6C", "#FFFFFF"), ("#604A0E", "#423204", "#FFFFFF"),
)


@functools.cache
def _shipped_grass() -> str:
    return (browser_dir() / GRASS_FILE).read_text(encoding="utf-8")


def grass(entity_types: Iterable[str] = ()) -> str:
    """kgr's GraSS style, plus a coloured rule for every entity type in ``entity_types`` it lacks.

    Types the shipped ``kgr.grass`` names keep their colours; others get colours from Browser's
    palette, in the order given (so the same schema always gives the same colours).

    >>> "node.Gene {" in grass(["Gene"]) and "node.Gene {" not in grass()
    True

    Raises
    ------
    KgrIdentifierError
        An entity type is not an identifier (it would break the style).
    """
    text = _shipped_grass()
    styled = set(_SELECTOR_RE.findall(text))
    extra = [validate_identifier(t, kind="label") for t in dict.fromkeys(entity_types) if t not in styled]
    rules = []
    for i, etype in enumerate(extra):
        color, border, caption = _PALETTE[i % len(_PALETTE)]
        rules.append(f"node.{etype} {{\n  color: {color};\n  border-color: {border};\n"
                     f"  text-color-internal: {caption};\n}}\n")
    return text if not rules else text.rstrip("\n") + "\n\n" + "\n".join(rules)


def style_command(grass_text: str | None = None) -> str:
    """The one-line Browser command that applies a style: ``:style node { ... } ...``.

    >>> style_command("node {\\n  color: #FFF;\\n}\\n")
    ':style node { color: #FFF; }'
    """
    return ":style " + " ".join((grass_text if grass_text is not None else grass()).split())


def styled_entity_types(grass_text: str) -> list[str]:
    """The entity types a style colours (its ``node.<Label>`` rules, kgr's own labels left out)."""
    return sorted(set(_SELECTOR_RE.findall(grass_text)) - _NON_ENTITY_LABELS)
