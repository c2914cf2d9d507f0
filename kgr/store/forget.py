"""Forgetting documents and sources: their votes, chunks and what only they supported, as one version.

``forget(graph, documents=..., chunks=..., sources=...)`` runs in one write transaction under the
version lock and opens one ``(:Version {kind: 'forget'})``. The sources forgotten are the given
ones plus the given chunks plus the chunks of the given documents (a chunk is the source of the
votes the ingestion loop stages). Forgetting chunks without their document is what re-ingesting an
edited document does with the chunks the edit removed.

- **Votes.** Every vote of a forgotten source leaves every staged edge, inline and overflow alike.
  An edge's remaining votes keep their order; overflow votes move inline while there is room
  (staging's invariant: overflow only follows a full inline list). ``votes`` = remaining
  distinct sources; confidence is staging's noisy-or recomputed over the remaining votes,

  .. math:: c = 1 - \\prod_{i \\in \\text{remaining}} (1 - c_i),

  ``first_seen`` / ``last_seen`` the min / max of the remaining votes' times.
- **Edges** that lose their last vote are deleted. A **promoted** edge whose remaining votes fall
  below ``quorum`` (default 2, the plain vote rule) is retired in the version (its staged edge
  ``held``, or deleted with its last vote); one that keeps enough votes stays promoted, and the
  next promotion round re-scores it on what is left. Each affected edge gets a
  ``(:Decision {action: 'retract'})`` naming the forgotten sources and the votes before and after.
- **Concurrency.** The documents and chunks to forget are write-locked before any vote is read,
  and a group commit of chunks (:func:`kgr.store.provenance.commit_chunks`) locks its chunks
  first: a commit racing the forget of its chunk either lands before (and the forget removes its
  votes) or finds the chunk gone (and stages nothing from it). The edges holding forgotten votes
  are then write-locked, in the writers' one lock order (:mod:`kgr.store.edge_locks`), and only
  then read: a vote another document's commit adds to a shared edge lands either before the lock
  (and is read and kept) or after the forget commits; ``votes`` is recomputed from what the edge
  holds, inline + overflow. Every per-vote list of an edge (``sources`` and each parallel
  ``source_*`` list) is carried (:mod:`kgr.store.vote_lists`).
- **Provenance.** The given chunks and the documents' chunks (with their ``MENTIONS``) and the
  document nodes are deleted.
- **Entities** that nothing needs any more (no staged or promoted edge, present or past, no chunk
  mentioning them, no entity merged into them) among the endpoints of changed edges and the
  entities the forgotten chunks mentioned are deleted.

- **Merges.** Entities merged (by a resolution) into an entity whose votes or mentions the forget
  removed are listed (``merges_touched``); every resolution merge of their types is then undone as a
  second version committed in the forget's transaction (:mod:`kgr.store.unmerge`, ``unmerge_version``:
  both or neither), and the types are recorded as due for the next resolution to re-decide on what
  is left (``redecide=False``: not done).

The content hash moves by the retired keys (:func:`~kgr.store.versions.add_terms`), so a rollback
to a snapshot before the forget restores the promoted edge set and hash exactly. ``dry_run=True``
runs the same transaction and rolls it back: the report says what would change, the store does
not change.

Worked example: an edge with inline votes a (0.5), b (0.5), c (0.5), confidence 0.875; forgetting
b leaves a, c: votes 2, confidence 1 − 0.5·0.5 = 0.75; still promoted under quorum 2. Forgetting
a too leaves c: votes 1 < 2, the promoted edge is retired and its staged edge held.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.store.connection import Graph, Tx
from kgr.store.edge_locks import lock_staged_edges
from kgr.store.quorum_retire import retire_below_quorum
from kgr.store.staging import MAX_INLINE_VOTES
from kgr.store.unmerge import unmerge_after
from kgr.store.versions import add_terms, close_version, open_version
from kgr.store.vote_lists import inline_votes, overflow_votes, per_vote_lists, to_lists

__all__ = ["ForgetReport", "forget"]


class ForgetReport(BaseModel):
    """What a forget did (or, with ``dry_run``, would do)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    dry_run: bool = False
    version: int | None = Field(None, description="the forget's version (None for a dry run)")
    documents: list[str] = Field(default_factory=list, description="documents forgotten")
    sources: int = Field(0, description="sources forgotten (given ones plus the documents' chunks)")
    chunks_removed: int = 0
    votes_removed: int = 0
    edges_changed: int = Field(0, description="staged edges that lost votes and kept some")
    edges_removed: int = Field(0, description="staged edges that lost their last vote (deleted)")
    promoted_retired: int = 0
    retired_keys: list[str] = Field(default_factory=list)
    entities_removed: list[str] = Field(default_factory=list, description="keys of entities nothing needed any more")
    hash: str = ""
    merges_touched: list[str] = Field(default_factory=list, description=(
        "keys of entities merged into an entity whose evidence the forget changed: their merges are re-decided"))
    kept_touched: list[str] = Field(default_factory=list, description="the entities those were merged into")
    unmerge_version: int | None = Field(None, description="the version that undid those merges (kgr.store.unmerge)")
    unmerged: list[str] = Field(default_factory=list, description="keys of the entities that version unmerged")
    remerge_versions: list[int] = Field(default_factory=list, description=(
        "the resolutions that re-decided them (Engine.forget; kgr ingest's own resolution step does it there)"))


