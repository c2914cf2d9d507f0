"""Sampling of sample_ninth.jsonl (run once, seed 9999, before any annotation; see README.md).

A ninth blind sample, drawn to **measure precision**: the earlier blind samples drew sentences at
random (with cue and dense strata), and the extractor predicted 3-16 triples in each, too few to bound
its precision. This one draws from the sentences on which the extractor *proposes* a triple, so that
nearly every sentence carries a prediction to judge, and adds a random stratum of the others for recall.

Two kinds of text on this machine that no earlier sample (1-8) read (no source line names a ``src.zip``
or a Perl module's POD file; the earlier samples' six rendered Perl man pages are left out):

- ``javadoc``: the API documentation of the Temurin 25 JDK's ``lib/src.zip``: package and module
  comments (``package-info.java``, ``module-info.java``: the doc comment before the ``package`` /
  ``module`` clause) and the comment of each file's first top-level public class, interface, enum or
  record (its first ``PER_CLASS`` sentences), public API only (``java.*``, ``javax.*``, ``jdk.*``,
  ``com.sun.*``, ``org.*``; names with ``internal`` or ``.sun.`` left out); title the package or
  module name (``java.net.http``) or the class's qualified name (``java.net.http.HttpClient``); licence
  GPL-2.0 WITH Classpath-exception-2.0 (OpenJDK);
- ``perlpod``: the POD of the Perl modules of Debian 12's ``perl``, ``perl-modules-5.36`` and the
  ``lib*-perl`` packages (``*.pm`` and ``*.pod`` under ``/usr/share/perl5``, ``/usr/share/perl/5.36``,
  ``/usr/lib/x86_64-linux-gnu/perl5``, ``/usr/lib/x86_64-linux-gnu/perl/5.36``, ``/usr/lib/x86_64-linux-gnu/perl-base``):
  the ``NAME`` and ``DESCRIPTION`` sections, title the module name from ``NAME`` (``LWP::UserAgent``);
  licence "the Perl 5 licence (Artistic or GPL-1.0+)" unless the POD's ``LICENSE``/``COPYRIGHT``
  section names another, quoted as found.

Javadoc is HTML with inline tags: ``{@code X}``, ``{@literal X}``, ``{@index X}`` become X,
``{@link target label}`` its label (else the target's last part), block tags (``@since`` …) and
``{@docRoot}`` go; the rest through the seventh sample's ``html_text``. POD formatting codes become
their text (``L<text|target>`` its text, ``E<gt>`` ``>``), ``=item`` labels are kept as text, other
commands dropped. Every text then goes through the fifth sample's paragraph splitter and the first
sample's sentence filter (``good``), split with ``kgr.text.sentences``; each sentence keeps its
paragraph's earlier sentences (at most 3) as ``context``. Sentences of samples 1-8 are excluded (by text);
no text twice.

**Strata.** The extractor of main ``BASE`` (``scripts/bench_extract.py``'s ``predict``), reading
**every path** (the path table off: ``abstain=False``, a superset of what the default extractor and
``--parser corenlp`` stage), with titles, with and without the word list, is run over every qualifying
sentence; those with at least one proposed triple form the *proposed* stratum, the others the *rest*.
Asked for: every proposed sentence up to ``N_PROPOSED`` (a uniform draw without replacement if there are
more) and ``N_REST`` uniform from the rest (for recall: found/gold in the rest stratum is weighted by its
sampling fraction). No per-document cap, so that the proposed stratum is a uniform sample of the
proposals and precision on it is unbiased for these texts. Each row says its stratum; the predictions are
not written (the annotator never sees them). Measuring any later extractor on this sample is no longer
a uniform sample of *its* proposals: the sample measures main ``BASE``'s once.

    python tests/data/extract/sampling_ninth.py [OUT_DIR]       # writes OUT_DIR/sample_ninth.jsonl
"""
import ast
import asyncio
import glob
import gzip
import html.parser  # noqa: F401 - used by the seventh's html_text, compiled below
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, ROOT)
from kgr.text.sentences import sentence_spans  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 9999
BASE = "7f9fb7d"
N_PROPOSED = 130
N_REST = 40
EARLIER = ("sample.jsonl", "sample_context.jsonl", "sample_third.jsonl", "sample_fourth.jsonl", "sample_fifth.jsonl",
           "sample_sixth.jsonl", "sample_seventh.jsonl", "sample_eighth.jsonl")
SRC_ZIP = "/usr/lib/jvm/temurin-25-jdk-amd64/lib/src.zip"
JAVA_LICENSE = "GPL-2.0 WITH Classpath-exception-2.0 (OpenJDK, Temurin 25 src.zip)"
#: a class comment can run to hundreds of sentences (java.util.regex.Pattern): its first ones are read
PER_CLASS = 12
PERL_DIRS = ("/usr/share/perl5", "/usr/share/perl/5.36", "/usr/lib/x86_64-linux-gnu/perl5",
             "/usr/lib/x86_64-linux-gnu/perl/5.36", "/usr/lib/x86_64-linux-gnu/perl-base")
