"""Exports: promoted or pending edges as triple JSONL, and the promoted graph as a sparse Laplacian.

JSONL lines follow :class:`kgr.model.triples.ExportedTriple` (the triple fields plus ``votes``,
``confidence`` and ``status``). The Laplacian export streams edges from Neo4j into an undirected
simple graph (parallel edges of different types count once; self loops dropped), builds
``L = D − A`` as scipy CSR and saves it with the node-id order in one ``.npz``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from kgr.model.triples import ExportedTriple
from kgr.store.connection import Graph
from kgr.store.promotion import iter_pending

if TYPE_CHECKING:
    import scipy.sparse as sp  # imported where used: scipy costs ~1 s at every CLI start-up

__all__ = ["iter_exported", "JsonlExport", "LaplacianExport", "export_laplacian", "load_laplacian", "promoted_edge_pairs"]


def iter_exported(graph: Graph, *, pending: bool = False, statuses: list[str] | None = None) -> Iterator[ExportedTriple]:
    """Promoted edges (current), or pending edges (optionally by status), as export lines."""
    if pending:
        for r in iter_pending(graph, statuses):
            yield ExportedTriple(key=r.key, subject=r.subject, subject_type=r.subject_type, relation=r.relation,
                                 object=r.object, object_type=r.object_type, source=",".join(r.sources),
                                 confidence=r.confidence, votes=r.votes, status=r.status)
        return
    for r in graph.stream("export_promoted", {}):
        yield ExportedTriple(status="promoted", source=",".join(r.pop("sources") or []), **r)


class JsonlExport(BaseModel):
    """What ``kgr export jsonl --out FILE --json`` prints."""

    path: str | None = Field(description="the file written (None: the lines went to stdout)")
    edges: int = Field(ge=0, description="lines written, one edge each")
    pending: bool = Field(description="staged edges (True) or current promoted edges (False)")
    statuses: list[str] | None = None


def promoted_edge_pairs(graph: Graph, *, include_pending: bool = False) -> Iterator[tuple[str, str]]:
    """Stream ``(subject_key, object_key)`` of current promoted (and optionally pending) edges."""
    for r in graph.stream("edge_pairs", {"include_pending": include_pending}):
        yield r["s"], r["o"]


class LaplacianExport(BaseModel):
    path: str
    nodes: int
    edges: int


def export_laplacian(graph: Graph, out: str | Path, *, include_pending: bool = False) -> LaplacianExport:
    """Write ``L`` (CSR: data/indices/indptr/shape) and ``nodes`` (entity keys, row order) to ``out``."""
    from kgr.gauge.laplacian import laplacian_from_edges

    L, nodes = laplacian_from_edges(list(promoted_edge_pairs(graph, include_pending=include_pending)))
    path = Path(out)
    np.savez_compressed(path, data=L.data, indices=L.indices, indptr=L.indptr, shape=np.array(L.shape),
                        nodes=np.array([str(n) for n in nodes], dtype=str))
    return LaplacianExport(path=str(path), nodes=len(nodes), edges=int((L.nnz - np.count_nonzero(L.diagonal())) // 2))


def load_laplacian(path: str | Path) -> tuple[sp.csr_matrix, list[str]]:
    """Read a file written by :func:`export_laplacian`: ``(L, node keys)``."""
    z = np.load(path, allow_pickle=False)
    import scipy.sparse as sp

    L = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    return L, [str(n) for n in z["nodes"]]
