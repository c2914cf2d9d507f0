import gzip, glob, random, re, json, os, sys
sys.path.insert(0, "/work/wt/extract")
from kgr.text.sentences import sentence_spans
rng = random.Random(32)
CUE = re.compile(r"\b(depend|require|support|licen[cs]e|written in|developed|maintain|created|author|built on|based on|port|drop|remov|deprecat|compatib|wrapper|binding|implement|uses?\b|fork)", re.I)
def clean_md(body):
    body = re.sub(r"```.*?```", "\n", body, flags=re.S)
    body = re.sub(r"(?m)^(    |\t).*$", "", body)
    return body
def good(s):
    w = s.split()
    if not (6 <= len(w) <= 60): return False
    if re.search(r"[{}<>=]|https?://|\$ |>>>|::", s): return False
    if sum(c.isalpha() for c in s) < 0.6*len(s): return False
    return True
def pick(cands, n):
    cue = [c for c in cands if CUE.search(c[2])]; rest = [c for c in cands if not CUE.search(c[2])]
    rng.shuffle(cue); rng.shuffle(rest)
    k = min(len(cue), (n*3)//5)
    out = cue[:k] + rest[:n-k]
    rng.shuffle(out); return out
# 1. READMEs
sp = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages"
readme = []
for md in sorted(glob.glob(sp + "/*.dist-info/METADATA")):
    pkg = md.split("/")[-2]
    if pkg.startswith(("kgr", "pykeen", "recordlinkage")): continue
    txt = open(md, encoding="utf-8", errors="replace").read()
    i = txt.find("\n\n"); body = clean_md(txt[i:])
    sents = [(pkg, s, body[s:e]) for s, e in sentence_spans(body) if good(body[s:e])]
    rng.shuffle(sents)
    readme.extend(sents[:4])
# 2. changelogs
ch = []
for f in sorted(glob.glob("/usr/share/doc/*/changelog*.gz")):
    pkg = f.split("/")[4]
    try: txt = gzip.open(f, "rt", encoding="utf-8", errors="replace").read(60000)
    except Exception: continue
    items, cur = [], None
    for raw in txt.splitlines():
        m = re.match(r"^\s*[*+-] (.*)$", raw)
        if m:
            if cur: items.append(cur)
            cur = m.group(1).strip()
        elif cur is not None and raw.strip() and raw.startswith("    ") and not re.match(r"^\s*--", raw):
            cur += " " + raw.strip()
        else:
            if cur: items.append(cur)
            cur = None
    if cur: items.append(cur)
    items = [(pkg + ":" + os.path.basename(f), 0, it) for it in items if 5 <= len(it.split()) <= 45 and not re.search(r"https?://|[{}<>]", it)]
    rng.shuffle(items); ch.extend(items[:3])
# 3. Debian package descriptions
desc = []
st = open("/var/lib/dpkg/status", encoding="utf-8").read()
for para in st.split("\n\n"):
    m = re.search(r"^Package: (\S+)", para, re.M); v = re.search(r"^Version: (\S+)", para, re.M)
    d = re.search(r"^Description: .*\n((?: .*\n?)*)", para, re.M)
    if not (m and d): continue
    body = "\n".join(l[1:] if l != " ." else "" for l in d.group(1).splitlines())
    sents = [(m.group(1)+"="+(v.group(1) if v else ""), s, body[s:e]) for s, e in sentence_spans(body) if good(body[s:e])]
    rng.shuffle(sents); desc.extend(sents[:2])
for name, cands, n in (("readme", readme, 80), ("changelog", ch, 60), ("description", desc, 62)):
    out = pick(cands, n)
    with open(f"/tmp/xs/{name}.jsonl", "w") as fh:
        for src, off, text in out:
            fh.write(json.dumps({"kind": name, "src": src, "text": " ".join(text.split())}) + "\n")
    print(name, len(cands), len(out))
# --- targeted stratum: relation cues, negation and change verbs (sampled after the random one) ---
REL = re.compile(r"\b(depends? on|requires?\b|licen[cs]ed under|released under|distributed under|written in|implemented in|"
                 r"maintained by|developed by|created by|written by|supports?\b|support for|implementation of|fork of|"
                 r"drop(?:ped|s)? support|no longer|remov(?:e|ed|es) support|deprecat)", re.I)
taken = set()
for name in ("readme", "changelog", "description"):
    for l in open(f"/tmp/xs/{name}.jsonl"):
        taken.add(json.loads(l)["text"])
for name, cands, n in (("readme", readme, 30), ("changelog", ch, 30), ("description", desc, 30)):
    pool = [c for c in cands if REL.search(c[2]) and " ".join(c[2].split()) not in taken]
    rng.shuffle(pool)
    with open(f"/tmp/xs/{name}_cue.jsonl", "w") as fh:
        for src, off, text in pool[:n]:
            fh.write(json.dumps({"kind": name, "src": src, "text": " ".join(text.split())}) + "\n")
    print(name, "cue", len(pool))
