"""The promotion seam's pure parts: the review order and the policy registry (the calibrated policy's
own tests are in tests/evidence and tests/promotion)."""

from __future__ import annotations

import pytest

from kgr.errors import KgrValidationError
from kgr.promotion.policies import QuorumPolicy, growth_epoch, make_policy
from kgr.gauge.review import review_priority
from kgr.promotion.config import CalibratedConfig


def test_review_priority_validates_its_inputs():
    with pytest.raises(KgrValidationError, match="one relation per p_hat"):
        review_priority([0.5], [], tau=0.9)
    with pytest.raises(KgrValidationError, match="tau must be in"):
        review_priority([0.5], ["R"], tau=1.0)


def test_registry_builds_each_policy_and_rejects_a_foreign_config():
    assert isinstance(make_policy("quorum", quorum=3), QuorumPolicy) and make_policy("quorum", quorum=3).config.quorum == 3
    assert make_policy("calibrated").name == "calibrated" and make_policy("gedig").name == "gedig"
    with pytest.raises(KgrValidationError, match="unknown policy 'vote'"):
        make_policy("vote")
    with pytest.raises(KgrValidationError, match="policy gedig takes a PromotionConfig, got CalibratedConfig"):
        make_policy("gedig", CalibratedConfig())


def test_growth_epoch_moves_on_after_a_quarter_more_promoted_edges():
    assert growth_epoch(3, 400, 499) == (3, 400)
    assert growth_epoch(3, 400, 500) == (4, 500)
