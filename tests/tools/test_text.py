"""Text conventions the tools' numbers rest on (kgr.tools._text), counted by hand."""

from __future__ import annotations

from kgr.tools._text import analyze_text, split_type_words


def test_counts_of_a_small_text() -> None:
    text = "Ada Lovelace met Charles Babbage in 1833. She wrote notes, e.g. the first algorithm!"
    p = analyze_text(text)
    # words: Ada Lovelace met Charles Babbage in 1833 | She wrote notes e g the first algorithm -> 7 + 8
    assert p.word_count == 15
    # tokens: 15 words + "." + "," + "." + "." (e.g.) + "!" -> 20
    assert p.token_count == 20
    assert p.sentence_count == 2  # "e.g." does not end the sentence
    assert p.character_count == len(text)
    assert p.avg_sentence_length == 15 / 2
    assert p.mentions == ["Ada Lovelace", "Charles Babbage", "1833"]  # "She" is a function word
    assert p.technical_terms == 0


def test_sentence_rules() -> None:
    assert analyze_text("Dr. Smith arrived. He left.").sentence_count == 2
    assert analyze_text("J. Smith arrived. approx. the end").sentence_count == 1  # initial; lower-case follows
    assert analyze_text("First line\n\nsecond paragraph").sentence_count == 2
    assert analyze_text("我住在北京。你呢？").sentence_count == 2
    assert analyze_text("").sentence_count == 0
    assert analyze_text(" ... !!! ").sentence_count == 0  # no word, no sentence


def test_mentions_keep_acronyms_and_titles_whole() -> None:
    p = analyze_text("The company I.B.M. hired Dr. Smith from AT&T in New York.")
    assert p.mentions == ["I.B.M", "Dr. Smith", "AT&T", "New York"]


def test_technical_terms() -> None:
    # H2O (letters+digits), DNA (acronym), camelCase, and a 13-letter word; "Word" is not technical
    p = analyze_text("H2O DNA camelCase internationally Word")
    assert p.technical_terms == 4


def test_cjk_tokens_and_lookup() -> None:
    p = analyze_text("我住在北京。")
    assert p.token_count == 6 and p.word_count == 5
    assert p.contains("北京") and not p.contains("上海")


def test_name_lookup_is_canonical_and_whole_token() -> None:
    p = analyze_text("I.B.M. opened an office in São Paulo.")
    assert p.contains("IBM") and p.contains("ibm") and p.contains("sao paulo") is False
    assert p.contains("São Paulo")
    assert not p.contains("Pau") and p.contains_fragment("Pau")
    assert p.sentences_with("IBM") == frozenset({0})


def test_type_words() -> None:
    assert split_type_words("WORKS_AT") == ["works", "at"]
    assert split_type_words("MedicalCondition") == ["medical", "condition"]