class _DryRun(Exception):
    """Raised at the end of a dry run's transaction so that it rolls back; carries the report."""

    def __init__(self, report: ForgetReport):
        super().__init__("dry run")
        self.report = report


def _remaining(edge: dict, forgotten: set[str]) -> dict:
    """The write row of one affected edge (read after its lock): its votes without the forgotten
    sources, every per-vote field carried (:mod:`kgr.store.vote_lists`)."""
    p = edge["props"]
    inline, overflow = inline_votes(p), overflow_votes(edge["overflow"])
    kept_inline = [v for v in inline if v["source"] not in forgotten]
    kept_over = [v for v in overflow if v["source"] not in forgotten]
    room = max(0, MAX_INLINE_VOTES - len(kept_inline))
    moved, kept_over = kept_over[:room], kept_over[room:]
    kept_inline += moved
    confs = [float(v.get("confidence") or 0.0) for v in kept_inline + kept_over]
    miss = 1.0
    for c in confs:
        miss *= 1.0 - c
    times = [v["at"] for v in kept_inline + kept_over if v.get("at") is not None]
    votes = len(confs)
    return {"key": edge["key"], "s_key": edge["s_key"], "o_key": edge["o_key"], "votes": votes,
            "confidence": 1.0 - miss if confs else 0.0, "lists": to_lists(kept_inline, per_vote_lists(p)),
            "first_seen": min(times, default=p.get("first_seen")), "last_seen": max(times, default=p.get("last_seen")),
            "delete_votes": [v["vote_id"] for v in overflow if v["source"] in forgotten] + [v["vote_id"] for v in moved],
            "delete_edge": votes == 0, "forgotten": len(inline) + len(overflow) - votes,
            "_before": len(inline) + len(overflow)}


def _locked_edges(tx: Tx, forgotten: set[str]) -> list[dict]:
    """The staged edges with a vote of a ``forgotten`` source, write-locked (in the writers' lock
    order) and then read with all their votes (:mod:`kgr.store.edge_locks`)."""
    sources = sorted(forgotten)
    overflow_keys = [r["key"] for r in tx.run("forget_overflow_keys", {"sources": sources})]
    found = tx.run("forget_find_edges", {"sources": sources, "overflow_keys": overflow_keys})
    if not found:
        return []
    lock_staged_edges(tx, found)
    return tx.run("forget_read_edges", {"rows": sorted(found, key=lambda r: r["key"])})


def forget(graph: Graph, *, documents: Sequence[str] = (), sources: Sequence[str] = (), chunks: Sequence[str] = (),
           quorum: int = 2, dry_run: bool = False, now: float | None = None, redecide: bool = True) -> ForgetReport:
    """Forget ``documents`` (by id), ``chunks`` (by id; chunk ids that do not exist are ignored) and
    ``sources`` as one version (semantics in the module docstring). With ``redecide`` (default), when
    the forget changed the evidence of a merged entity, every merge of that entity's type is then
    undone as a second version in the same transaction (:func:`kgr.store.unmerge.unmerge_after`), for the next resolution to
    re-decide on what is left (the resolution's model is fitted on the whole type: re-deciding one
    cluster among merged ones would see a population unlike a fresh ingest's).

    Raises
    ------
    KgrValidationError
        Nothing to forget was given, or ``quorum`` < 1.
    KgrNotFound
        A given document does not exist, or a given source names no staged vote and no chunk
        (nothing is changed).
    """
    documents, sources = list(dict.fromkeys(documents)), list(dict.fromkeys(sources))
    chunks = sorted(set(chunks))
    if not documents and not sources and not chunks:
        raise KgrValidationError("give at least one document id, chunk or source to forget", field="documents")
    if quorum < 1:
        raise KgrValidationError("quorum must be >= 1", field="quorum")
    ts = time.time() if now is None else now

    def unit(tx: Tx) -> ForgetReport:
        report = _forget_unit(tx, documents, chunks, sources, quorum, dry_run, ts)
        if report.kept_touched and redecide:
            # every merge of the touched types, in the forget's own transaction (no crash leaves a
            # forget without its unmerge): a resolution re-decides them on a population like a fresh one's
            report.unmerge_version, report.unmerged = unmerge_after(
                tx, types={k.partition(":")[0] for k in report.kept_touched},
                reason=f"unmerge after forget (version {report.version})", now=ts, quorum=quorum)
        return report

    try:
        return graph.write_unit(unit)
    except _DryRun as done:
        return done.report


