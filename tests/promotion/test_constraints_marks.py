"""The near-duplicate constraint never takes numbered or generational namesakes for twins
(kgr.promotion.constraints.FactHolders, kgr.model.canonical.distinguishing_marks; issue 31, item 8)."""

from __future__ import annotations

import pytest

from kgr.promotion.constraints import FactHolders
from kgr.model.promotion import CandidateRow


def cand(subject: str, obj: str = "Organization:acme", relation: str = "WORKS_AT") -> CandidateRow:
    return CandidateRow(key="k", relation=relation, subject_key=subject, subject_type=subject.partition(":")[0],
                        object_key=obj, object_type=obj.partition(":")[0], votes=2, documents=2, confidence=0.9,
                        mean_confidence=0.9)


@pytest.mark.parametrize("new, held", [("Person:alan turing jr", "Person:alan turing"),
                                       ("Machine:univac ii", "Machine:univac i"),
                                       ("Machine:harvard mark ii", "Machine:harvard mark i")])
def test_namesakes_are_not_twins(new: str, held: str) -> None:
    holders = FactHolders()
    holders.add(held, "WORKS_AT", "Organization:acme")
    assert holders.twin(cand(new), 0.8) is None


def test_a_misspelling_is_still_a_twin() -> None:
    holders = FactHolders()
    holders.add("Person:rowen mogorpel", "WORKS_AT", "Organization:acme")
    twin = holders.twin(cand("Person:rowen mogropel"), 0.8)
    assert twin is not None and twin[:2] == ("Person:rowen mogropel", "Person:rowen mogorpel")


def test_names_the_schema_declares_and_names_with_other_marks_are_not_twins() -> None:
    from kgr.model.schema import KGSchema
    schema = KGSchema.model_validate({"entity_types": {"Protocol": {"names": ["HTTP", "HTTPS"]}, "Software": {},
                                                       "Language": {}}, "relation_types": {"SUPPORTS": {}}})
    holders = FactHolders()
    holders.add("Software:curl", "SUPPORTS", "Protocol:http")
    holders.add("Software:curl", "SUPPORTS", "Language:c")
    new = cand("Software:curl", "Protocol:https", "SUPPORTS")
    assert holders.twin(new, 0.8) is not None  # undeclared: a likely misspelling
    assert holders.twin(new, 0.8, schema=schema) is None
    assert holders.twin(cand("Software:curl", "Language:c++", "SUPPORTS"), 0.3) is None
