"""Sampling of sample_context.jsonl (run once, seed 3232, before any annotation; see README.md).

Four kinds of real text on a Debian 12 machine: PyPI long descriptions (METADATA), Debian changelog
entries, Debian package descriptions (/var/lib/dpkg/status) and man pages (DESCRIPTION sections of
man1/man8, rendered with man(1)). Each sentence keeps its document's title (the PyPI project name,
the Debian source or binary package name, the command a man page documents) and the sentences of
its paragraph before it (at most 3, its *context*). Sentences of the first sample (sample.jsonl)
are excluded, and so are the documents it quoted for the same kind where enough text remains; at
most 2 sentences per document, no text twice. Per kind, three strata, each drawn by visiting the
documents in a random order and taking one random qualifying sentence of each: 25 *random*
sentences, 15 *cue* sentences (naming a schema name or a trigger phrase) and 20 *dense* sentences
(a trigger phrase and a schema name or the document's title); then a seeded shuffle puts 15 of the
60 in the tune split and the other 45 in the blind split.
"""
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
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/xb"
rng = random.Random(3232)
schema = json.load(open(os.path.join(HERE, "schema.json")))
old = [json.loads(line) for line in open(os.path.join(HERE, "sample.jsonl"))]
old_text = {" ".join(r["text"].split()) for r in old}
old_src = {(r["kind"], r["source"].split(" (")[0]) for r in old}


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


def readme_docs():
    sp = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages"
    for md in sorted(glob.glob(sp + "/*.dist-info/METADATA")):
        dist = md.split("/")[-2]
        if dist.startswith(("kgr", "pykeen", "recordlinkage")):
            continue
        txt = open(md, encoding="utf-8", errors="replace").read()
        head, _, body = txt.partition("\n\n")
        name = re.search(r"^Name: (.*)$", head, re.M).group(1).strip()
        ver = re.search(r"^Version: (.*)$", head, re.M).group(1).strip()
        lic = re.search(r"^License(?:-Expression)?: (.*)$", head, re.M)
        if lic is None:
            lic = re.search(r"^Classifier: License :: (?:OSI Approved :: )?(.*)$", head, re.M)
        lic = lic.group(1).strip() if lic else "see the package's licence file"
        src = f"PyPI package {dist.split('-')[0]} {ver}, long description (site-packages/{dist}/METADATA)"
        yield src, lic, name, para_sentences(clean_md(body))


def deb_license(pkg):
    try:
        text = open(f"/usr/share/doc/{pkg}/copyright", encoding="utf-8", errors="replace").read()
    except OSError:
        return "see the package's copyright file"
    m = re.search(r"^License: (\S.*)$", text, re.M)
    return (m.group(1).strip() + " (Debian copyright file)") if m else "see debian/copyright (Debian copyright file)"


def changelog_docs():
    for f in sorted(glob.glob("/usr/share/doc/*/changelog*.gz")):
        pkg = f.split("/")[4]
        try:
            txt = gzip.open(f, "rt", encoding="utf-8", errors="replace").read(60000)
        except Exception:  # noqa: BLE001
            continue
        head = re.match(r"^(\S+) \(", txt)
        if not head:
            continue  # upstream changelogs have no source package line
        items, cur = [], None
        for raw in txt.splitlines():
            m = re.match(r"^\s*[*+-] (.*)$", raw)
            if m:
                if cur:
                    items.append(cur)
                cur = m.group(1).strip()
            elif cur is not None and raw.strip() and raw.startswith("    ") and not re.match(r"^\s*--", raw):
                cur += " " + raw.strip()
            else:
                if cur:
                    items.append(cur)
                cur = None
        if cur:
            items.append(cur)
        items = [(" ".join(it.split()), "") for it in items if 5 <= len(it.split()) <= 45]
        yield f"Debian bookworm /usr/share/doc/{pkg}/{os.path.basename(f)}", deb_license(pkg), head.group(1), items


def description_docs():
    st = open("/var/lib/dpkg/status", encoding="utf-8").read()
    for para in st.split("\n\n"):
        m = re.search(r"^Package: (\S+)", para, re.M)
        v = re.search(r"^Version: (\S+)", para, re.M)
        d = re.search(r"^Description: (.*)\n((?: .*\n?)*)", para, re.M)
        if not (m and d):
            continue
        body = "\n".join(line[1:] if line != " ." else "" for line in d.group(2).splitlines())
        sents = para_sentences(body)
        src = f"Debian bookworm package description of {m.group(1)} {v.group(1) if v else ''} (/var/lib/dpkg/status)"
        yield src, deb_license(m.group(1)), m.group(1), sents


def man_docs():
    pages = sorted(p for d in ("man1", "man8") for p in glob.glob(f"/usr/share/man/{d}/*")
                   if not os.path.basename(p).startswith(("gcloud", "bq", "gsutil")))
    rng.shuffle(pages)
    for p in pages[:500]:
        try:
            out = subprocess.run(["man", "-E", "UTF-8", "-P", "cat", "-l", p], capture_output=True, text=True,
                                 env={**os.environ, "MANWIDTH": "2000"}, timeout=20).stdout
        except Exception:  # noqa: BLE001
            continue
        out = re.sub(r".\x08", "", out)
        sec = re.search(r"^DESCRIPTION\s*\n(.*?)(?=^\S)", out, re.S | re.M)
        name = re.search(r"^NAME\s*\n\s*(.*?)\s+(?:-|\\-|—)\s", out, re.M)
        if not (sec and name):
            continue
        title = name.group(1).split(",")[0].strip()
        pkg = ""
        for path in (p, os.path.realpath(p)):  # alternatives (editor.1.gz) and diversions resolve to their target
            found = [line for line in subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout.splitlines()
                     if not line.startswith(("diversion by", "local diversion"))]
            if found:
                pkg = found[0].split(":")[0].strip()
                break
        src = f"Debian bookworm man page {os.path.relpath(p, '/usr/share/man')} (package {pkg or 'unknown'})"
        yield src, deb_license(pkg) if pkg else "unknown", title, para_sentences(sec.group(1))


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


STRATA = (("random", 25, lambda s, t: True),
          ("cue", 15, lambda s, t: cue(s)),
          ("dense", 20, lambda s, t: TRIG.search(s) is not None and (NAME.search(s) is not None or mentions_title(s, t))))
taken = set(old_text)
rows = []
for kind, docs in (("readme", readme_docs()), ("changelog", changelog_docs()),
                   ("description", description_docs()), ("manpage", man_docs())):
    docs = [(src, lic, title, [(s, c) for s, c in sents if good(s)]) for src, lic, title, sents in docs]
    unseen = [d for d in docs if (kind, d[0].split(" (")[0]) not in old_src]
    if sum(len(d[3]) for d in unseen) >= 600:  # enough text from documents the first sample did not quote
        docs = unseen
    per_doc: dict = {}
    picked = [(name, c) for name, n, test in STRATA for c in draw(docs, n, test, taken, per_doc)]
    order = list(range(len(picked)))
    rng.shuffle(order)
    for k, i in enumerate(order):
        stratum, (src, lic, title, s, c) = picked[i]
        rows.append({"id": f"{kind[0]}{dict(random='', cue='q', dense='d')[stratum]}x{k}", "kind": kind,
                     "stratum": stratum, "split": "blind" if k < len(picked) - 15 else "tune", "source": src,
                     "source_license": lic, "title": title, "context": c, "text": s, "triples": []})
    print(kind, "documents", len(docs), "picked", len(picked), file=sys.stderr)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "sample_context.jsonl"), "w") as fh:
    for r in rows:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
