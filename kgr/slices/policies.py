"""Slice policies registered by name (``kgr slice --list-policies``).

A policy is a :class:`~kgr.model.slices.SlicePolicy`: versioned, and hashed into every slice it
makes (:meth:`~kgr.model.slices.SlicePolicy.params_hash`). Changing a registered policy's values
means registering it with a new ``version``: the registry refuses a second, different definition
under the same name and version, so one policy id always means one set of parameters.
"""

from __future__ import annotations

from kgr.errors import KgrConflict, KgrNotFound
from kgr.model.slices import SlicePolicy

__all__ = ["register_policy", "get_policy", "list_policies", "DEFAULT_POLICY"]

DEFAULT_POLICY = "default"

_REGISTRY: dict[str, SlicePolicy] = {}


def register_policy(policy: SlicePolicy) -> SlicePolicy:
    """Register ``policy`` (idempotent for an identical definition).

    Raises
    ------
    KgrConflict
        Another definition is registered under the same name and version.
    """
    old = _REGISTRY.get(policy.name)
    if old is not None and old.version == policy.version and old.params_hash() != policy.params_hash():
        raise KgrConflict(f"slice policy {policy.policy_id} is registered with other parameters; "
                          "register the change under a new version")
    if old is None or policy.version >= old.version:
        _REGISTRY[policy.name] = policy
    return policy


def get_policy(name: str) -> SlicePolicy:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KgrNotFound(f"no slice policy named {name[:80]!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def list_policies() -> list[SlicePolicy]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


for _p in (
    SlicePolicy(name="default", description="two hops, 256 entities, 2,000 tokens; inhibited edges dropped"),
    SlicePolicy(name="focused", radius=1, max_nodes=64, budget_tokens=800,
                description="the anchors' direct facts only"),
    SlicePolicy(name="wide", radius=3, max_nodes=1024, budget_tokens=8000, fanout=128, quotes_per_edge=2,
                description="three hops, 1,024 entities, 8,000 tokens, two quotes per edge"),
):
    register_policy(_p)