def _touched_merges(tx: Tx, rows: list[dict], docs: list[dict]) -> list[dict]:
    """The merges (``{key, keep}``) into the entities at the edges that lost votes or mentioned by the
    forgotten chunks: the merges whose evidence the forget changed."""
    keys = {k for r in rows for k in (r["s_key"], r["o_key"])} | {k for d in docs for k in d["mentioned"]}
    return tx.run("forget_touched_merges", {"keys": sorted(keys)}) if keys else []


def _more(names: list[str]) -> str:
    """`` (and N more)`` after the first of ``names`` a message names, or nothing for one."""
    return f" (and {len(names) - 1} more)" if len(names) > 1 else ""


def _unknown_sources(tx: Tx, sources: list[str]) -> list[str]:
    """The given ``sources`` that name nothing stored (no staged vote, inline or overflow, and no
    chunk), sorted: forgetting them would change nothing, and is refused like an unknown document."""
    if not sources:
        return []
    known = {r["source"] for r in tx.run("forget_known_sources", {"sources": sources})}
    return sorted(set(sources) - known)


def _forget_unit(tx: Tx, documents: list[str], given_chunks: list[str], sources: list[str], quorum: int,
                 dry_run: bool, ts: float) -> ForgetReport:
    version, old_hash = open_version(tx)
    docs = tx.run("forget_chunks_of", {"documents": documents, "now": ts}) if documents else []
    missing = sorted(set(documents) - {d["document"] for d in docs})
    if missing:
        raise KgrNotFound(f"no document with id {missing[0]!r}" + _more(missing))
    unknown = _unknown_sources(tx, sources)
    if unknown:
        raise KgrNotFound(f"no vote or chunk has source {unknown[0]!r}" + _more(unknown)
                          + " (sources are as staged: the source field of a JSONL line, a chunk id)")
    if given_chunks:
        docs = [*docs, *tx.run("forget_chunks_read", {"chunks": given_chunks, "now": ts})]
    chunks = sorted({c for d in docs for c in d["chunks"]})
    forgotten = set(sources) | set(chunks) | set(given_chunks)
    edges = _locked_edges(tx, forgotten)
    rows = [_remaining(e, forgotten) for e in edges]
    retire = [r for r, e in zip(rows, edges) if e["promoted"] and r["votes"] < quorum]
    reason = f"forgot {len(forgotten)} source(s)" + (f" of {len(documents)} document(s)" if documents else "") \
        + (f" ({len(given_chunks)} chunk(s) an edit removed)" if given_chunks else "")
    retired = retire_below_quorum(tx, retire, quorum=quorum, version=version, why=reason)
    if rows:
        tx.run("forget_write_edges", {"rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]})
    decisions = [{"id": uuid.uuid4().hex, "key": r["key"], "action": "retract", "round": version,
                  "reason": f"{reason}: {r['_before']} → {r['votes']} vote(s)"
                            + ("; retired" if r["key"] in retired else "") + ("; edge removed" if r["delete_edge"] else ""),
                  "inputs": json.dumps({"forgotten_sources": sorted(forgotten)[:200], "documents": documents[:200],
                                        "votes_before": r["_before"], "votes_after": r["votes"],
                                        "retired": r["key"] in retired, "quorum": quorum})} for r in rows]
    if decisions:
        tx.run("record_decisions", {"rows": decisions, "version": version, "now": ts})
    touched = _touched_merges(tx, rows, docs)
    prov = tx.run("forget_provenance", {"chunks": chunks, "documents": documents})[0]
    candidates = {k for r in rows if r["delete_edge"] for k in (r["s_key"], r["o_key"])}
    candidates |= {k for d in docs for k in d["mentioned"]}
    removed = [r["key"] for r in tx.run("forget_orphans", {"keys": sorted(candidates)})] if candidates else []
    new_hash = add_terms(old_hash, added=[], removed=sorted(retired))
    close_version(tx, version, new_hash, kind="forget", now=ts, note=reason, retired=len(retired))
    report = ForgetReport(
        dry_run=dry_run, version=None if dry_run else version, documents=documents, sources=len(forgotten),
        chunks_removed=int(prov["chunks"]), votes_removed=sum(r["forgotten"] for r in rows),
        edges_changed=sum(1 for r in rows if not r["delete_edge"]), edges_removed=sum(1 for r in rows if r["delete_edge"]),
        promoted_retired=len(retired), retired_keys=sorted(retired), entities_removed=sorted(removed), hash=new_hash,
        merges_touched=sorted({t["key"] for t in touched}), kept_touched=sorted({t["keep"] for t in touched}))
    if dry_run:
        raise _DryRun(report)
    return report
