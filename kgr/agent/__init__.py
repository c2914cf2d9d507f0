"""The agent driver: an LLM runs the Agentic-KGR protocol over documents by calling the six tools.

``kgr agent --model NAME PATH...`` (:mod:`kgr.cli.serve`) and :func:`run_agent` load and chunk the
documents, then for each chunk let the model call the tools through litellm function calling —
density first, re-extraction until adequate, disambiguation, storage — with a step cap, and report
a transcript per chunk (:class:`AgentReport`).

* :mod:`kgr.agent.protocol` — the prompt and the guard that keeps the calls in protocol order;
* :mod:`kgr.agent.driver` — the loop;
* :mod:`kgr.agent.report` — the report and transcript models.
"""

from kgr.agent.driver import AgentConfig, run_agent, run_chunk
from kgr.agent.report import AgentReport, ChunkRun, TranscriptEntry

__all__ = ["AgentConfig", "run_agent", "run_chunk", "AgentReport", "ChunkRun", "TranscriptEntry"]
