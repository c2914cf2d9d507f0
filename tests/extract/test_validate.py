"""Holding raw extractor output to the schema: accepted, proposed, rejected."""

from __future__ import annotations

from kgr.extract.validate import sanitize_extraction
from kgr.model.schema import KGSchema

SCHEMA = KGSchema.model_validate(
    {
        "entity_types": {
            "Person": {"aliases": {"Ada Lovelace": ["Lovelace", "Augusta Ada King"]}},
            "Organization": {"aliases": {"IBM": ["I.B.M.", "International Business Machines"]}},
            "Place": {},
        },
        "relation_types": {
            "WORKS_AT": {"domain": ["Person"], "range": ["Organization"]},
            "LOCATED_IN": {"domain": ["Organization"], "range": ["Place"]},
            "KNOWS": {"domain": ["Person"], "range": ["Person"]},
            "NEAR": {},
        },
    }
)


def pairs(out, rel):
    return [(p.subject, p.object) for p in out.kg.relations.get(rel, [])]


def test_aliases_and_canonical_duplicates_collapse():
    out = sanitize_extraction({"Organization": ["I.B.M.", "IBM", "ibm", "International Business Machines"]}, {}, SCHEMA)
    assert out.kg.entities == {"Organization": ["IBM"]}


def test_unlisted_endpoints_take_a_single_domain_or_range_type():
    out = sanitize_extraction({}, {"WORKS_AT": [{"subject": "Augusta Ada King", "object": "I.B.M."}]}, SCHEMA)
    assert pairs(out, "WORKS_AT") == [("Ada Lovelace", "IBM")]
    assert out.kg.entities == {"Person": ["Ada Lovelace"], "Organization": ["IBM"]}


def test_unlisted_endpoint_of_an_unconstrained_relation_is_rejected():
    out = sanitize_extraction({"Place": ["Paris"]}, {"NEAR": [{"subject": "Paris", "object": "Nowhere"}]}, SCHEMA)
    assert out.kg.relations == {}
    (rej,) = out.rejected
    assert rej.reason == "object 'Nowhere' is not among the extracted entities and its type cannot be inferred"


def test_a_name_under_two_types_uses_the_one_that_fits():
    out = sanitize_extraction(
        {"Place": ["Washington"], "Person": ["Washington", "Ada Lovelace"]},
        {"KNOWS": [{"subject": "Ada Lovelace", "object": "washington"}]},
        SCHEMA,
    )
    assert pairs(out, "KNOWS") == [("Ada Lovelace", "Washington")]
    assert out.rejected == []


def test_bad_names_self_loops_and_matching_is_by_canonical_form():
    out = sanitize_extraction(
        {"Person": ["Ada Lovelace", "  ", "!!!"]},
        {"KNOWS": [{"subject": "ADA LOVELACE", "object": "Lovelace"}, {"subject": "", "object": "x"}]},
        SCHEMA,
    )
    reasons = sorted(r.reason for r in out.rejected)
    assert reasons == ["empty name", "empty name", "entity name '!!!' has no letters or digits", "self loop"]
    assert out.kg.entities == {"Person": ["Ada Lovelace"]}


def test_unknown_types_are_proposed_with_their_instances():
    out = sanitize_extraction(
        {"Person": ["Ada Lovelace"], "Programming Language": ["Note G"]},
        {
            "WROTE": [{"subject": "Ada Lovelace", "object": "Note G"}],
            "WORKS_AT": [{"subject": "Ada Lovelace", "object": "Note G"}],
        },
        SCHEMA,
    )
    assert out.proposed.entities == {"Programming Language": ["Note G"]}
    (wrote,) = out.proposed.relations["WROTE"]
    assert (wrote.subject_type, wrote.object_type) == ("Person", "Programming Language")
    (rej,) = out.rejected
    assert rej.type == "WORKS_AT"
    assert rej.reason == "object 'Note G' has type Programming Language outside the schema (proposed)"


def test_open_schema_accepts_identifier_types_only():
    out = sanitize_extraction(
        {"Person": ["Ada"], "Place": ["London"], "bad type": ["x"]},
        {"BORN_IN": [{"subject": "Ada", "object": "London"}]},
        KGSchema(),
    )
    assert out.kg.entities == {"Person": ["Ada"], "Place": ["London"]}
    assert pairs(out, "BORN_IN") == [("Ada", "London")]
    assert out.proposed.entities == {"bad type": ["x"]}


def test_type_names_are_matched_ignoring_case_and_separators():
    out = sanitize_extraction(
        {"person": ["Ada Lovelace"], "ORGANIZATION": ["IBM"]},
        {"works at": [{"subject": "Ada Lovelace", "object": "IBM"}]},
        SCHEMA,
    )
    assert out.kg.entities == {"Person": ["Ada Lovelace"], "Organization": ["IBM"]}
    assert pairs(out, "WORKS_AT") == [("Ada Lovelace", "IBM")]
    assert out.proposed.is_empty
