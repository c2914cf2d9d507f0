"""Features a kgr-side classifier could compute offline for one proposal (no sample / kind id)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_extract import norm  # noqa: E402
from kgr.extract import lexicon  # noqa: E402

CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
DOTTED = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
VERSION = re.compile(r"\d+\.\d+")
CODE = re.compile(r"[()_#$<>{}\[\]@=;]|::|->")
TOK = re.compile(r"\S+")
NEG = re.compile(r"\b(not|no longer|never|without|cannot|can't|doesn't|don't|isn't|drop(ped)?|remove[ds]?|deprecated?)\b", re.I)
MODAL = re.compile(r"\b(may|can|could|should|would|might|must)\b", re.I)
API_HEAD = {"class", "classes", "interface", "interfaces", "method", "methods", "object", "objects", "field", "fields",
            "function", "functions", "api", "apis", "module", "modules", "type", "types", "constructor", "instance",
            "instances", "subclass", "attribute", "property", "option", "options", "variable", "constant", "parameter"}
STD_HEAD = {"protocol", "protocols", "format", "formats", "standard", "standards", "specification", "spec", "encoding",
            "encodings", "algorithm", "algorithms", "rfc", "version", "versions"}
SW_HEAD = {"library", "libraries", "framework", "tool", "tools", "package", "packages", "server", "client", "program",
           "utility", "application", "engine", "driver", "backend", "plugin", "extension", "toolkit", "binding", "bindings"}
PRON = re.compile(r"^\W*(it|this|these|they|its|the|a|an)\b", re.I)


def _words(s):
    return re.findall(r"[A-Za-z0-9][\w.+#/-]*", s)


def end_feats(prefix, name, surface, start, end, text, title, kind):
    s = surface or name or ""
    f = {}
    f["camel"] = bool(CAMEL.search(s))
    f["dotted"] = bool(DOTTED.search(s))
    f["colons"] = "::" in s
    f["digit"] = any(c.isdigit() for c in s)
    f["version"] = bool(VERSION.search(s))
    f["lower"] = s == s.lower() and any(c.isalpha() for c in s)
    f["upper"] = s == s.upper() and sum(c.isalpha() for c in s) >= 2
    f["initcap"] = s[:1].isupper() and not f["upper"]
    f["code"] = bool(CODE.search(s))
    f["slash"] = "/" in s
    f["hyphen"] = "-" in s
    f["ntok"] = len(s.split())
    f["nchar"] = min(len(s), 40)
    f["known"] = kind == "known"
    f["is_title"] = bool(title) and norm(name) == norm(title)
    tparts = re.split(r"[.:/]+", title or "")
    f["in_title"] = bool(title) and (not f["is_title"]) and (norm(name) in {norm(p) for p in tparts if p}
                                                             or (len(s) > 2 and s.lower() in (title or "").lower()))
    f["title_in"] = bool(title) and len(title) > 2 and title.lower() in s.lower() and not f["is_title"]
    f["sent_initial"] = start == 0 and end > 0
    f["zero_width"] = end <= start
    words = s.split()
    f["common_word"] = len(words) == 1 and lexicon.is_common_word(words[0].lower())
    f["backtick"] = end > start and (text[max(0, start - 1):start] in ("`", "'", '"') or "`" in s)
    after = _words(text[end:end + 40])[:2] if end > start else []
    before = _words(text[max(0, start - 30):start])[-1:] if end > start else []
    ctx = {w.lower().strip(".,;:") for w in after}
    f["head_api"] = bool(ctx & API_HEAD)
    f["head_std"] = bool(ctx & STD_HEAD)
    f["head_sw"] = bool(ctx & SW_HEAD)
    f["prev_the"] = bool(before) and before[0].lower() in ("the", "a", "an")
    f["followed_paren"] = text[end:end + 1] == "(" if end > start else False
    return {f"{prefix}{k}": float(v) for k, v in f.items()}


def features(x, n_in_sentence):
    text, title = x["text"], x["title"]
    sub, styp, rel, obj, otyp = x["triple"]
    a = x["anchors"] + [-1] * (5 - len(x["anchors"]))
    producer, relation, ends = x["path"].split("/", 2)
    se, oe = ends.split(">")
    trig = "none"
    if a[4] >= 0:
        w = _words(text[a[4]:a[4] + 30])
        trig = w[0].lower() if w else "none"
        trig = re.sub(r"(s|ed|ing)$", "", trig)  # crude stem
    cat = {"path": x["path"], "producer": producer, "relation": relation, "s_end": se, "o_end": oe,
           "types": f"{styp}>{otyp}", "trigger": trig, "rel_trig": f"{relation}:{trig}"}
    num = {}
    num |= end_feats("s_", sub, text[a[0]:a[1]] if a[1] > a[0] else "", a[0], a[1], text, title, se)
    num |= end_feats("o_", obj, text[a[2]:a[3]] if a[3] > a[2] else "", a[2], a[3], text, title, oe)
    toks = TOK.findall(text)
    num["sent_ntok"] = min(len(toks), 60)
    num["sent_camel_frac"] = sum(bool(CAMEL.search(t)) for t in toks) / max(1, len(toks))
    num["sent_dotted_frac"] = sum(bool(DOTTED.search(t)) for t in toks) / max(1, len(toks))
    num["sent_code"] = float(bool(CODE.search(text)))
    num["sent_neg"] = float(bool(NEG.search(text)))
    num["sent_modal"] = float(bool(MODAL.search(text)))
    num["sent_pron_start"] = float(bool(PRON.match(text)))
    num["sent_api_words"] = float(any(w.lower().strip(".,;:") in API_HEAD for w in toks))
    num["title_none"] = float(not title)
    num["title_dotted"] = float(bool(title and DOTTED.search(title)))
    num["title_colons"] = float(bool(title and "::" in title))
    num["title_camel"] = float(bool(title and CAMEL.search(title)))
    num["title_lower"] = float(bool(title and title == title.lower()))
    num["n_props_sentence"] = float(min(n_in_sentence, 10))
    if a[1] > a[0] and a[3] > a[2]:
        lo, hi = sorted([a[1], a[2]])[0], sorted([a[0], a[3]])[-1]
        num["so_dist"] = float(min(len(TOK.findall(text[min(a[1], a[3]):max(a[0], a[2])])), 30))
    else:
        num["so_dist"] = -1.0
    num["ot_dist"] = float(min(len(TOK.findall(text[a[4]:a[2]])), 30)) if a[4] >= 0 and a[2] > a[4] else -1.0
    num["obj_before_trigger"] = float(a[4] >= 0 and a[3] <= a[4] and a[3] > a[2])
    return cat, num
