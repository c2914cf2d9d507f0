"""Context slices for LLM agents: provenance-tracked subgraphs with admissibility tokens, and
outcome feedback on them.

- :mod:`kgr.slices.expand` — the priority-queue expansion (pure);
- :mod:`kgr.slices.render` — the prompt rendering, token counting and packing to a budget;
- :mod:`kgr.slices.tokens` — HMAC-SHA256 admissibility tokens and the key;
- :mod:`kgr.slices.policies` — slice policies by name;
- :mod:`kgr.slices.build` — :func:`build_slice` on a store;
- :mod:`kgr.slices.verify` — :func:`verify_slice`: valid (unaltered) and current (cut again, the same);
- :mod:`kgr.slices.outcome` — :func:`report_outcome` and :func:`doctor`.

Contracts in :mod:`kgr.model.slices`; the store's reads and writes in :mod:`kgr.store.slices`.
"""

from kgr.slices.build import build_slice
from kgr.slices.verify import verify_slice
from kgr.slices.outcome import doctor, report_outcome
from kgr.slices.policies import get_policy, list_policies, register_policy

__all__ = ["build_slice", "verify_slice", "report_outcome", "doctor", "get_policy", "list_policies",
           "register_policy"]
