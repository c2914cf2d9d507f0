"""The rules verifier (offline), the verdict models and the verifier registry."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from kgr.errors import KgrValidationError
from kgr.extract.rules import RulesExtractor
from kgr.extract.verify import (
    VERIFIER_KINDS,
    Claim,
    LLMVerifier,
    RulesVerifier,
    Verdict,
    VerificationReport,
    Verifier,
    VerifierKind,
    _VERIFIERS,
    make_verifier,
)
from kgr.model.schema import KGSchema

SCHEMA = KGSchema.model_validate(
    {
        "name": "verify-test",
        "entity_types": {
            "Person": {
                "names": ["Charles Babbage", "Konrad Zuse", "Ada Lovelace"],
                "aliases": {"Charles Babbage": ["Babbage"], "Konrad Zuse": ["Zuse"]},
            },
            "Machine": {"names": ["Analytical Engine", "Difference Engine", "Z3"]},
            "Place": {"names": ["London", "Berlin", "Paris"]},
        },
        "relation_types": {
            "DESIGNED": {"domain": ["Person"], "range": ["Machine"], "triggers": ["designed", "design", "built"]},
            "BORN_IN": {"domain": ["Person"], "range": ["Place"], "functional": True, "triggers": ["born in"]},
        },
    }
)


def claim(subject: str, relation: str, obj: str, text: str, *, chunk_id: str = "c1",
          subject_type: str = "Person", object_type: str | None = None) -> Claim:
    object_type = object_type or {"DESIGNED": "Machine", "BORN_IN": "Place"}[relation]
    return Claim(edge_key=f"{subject}|{relation}|{obj}", subject=subject, subject_type=subject_type,
                 relation=relation, object=obj, object_type=object_type, chunk_id=chunk_id, chunk_text=text)


def judge(*claims: Claim) -> list[tuple[str, str]]:
    return [(v.answer, v.quote) for v in RulesVerifier().verify(list(claims), SCHEMA).verdicts]


# -- answers ----------------------------------------------------------------------------------------


def test_supports_when_the_extraction_holds_the_triple():
    text = "Charles Babbage was born in London. Charles Babbage designed the Analytical Engine in 1837."
    (verdict,) = RulesVerifier().verify([claim("Charles Babbage", "DESIGNED", "Analytical Engine", text)],
                                        SCHEMA).verdicts
    assert verdict.answer == "supports"
    assert verdict.quote == "Charles Babbage designed the Analytical Engine in 1837."
    assert (verdict.edge_key, verdict.chunk_id, verdict.verifier, verdict.error) == (
        "Charles Babbage|DESIGNED|Analytical Engine", "c1", "rules", None)


def test_supports_through_the_schema_aliases_and_passive_voice():
    text = "The Analytical Engine was designed by Babbage."
    assert judge(claim("Babbage", "DESIGNED", "Analytical Engine", text)) == [("supports", text)]
    assert judge(claim("charles  BABBAGE", "DESIGNED", "analytical engine", text)) == [("supports", text)]


@pytest.mark.parametrize(
    "text",
    [
        "Babbage never designed the Z3.",  # "never" between the endpoints
        "The Z3 was not built by Babbage.",  # passive, "not" before the trigger
        "Charles Babbage didn't design the Z3.",  # "n't"
        "Babbage no longer designed machines like the Z3.",  # "no longer"
        "Babbage designed the Difference Engine, not the Z3.",  # between the trigger and the object
        "Never built by Babbage, the Z3 was the work of Konrad Zuse.",  # just before a leading trigger
    ],
)
def test_contradicts_when_a_sentence_negates_the_relation(text):
    assert judge(claim("Charles Babbage", "DESIGNED", "Z3", text)) == [("contradicts", text)]


def test_the_denying_sentence_is_the_quote_and_other_sentences_keep_their_answers():
    text = ("Charles Babbage designed the Difference Engine. Babbage never designed the Z3. "
            "Konrad Zuse designed the Z3 in Berlin.")
    assert judge(
        claim("Charles Babbage", "DESIGNED", "Difference Engine", text),
        claim("Charles Babbage", "DESIGNED", "Z3", text),
        claim("Konrad Zuse", "DESIGNED", "Z3", text),
    ) == [
        ("supports", "Charles Babbage designed the Difference Engine."),
        ("contradicts", "Babbage never designed the Z3."),
        ("supports", "Konrad Zuse designed the Z3 in Berlin."),
    ]


def test_a_negation_about_other_entities_does_not_contradict():
    text = "Konrad Zuse designed the Z3, which Babbage never designed."
    assert judge(claim("Konrad Zuse", "DESIGNED", "Z3", text)) == [("supports", text)]


def test_contradicts_a_functional_relation_with_another_object():
    text = "Konrad Zuse was born in Berlin in 1910. He studied in Berlin."
    assert judge(
        claim("Konrad Zuse", "BORN_IN", "Paris", text),
        claim("Konrad Zuse", "BORN_IN", "Berlin", text),
    ) == [
        ("contradicts", "Konrad Zuse was born in Berlin in 1910."),
        ("supports", "Konrad Zuse was born in Berlin in 1910."),
    ]


def test_another_object_of_a_non_functional_relation_is_silent():
    text = "Babbage designed the Difference Engine."
    assert judge(claim("Charles Babbage", "DESIGNED", "Analytical Engine", text)) == [("silent", "")]


@pytest.mark.parametrize(
    "text",
    [
        "Ada Lovelace wrote notes on the Analytical Engine.",  # both ends, no trigger
        "Ada Lovelace was born in London.",  # the object is absent
        "The weather in Paris was mild.",  # neither end
        "",
    ],
)
def test_silent_otherwise(text):
    assert judge(claim("Ada Lovelace", "DESIGNED", "Analytical Engine", text)) == [("silent", "")]


def test_an_unknown_relation_is_silent():
    text = "Charles Babbage designed the Analytical Engine."
    c = claim("Charles Babbage", "INVENTED", "Analytical Engine", text, object_type="Machine")
    assert judge(c) == [("silent", "")]


def test_long_quotes_are_clipped():
    text = "Charles Babbage designed the Analytical Engine, " + "a machine of many parts, " * 20 + "in London."
    ((answer, quote),) = judge(claim("Charles Babbage", "DESIGNED", "Analytical Engine", text))
    assert answer == "supports"
    assert len(quote) == 300 and quote.endswith("…") and text.startswith(quote[:-1])


# -- reading each chunk once, determinism -------------------------------------------------------------


class CountingExtractor(RulesExtractor):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def extract(self, chunk_text, schema, *, guidance=None):
        self.texts.append(chunk_text)
        return super().extract(chunk_text, schema, guidance=guidance)


def test_a_chunk_is_extracted_once_for_several_claims():
    one = "Charles Babbage designed the Analytical Engine. Babbage never designed the Z3."
    two = "Konrad Zuse was born in Berlin."
    claims = [
        claim("Charles Babbage", "DESIGNED", "Analytical Engine", one, chunk_id="c1"),
        claim("Konrad Zuse", "BORN_IN", "Berlin", two, chunk_id="c2"),
        claim("Charles Babbage", "DESIGNED", "Z3", one, chunk_id="c1"),
        claim("Konrad Zuse", "BORN_IN", "Paris", two, chunk_id="c2"),
        claim("Ada Lovelace", "DESIGNED", "Z3", one, chunk_id="c1"),
    ]
    counting = CountingExtractor()
    report = RulesVerifier(extractor=counting).verify(claims, SCHEMA)
    assert counting.texts == [one, two]
    assert [v.answer for v in report.verdicts] == ["supports", "supports", "contradicts", "contradicts", "silent"]
    assert [v.edge_key for v in report.verdicts] == [c.edge_key for c in claims]
    # a new call reads again (the cache lives for one call)
    RulesVerifier(extractor=counting).verify(claims[:1], SCHEMA)
    assert counting.texts == [one, two, one]


def test_results_are_deterministic_and_free():
    text = "Konrad Zuse was born in Berlin. Konrad Zuse designed the Z3. Babbage never designed the Z3."
    claims = [claim(s, r, o, text) for s, r, o in [
        ("Konrad Zuse", "BORN_IN", "Paris"), ("Konrad Zuse", "DESIGNED", "Z3"), ("Charles Babbage", "DESIGNED", "Z3"),
        ("Ada Lovelace", "DESIGNED", "Z3")]]
    verifier = RulesVerifier()
    first = verifier.verify(claims, SCHEMA)
    assert verifier.verify(claims, SCHEMA) == first
    assert RulesVerifier().verify(claims, SCHEMA).model_dump() == first.model_dump()
    assert (first.calls, first.failures, first.cost_usd, first.usage.total_tokens) == (0, 0, 0.0, 0)
    assert RulesVerifier().verify([], SCHEMA) == VerificationReport()


# -- models -------------------------------------------------------------------------------------------


def test_models_forbid_extra_fields_and_bound_quotes():
    c = claim("Konrad Zuse", "BORN_IN", "Berlin", "x")
    with pytest.raises(ValidationError, match="Extra inputs"):
        Claim(**c.model_dump(), confidence=0.5)
    with pytest.raises(ValidationError, match="subject_type"):
        Claim(**{**c.model_dump(), "subject_type": "not an identifier"})
    with pytest.raises(ValidationError, match="300 characters"):
        Verdict(edge_key="e", chunk_id="c", answer="supports", quote="x" * 301, verifier="rules")
    with pytest.raises(ValidationError, match="answer"):
        Verdict(edge_key="e", chunk_id="c", answer="maybe", verifier="rules")


# -- registry -----------------------------------------------------------------------------------------


def test_the_registry_builds_both_kinds():
    assert VERIFIER_KINDS == get_args(VerifierKind) == tuple(_VERIFIERS) == ("rules", "llm")
    rules = make_verifier("rules")
    assert isinstance(rules, RulesVerifier) and isinstance(rules, Verifier) and rules.name == "rules"
    assert isinstance(make_verifier(), RulesVerifier)
    counting = CountingExtractor()
    assert make_verifier("rules", extractor=counting).extractor is counting
    llm = make_verifier("llm", model="openai/some-model", api_base="http://127.0.0.1:9/v1", concurrency=2)
    assert isinstance(llm, LLMVerifier) and isinstance(llm, Verifier)
    assert (llm.name, llm.concurrency) == ("llm:openai/some-model", 2)
    assert isinstance(make_verifier(model="openai/some-model"), LLMVerifier)


def test_the_registry_rejects_unknown_kinds_and_options():
    with pytest.raises(KgrValidationError,
                       match=r"^verifier: unknown verifier kind 'oracle'; choose one of: rules, llm$"):
        make_verifier("oracle")  # type: ignore[arg-type]
    with pytest.raises(KgrValidationError, match="the llm verifier needs a model"):
        make_verifier("llm")
    with pytest.raises(KgrValidationError, match="the rules verifier takes no option model"):
        make_verifier("rules", model="openai/x")
    with pytest.raises(KgrValidationError, match="the llm verifier takes no option temprature"):
        make_verifier("llm", model="openai/x", temprature=0)
    with pytest.raises(KgrValidationError, match="concurrency must be at least 1"):
        make_verifier("llm", model="openai/x", concurrency=0)
