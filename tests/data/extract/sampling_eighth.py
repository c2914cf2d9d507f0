"""Sampling of sample_eighth.jsonl (run once, seed 8888, before any annotation; see README.md).

An eighth blind sample, from four kinds of text on this machine that no earlier sample (1-7) read
(none of their source lines names ``~/.m2``, ``/usr/lib/node_modules``, ``/usr/local/go`` or
``~/.rustup``), all outside Debian's and Python's files:

- ``pom``: the ``<description>`` of the Maven POMs in ``~/.m2/repository`` (Java libraries and
  Maven plugins; only files older than 2026-11-27 13:00 UTC, so that jars downloaded while the
  sample was drawn do not change it), one document per ``groupId:artifactId`` (its highest version
  by path order); title the POM's ``<name>``, else its ``artifactId``; licence the ``<licenses>``
  names of the POM or, if it has none, of its nearest parent POM in the repository;
- ``npmdoc``: the Markdown files (READMEs and documentation pages, not changelogs or licences) of npm
  and its bundled dependencies under ``/usr/lib/node_modules``; title the ``name`` of the nearest
  ``package.json`` above the file, licence its ``license``; at most 8 sentences per title (npm's own
  ``docs/content`` has ~90 pages);
- ``godoc``: package documentation comments of the Go 1.26.8 distribution (``/usr/local/go/src``:
  standard library, commands, vendored ``golang.org/x`` packages; ``testdata`` left out): the comment
  directly above a ``package`` clause in each non-test file, one document per package directory,
  title its import path (``net/http``, ``cmd/vet``); licence BSD-3-Clause (the Go LICENSE);
- ``rustdoc``: the Rust 1.95.0 toolchain's documentation (``~/.rustup/toolchains/1.95.0-*/share/doc``):
  the mdBook manuals in HTML (The Rust Programming Language, the Cargo Book, the rustc and rustdoc
  books, the Reference, the Rustonomicon, the Edition Guide, the Embedded Rust Book, Rust by Example,
  Clippy; not the generated API pages of ``std``/``core``/``alloc``, nor ``print.html``), the release
  notes ``releases.md`` (one document per version) and the ``README.md`` files; title the book's name
  (the part of the page's ``<title>`` after " - "), ``Rust`` for the release notes, the directory of a
  README; licence MIT OR Apache-2.0 (the toolchain's COPYRIGHT); at most 8 sentences per title.

Markdown (npm, Rust ``.md``) is read as a renderer shows it: inline links ``[text](url)`` and
reference links ``[text][ref]`` become their text, link definitions, HTML comments and front matter
are dropped. HTML pages are stripped of tags with the seventh sample's ``html_text`` (``pre``, scripts,
styles, the head dropped). Every text then goes through the fifth sample's paragraph splitter (drops
fenced and indented code, reST directives, heading underlines) and the first sample's sentence filter
(``good``: 6-60 words, no ``{}<>=``, URLs, prompts, ``::`` or ``...``, mostly letters), split with
``kgr.text.sentences``; each sentence keeps the sentences of its paragraph before it (at most 3) as
``context``. Sentences of samples 1-7 are excluded (by text); at most 2 sentences per document; no
text twice.

Strata, per kind, drawn with the earlier samples' ``draw`` (documents visited in a seeded random
order, one random qualifying sentence of each): *random*, *cue* (a schema name or trigger phrase, as
before) and *dense*: a trigger phrase (the schema's triggers plus ``DENSE_EXTRA``:
"uses", "port of", "bindings for", "wrapper for", "implementation", "library for", "compliant") AND a
schema name or the document's title (or its last path element: ``http`` for ``net/http``) in the same
sentence. Asked for (random, cue, dense): ``pom`` 16, 20, 14 (its descriptions are short: 200
qualifying sentences, 14 of them dense, in 313 POMs); ``npmdoc`` 10, 10, 32; ``godoc`` and ``rustdoc``
10, 10, 36; 214 in all, all ``blind``. The kinds are drawn in that order, each kind's strata dense first,
from one ``random.Random(8888)``.

A second draw (``--extend``, seed 8889, run once after the first draw was annotated and committed with
98 triples, short of the ~100 asked for, before any extractor ran on either) adds 30 *dense* ``godoc``
sentences and 16 *cue* ``pom`` sentences (the two kind/stratum pairs that gave the most triples a
sentence and have sentences left; ``pom`` has no dense sentence left), none of the first draw's, with
the cap of 2 a document counted over both draws; its rows are appended to the file (ids with ``f``
where the first draw's have ``e``).

    python tests/data/extract/sampling_eighth.py [OUT_DIR]            # writes OUT_DIR/sample_eighth.jsonl
    python tests/data/extract/sampling_eighth.py --extend [OUT_DIR]   # writes OUT_DIR/sample_eighth_ext.jsonl
"""
import ast
import glob
import gzip
import html.parser  # noqa: F401 - used by the seventh's html_text, compiled below
import json
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 8888
#: sentences asked for per stratum and kind: the POM descriptions are short (200 qualifying sentences, 14 dense
#: in all), so that kind takes every dense one and more cue and random sentences; Go and Rust give more dense ones
#: (drawn in this order, dense first, so that random and cue sentences do not use up the few dense ones)
STRATA = {"pom": (("dense", 14), ("cue", 20), ("random", 16)),
          "npmdoc": (("dense", 32), ("cue", 10), ("random", 10)),
          "godoc": (("dense", 36), ("cue", 10), ("random", 10)),
          "rustdoc": (("dense", 36), ("cue", 10), ("random", 10))}
