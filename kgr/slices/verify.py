"""Checking a slice: valid (this store issued exactly it) and current (it would issue it again).

**Valid** — the slice's id is the hash of its canonical content and its token the HMAC of that id
and content under this store's key (:mod:`kgr.slices.tokens`). Every field a reader sees is in
the content, so altering any of them — a quote's text, its document id, path or chunk id, an
edge's tier or priority, the anchor flag, ``graph_version``, ``truncated`` — makes it invalid.

**Current** — a slice is stale when anything it shows has changed in the store: the same request
(its anchors, policy, budget and token counter) is cut again, unrecorded, and must give the same
slice. That covers the promoted graph (its content hash), the graph's version in the text, edge
confidences, votes and quotes, and outcome weights and tiers, which outcome feedback changes
without a new version. The reason names the first difference found. A slice cut with a policy
that is no longer registered under the same id and parameters is stale too (pass the policy to
check such a slice).
"""

from __future__ import annotations

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.slices import ContextSlice, SlicePolicy, SliceVerification
from kgr.slices.build import build_slice
from kgr.slices.policies import get_policy
from kgr.slices.tokens import alteration
from kgr.store.connection import Graph
from kgr.store.versions import current_state

__all__ = ["verify_slice", "slice_changes"]

#: Differences named in a stale slice's reason, at most.
_SHOWN = 3


def verify_slice(graph: Graph, s: ContextSlice, *, key: bytes | None = None,
                 policy: SlicePolicy | None = None) -> SliceVerification:
    """Whether ``s`` is a slice this store issued, unaltered, and whether it is still current
    (module docstring). ``policy``: the policy it was cut with, when it is not a registered one."""
    _, now_hash = current_state(graph)
    wrong = alteration(s, key)
    if wrong is not None:
        return SliceVerification(valid=False, current=False, graph_hash_now=now_hash, reason=wrong)
    changed = _changed(graph, s, key, policy)
    if changed:
        return SliceVerification(valid=True, current=False, graph_hash_now=now_hash,
                                 reason=f"issued by this store, but what it shows has changed since (stale): {changed}")
    return SliceVerification(valid=True, current=True, graph_hash_now=now_hash, reason="valid and current")


def _changed(graph: Graph, s: ContextSlice, key: bytes | None, policy: SlicePolicy | None) -> str:
    """What differs between ``s`` and the slice the same request cuts now ('' when nothing)."""
    name = s.policy_id.rsplit("@v", 1)[0]
    try:
        pol = policy if policy is not None else get_policy(name)
    except KgrNotFound:
        return f"its policy {s.policy_id} is not registered here"
    if pol.policy_id != s.policy_id or pol.params_hash() != s.policy_params_hash:
        return f"its policy is now {pol.policy_id} with parameters {pol.params_hash()[:12]}"
    model = s.token_counter.removeprefix("litellm:") if s.token_counter.startswith("litellm:") else None
    try:
        now = build_slice(graph, anchors=s.anchors, policy=pol, budget_tokens=s.budget_tokens, model=model,
                          schema_version=s.schema_version, key=key, record=False)
    except (KgrNotFound, KgrValidationError) as exc:
        return f"it cannot be cut again ({str(exc).splitlines()[0][:200]})"
    if now.slice_id == s.slice_id:
        return ""
    return "; ".join(slice_changes(s, now)[:_SHOWN]) or "its content differs"


def slice_changes(old: ContextSlice, new: ContextSlice) -> list[str]:
    """What a reader of ``old`` would see differently in ``new``, most telling first: the promoted
    graph, edges that left or joined, edge fields (tier, outcome weight, votes, confidence, quotes,
    priority, order), entities, then the version, the flags and the text."""
    out: list[str] = []
    if old.graph_hash != new.graph_hash:
        out.append(f"the promoted graph changed (hash {old.graph_hash[:12]} -> {new.graph_hash[:12]})")
    before, after = {e.key: e for e in old.edges}, {e.key: e for e in new.edges}
    out += [f"edge {k} is no longer in it" for k in before if k not in after]
    out += [f"edge {k} joined it" for k in after if k not in before]
    for k, e in before.items():
        f = after.get(k)
        if f is None:
            continue
        for field in ("tier", "outcome_weight", "votes", "confidence", "quotes", "priority"):
            a, b = getattr(e, field), getattr(f, field)
            if a != b:
                shown = "changed" if field == "quotes" else f"{a} -> {b}"
                out.append(f"edge {k}'s {field.replace('_', ' ')} {shown}")
    if [e.key for e in old.edges if e.key in after] != [e.key for e in new.edges if e.key in before]:
        out.append("the edges' order changed")
    if {n.key: n for n in old.nodes} != {n.key: n for n in new.nodes}:
        out.append("its entities changed")
    if old.graph_version != new.graph_version:
        out.append(f"the graph version moved from {old.graph_version} to {new.graph_version}")
    if old.truncated != new.truncated:
        out.append(f"truncated is now {new.truncated}")
    if old.text != new.text:
        out.append("its text changed")
    return out
