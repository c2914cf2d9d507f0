"""The Agentic-KGR protocol the agent follows, as a prompt and as a guard on the tool calls.

Protocol for one chunk (004_0801b5666d9a46a7.txt, Appendix A.4, "Critical Decision Logic"):

1. **Density first.** The model extracts a KG itself and calls ``query_extraction_density``.
2. **Re-extract until adequate.** While the last assessment says ``needs_more_extraction``, the
   model extracts again (guided by the recommendations and, if it likes, coverage / quality /
   iterative feedback) and calls ``query_extraction_density`` on the new extraction — at most
   ``max_reextractions`` times; after that it may go on with what it has.
3. **Disambiguation.** ``query_entity_disambiguation`` on the adequate extraction.
4. **Storage.** ``query_kg_storage`` with the disambiguation's ``final_kg``.

:class:`ProtocolGuard` enforces the order (when ``strict``): a call out of order is not run; the
model gets a tool error saying what to do first, and the transcript records it. The three
feedback tools are allowed at any time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kgr.agent.report import Phase
from kgr.model.schema import KGSchema
from kgr.model.tools import ToolSchema

__all__ = ["ProtocolGuard", "system_prompt", "user_prompt", "phase_of", "FEEDBACK_TOOLS"]

DENSITY = "query_extraction_density"
DISAMBIGUATION = "query_entity_disambiguation"
STORAGE = "query_kg_storage"
FEEDBACK_TOOLS = frozenset({"query_coverage_feedback", "query_quality_metrics", "query_iterative_feedback"})


def _schema_lines(schema: KGSchema | None) -> list[str]:
    if schema is None or schema.is_open:
        return ["The schema is open: choose descriptive PascalCase entity types and UPPER_SNAKE_CASE relation types."]
    lines = ["Entity types:"]
    for name, spec in schema.entity_types.items():
        lines.append(f"- {name}" + (f": {spec.description}" if spec.description else ""))
    lines.append("Relation types (subject type -> object type):")
    for name, rs in schema.relation_types.items():
        dom = " | ".join(rs.domain) or "any"
        rng = " | ".join(rs.range) or "any"
        lines.append(f"- {name} ({dom} -> {rng})" + (f": {rs.description}" if rs.description else ""))
    return lines


def system_prompt(schema: KGSchema | None, *, max_reextractions: int) -> str:
    """The system message: the task, the protocol, the extraction format and the schema."""
    tool_schema = ToolSchema.from_kg_schema(schema) if schema is not None else ToolSchema()
    return "\n".join([
        "You build a knowledge graph from one text at a time by calling tools. Follow this protocol:",
        "1. Extract entities and relations from the text yourself, in the format",
        '   {"entities": {"<EntityType>": ["<name>", ...]}, "relations": {"<RELATION>": [{"subject": "<name>", '
        '"object": "<name>"}]}}',
        "   (every relation endpoint must also be listed under entities, spelled identically), then call "
        f"{DENSITY} with it.",
        f"2. While the result says needs_more_extraction is true, extract again following its recommendations "
        f"(you may also call query_coverage_feedback, query_quality_metrics or query_iterative_feedback) and call "
        f"{DENSITY} again with the new extraction; at most {max_reextractions} re-extractions.",
        f"3. Call {DISAMBIGUATION} with the adequate extraction.",
        f"4. Call {STORAGE} with the final_kg returned by {DISAMBIGUATION}. That completes the text.",
        "Only extract what the text states. Do not call tools in another order.",
        f"Pass this as the `schema` argument: {json.dumps(tool_schema.model_dump(mode='json'))}",
        "",
        "Schema",
        *_schema_lines(schema),
    ])


def user_prompt(text: str, *, source: str) -> str:
    """The user message for one chunk."""
    return f'Text (source {source}), between the lines """:\n"""\n{text}\n"""'


def phase_of(tool: str, density_calls_before: int) -> Phase:
    """The protocol phase of a call to ``tool`` given how many density calls preceded it."""
    if tool == DENSITY:
        return "density" if density_calls_before == 0 else "re-extraction"
    if tool in FEEDBACK_TOOLS:
        return "feedback"
    if tool == DISAMBIGUATION:
        return "disambiguation"
    if tool == STORAGE:
        return "storage"
    return "unknown"


@dataclass
class ProtocolGuard:
    """Tracks one chunk's progress through the protocol and vets each call (see the module docstring)."""

    max_reextractions: int = 3
    strict: bool = True
    density_calls: int = 0
    needs_more: bool | None = None
    last_level: str | None = None
    disambiguated_since_density: bool = False
    stored: bool = False
    phases: list[Phase] = field(default_factory=list)

    def check(self, tool: str) -> str | None:
        """Why ``tool`` may not run now (None: it may)."""
        if not self.strict:
            return None
        if tool in (DISAMBIGUATION, STORAGE) and self.density_calls == 0:
            return f"protocol: call {DENSITY} on your extraction first"
        if tool == DISAMBIGUATION and self.needs_more and self.density_calls - 1 < self.max_reextractions:
            return (f"protocol: the last density assessment ({self.last_level}) says needs_more_extraction; "
                    f"extract again following its recommendations and call {DENSITY} with the new extraction "
                    f"(re-extraction {self.density_calls} of {self.max_reextractions})")
        if tool == STORAGE and not self.disambiguated_since_density:
            return f"protocol: call {DISAMBIGUATION} on the adequate extraction first, then store its final_kg"
        return None

    def phase(self, tool: str) -> Phase:
        return phase_of(tool, self.density_calls)

    def record(self, tool: str, result: dict[str, Any]) -> Phase:
        """Update the state after a successful call; return its phase."""
        ph = self.phase(tool)
        self.phases.append(ph)
        if tool == DENSITY:
            self.density_calls += 1
            self.needs_more = bool(result.get("needs_more_extraction"))
            self.last_level = (result.get("density_assessment") or {}).get("assessment_level")
            self.disambiguated_since_density = False
        elif tool == DISAMBIGUATION:
            self.disambiguated_since_density = True
        elif tool == STORAGE:
            self.stored = True
        return ph