EARLIER = ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl", "sample_fourth.jsonl", "sample_fifth.jsonl",
           "sample_sixth.jsonl", "sample_seventh.jsonl")
DENSE_EXTRA = ("uses", "port of", "bindings for", "binding for", "wrapper for", "wrapper around", "implementation",
               "library for", "compliant")
M2 = os.path.expanduser("~/.m2/repository")
M2_BEFORE = datetime(2026, 11, 27, 13, 0, tzinfo=timezone.utc).timestamp()
NODE = "/usr/lib/node_modules"
GO = "/usr/local/go/src"
RUST = sorted(glob.glob("/root/.rustup/toolchains/1.95.0-*/share/doc"))[0]
RUST_LICENSE = "MIT OR Apache-2.0 (Rust 1.95.0 toolchain COPYRIGHT)"


def _functions(script, names, ns):
    """Compile the top-level functions/classes ``names`` of an earlier sampling script into namespace
    ``ns`` (its module-level draw is not run)."""
    tree = ast.parse(open(os.path.join(HERE, script), encoding="utf-8").read())
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    missing = set(names) - {n.name for n in defs}
    if missing:
        raise SystemExit(f"{script}: no function {sorted(missing)}")
    exec(compile(ast.Module(body=defs, type_ignores=[]), script, "exec"), ns)  # noqa: S102 - our own file


EXTEND = "--extend" in sys.argv
#: the second draw (``--extend``): kind -> (stratum, sentences asked for)
EXTEND_N = {"pom": ("cue", 16), "godoc": ("dense", 30)}
rng = random.Random(SEED + 1 if EXTEND else SEED)
ns = {"glob": glob, "gzip": gzip, "os": os, "re": re, "subprocess": subprocess, "sentence_spans": sentence_spans,
      "rng": rng, "html": html}
_functions("sampling_context.py", ["_alt", "cue", "good", "mentions_title"], ns)
_functions("sampling_third.py", ["_read"], ns)
_functions("sampling_fifth.py", ["clean", "para_sentences", "draw", "_key"], ns)
_functions("sampling_seventh.py", ["_Text", "html_text"], ns)
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
DENSE_TRIG = re.compile(ns["_alt"](triggers | set(DENSE_EXTRA)), re.I)
good, cue, mentions_title, _read = ns["good"], ns["cue"], ns["mentions_title"], ns["_read"]
para_sentences, draw, html_text = ns["para_sentences"], ns["draw"], ns["html_text"]

old = [json.loads(line) for f in EARLIER for line in open(os.path.join(HERE, f), encoding="utf-8")]
old_text = {" ".join(r["text"].split()) for r in old}


def markdown_text(raw):
    """Markdown as a renderer shows it: links become their text; link definitions, HTML comments and
    YAML front matter are dropped (code blocks are left to the fifth's ``clean``)."""
    raw = re.sub(r"\A---\n.*?\n---\n", "", raw, flags=re.S)
    raw = re.sub(r"<!--.*?-->", "", raw, flags=re.S)
    raw = re.sub(r"(?m)^\s*\[[^\]]+\]:\s*\S+.*$", "", raw)
    raw = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    raw = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", raw)
    return raw


# ---------------------------------------------------------------------------------------------- pom
def _tag(el, name):
    for child in el:
        if child.tag.split("}")[-1] == name:
            return child
    return None


def _pom(path):
    try:
        return ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None


