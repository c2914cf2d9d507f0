"""What a settle reads: every managed staged edge with its evidence, and the pinned promoted edges.

The calibrated policy (:mod:`kgr.promotion.settle`) decides every staged edge it manages at once
(``RoundRequest.settle``); :func:`kgr.store.rounds.read_round` hands such a request here. Two reads:

1. **Nothing new?** When the policy last settled at the store's current version
   (``request.settled_version``) and no managed edge has evidence it has not weighed
   (``settle_dirty``: one ``EXISTS`` over the staged edges in play), nothing else is read and the
   inputs say ``nothing_new``: the settle is a no-op that writes no version.
2. Otherwise every managed edge (``settle_rows_read``: pending, held, rejected, or promoted with a
   score; by key) with the columns of a round's candidates plus its recorded score, label kind,
   whether it has new evidence and whether it was re-read; and the *pinned* promoted edges (the
   current promoted edges it does not manage), from the per-process promoted-graph cache. The two
   reads run at once (the promoted graph in a worker thread): a cold process waits for the longer,
   not for both.

Reads only; the writes go through :func:`kgr.store.rounds.write_round`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kgr.model.promotion import CandidateRow, EdgeList, RoundContext, RoundInputs, RoundRequest
from kgr.model.schema import KGSchema
from kgr.store.connection import Graph
from kgr.store.promoted_cache import PROMOTED_CACHE, PromotedGraphCache

__all__ = ["read_settle", "settle_row"]


def settle_row(row: list) -> CandidateRow:
    """One ``settle_rows_read`` row as a :class:`CandidateRow`."""
    (key, rel, s_key, s_type, o_key, o_type, votes, documents, conf, mean_conf, quality, sup, con, sil, label,
     status, decided_votes, hold, first_seen, last_seen, chunked, p_hat, label_kind, dirty, reread) = row
    votes = int(votes or 0)
    return CandidateRow(
        key=key, relation=rel, subject_key=s_key, subject_type=s_type, object_key=o_key, object_type=o_type,
        votes=votes, documents=max(1, min(int(documents or 0), votes)) if votes else 0,
        confidence=min(1.0, max(0.0, float(conf or 0.0))), mean_confidence=min(1.0, max(0.0, float(mean_conf or 0.0))),
        quality=None if quality is None else float(quality), supports=int(sup), contradicts=int(con), silent=int(sil),
        label=label, status=status, decided_votes=decided_votes, hold=hold,
        first_seen=float(first_seen or 0.0), last_seen=float(last_seen or 0.0), chunked=bool(chunked),
        p_hat=None if p_hat is None else float(p_hat), label_kind=label_kind if label is not None else None,
        dirty=bool(dirty), reread=bool(reread))


def read_settle(graph: Graph, request: RoundRequest, context: RoundContext, *, schema: KGSchema | None = None,
                cache: PromotedGraphCache | None = None, now: float | None = None,
                prepare: Callable[[], None] | None = None) -> RoundInputs:
    """The inputs of a settle (see the module docstring). When there is something to settle,
    ``prepare`` (the policy's imports, :meth:`kgr.promotion.settle.CalibratedPolicy.prepare`) runs
    in a thread while the reads wait for the database: a new process pays for both at once."""
    ts = time.time() if now is None else now
    if request.settled_version is not None and request.settled_version == context.version \
            and not graph.read("settle_dirty")[0]["dirty"]:
        return RoundInputs(candidates=(), schema=schema, context=context, now=ts, nothing_new=True)
    with ThreadPoolExecutor(2) as pool:  # the promoted graph is read (or found cached) while the rows are
        promoted_read = pool.submit((cache or PROMOTED_CACHE).structure, graph, context)
        prepared = pool.submit(prepare) if prepare is not None else None
        rows = tuple(settle_row(r) for r in graph.read_value("settle_rows_read"))
        promoted, ptypes, _ = promoted_read.result()
        if prepared is not None:
            prepared.result()
    managed = {c.key for c in rows}
    keep = [i for i, k in enumerate(promoted.key) if k not in managed]
    pinned = EdgeList([promoted.subject[i] for i in keep], [promoted.relation[i] for i in keep],
                      [promoted.object[i] for i in keep], [1.0] * len(keep), [promoted.key[i] for i in keep])
    types = dict(ptypes)
    for c in rows:
        types[c.subject_key] = c.subject_type
        types[c.object_key] = c.object_type
    return RoundInputs(candidates=rows, promoted=pinned, entity_types=types, schema=schema, context=context, now=ts)
