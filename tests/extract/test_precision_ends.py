"""Rules made from the third sample's errors and unannotated tuning text once the fourth (blind)
sample was committed (issue 32): one reading per trigger voice, which end a name may be
(:mod:`kgr.extract.ends`), "License:" labels, and guesses that are no names.

These tests check the reading rules, so the extractor runs with ``abstain=False``: abstention by path
(issue 32, seventh round) is tested in ``test_abstention.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.extract.cues import mask_markup
from kgr.extract.ends import readings
from kgr.extract.guesses import find_guesses
from kgr.extract.rules import RulesExtractor
from kgr.model.schema import load_schema

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "data" / "extract" / "schema.json")
WIDEN = ["Candidate entity mentions not extracted yet: extract more"]  # what the density tool asks


def triples(text: str, title: str | None = None) -> set[tuple[str, str, str]]:
    r = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=WIDEN, title=title)
    return {(p.subject, rel, p.object) for rel, ps in r.kg.relations.items() for p in ps}


def guessed(text: str) -> list[str]:
    return [g.name for g in find_guesses(text, mask_markup(text), [], {0}, {0})]


def test_the_agent_of_a_passive_trigger_is_after_by():
    assert readings("DEVELOPED_BY", True) == ["forward"] and readings("DESIGNED", True) == ["reversed"]
    # before: Reilly DEVELOPED_BY Python Cookbook (the types allowed the backwards reading)
    assert triples("See the Python Cookbook, published by O'Reilly.") == set()
    assert triples("Samba is now developed by the Samba Team.") == {("Samba", "DEVELOPED_BY", "Samba Team")}


@pytest.mark.parametrize("text, title", [
    ("Since September 2002 it has been maintained by the participants in the pkg-alsa project.", "alsa-lib"),
    ("Building from a Git checkout additionally requires the Autotools suite.", None),     # object of "from"
    ("Key exchange support for the X25519 and X448 key types.", "EVP_KEYEXCH-X25519"),    # no verb owns "support"
    ("Sorted Containers is an Apache2 licensed containers library, written in pure-Python.", None),
    ("SystemVerilog parser supports IEEE Std 1800-2017 keywords.", "ctags"),              # a component
    ("Since GnuTLS version 3.1.10, the core library has been released under the GNU Lesser General Public License.",
     "gnutls"),
])
def test_a_name_that_is_not_the_subject(text, title):
    assert {t for t in triples(text, title) if t[0] not in (title, "Sorted Containers")} == set()


@pytest.mark.parametrize("text", [
    "The EVP_KDF-TLS1_PRF algorithm implements the PRF used by TLS versions up to 1.2.",  # a participle before
    "gcc-4.1 and newer compilers do support the long double datatype with 128bit on the alpha.",  # a preposition
    "It supports the same conventions as the Unix getopt() function.",                   # "the same … as"
    "dpkg supports new options that enable more fine-grained retrieval of information.",  # a relative clause
])
def test_a_name_that_is_not_the_object(text):
    assert triples(text, "x") == set()


def test_a_list_between_trigger_and_object_is_read():
    assert ("libnss3", "SUPPORTS", "TLS") in triples("It can support SSLv2 and v4, TLS, PKCS #5 and S/MIME.", "libnss3")


def test_a_license_label_names_only_its_expression():
    # before: the GPL named in the licence text after the label was read too, and "This file" was not heard
    assert triples("License: GPL-3+ On Debian machines the full text of the GNU General Public License version 3 "
                   "can be found in the file /usr/share/common-licenses/GPL-3.", "vim") == {
        ("vim", "LICENSED_UNDER", "GPL-3.0")}
    assert triples("License: GPL-2+-or-X11 This file is dual-licensed: you can use it either under the terms of "
                   "the GPL or the X11 license, at your option.", "Linux kernel") == set()
    assert triples("2007-2008, CC Computer Consultants GmbH License: GPL-2", "iptables") == {
        ("iptables", "LICENSED_UNDER", "GPL-2.0")}
    assert triples("The above is the version of the MIT \"Expat\" License used by X.org:", "wayland") == set()


@pytest.mark.parametrize("text, name", [
    ("you can redistribute it and/or modify it", "and/or"),           # words joined by a slash
    ("Read/write support for Maildir", "Read/write"),
    ("lib/support/plausible.c and debugfs/xattrs.c", "debugfs/xattrs.c"),  # paths
    ("a tmpfs filesystem mounted at /dev/shm", "dev/shm"),
    ("derivative of libjpeg v6b developed by Miyasaka Masaru", "v6b"),  # a version
    ("an Apache2 licensed library", "Apache2"),
    ("a simple BaseHTTPServer that supports WSGI", "BaseHTTPServer"),  # a kind of thing, after "a"
    ("All other forms of LOCK require table-level UPDATE privileges", "LOCK"),  # shouted words
])
def test_no_guess(text, name):
    assert name not in guessed(text)


def test_legal_names_and_run_on_names_are_no_ends():
    # "Runtime Library Exception" is a licence term, not software published by the FSF
    assert triples("You are granted additional permissions described in the GCC Runtime Library Exception, "
                   "version 3.1, as published by the Free Software Foundation.") == set()
    # "X Window System-specific" and "C" of "C++11" are no mentions of X11 and C
    assert triples("This file is a component of an X Window System-specific implementation of Xcms.") == set()
    assert not {t for t in triples("gcc-5 now provides a stable libcxx11 ABI, and stable support for C++11.")
                if t[2] == "C"}
    assert triples("The libgnat Ada support library and libgnat-util12 library.") == set()  # "support library"
