"""Sampling of sample_fifth.jsonl (run once, seed 5555, before any annotation; see README.md).

A fifth blind sample, from files that no earlier sample nor the real-text check (``/tmp/realtext``:
43 PyPI READMEs) read, on the same Debian 12 machine, three kinds of text:

- ``readme``: README files of the Python projects bundled with the Google Cloud SDK
  (``/usr/lib/google-cloud-sdk``: gsutil's ``third_party``, vendored boto, App Engine ``lib``) and the
  long descriptions of installed packages of the other Python versions (``~/.pyenv/versions/*``),
  projects not quoted by an earlier sample nor in ``/tmp/realtext``, and the upstream README files of
  ``/usr/share/doc`` that the third sample did not quote (not ``README.Debian``);
- ``changelog``: upstream changelog files (``CHANGES*``, ``CHANGELOG*``, ``HISTORY*``, ``ChangeLog``)
  of those bundled projects and ``/usr/share/doc/*/changelog.gz`` (upstream, not Debian's);
- ``doc``: prose documentation: the bundled projects' ``docs/`` pages (reST, Markdown, text) and the
  non-README text files of ``/usr/share/doc`` (FAQs, manuals, specs, ``*.md`` / ``*.txt``).

Code blocks (indented or fenced), reST directives, heading underlines and link lines are dropped.
Each sentence keeps its document's title (the project's directory or PyPI name, the Debian package)
and the sentences of its paragraph before it (at most 3). Sentences of the earlier samples are
excluded; at most 2 sentences per document (and for ``doc`` at most 4 per project, release notes
excluded: git's 300 ``RelNotes`` files are changelogs and filled the first try of this draw), no
text twice. Per kind 70 sentences: 20 *cue* (a schema
name or trigger phrase) and 50 *dense* (a trigger phrase and a schema name or the document's title).
All sentences are ``blind``.
"""
import glob
import gzip
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/xd"
rng = random.Random(5555)
schema = json.load(open(os.path.join(HERE, "schema.json")))
old = [json.loads(line) for f in ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl", "sample_fourth.jsonl")
       for line in open(os.path.join(HERE, f))]
old_text = {" ".join(r["text"].split()) for r in old}
old_sources = {r["source"] for r in old}


def _key(name):
    return re.sub(r"[-_.\s]+", "", name.lower())


old_projects = {_key(m.group(1)) for r in old if (m := re.search(r"PyPI package (\S+)", r["source"]))}
old_projects |= {_key(os.path.basename(f)[:-3]) for f in glob.glob("/tmp/realtext/*.md")}
SDK = "/usr/lib/google-cloud-sdk"


def _alt(words):
    return r"(?<![\w-])(?:" + "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(words, key=len, reverse=True)) + r")(?![\w-])"


names = set()
for spec in schema["entity_types"].values():
    names.update(spec.get("names", []))
    for k, v in spec.get("aliases", {}).items():
        names.add(k)
        names.update(v)
triggers = {t for spec in schema["relation_types"].values() for t in spec.get("triggers", [])}
NAME = re.compile(_alt(names))
TRIG = re.compile(_alt(triggers), re.I)


def cue(s):
    return bool(NAME.search(s) or TRIG.search(s))


def good(s):
    w = s.split()
    if not (6 <= len(w) <= 60):
        return False
    if re.search(r"[{}<>=]|https?://|\$ |>>>|::|\.\.\.", s):
        return False
    return sum(c.isalpha() for c in s) >= 0.6 * len(s)


