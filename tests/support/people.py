"""A small synthetic population for entity-resolution tests: people with a birth date, a home and a
job, each written up by several sources with typos and word-order changes (deterministic)."""

from __future__ import annotations

import random

from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion

__all__ = ["SCHEMA", "RECORDS", "people_records", "person_triples", "record_text"]

SCHEMA = KGSchema.model_validate({
    "name": "people",
    "entity_types": {t: {} for t in ("Person", "Date", "Place", "Occupation")},
    "relation_types": {
        "BORN_ON": {"domain": ["Person"], "range": ["Date"], "functional": True},
        "LIVES_IN": {"domain": ["Person"], "range": ["Place"]},
        "WORKS_AS": {"domain": ["Person"], "range": ["Occupation"]},
        "KNOWS": {"domain": ["Person"], "range": ["Person"]},
    },
})

_FIRST = ["alyssa", "jacob", "lachlan", "mia", "oliver", "harper", "noah", "chloe", "ethan", "ruby", "isaac",
          "zara", "felix", "ivy", "hugo", "lara", "oscar", "nina", "leon", "tessa"]
_LAST = ["lowe", "green", "wheatley", "walsh", "kowalski", "brennan", "okafor", "lindqvist", "moreau", "tanaka",
         "fitzgerald", "abernathy", "castellano", "dubois", "henriksen", "marchetti", "nakamura", "oyelaran",
         "petrossian", "quintero"]
_PLACES = ["bondi", "carlton", "fremantle", "glenelg", "hobart", "ipswich", "kiama", "lismore", "mildura", "noosa"]
_JOBS = ["nurse", "carpenter", "teacher", "chemist", "pilot", "lawyer", "baker", "surveyor"]


def _typo(name: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(name) - 1)
    if name[i] == " " or name[i - 1] == " ":
        return name
    return name[:i - 1] + name[i] + name[i - 1] + name[i + 1:]  # a transposition


def people_records(n_people: int = 30, per_person: int = 3, seed: int = 7) -> list[dict]:
    """``per_person`` records of each of ``n_people`` people: ``{id, person, name, dob, place, job}``."""
    rng = random.Random(seed)
    out = []
    for p in range(n_people):
        first, last = _FIRST[p % len(_FIRST)], _LAST[(p * 7) % len(_LAST)]
        dob = f"{1930 + rng.randrange(60)}-{1 + rng.randrange(12):02d}-{1 + rng.randrange(28):02d}"
        place, job = rng.choice(_PLACES), rng.choice(_JOBS)
        for k in range(per_person):
            name = f"{first} {last}"
            if k == 1:
                name = _typo(name, rng)
            elif k == 2:
                name = f"{last} {first}"
            out.append({"id": f"r{p}-{k}", "person": p, "name": name, "dob": dob, "place": place, "job": job})
    return out


def person_triples(rec: dict) -> list[TripleAssertion]:
    """One record's triples, its id as their source."""
    def t(rel: str, obj: str, otype: str) -> TripleAssertion:
        return TripleAssertion(subject=rec["name"], subject_type="Person", relation=rel, object=obj,
                               object_type=otype, source=rec["id"], confidence=0.9)

    out = []
    if rec.get("dob"):
        out.append(t("BORN_ON", rec["dob"], "Date"))
    if rec.get("place"):
        out.append(t("LIVES_IN", rec["place"], "Place"))
    if rec.get("job"):
        out.append(t("WORKS_AS", rec["job"], "Occupation"))
    return out


#: 10 people x 3 records (the name as written, with a typo, in reverse word order), by record id: the
#: documents of the re-ingest histories (tests/ingest/test_reingest_resolved.py, scripts/reingest_histories.py)
RECORDS = {r["id"]: r for r in people_records(10, 3, seed=3)}


def record_text(rid: str, variant: int) -> str:
    """A document of record ``rid`` as the scripted extractor reads it (``name | dob | place | job``,
    ``-`` for not said). Variant 0: the whole record; 1: name and home only; 2: the record with
    another birth date (a second person of that name, as far as the functional BORN_ON can tell)."""
    r = RECORDS[rid]
    if variant == 1:
        return f"{r['name']} | - | {r['place']} | -"
    dob = r["dob"] if variant == 0 else f"{int(r['dob'][:4]) + 7}{r['dob'][4:]}"
    return f"{r['name']} | {dob} | {r['place']} | {r['job']}"