def _pom_license(root, depth=0):
    lic = _tag(root, "licenses")
    found = [(_tag(x, "name").text or "").strip() for x in lic if _tag(x, "name") is not None] if lic is not None else []
    if found:
        return ", ".join(" ".join(f.split()) for f in found)
    parent = _tag(root, "parent")
    if parent is None or depth > 4:
        return ""
    g, a, v = (((_tag(parent, k).text or "").strip() if _tag(parent, k) is not None else "")
               for k in ("groupId", "artifactId", "version"))
    p = os.path.join(M2, *g.split("."), a, v, f"{a}-{v}.pom")
    proot = _pom(p) if os.path.isfile(p) else None
    return _pom_license(proot, depth + 1) if proot is not None else ""


def pom_docs():
    files = sorted(f for f in glob.glob(f"{M2}/**/*.pom", recursive=True) if os.path.getmtime(f) < M2_BEFORE)
    best = {}
    for f in files:
        root = _pom(f)
        if root is None or _tag(root, "description") is None:
            continue
        art = _tag(root, "artifactId")
        grp = _tag(root, "groupId")
        if grp is None and _tag(root, "parent") is not None:
            grp = _tag(_tag(root, "parent"), "groupId")
        key = f"{grp.text.strip() if grp is not None and grp.text else ''}:{art.text.strip() if art is not None else ''}"
        best[key] = (f, root)  # sorted paths: the last version wins
    for key, (f, root) in sorted(best.items()):
        desc = (_tag(root, "description").text or "").strip()
        if not desc:
            continue
        name = _tag(root, "name")
        title = " ".join(name.text.split()) if name is not None and name.text and "${" not in name.text \
            else key.split(":")[1]
        lic = _pom_license(root)
        lic = f"{lic} (POM {key})" if lic else "none named in the POM or its parents"
        # a description is one paragraph; its XML indentation is not code
        body = "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", desc))
        yield f"Maven POM {os.path.relpath(f, M2)} (~/.m2/repository)", lic, title, para_sentences(body)


# ------------------------------------------------------------------------------------------ npmdoc
def _package_json(path):
    d = os.path.dirname(path)
    while d.startswith(NODE) and d != NODE:
        pj = os.path.join(d, "package.json")
        if os.path.isfile(pj):
            try:
                meta = json.load(open(pj, encoding="utf-8"))
            except ValueError:
                meta = {}
            if meta.get("name"):
                return meta
        d = os.path.dirname(d)
    return {}


def npm_docs():
    files = sorted(f for f in glob.glob(f"{NODE}/**/*.md", recursive=True)
                   if not re.search(r"(?i)(changelog|changes|history|license|licence|security|contributing)[^/]*$", f))
    for f in files:
        meta = _package_json(f)
        if not meta:
            continue
        lic = meta.get("license") or "see the package's licence file"
        lic = lic if isinstance(lic, str) else json.dumps(lic)
        yield (f"npm package {meta['name']} {meta.get('version', '')}, {os.path.relpath(f, NODE)} ({NODE})",
               f"{lic} ({meta['name']} package.json)", meta["name"], para_sentences(markdown_text(_read(f))))


# ------------------------------------------------------------------------------------------- godoc
def _package_comment(text):
    """The comment directly above the ``package`` clause (``//`` lines or one ``/* */`` block)."""
    lines = text.splitlines()
    idx = next((i for i, line in enumerate(lines) if re.match(r"package \w+", line)), None)
    if not idx:
        return ""
    j = idx - 1
    if lines[j].rstrip().endswith("*/"):
        k = j
        while k >= 0 and "/*" not in lines[k]:
            k -= 1
        block = "\n".join(lines[k:j + 1])
        return block[block.index("/*") + 2:block.rindex("*/")]
    out = []
    while j >= 0 and lines[j].startswith("//"):
        out.append(lines[j])
        j -= 1
    out = [re.sub(r"^// ?", "", line) for line in reversed(out)]
    if out and re.match(r"(go:build|\+build|Code generated)", out[0]):
        return ""
    return "\n".join(out)


def go_docs():
    dirs = {}
    for f in sorted(glob.glob(f"{GO}/**/*.go", recursive=True)):
        if f.endswith("_test.go") or "/testdata/" in f:
            continue
        c = _package_comment(_read(f))
        if c.strip():
            dirs.setdefault(os.path.dirname(f), []).append(c)
    for d, comments in sorted(dirs.items()):
        title = os.path.relpath(d, GO)
        title = re.sub(r"^(?:cmd/)?vendor/", "", title)  # vendored golang.org/x packages: their import path
        yield (f"Go 1.26.8 package {os.path.relpath(d, GO)}, package comment (/usr/local/go/src)",
               "BSD-3-Clause (Go LICENSE)", title, para_sentences("\n\n".join(comments)))