PERL_LICENSE = "the Perl 5 licence (Artistic or GPL-1.0+)"


def _functions(script, names, ns):
    """Compile the top-level functions/classes ``names`` of an earlier sampling script into ``ns``."""
    tree = ast.parse(open(os.path.join(HERE, script), encoding="utf-8").read())
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    missing = set(names) - {n.name for n in defs}
    if missing:
        raise SystemExit(f"{script}: no function {sorted(missing)}")
    exec(compile(ast.Module(body=defs, type_ignores=[]), script, "exec"), ns)  # noqa: S102 - our own file


rng = random.Random(SEED)
ns = {"glob": glob, "gzip": gzip, "os": os, "re": re, "subprocess": subprocess, "sentence_spans": sentence_spans,
      "rng": rng, "html": html}
_functions("sampling_context.py", ["_alt", "cue", "good", "mentions_title"], ns)
_functions("sampling_third.py", ["_read"], ns)
_functions("sampling_fifth.py", ["clean", "para_sentences", "draw", "_key"], ns)
_functions("sampling_seventh.py", ["_Text", "html_text"], ns)
good, _read, para_sentences, html_text = ns["good"], ns["_read"], ns["para_sentences"], ns["html_text"]

old = [json.loads(line) for f in EARLIER for line in open(os.path.join(HERE, f), encoding="utf-8")]
old_text = {" ".join(r["text"].split()) for r in old}
old_perl = {m.group(1) for r in old for m in [re.search(r"man3/([\w:]+)\.3pm", r.get("source", ""))] if m}


# ---------------------------------------------------------------------------------------- javadoc
def _link(m):
    body = m.group(2).strip()
    parts = body.split(None, 1)
    if len(parts) == 2:
        return parts[1]
    target = parts[0] if parts else ""
    return re.split(r"[.#]", target.rstrip("()"))[-1] if "#" not in target else target.split("#")[-1].split("(")[0]


def javadoc_text(comment):
    """A doc comment's prose: leading ``*`` gone, inline tags resolved, block tags dropped, HTML stripped."""
    lines = [re.sub(r"^\s*\*( ?)", "", line) for line in comment.splitlines()]
    out = []
    for line in lines:
        if re.match(r"\s*@\w+", line):  # a block tag ends the description
            break
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\{@(code|literal|index|systemProperty|value)\s+([^{}]*)\}", lambda m: m.group(2).split(" ")[0]
                  if m.group(1) == "index" else m.group(2), text)
    text = re.sub(r"\{@(link|linkplain)\s+([^{}]*)\}", _link, text)
    text = re.sub(r"\{@[a-zA-Z]+[^{}]*\}", "", text)
    return html_text(f"<html><body>{text}</body></html>")


def _doc_comment(src, clause):
    """The last ``/** … */`` before the first ``clause`` (``package`` / ``module``) line."""
    m = re.search(rf"(?m)^\s*(?:open\s+)?{clause}\s+([\w.]+)", src)
    if not m:
        return None, None
    head = src[:m.start()]
    i = head.rfind("/**")
    if i < 0 or "*/" not in head[i:]:
        return m.group(1), None
    return m.group(1), head[i + 3:head.index("*/", i)]


def _public(name):
    return re.match(r"(java|javax|jdk|com\.sun|org)\b", name) and "internal" not in name and ".sun." not in name


_TYPE = r"public\s+(?:(?:abstract|final|sealed|non-sealed|strictfp|static)\s+)*(?:class|interface|enum|record|@interface)"


def javadoc_docs():
    z = zipfile.ZipFile(SRC_ZIP)
    for entry in sorted(n for n in z.namelist() if n.endswith(".java")):
        src = z.read(entry).decode("utf-8", "replace")
        if entry.endswith(("/package-info.java", "/module-info.java")):
            clause = "package" if entry.endswith("package-info.java") else "module"
            name, comment = _doc_comment(src, clause)
        else:
            clause = "class"
            pkg, _ = _doc_comment(src, "package")
            name, comment = _doc_comment(src, _TYPE)
            name = f"{pkg}.{name}" if pkg and name else None
        if not name or not comment or not _public(name):
            continue
        sents = para_sentences(javadoc_text(comment))
        yield (f"Temurin 25 JDK src.zip {entry} ({clause} documentation)", JAVA_LICENSE, name,
               sents[:PER_CLASS] if clause == "class" else sents)


# ---------------------------------------------------------------------------------------- perlpod
_POD_CODE = re.compile(r"([BICFSXZEL])<((?:<+\s)?)(.*?)((?:\s>+)?)>", re.S)
_ENTITIES = {"gt": ">", "lt": "<", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}


def _pod_code(m):
    code, body = m.group(1), m.group(3).strip()
    if code in "XZ":
        return ""
    if code == "E":
        return _ENTITIES.get(body, "")
    if code == "L":
        if "|" in body:
            return body.split("|", 1)[0]
        return re.sub(r'^"|"$', "", body.split("/", 1)[0] or body.split("/", 1)[-1])
    return body


