"""Corpus re-reading: gather evidence for the candidates the calibrated policy escalated.

For each escalated candidate (its AG gate: ambiguous, one supporting reading would carry it over
the cut), the chunks that mention both endpoints are re-read by a verifier
(:mod:`kgr.extract.verify`: the offline rules verifier, or an LLM through litellm), which answers
*supports*, *contradicts* or *silent* for the triple in that chunk. Every answer is recorded as
evidence (:mod:`kgr.store.evidence`) and the candidate is decided again in the next round.
Candidates with no such chunk (staged from a triple file, say) are left to the review queue.
"""

from __future__ import annotations

from kgr.extract.verify import Claim, Verifier
from kgr.model.review import RereadReport, VerdictRow
from kgr.model.schema import KGSchema
from kgr.store import evidence
from kgr.store.connection import Graph

__all__ = ["reread"]


def reread(graph: Graph, schema: KGSchema, verifier: Verifier, *, keys: list[tuple[str, str, str]] | None = None,
           limit: int = 1000, per_edge: int = 3) -> RereadReport:
    """Re-read the chunks of escalated candidates (or of ``keys``: ``(key, subject key, object key)``)."""
    edges = keys if keys is not None else evidence.escalated(graph, limit=limit)
    report = RereadReport(edges=len(edges))
    if not edges:
        return report
    rows, empty = evidence.claims(graph, edges, verifier=verifier.name, per_edge=per_edge)
    report.no_chunks = len(empty)
    claims = [Claim(edge_key=r.edge_key, subject=r.subject, subject_type=r.subject_type, relation=r.relation,
                    object=r.object, object_type=r.object_type, chunk_id=r.chunk_id, chunk_text=r.chunk_text)
              for r in rows]
    verdicts: list[VerdictRow] = []
    if claims:
        out = verifier.verify(claims, schema)
        report.cost_usd = out.cost_usd
        report.failures = out.failures
        verdicts = [VerdictRow(edge_key=v.edge_key, chunk_id=v.chunk_id, answer=v.answer, verifier=verifier.name,
                               quote=v.quote) for v in out.verdicts]
    report.claims = len(claims)
    for v in verdicts:
        setattr(report, v.answer, getattr(report, v.answer) + 1)
    evidence.record_verdicts(graph, verdicts, {k: (s, o) for k, s, o in edges}, verifier=verifier.name)
    return report