# ----------------------------------------------------------------------------------------- rustdoc
def rust_docs():
    html_dir = os.path.join(RUST, "rust", "html")
    books = ("book", "cargo", "rustc", "rustdoc", "reference", "nomicon", "edition-guide", "embedded-book",
             "rust-by-example", "clippy")
    for b in books:
        for f in sorted(glob.glob(f"{html_dir}/{b}/**/*.html", recursive=True)):
            if os.path.basename(f) in ("print.html", "toc.html", "404.html") or "/2018-edition/" in f:
                continue
            raw = _read(f)
            t = re.search(r"<title>([^<]*)</title>", raw)
            title = t.group(1).rsplit(" - ", 1)[-1].strip() if t and " - " in t.group(1) else b
            yield (f"Rust 1.95.0 documentation {os.path.relpath(f, RUST)} (~/.rustup toolchain share/doc)",
                   RUST_LICENSE, title, para_sentences(html_text(raw)))
    notes = _read(os.path.join(html_dir, "releases.md")) + _read_rest(os.path.join(html_dir, "releases.md"))
    parts = re.split(r"(?m)^(Version \d[\d.]* \([\d-]+\))\n=+\n", notes)
    for head, body in zip(parts[1::2], parts[2::2]):
        yield (f"Rust 1.95.0 documentation rust/html/releases.md, {head} (~/.rustup toolchain share/doc)",
               RUST_LICENSE, "Rust", para_sentences(markdown_text(body)))
    for f in sorted(glob.glob(f"{RUST}/*/README.md")):
        yield (f"Rust 1.95.0 documentation {os.path.relpath(f, RUST)} (~/.rustup toolchain share/doc)", RUST_LICENSE,
               os.path.basename(os.path.dirname(f)), para_sentences(markdown_text(_read(f))))


def _read_rest(path):
    """``_read`` stops at 80,000 characters; the release notes go on (the whole file)."""
    try:
        return open(path, encoding="utf-8", errors="replace").read()[80000:]
    except OSError:
        return ""


def _dense(s, t):
    short = t.split("/")[-1]
    return DENSE_TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t)
                                                  or (len(short) > 2 and mentions_title(s, short)))


TESTS = {"random": lambda s, t: True, "cue": lambda s, t: cue(s), "dense": _dense}
#: kind, id letter, documents, most sentences from one title (None: only the 2 per document)
KINDS = (("pom", "j", pom_docs, None), ("npmdoc", "n", npm_docs, 8), ("godoc", "g", go_docs, None),
         ("rustdoc", "r", rust_docs, 8))


def _first_draw():
    """The committed first draw's rows (``--extend`` adds to it and counts its documents)."""
    return [json.loads(line) for line in open(os.path.join(HERE, "sample_eighth.jsonl"), encoding="utf-8")][:213]


def main(out_dir):
    first = _first_draw() if EXTEND else []
    taken = set(old_text) | {" ".join(r["text"].split()) for r in first}
    rows = []
    for kind, letter, make, per_title in KINDS:
        if EXTEND and kind not in EXTEND_N:
            continue
        docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)]) for src, lic, title, sents in make()]
        per_doc: dict = {}
        for r in first:  # the caps (2 a document, per_title a title) hold over both draws
            if r["kind"] == kind:
                per_doc[r["source"]] = per_doc.get(r["source"], 0) + 1
                per_doc[("title", r["title"])] = per_doc.get(("title", r["title"]), 0) + 1
        strata = (EXTEND_N[kind],) if EXTEND else STRATA[kind]
        picked = [(name, c) for name, n in strata for c in draw(docs, n, TESTS[name], taken, per_doc, per_title)]
        order = list(range(len(picked)))
        rng.shuffle(order)
        for k, i in enumerate(order):
            stratum, (src, lic, title, s, c) = picked[i]
            rows.append({"id": f"{letter}{dict(random='', cue='q', dense='d')[stratum]}{'f' if EXTEND else 'e'}{k}",
                         "kind": kind,
                         "stratum": stratum, "split": "blind", "source": src, "source_license": lic, "title": title,
                         "context": c, "text": s, "triples": []})
        print(kind, "documents", len(docs), "with sentences", sum(1 for d in docs if d[3]), "picked", len(picked),
              {n: sum(1 for p in picked if p[0] == n) for n, _ in strata}, file=sys.stderr)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sample_eighth_ext.jsonl" if EXTEND else "sample_eighth.jsonl"), "w",
              encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--extend"]
    main(args[0] if args else "/tmp/xe")
