"""The offline rules extractor on hand-written text; expected triples worked out by hand."""

from __future__ import annotations

import pytest

from kgr.errors import KgrValidationError
from kgr.extract import Extractor, RulesExtractor, make_extractor
from kgr.extract.rules import guided_types
from kgr.model.schema import KGSchema

SCHEMA = KGSchema.model_validate(
    {
        "entity_types": {
            "Person": {
                "names": ["Charles Babbage", "Ada Lovelace", "J. Presper Eckert", "John Mauchly", "Max Newman",
                          "Tommy Flowers", "Alan Turing"],
                "aliases": {"Charles Babbage": ["Babbage"], "Ada Lovelace": ["Lovelace", "Ada"],
                            "J. Presper Eckert": ["Eckert"], "John Mauchly": ["Mauchly"],
                            "Tommy Flowers": ["Flowers"], "Alan Turing": ["Turing"]},
                "patterns": [r"\b(?:Sir|Professor) (?P<name>[A-Z][a-z]+ [A-Z][a-z]+)"],
            },
            "Organization": {
                "names": ["University of Cambridge", "Moore School"],
                "aliases": {"University of Cambridge": ["Cambridge"]},
            },
            "Place": {"names": ["London", "Cambridge", "Philadelphia"]},
            "Machine": {
                "names": ["Analytical Engine", "ENIAC", "EDVAC", "Colossus"],
                "aliases": {"Analytical Engine": ["Engine"]},
                "patterns": [r"\bZ[1-4]\b"],
            },
        },
        "relation_types": {
            "BORN_IN": {"domain": ["Person"], "range": ["Place"], "functional": True, "triggers": ["born in"]},
            "STUDIED_AT": {"domain": ["Person"], "range": ["Organization"], "triggers": ["studied at"]},
            "DESIGNED": {"domain": ["Person"], "range": ["Machine"], "triggers": ["designed", "built", "built by"]},
            "WORKED_WITH": {"domain": ["Person"], "range": ["Person"], "triggers": ["worked with", "was mentored by"]},
            "LOCATED_IN": {"domain": ["Organization"], "range": ["Place"], "triggers": ["located in"]},
        },
    }
)


def run(text: str, guidance: list[str] | None = None, schema: KGSchema = SCHEMA):
    return RulesExtractor().extract(text, schema, guidance=guidance)


def triples(result) -> set[tuple[str, str, str]]:
    return {(p.subject, r, p.object) for r, ps in result.kg.relations.items() for p in ps}


def test_it_is_an_extractor_and_the_default():
    assert isinstance(RulesExtractor(), Extractor)
    assert isinstance(make_extractor(), RulesExtractor)


def test_forward_reading_with_aliases_resolved():
    r = run("Babbage was born in London. Lovelace worked with Babbage.")
    # "Babbage" and "Lovelace" are aliases: reported under their canonical names
    assert triples(r) == {
        ("Charles Babbage", "BORN_IN", "London"),
        ("Ada Lovelace", "WORKED_WITH", "Charles Babbage"),
    }
    assert r.kg.entities == {"Person": ["Charles Babbage", "Ada Lovelace"], "Place": ["London"]}
    assert r.usage.total_tokens == 0 and r.llm_calls == 0 and r.cost_usd == 0.0
    assert r.extractor == "rules" and r.rejected == [] and r.proposed_types.is_empty


def test_types_decide_direction_for_passive_and_active_triggers():
    # passive trigger "built by": object before, subject after
    assert triples(run("The ENIAC was built by Eckert.")) == {("J. Presper Eckert", "DESIGNED", "ENIAC")}
    # active trigger "designed" in a passive sentence: "by" follows it, types confirm the reversal
    assert triples(run("The Analytical Engine was designed by Babbage.")) == {
        ("Charles Babbage", "DESIGNED", "Analytical Engine")
    }
    # no "by", but the only reading that fits domain/range is the reversed one
    assert triples(run("ENIAC, which Eckert built.")) == set()  # nothing after the trigger
    # a label before a colon is a heading fragment, and an end six words from its trigger too far:
    # "Colossus: built in 1943 at Dollis Hill, Flowers recalled." asserts nothing
    assert triples(run("Colossus: built in 1943 at Dollis Hill, Flowers recalled.")) == set()


