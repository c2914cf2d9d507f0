"""The LLM tie-break on resolution's uncertain band, against the repo's OpenAI-compatible stub server
(a real HTTP server): both sides' context slices go out, the verdict comes back as evidence."""

from __future__ import annotations

from kgr.extract.match_llm import LLMTieBreak, context_slice
from kgr.resolution import EdgeView, EntityView, build_units
from kgr.resolution.plan import plan_type
from tests.support.llm_stub import StubReply
from tests.support.people import people_records


def _units():
    views: dict[str, list] = {}
    for r in people_records(8, 3, seed=4):
        key = "Person:" + r["name"]
        views.setdefault(key, []).append(EdgeView("BORN_ON", True, f"Date:{r['dob'].replace('-', ' ')}", (r["id"],)))
        views[key].append(EdgeView("LIVES_IN", True, f"Place:{r['place']}", (r["id"],)))
    return build_units([EntityView(key=k, type="Person", edges=tuple(e)) for k, e in sorted(views.items())],
                       ["BORN_ON"])


def test_llm_reads_both_context_slices_and_its_verdict_is_recorded(llm_stub):
    units = _units()
    llm_stub.default = StubReply.json({"same": False, "why": "different birth dates"})
    tb = LLMTieBreak("openai/stub-model", api_base=llm_stub.base_url)
    verdict, note = tb(units[0], units[1])
    assert verdict is False and "different birth dates" in note and "stub-model" in note
    sent = llm_stub.requests[-1].body["messages"][-1]["content"]
    assert context_slice(units[0]) in sent and context_slice(units[1]) in sent
    assert "BORN_ON" in sent and units[0].name in sent
    # every pair of the band goes to the LLM and comes back as evidence (band floor 0: all of them)
    llm_stub.default = StubReply.json({"same": True, "why": "same person"})
    plan = plan_type(units, functional=["BORN_ON"], band_low=0.0, tie_break=tb)
    assert plan.llm_decisions == len(plan.review) > 0
    assert all(e.decision == "llm_merge" and "same person" in e.reason for e in plan.review)


def test_a_failed_or_unreadable_answer_leaves_the_pair_to_review(llm_stub):
    units = _units()
    tb = LLMTieBreak("openai/stub-model", api_base=llm_stub.base_url)
    llm_stub.enqueue(StubReply.error(500))
    assert tb(units[0], units[1])[0] is None
    llm_stub.enqueue(StubReply.text("maybe?"))
    assert tb(units[0], units[1]) == (None, "llm openai/stub-model: unreadable answer")
    llm_stub.default = StubReply.error(500)
    plan = plan_type(units, functional=["BORN_ON"], band_low=0.0, tie_break=tb)
    assert plan.llm_decisions == 0 and plan.review and all(e.decision == "review" for e in plan.review)
