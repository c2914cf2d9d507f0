"""Collect every proposal of the rules extractor (every path, titles on, both installs) on every annotated
sample, judged with bench_extract's matcher (via calibrate_extract.judged), with path and anchors.

    python scripts/study_mention_classifier/collect.py   # writes $TMPDIR/kgr-study32/proposals.json
"""
from __future__ import annotations

import asyncio, json, os, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("TMPDIR", "/tmp")) / "kgr-study32"
sys.path.insert(0, str(ROOT / "scripts"))
import bench_extract as be  # noqa: E402
from calibrate_extract import judged  # noqa: E402
from kgr.extract import lexicon  # noqa: E402
from kgr.extract.rules import RulesExtractor  # noqa: E402
from kgr.model.schema import load_schema  # noqa: E402

DATA = ROOT / "tests" / "data" / "extract"
ROWLOG: list[dict] = []


class Rec(be._Recording):  # noqa: SLF001
    """bench_extract's recorder, also keeping each span's anchors; one dict per row in ROWLOG."""

    def __setattr__(self, k, v):
        if k == "seen":
            ROWLOG.append({})
        super().__setattr__(k, v)

    def extract(self, chunk_text, schema, *, guidance=None, title=None, headings=()):
        res = RulesExtractor.extract(self, chunk_text, schema, guidance=guidance, title=title, headings=headings)
        for sp in res.spans:
            key = (sp.relation, be.norm(sp.subject), be.norm(sp.object))
            self.seen.setdefault(key, sp.path)
            ROWLOG[-1].setdefault("|".join(key), list(sp.anchors))
        return res


be._Recording = Rec  # predict() instantiates the module global


def main():
    assert os.environ.get("KGR_EXTRACT_ALL_PATHS", "") in ("", "0"), "use abstain=False, not the env var"
    schema = load_schema(DATA / "schema.json")
    out = []
    for name, fname in be.SAMPLES.items():
        rows = [json.loads(l) for l in (DATA / fname).read_text(encoding="utf-8").splitlines() if l]
        for mode in ("with", "without"):
            if mode == "without":
                os.environ["KGR_NO_LEXICON"] = "1"
            else:
                os.environ.pop("KGR_NO_LEXICON", None)
            lexicon._frequencies.cache_clear()  # noqa: SLF001
            ROWLOG.clear()
            paths: list[list[str]] = []
            preds = asyncio.run(be.predict(rows, schema, 3, True, abstain=False, paths=paths))
            logs = ROWLOG[1:]  # the first entry is __init__'s
            assert len(logs) == len(rows), (len(logs), len(rows))
            for r, pred, pth, log in zip(rows, preds, paths, logs):
                uniq = list(dict(zip(pred, pth)).items())
                j = judged([r], [pred], [pth])
                assert len(j) == len(uniq)
                for (tr, path), (_, ok, _) in zip(uniq, j):
                    key = "|".join((tr[2], be.norm(tr[0]), be.norm(tr[3])))
                    out.append({"sample": name, "install": mode, "id": r["id"], "kind": r["kind"],
                                "text": r["text"], "title": r.get("title"), "triple": list(tr), "path": path,
                                "anchors": log.get(key, []), "correct": bool(ok)})
        gold = sum(len(r["triples"]) for r in rows)
        out.append({"sample": name, "gold": gold, "sentences": len(rows)})
        n = [x for x in out if x.get("sample") == name and "path" in x]
        print(f"{name:8} sentences {len(rows)} gold {gold} proposals(both installs) {len(n)} correct {sum(x['correct'] for x in n)}",
              file=sys.stderr)
    os.environ.pop("KGR_NO_LEXICON", None)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "proposals.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