def test_same_type_relations_follow_the_text_unless_passive():
    assert triples(run("Turing worked with Max Newman.")) == {("Alan Turing", "WORKED_WITH", "Max Newman")}
    assert triples(run("Turing was mentored by Max Newman.")) == {("Max Newman", "WORKED_WITH", "Alan Turing")}


def test_coordination_needs_a_conjunction():
    r = run("Eckert and Mauchly designed the ENIAC and the EDVAC.")
    assert triples(r) == {
        ("J. Presper Eckert", "DESIGNED", "ENIAC"),
        ("J. Presper Eckert", "DESIGNED", "EDVAC"),
        ("John Mauchly", "DESIGNED", "ENIAC"),
        ("John Mauchly", "DESIGNED", "EDVAC"),
    }
    # a bare comma is not coordination: Newman asked, Flowers designed
    assert triples(run("At the request of Max Newman, Flowers designed Colossus.")) == {
        ("Tommy Flowers", "DESIGNED", "Colossus")
    }
    # "A, B and C"
    assert triples(run("Turing worked with Max Newman, Flowers and Lovelace.")) == {
        ("Alan Turing", "WORKED_WITH", "Max Newman"),
        ("Alan Turing", "WORKED_WITH", "Tommy Flowers"),
        ("Alan Turing", "WORKED_WITH", "Ada Lovelace"),
    }


def test_possessives_are_not_relation_ends():
    r = run("Colossus was built by Flowers, and Turing's methods shaped its use.")
    assert triples(r) == {("Tommy Flowers", "DESIGNED", "Colossus")}
    assert "Alan Turing" in r.kg.entities["Person"]  # still an entity


def test_relations_do_not_cross_sentences():
    assert triples(run("Babbage lived in London. He designed many things. The Analytical Engine was one.")) == set()


def test_ambiguous_name_is_typed_by_the_relation():
    r = run("Turing studied at Cambridge. The University of Cambridge is located in Cambridge.")
    assert triples(r) == {
        ("Alan Turing", "STUDIED_AT", "University of Cambridge"),
        ("University of Cambridge", "LOCATED_IN", "Cambridge"),
    }
    assert r.kg.entities["Place"] == ["Cambridge"]
    assert r.kg.entities["Organization"] == ["University of Cambridge"]


def test_patterns_and_named_groups():
    r = run("Professor Douglas Hartree built the Z2 in a hurry.")
    assert triples(r) == {("Douglas Hartree", "DESIGNED", "Z2")}
    assert r.kg.entities == {"Person": ["Douglas Hartree"], "Machine": ["Z2"]}


def test_one_word_aliases_must_agree_on_case():
    assert run("The engine was designed by Babbage.").kg.relations == {}
    assert triples(run("The Engine was designed by Babbage.")) == {("Charles Babbage", "DESIGNED", "Analytical Engine")}
    # multi-word names ignore case and whitespace runs
    assert triples(run("the analytical   engine was designed by Babbage.")) == {
        ("Charles Babbage", "DESIGNED", "Analytical Engine")
    }


