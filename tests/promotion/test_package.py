"""kgr.promotion's layer rule: policies over evidence and gauge math, never the store (promotion → evidence → gauge)."""

from __future__ import annotations

from tests.support.layers import layer_violations

ALLOWED = ("kgr.errors", "kgr.model", "kgr.gauge", "kgr.evidence", "kgr.promotion")


def test_promotion_imports_only_evidence_gauge_model_errors_and_math_libraries():
    assert layer_violations("kgr.promotion", ALLOWED) == []


def test_the_gauge_and_evidence_do_not_import_promotion():
    assert layer_violations("kgr.gauge", ("kgr.errors", "kgr.model", "kgr.gauge")) == []
    assert layer_violations("kgr.evidence", ("kgr.errors", "kgr.model", "kgr.gauge", "kgr.evidence")) == []