def pod_sections(raw):
    """``{HEAD1: text}`` of a POD document; commands other than ``=item`` dropped, codes resolved."""
    sections, cur = {}, None
    for para in re.split(r"\n\s*\n", raw):
        if para.startswith("=head1"):
            cur = para[6:].strip().upper()
            sections[cur] = []
            continue
        if para.startswith("=cut") or para.startswith("=begin") or para.startswith("=for"):
            if para.startswith("=cut"):
                cur = None
            continue
        if cur is None:
            continue
        if para.startswith("=item"):
            para = para[5:].strip()
        elif para.startswith("="):
            continue
        for _ in range(3):  # nested codes
            para = _POD_CODE.sub(_pod_code, para)
        sections[cur].append(para)
    return {k: "\n\n".join(v) for k, v in sections.items()}


def perl_docs():
    seen = set()
    files = sorted({f for d in PERL_DIRS for ext in ("pm", "pod") for f in glob.glob(f"{d}/**/*.{ext}", recursive=True)})
    for f in files:
        raw = _read(f)
        if "=head1" not in raw:
            continue
        sec = pod_sections(raw[raw.index("=head1"):] if not raw.startswith("=") else raw)
        name = sec.get("NAME", "").strip()
        m = re.match(r"([\w:]+)\s*-+\s*(.*)", " ".join(name.split()))
        if not m or m.group(1) in seen or m.group(1) in old_perl or not sec.get("DESCRIPTION"):
            continue
        seen.add(m.group(1))
        lic = next((sec[k] for k in ("LICENSE", "LICENCE", "COPYRIGHT AND LICENSE", "COPYRIGHT", "AUTHOR AND COPYRIGHT")
                    if sec.get(k)), "")
        lic = " ".join(lic.split())[:160] if lic else PERL_LICENSE
        body = (m.group(2) + ".\n\n" if m.group(2) else "") + sec["DESCRIPTION"]
        yield f"Perl module {m.group(1)} POD, {f}", lic, m.group(1), para_sentences(body)


# ------------------------------------------------------------------------------------------ draw
KINDS = (("javadoc", "v", javadoc_docs), ("perlpod", "p", perl_docs))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_extract", os.path.join(ROOT, "scripts", "bench_extract.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def proposed(rows):
    """The ids of ``rows`` on which the extractor, reading every path with titles, proposes a triple
    (with or without the word list)."""
    bench = _bench()
    schema = bench.load_schema(os.path.join(HERE, "schema.json"))
    hits = set()
    for mode in ("with", "without"):
        if mode == "without":
            os.environ["KGR_NO_LEXICON"] = "1"
        else:
            os.environ.pop("KGR_NO_LEXICON", None)
        bench.lexicon._frequencies.cache_clear()  # noqa: SLF001
        preds = asyncio.run(bench.predict(rows, schema, 3, titles=True, abstain=False))
        hits |= {r["id"] for r, p in zip(rows, preds) if p}
    return hits


def main(out_dir):
    taken = set(old_text)
    pool = []
    for kind, letter, make in KINDS:
        for src, lic, title, sents in make():
            for s, ctx in sents:
                key = " ".join(s.split())
                if not good(s) or key in taken:
                    continue
                taken.add(key)
                pool.append({"id": f"{letter}{len(pool)}", "kind": kind, "source": src, "source_license": lic,
                             "title": title, "context": ctx, "text": s})
    hits = proposed(pool)
    prop = [r for r in pool if r["id"] in hits]
    rest = [r for r in pool if r["id"] not in hits]
    print(f"{len(pool)} qualifying sentences ({sum(r['kind'] == 'javadoc' for r in pool)} javadoc), "
          f"{len(prop)} with a proposal", file=sys.stderr)
    take = rng.sample(prop, min(N_PROPOSED, len(prop))) + rng.sample(rest, min(N_REST, len(rest)))
    out = []
    for i, r in enumerate(take):
        stratum = "proposed" if r["id"] in hits else "rest"
        letter = "v" if r["kind"] == "javadoc" else "p"
        out.append({"id": f"{letter}{'q' if stratum == 'proposed' else ''}n{i}", "kind": r["kind"],
                    "stratum": stratum, "split": "blind", "source": r["source"], "source_license": r["source_license"],
                    "title": r["title"], "context": r["context"], "text": r["text"], "triples": []})
    meta = {"qualifying": len(pool), "proposed": len(prop), "rest": len(rest),
            "drawn_proposed": sum(o["stratum"] == "proposed" for o in out),
            "drawn_rest": sum(o["stratum"] == "rest" for o in out)}
    with open(os.path.join(out_dir, "sample_ninth.jsonl"), "w", encoding="utf-8") as fh:
        for o in out:
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "sample_ninth_strata.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)
    print(json.dumps(meta), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