def test_lowercase_names_match_capitalised_and_inner_capitals_match_lowercase():
    """A name declared lowercase (a command: ``git``) is found at a sentence start ("Git supports"); a
    name with an inner capital (``OpenSSL``) is found written as its command (``openssl``). An
    all-capitals name does not fire on the lowercase word (``HTTP`` in a URL), nor an initial-capital
    one on the common noun."""
    schema = KGSchema.model_validate({
        "entity_types": {"Software": {"names": ["git", "OpenSSL", "curl"]}, "Protocol": {"names": ["HTTP", "TLS"]}},
        "relation_types": {"SUPPORTS": {"domain": ["Software"], "range": ["Protocol"], "triggers": ["supports"]}}})

    def found(text: str) -> set[tuple[str, str]]:
        return {(p.subject, p.object) for p in RulesExtractor().extract(text, schema).kg.relations.get("SUPPORTS", [])}

    assert found("Git supports HTTP.") == found("git supports HTTP.") == {("git", "HTTP")}
    assert found("Curl supports TLS.") == {("curl", "TLS")}
    assert found("openssl supports TLS.") == found("OpenSSL supports TLS.") == {("OpenSSL", "TLS")}
    assert found("git supports http.") == set()  # HTTP is not the word in a URL
    assert found("GIT supports HTTP.") == set()   # shouting is not the name


def test_self_loops_are_dropped():
    assert triples(run("Turing worked with Turing.")) == set()


def test_guidance_widens_to_capitalised_phrases():
    text = "Konrad Zuse designed the Z3. Grace Hopper worked with Howard Aiken."
    plain = run(text)
    # Zuse, Hopper and Aiken are unknown to the gazetteer: only Z3 (a pattern) is found
    assert triples(plain) == set()
    assert plain.kg.entities == {"Machine": ["Z3"]}
    guided = run(text, guidance=["Extract Person entities: none extracted yet."])
    assert triples(guided) == {
        ("Konrad Zuse", "DESIGNED", "Z3"),
        ("Grace Hopper", "WORKED_WITH", "Howard Aiken"),
    }
    assert guided.kg.entities["Person"] == ["Konrad Zuse", "Grace Hopper", "Howard Aiken"]
    # guidance naming only another type does not widen Person
    assert triples(run(text, guidance=["Extract Place entities: none extracted yet."])) == set()


def test_guidance_does_not_override_known_mentions():
    text = "The Analytical Engine was designed by Babbage in London."
    assert triples(run(text, guidance=["Extract more Person entities"])) == triples(run(text))


def test_guided_types_from_relation_names():
    assert guided_types(SCHEMA, ["Extract STUDIED_AT relations: none extracted yet."]) == ["Person", "Organization"]
    assert guided_types(SCHEMA, ["persons are missing"]) == ["Person"]
    assert guided_types(SCHEMA, ["Link the extracted entities: 3 take part in no relation"]) == list(
        SCHEMA.entity_types
    )
    assert guided_types(SCHEMA, []) == []
    # recommendations that do not ask for more do not widen anything
    assert guided_types(SCHEMA, ["Coverage is complete (1.00): every schema type is covered."]) == []
    assert guided_types(SCHEMA, ["Check the text for Place: no cue for them was found, they may be absent."]) == []
    not_in_schema = "Not in the schema: entity types Language. Map them to schema types or drop them."
    assert guided_types(SCHEMA, [not_in_schema]) == []


def test_deterministic_and_ordered():
    text = (
        "Lovelace was born in London. Babbage designed the Analytical Engine and Lovelace worked with Babbage. "
        "Eckert and Mauchly built the ENIAC in Philadelphia."
    )
    a, b = run(text), RulesExtractor().extract(text, SCHEMA)
    assert a.model_dump() == b.model_dump()
    assert a.kg.entities["Person"] == ["Ada Lovelace", "Charles Babbage", "J. Presper Eckert", "John Mauchly"]
    assert [(p.subject, p.object) for p in a.kg.relations["DESIGNED"]] == [
        ("Charles Babbage", "Analytical Engine"),
        ("J. Presper Eckert", "ENIAC"),
        ("John Mauchly", "ENIAC"),
    ]


def test_invalid_pattern_is_a_schema_error_naming_the_field():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"entity_types\.Machine\.patterns[\s\S]*unterminated character set"):
        KGSchema.model_validate({"entity_types": {"Machine": {"patterns": ["Z[1-"]}}})  # at load, not per chunk


def test_empty_schema_and_text():
    assert run("Anything at all.", schema=KGSchema()).kg.entity_count == 0
    assert run("", schema=SCHEMA).kg.entity_count == 0