def _read(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            return fh.read(120000)
    except Exception:  # noqa: BLE001
        return ""


def clean(body):
    body = re.sub(r"(?ms)^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", "", body)  # fenced code
    body = re.sub(r"(?m)^\.\. .*$", "", body)  # reST directives and comments
    body = re.sub(r"(?m)^(    |\t).*$", "", body)  # indented code and directive bodies
    body = re.sub(r"(?m)^[=~^\"*+#-]{3,}\s*$", "", body)  # heading underlines
    return body


def para_sentences(body):
    out = []
    for para in re.split(r"\n\s*\n", clean(body)):
        spans = sentence_spans(para)
        sents = [" ".join(para[s:e].split()) for s, e in spans]
        for i, s in enumerate(sents):
            out.append((s, " ".join(sents[max(0, i - 3):i])))
    return out


def sdk_projects():
    """(project name, directory) of the Python projects bundled with the Cloud SDK."""
    dirs = sorted(glob.glob(f"{SDK}/platform/gsutil/third_party/*/") + glob.glob(f"{SDK}/platform/gsutil/gslib/vendored/*/")
                  + glob.glob(f"{SDK}/platform/google_appengine/lib/*/") + [f"{SDK}/platform/gsutil/", f"{SDK}/platform/bq/"])
    for d in dirs:
        name = os.path.basename(d.rstrip("/"))
        if _key(name) not in old_projects:
            yield name, d


def readme_docs():
    for name, d in sdk_projects():
        for f in sorted(glob.glob(d + "README*") + glob.glob(d + "*/README*")):
            if os.path.isfile(f) and not f.endswith((".py", ".pyc")):
                yield f"Google Cloud SDK {os.path.relpath(f, SDK)}", "see the project's licence file", name, para_sentences(_read(f))
    for meta in sorted(glob.glob("/root/.pyenv/versions/*/lib/python*/site-packages/*.dist-info/METADATA")):
        if "/3.11.7/" in meta:
            continue
        text = _read(meta)
        m = re.search(r"^Name:\s*(\S+)", text, re.M)
        if not m or _key(m.group(1)) in old_projects:
            continue
        head, _, body = text.partition("\n\n")
        lic = re.search(r"^License(?:-Expression)?:\s*(\S.*)$", head, re.M)
        yield (f"PyPI package {m.group(1)}, long description ({os.path.relpath(meta, '/root/.pyenv/versions')})",
               lic.group(1).strip() if lic else "see the package's metadata", m.group(1), para_sentences(body))
    for f in sorted(glob.glob("/usr/share/doc/*/README*")):
        src = f"Debian bookworm {f}"
        if os.path.isfile(f) and "Debian" not in os.path.basename(f) and src not in old_sources:
            yield src, "see the package's copyright file", f.split("/")[4], para_sentences(_read(f))


CHANGE_FILES = ("CHANGES*", "CHANGELOG*", "HISTORY*", "ChangeLog*", "Changes*", "changelog", "docs/changelog*")


def changelog_docs():
    for name, d in sdk_projects():
        for pat in CHANGE_FILES:
            for f in sorted(glob.glob(d + pat)):
                if os.path.isfile(f):
                    yield f"Google Cloud SDK {os.path.relpath(f, SDK)}", "see the project's licence file", name, para_sentences(_read(f))
    for f in sorted(glob.glob("/usr/share/doc/*/changelog.gz")):
        src = f"Debian bookworm {f}"
        if src not in old_sources:
            yield src, "see the package's copyright file", f.split("/")[4], para_sentences(_read(f))


DOC_SKIP = re.compile(r"readme|change|history|news|relnotes|release|copyright|licen[cs]e|code_of_conduct|authors|contributors|"
                      r"cacerts|requirements|sample-|version|notice|third-party|\.py", re.I)


def doc_docs():
    for name, d in sdk_projects():
        for f in sorted(glob.glob(d + "doc*/**/*", recursive=True) + glob.glob(d + "notes/*") + glob.glob(d + "*.rst")
                        + glob.glob(d + "*.md")):
            if os.path.isfile(f) and f.endswith((".rst", ".md", ".txt")) and not DOC_SKIP.search(os.path.basename(f)):
                yield f"Google Cloud SDK {os.path.relpath(f, SDK)}", "see the project's licence file", name, para_sentences(_read(f))
    for f in sorted(glob.glob("/usr/share/doc/*/*") + glob.glob("/usr/share/doc/*/*/*")):
        base = os.path.basename(f)
        if (os.path.isfile(f) and re.search(r"\.(md|txt|rst)(\.gz)?$|^FAQ", base) and not DOC_SKIP.search(base)
                and "/examples/" not in f and f"Debian bookworm {f}" not in old_sources):
            yield f"Debian bookworm {f}", "see the package's copyright file", f.split("/")[4], para_sentences(_read(f))


def draw(docs, n, test, taken, per_doc, per_title=None):
    out = []
    for _ in range(2):
        order = list(range(len(docs)))
        rng.shuffle(order)
        for i in order:
            src, lic, title, sents = docs[i]
            if per_doc.get(src, 0) >= 2 or (per_title and per_doc.get(("title", title), 0) >= per_title):
                continue
            ok = [(s, c) for s, c in sents if s not in taken and test(s, title)]
            if not ok:
                continue
            s, c = rng.choice(ok)
            taken.add(s)
            per_doc[src] = per_doc.get(src, 0) + 1
            per_doc[("title", title)] = per_doc.get(("title", title), 0) + 1
            out.append((src, lic, title, s, c))
            if len(out) == n:
                return out
    return out


def mentions_title(s, title):
    return re.search(r"(?<![\w-])" + re.escape(title) + r"(?![\w-])", s, re.I) is not None


STRATA = (("cue", 20, lambda s, t: cue(s)),
          ("dense", 50, lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))))
#: per kind: letter, documents, most sentences from one project (the doc kind: git ships hundreds of pages)
KINDS = (("readme", "r", readme_docs, None), ("changelog", "c", changelog_docs, None), ("doc", "d", doc_docs, 4))
taken = set(old_text)
rows = []
for kind, letter, make, per_title in KINDS:
    docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)]) for src, lic, title, sents in make()]
    per_doc: dict = {}
    picked = [(name, c) for name, n, test in STRATA for c in draw(docs, n, test, taken, per_doc, per_title)]
    order = list(range(len(picked)))
    rng.shuffle(order)
    for k, i in enumerate(order):
        stratum, (src, lic, title, s, c) = picked[i]
        rows.append({"id": f"{letter}{dict(cue='q', dense='d')[stratum]}v{k}", "kind": kind, "stratum": stratum,
                     "split": "blind", "source": src, "source_license": lic, "title": title, "context": c,
                     "text": s, "triples": []})
    print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "sample_fifth.jsonl"), "w") as fh:
    for r in rows:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
