"""Rules made from the fifth sample's errors and misses (issue 32, its fifth round: the fifth sample
became tuning material). Each case is a real sentence of a committed sample (its id in the comment).

Precision: a known name after a capitalised word inside the sentence ends a longer unknown name
(`kgr.extract.mentions.ends_longer`), a name after "other" modifies a noun, a plural noun before
"are" is the subject, a changelog line label names another subject than the document.
Recall: subjectless entries that open with the relation carry the title, "Added X support", the
free-software licence notice, the "License" heading.

These tests check the reading rules, so the extractor runs with ``abstain=False``: abstention by path
(issue 32, seventh round) is tested in ``test_abstention.py``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kgr.extract import lexicon
from kgr.extract.rules import RulesExtractor
from kgr.model.schema import load_schema

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "data" / "extract" / "schema.json")
WIDEN = ["Candidate entity mentions not extracted yet: extract more"]  # what the density tool asks


def triples(text: str, title: str | None = None) -> set[tuple[str, str, str]]:
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=WIDEN, title=title)
    return {(p.subject, rel, p.object) for rel, ps in r.kg.relations.items() for p in ps}


# -- precision --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,title", [
    ("* Added support for Kernel TLS (KTLS).", "openssl"),                 # fifth cdv64
    ("* Added support for Linux Kernel TLS data-path.", "libssl3"),       # fifth cdv58
])
def test_a_known_name_after_a_capitalised_word_ends_a_longer_name(text, title):
    found = triples(text, title)
    assert not any(o in ("TLS", "Kernel TLS", "Linux Kernel TLS") for _, _, o in found), found
    # the rule, not the sentence: the same entry naming TLS alone is read
    assert (title, "SUPPORTS", "TLS") in triples("* Added support for TLS 1.3.", title)


def test_a_title_case_heading_word_is_no_part_of_a_name():
    # "The" before a name is no name word (fifth rqv45: "## License The MIT License (MIT)")
    assert ("libcbor0.8", "LICENSED_UNDER", "MIT") in triples("## License The MIT License (MIT)", "libcbor0.8")


def test_a_name_after_other_modifies_a_noun():
    text = "`Understanding how pip compares to other package managers, and how pip supports other Python packaging tools`_"
    assert ("pip", "SUPPORTS", "Python") not in triples(text, "python3-pip")  # fifth ddv47
    assert ("pip", "SUPPORTS", "Python") in triples("pip supports Python 3.8 and later.", "python3-pip")


def test_a_plural_noun_before_are_is_the_subject(monkeypatch):
    # first sample c8, default install (no word list: "Current" is not known to be a common word)
    monkeypatch.setenv("KGR_NO_LEXICON", "1")
    lexicon._frequencies.cache_clear()  # noqa: SLF001 - the word list is read once per process
    try:
        text = ("Current releases are licensed under the SIL Open Font License, Version 1.1, but do not include "
                "the Liberation Sans Narrow font anymore due to conflicting licenses.")
        assert not any(s == "Current" for s, _, _ in triples(text))
        assert ("Werkzeug", "LICENSED_UNDER", "BSD") in triples("Werkzeug is licensed under the BSD license.")
    finally:
        monkeypatch.undo()
        lexicon._frequencies.cache_clear()  # noqa: SLF001


def test_a_line_label_names_another_subject():
    # fifth cdv17: the entry speaks of pstree, not of the psmisc document
    found = triples("- pstree: added support for UTF-8 line drawing characters (adapted a patch by Johan Myreen)", "psmisc")
    assert not any(s == "psmisc" for s, _, _ in found), found
    assert ("psmisc", "SUPPORTS", "UTF-8") in triples("- added support for UTF-8 line drawing characters", "psmisc")


# -- recall -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,title,triple", [
    ("Requires Java 7, supports Java 8, 9, 10.", "libcommons-lang3-java",
     ("libcommons-lang3-java", "SUPPORTS", "Java")),                                   # fifth cdv6
    ("* Support for UTF-8 in DAFSA data", "libpsl5", ("libpsl5", "SUPPORTS", "UTF-8")),  # fifth cdv13
    ("* Make compatible with Python 2.5 on 64-bit platforms.", "crcmod", ("crcmod", "SUPPORTS", "Python")),  # cdv54
    ("- add support for C++Builder 3 and Delphi 3 in contrib/delphi2 (Davide Moretti)", "zlib1g-dev",
     ("zlib1g-dev", "SUPPORTS", "C++Builder")),                                         # fifth cdv5: lowercase
])
def test_a_subjectless_entry_that_opens_with_the_relation_carries_the_title(text, title, triple):
    assert triple in triples(text, title)
    assert triple not in triples(text)  # no title, no subject


@pytest.mark.parametrize("text,title,triple", [
    ("- Added official Python 3.6 support.", "google-auth-library-python",
     ("google-auth-library-python", "SUPPORTS", "Python")),                             # fifth cdv59
    ("- Fixed TLS support on Windows.", "libcups2", ("libcups2", "SUPPORTS", "TLS")),  # fifth cdv56
    ("- Python 3.12 support (Thanks Peter!)", "jedi", ("jedi", "SUPPORTS", "Python")),  # third rdy6
])
def test_added_x_support_states_the_title_supports_x(text, title, triple):
    assert triple in triples(text, title)


@pytest.mark.parametrize("text,title", [
    ("JSON support files from the `JSON Schema Specifications <https://json-schema.org/specification.html>`_ "
     "(metaschemas, vocabularies, etc.)", "jsonschema-specifications"),   # "support" modifies "files"
    ("_Python 2 support policy: https://pip.pypa.io/en/latest/development/release-process/", "pip"),
    ("* Python 2 support", "msgpack"),  # a topic: the entries under it say "no longer supports Python 2"
])
def test_support_as_a_modifier_or_a_topic_states_nothing(text, title):
    # unannotated PyPI READMEs (site-packages METADATA), read when checking the rule above
    assert not triples(text, title)


def test_a_dropped_feature_is_not_supported():
    assert not triples("- Drop Python 2.7 support.", "jedi")
    # a negation after a comma is another clause (fifth cdv0, gold: blinker SUPPORTS Python)
    assert ("python3-blinker", "SUPPORTS", "Python") in triples("- Verified Python 3.2 support, no changes needed.",
                                                                 "python3-blinker")


@pytest.mark.parametrize("text,title,triple", [
    ("Libgpg-error is free software; you can redistribute it and/or modify it under the terms of the GNU Lesser "
     "General Public License as published by the Free Software Foundation; either version 2.1 of the License, or "
     "(at your option) any later version.", "libgpg-error-dev", ("Libgpg-error", "LICENSED_UNDER", "LGPL")),  # rqv17
    ("The GNU MPFR Library is free software; you can redistribute it and/or modify it under the terms of the GNU "
     "Lesser General Public License as published by the Free Software Foundation; either version 3 of the License, "
     "or (at your option) any later version.", "libmpfr6", ("GNU MPFR Library", "LICENSED_UNDER", "LGPL")),  # rdv48
    ("This program is free software: you can redistribute it and/or modify it under the terms of the GNU General "
     "Public License as published by the Free Software Foundation, either version 3 of the License, or (at your "
     "option) any later version.", "patch", ("patch", "LICENSED_UNDER", "GPL")),                              # rdv68
    ("Bash is free software, distributed under the terms of the [GNU] General Public License as published by the "
     "Free Software Foundation, version 3 of the License (or any later version).", "bash",
     ("Bash", "LICENSED_UNDER", "GPL")),                                                                      # rdv21
])
def test_the_free_software_notice_names_its_licence(text, title, triple):
    assert triple in triples(text, title)


def test_a_notice_about_a_part_gives_nothing():
    # third ldy28: the scripts are a part of the llvm package
    text = ("These scripts are free software; you can redistribute it and/or modify it under the terms of the GNU "
            "General Public License as published by the Free Software Foundation; either version 2, or (at your "
            "option) any later version.")
    assert not triples(text, "llvm")


def test_a_license_heading_names_the_documents_licence():
    assert ("libcbor0.8", "LICENSED_UNDER", "MIT") in triples("## License The MIT License (MIT)", "libcbor0.8")  # rqv45
    # as `kgr ingest` reads a README: the heading is a sentence of its own
    readme = "# libcbor\n\nA CBOR library.\n\n## License\n\nThe MIT License (MIT)\n\nCopyright (c) 2014 Pavel.\n"
    assert ("libcbor", "LICENSED_UNDER", "MIT") in triples(readme, "libcbor")
    assert not triples("## License\n\nSome files are under the BSD license.\n", "libcbor")


@pytest.mark.parametrize("line", [
    "=" * 20_000,                                    # the notice's opening: a run of non-word characters
    "!" * 20_000 + " is free software; you can redistribute it",
    "License" + " " * 20_000 + "x",                  # the "License" heading
    "*" * 20_000 + " Python support" * 100,          # markup blanked to spaces before many names
    "Added " + "Python 3 support, " * 200,
    "other Python " * 300,
])
def test_the_new_rules_take_linear_time_on_a_long_line(line):
    # a first version of the notice pattern took 80 s on 30,000 "=" (main: 0.1 s)
    t0 = time.perf_counter()
    RulesExtractor(abstain=False).extract(line, SCHEMA, guidance=WIDEN, title="pkg")
    assert time.perf_counter() - t0 < 5.0