def test_schema_patterns_are_checked_at_load_and_run_with_a_time_bound(caplog):
    """Issue 13, item 8: an invalid regex was accepted at load and failed every chunk; a pattern with
    catastrophic backtracking took 89 s of CPU on a 33-character chunk."""
    import logging
    import time

    import pytest

    from kgr.errors import KgrSchemaError
    from kgr.extract.rules import RulesExtractor
    from kgr.model.schema import KGSchema, load_schema

    with pytest.raises(ValueError, match=r"invalid regular expression '\(unclosed'"):
        KGSchema.model_validate({"entity_types": {"Thing": {"patterns": ["(unclosed"]}}})
    schema = KGSchema.model_validate({
        "entity_types": {"Thing": {"patterns": [r"((a|aa)+)+b"]}, "Person": {"names": ["Ada"]}},
        "relation_types": {"KNOWS": {"triggers": ["knows"]}}})
    t0 = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="kgr.extract"):
        res = RulesExtractor().extract("Ada knows " + "a" * 40 + ".", schema)
    # the pattern gives up after its budget; unbounded it ran 89 s (a 3 s bound was missed at load 10)
    assert time.perf_counter() - t0 < 15.0
    assert "gave up after" in caplog.text and res.kg.entities.get("Person") == ["Ada"]


def test_an_invalid_pattern_in_a_schema_file_is_a_one_line_error(tmp_path):
    import json

    import pytest

    from kgr.errors import KgrSchemaError
    from kgr.model.schema import load_schema

    f = tmp_path / "s.json"
    f.write_text(json.dumps({"entity_types": {"Thing": {"patterns": ["ok", "[z-a]"]}}}))
    with pytest.raises(KgrSchemaError, match=r"entity_types\.Thing\.patterns.*invalid regular expression '\[z-a\]'"):
        load_schema(f)


class _Clocked:
    """A compiled pattern whose first ``stalls`` calls time out the way a busy machine makes them:
    the clock runs out while the thread waits (``busy=False``: sleeping) or works (``busy=True``)."""

    def __init__(self, pattern: str, stalls: int, *, busy: bool = False):
        from kgr.model.schema import compile_pattern

        self.real, self.pattern, self.stalls, self.busy, self.calls = compile_pattern(pattern), pattern, stalls, busy, 0

    def finditer(self, text: str, timeout: float):
        import time

        self.calls += 1
        if self.calls <= self.stalls:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if not self.busy:
                    time.sleep(timeout / 10)
            raise TimeoutError("regular expression time-out")
        return self.real.finditer(text, timeout=timeout)


def test_a_pattern_the_clock_stopped_while_it_waited_is_matched_again_not_dropped():
    """A real ingest on a loaded machine logged that ``\\bPython\\s+[23]`` "gave up after 0.25 s" on a
    118-character chunk and matched nothing there: the ``regex`` library's timeout ran out while the
    thread waited for a core. Only a pattern that spends the budget working gives up."""
    import pytest

    from kgr.model.schema import PATTERN_ATTEMPTS, pattern_matches

    text = "Runs on Python 3.11 and Python 2."
    waited = _Clocked(r"\bPython\s+[23](?:\.\d+)?", stalls=PATTERN_ATTEMPTS - 1)
    assert [m.group(0) for m in pattern_matches(waited, text, seconds=0.05)] == ["Python 3.11", "Python 2"]
    assert waited.calls == PATTERN_ATTEMPTS
    never = _Clocked(r"\bPython", stalls=PATTERN_ATTEMPTS)
    with pytest.raises(TimeoutError, match=f"timed out {PATTERN_ATTEMPTS} times"):
        pattern_matches(never, text, seconds=0.05)
    working = _Clocked(r"\bPython", stalls=1, busy=True)  # spent its budget: catastrophic, no second try
    with pytest.raises(TimeoutError):
        pattern_matches(working, text, seconds=0.05)
    assert working.calls == 1
