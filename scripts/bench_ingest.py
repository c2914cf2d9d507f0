"""Benchmark ``kgr ingest``: LLM throughput against a fixed-latency stub, and peak memory on a 50 MB corpus.

Two parts:

1. **Throughput.** The OpenAI-compatible stub (``tests/support/llm_stub.py``) runs as a separate process
   with a fixed latency (default 0.2 s per call) and one canned extraction. For each concurrency
   (default 1, 8, 32), the database is wiped, a warm-up batch is ingested, then ``N`` one-chunk
   documents are ingested in-process with the LLM extractor (``max_rounds=1``: one LLM call per
   chunk, then the quality tool (the only one a last round runs), disambiguation against Neo4j and the
   staging transaction). Reported: chunks per second and its ratio to the ideal ``concurrency /
   latency``, CPU milliseconds per chunk of the ingesting process, and for comparison the ceiling of
   bare ``LLMExtractor.aextract`` calls through litellm at the same concurrency (no tools, no Neo4j).
   With ``--executor process|ray`` the same runs are made with chunks drafted by ``--workers``
   worker processes (default 1,2,4) at each total concurrency, beside the in-process figures of the
   same run; the throughput excludes the workers' start and stop (``executor_start_seconds`` and
   ``executor_stop_seconds``, reported), and
   each worker's peak resident set (``VmHWM``) is read from ``/proc`` while it runs. Every run also
   accounts the CPU it cost per chunk in each process involved (the job, the workers, the stub,
   Neo4j; ``/proc/PID/stat``) and the cores that kept busy, which says whether a run is bound by the
   LLM's latency or by the machine.
2. **Memory.** A corpus of ``--memory-mb`` megabytes (default 50) is generated on disk, 1 MB per file
   (a quarter facts about gazetteer and generated people and organisations, the rest filler), and ingested
   with the offline rules extractor by ``python -m kgr.cli ingest`` as a child process. Its resident
   set size is sampled every second from ``/proc`` and its peak read from ``wait4`` (``ru_maxrss``).
   Promotion is off unless ``--memory-promote`` (a gedig round over tens of thousands of candidates
   measures the policy, not ingestion).

The benchmark WIPES the database ``NEO4J_URI`` points at; it refuses to run without ``NEO4J_URI``.
Start a throwaway server first, e.g.::

    KGR_CACHE_DIR=/tmp/ci-cache KGR_NEO4J_HOME=/tmp/ci-cache/ingest-bench-home \\
      KGR_NEO4J_BOLT_PORT=47787 KGR_NEO4J_HTTP_PORT=47574 kgr neo4j start
    NEO4J_URI=bolt://127.0.0.1:47787 python scripts/bench_ingest.py --json bench_ingest.json

Options: ``--concurrency 1,8,32 --latency 0.2 --seconds 10 --memory-mb 50 --memory-concurrency 8``,
``--executor inprocess|process|ray --workers 1,2,4``,
``--skip-throughput``, ``--skip-memory``, ``--memory-timeout SECONDS`` (stop the memory run early and
report how far it got).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCHEMA_PATH = ROOT / "examples" / "schema.json"
# the stub's answer to every chunk; the chunk texts below state exactly these facts
REPLY = {
    "entities": {"Person": ["Charles Babbage"], "Place": ["London"], "Machine": ["Difference Engine"]},
    "relations": {"BORN_IN": [{"subject": "Charles Babbage", "object": "London"}],
                  "DESIGNED": [{"subject": "Charles Babbage", "object": "Difference Engine"}]},
}
#: the stub as a litellm model: through the OpenAI SDK (``openai/``, what a user of OpenAI's API names)
DEFAULT_MODEL = "openai/stub-model"
TEXT = "Record {tag}. Charles Babbage was born in London. Charles Babbage designed the Difference Engine."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reset() -> None:
    from kgr.engine import Engine
    from kgr.store.admin import init_store, reset

    with Engine.connect() as kg:
        reset(kg.graph)
        init_store(kg.graph)


def _write_jsonl(path: Path, tags: list[str]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for t in tags:
            fh.write(json.dumps({"id": f"doc-{t}", "text": TEXT.format(tag=t)}) + "\n")
    return path


# -- throughput -----------------------------------------------------------------------------------------


class Stub:
    """``python -m tests.support.llm_stub`` as a separate process."""

    def __init__(self, latency: float, workdir: Path):
        reply = workdir / "reply.json"
        reply.write_text(json.dumps(REPLY), encoding="utf-8")
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.llm_stub", "--port", str(self.port), "--latency", str(latency),
             "--reply-file", str(reply)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if "listening" not in line:
            self.proc.kill()
            raise SystemExit(f"the LLM stub did not start: {line!r}")
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _worker_pids(executor: str) -> list[int]:
    """The executor's worker processes: ``python -m kgr.ingest.executors`` children, or Ray's DraftActor."""
    pattern = "kgr.ingest.executors" if executor == "process" else "DraftActor"
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if pattern in cmd and "bench_ingest" not in cmd:
                pids.append(int(entry))
    return pids


def _peak_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _cpu_ticks(pid: int) -> int:
    """User + system CPU of a process so far, in clock ticks (``/proc/PID/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def _neo4j_pid() -> int | None:
    """The Neo4j that ``NEO4J_URI`` reaches (the process listening on its Bolt port): with a test
    server running beside the benchmark's, the first Java process found may be the wrong one."""
    from urllib.parse import urlsplit

    from kgr.runtime.health import port_owner

    return port_owner(urlsplit(os.environ.get("NEO4J_URI", "")).port or 7687)


class Accounting:
    """While a run goes on: the workers' peak RSS (VmHWM) and the CPU of every process involved
    (the job, the workers, the stub, Neo4j), sampled every 0.5 s; CPU in ms per chunk at the end."""

    def __init__(self, executor: str, stub_pid: int):
        self.executor, self.peaks = executor, {}
        self.others = {"stub": stub_pid, "neo4j": _neo4j_pid()}
        self.worker_ticks: dict[int, list[tuple[float, int]]] = {}  # pid -> [(seconds into the run, ticks)]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        if self.executor == "inprocess":
            return
        for pid in _worker_pids(self.executor):
            kb = _peak_kb(pid)
            if kb:
                self.peaks[pid] = max(self.peaks.get(pid, 0), kb)
            self.worker_ticks.setdefault(pid, []).append((time.perf_counter() - self.t0, _cpu_ticks(pid)))

    def _run(self) -> None:
        while not self.stop.is_set():
            self._sample()
            self.stop.wait(0.5)

    def __enter__(self) -> "Accounting":
        self.start = {k: _cpu_ticks(p) for k, p in self.others.items() if p}
        self.job0, self.t0 = time.process_time(), time.perf_counter()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.job = time.process_time() - self.job0
        self.end = {k: _cpu_ticks(p) for k, p in self.others.items() if p}

    def ms_per_chunk(self, chunks: int, started: float) -> dict[str, float]:
        """Workers: from their last sample before ``started`` seconds into the run (when they were
        ready: their imports are the start's, not the chunks') to their last sample (0.5 s apart)."""
        hz = os.sysconf("SC_CLK_TCK")
        out = {"job": 1000 * self.job / chunks}
        if self.worker_ticks:
            used = 0
            for samples in self.worker_ticks.values():
                base = max((x for x in samples if x[0] <= started), default=samples[0])[1]
                used += samples[-1][1] - base
            out["workers"] = 1000 * used / hz / chunks
        for k in self.start:
            out[k] = 1000 * (self.end[k] - self.start[k]) / hz / chunks
        return {k: round(v, 2) for k, v in out.items()}


def bench_concurrency(stub: Stub, concurrency: int, latency: float, seconds: float, workdir: Path,
                      executor: str = "inprocess", workers: int | None = None, model: str = DEFAULT_MODEL) -> dict:
    from kgr.engine import Engine
    from kgr.ingest.config import IngestConfig
    from kgr.ingest.pipeline import ingest

    ideal = concurrency / latency
    n = max(4 * concurrency, round(ideal * seconds))
    cfg = IngestConfig(extractor="llm", model=model, api_base=stub.base_url, api_key="bench",
                       timeout=30, concurrency=concurrency, max_rounds=1, promote=False, executor=executor,
                       workers=workers)
    tag = f"{executor}{workers or ''}-{concurrency}-{model.split('/')[0]}"
    _reset()
    warm = _write_jsonl(workdir / f"warm-{tag}.jsonl", [f"w{tag}-{i}" for i in range(2 * concurrency)])
    corpus = _write_jsonl(workdir / f"run-{tag}.jsonl", [f"r{tag}-{i}" for i in range(n)])
    with Engine.connect(schema=SCHEMA_PATH) as kg:
        if executor == "inprocess":
            ingest(kg.graph, [warm], kg.schema, config=cfg)
        with Accounting(executor, stub.proc.pid) as acct:
            rep = ingest(kg.graph, [corpus], kg.schema, config=cfg)
    if rep.chunks_failed or rep.chunks_processed != n:
        raise SystemExit(f"{tag}: {len(rep.chunks_failed)} chunks failed: {rep.chunks_failed[:1]}")
    busy = rep.seconds - rep.executor_start_seconds - rep.executor_stop_seconds
    cps = rep.chunks_processed / busy
    row = {"model": model, "executor": executor, "workers": workers, "concurrency": concurrency, "chunks": n,
           "seconds": round(busy, 2), "start_seconds": rep.executor_start_seconds,
           "stop_seconds": rep.executor_stop_seconds,
           "chunks_per_second": round(cps, 1), "ideal": round(ideal, 1), "ratio": round(cps / ideal, 3),
           "llm_calls": rep.llm_calls, "transactions": rep.transactions,
           "cpu_ms_per_chunk": acct.ms_per_chunk(n, rep.executor_start_seconds)}
    row["cpu_ms_per_chunk_total"] = round(sum(row["cpu_ms_per_chunk"].values()), 2)
    row["cores_busy"] = round(row["cpu_ms_per_chunk_total"] * cps / 1000, 2)
    if acct.peaks:
        row["worker_peak_rss_mb"] = round(max(acct.peaks.values()) / 1024, 1)
    return row


def bench_bare_llm(stub: Stub, concurrency: int, latency: float, seconds: float, model: str = DEFAULT_MODEL) -> dict:
    """The same calls without the pipeline: ``aextract`` through litellm only."""
    from kgr.extract.llm import LLMExtractor
    from kgr.model.schema import load_schema

    schema = load_schema(SCHEMA_PATH)
    ex = LLMExtractor(model, api_base=stub.base_url, api_key="bench", timeout=30)
    ideal = concurrency / latency
    n = max(4 * concurrency, round(ideal * seconds))

    async def run(count: int) -> float:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                await ex.aextract(TEXT.format(tag=f"b{i}"), schema)

        t = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(count)))
        return time.perf_counter() - t

    async def both() -> tuple[float, float]:
        await run(2 * concurrency)  # warm-up
        cpu0 = time.process_time()
        wall = await run(n)
        return wall, time.process_time() - cpu0

    wall, cpu = asyncio.run(both())
    return {"model": model, "concurrency": concurrency, "calls": n, "calls_per_second": round(n / wall, 1),
            "ratio": round(n / wall / ideal, 3), "cpu_ms_per_call": round(1000 * cpu / n, 2)}


# -- memory ------------------------------------------------------------------------------------------------

_SYLLABLES = ["ka", "ro", "mi", "ten", "vo", "la", "shi", "par", "den", "lu", "ber", "nof", "ga", "tri", "sel", "qu"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


_FILLER = [
    "The committee met again in the spring and the minutes were kept.",
    "Funding was uncertain for most of the decade, and several projects were delayed.",
    "Contemporary accounts differ on the details of the early designs.",
    "Much of the correspondence from this period has been lost.",
    "The machines of the time filled whole rooms and needed constant attention.",
    "Reliability, not speed, was the main concern of the engineers.",
    "Later historians have revisited these claims with more care.",
    "The work drew on ideas from telephone switching and radar.",
]


def generate_corpus(directory: Path, megabytes: int, *, seed: int = 11) -> tuple[int, int]:
    """``megabytes`` files of ~1 MB of generated prose, written one paragraph at a time (never held whole).

    A quarter of the sentences state a fact (about 15 entity mentions per 2 kB chunk, like encyclopedic
    prose); people are the schema's gazetteer names plus 2,000 generated "Dr. <First> <Last>", and
    organisations the gazetteer's plus 300 generated "<Word> University" (the schema's patterns find
    them); places, machines and publications come from the gazetteer. Returns (files, bytes)."""
    from kgr.model.schema import load_schema

    schema = load_schema(SCHEMA_PATH)
    rng = random.Random(seed)
    people = [f"Dr. {_word(rng)} {_word(rng)}" for _ in range(2000)] + schema.entity_types["Person"].names
    orgs = [f"{_word(rng)} {rng.choice(['University', 'Laboratory', 'Corporation'])}" for _ in range(300)]
    orgs += schema.entity_types["Organization"].names
    places = schema.entity_types["Place"].names
    machines = schema.entity_types["Machine"].names
    pubs = schema.entity_types["Publication"].names
    facts = [
        lambda: f"{rng.choice(people)} was born in {rng.choice(places)}.",
        lambda: f"{rng.choice(people)} studied at {rng.choice(orgs)}.",
        lambda: f"{rng.choice(people)} worked at {rng.choice(orgs)} for many years.",
        lambda: f"{rng.choice(people)} designed the {rng.choice(machines)}.",
        lambda: f"{rng.choice(people)} collaborated with {rng.choice(people)}.",
        lambda: f"{rng.choice(people)} wrote {rng.choice(pubs)}.",
        lambda: f"The {rng.choice(orgs)} is located in {rng.choice(places)}.",
    ]
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(megabytes):
        path = directory / f"part-{i:04d}.txt"
        size = 0
        with path.open("w", encoding="utf-8") as fh:
            while size < 1_000_000:
                sents = [rng.choice(facts)() if rng.random() < 0.25 else rng.choice(_FILLER)
                         for _ in range(rng.randint(3, 7))]
                para = " ".join(sents) + "\n\n"
                fh.write(para)
                size += len(para.encode())
        total += size
    return megabytes, total


def _rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def bench_memory(megabytes: int, concurrency: int, promote: bool, timeout: float | None, workdir: Path) -> dict:
    corpus = workdir / "corpus"
    t = time.perf_counter()
    files, nbytes = generate_corpus(corpus, megabytes)
    gen_seconds = time.perf_counter() - t
    _reset()
    cmd = [sys.executable, "-m", "kgr.cli", "ingest", str(corpus), "--schema", str(SCHEMA_PATH),
           "--concurrency", str(concurrency), "--json"] + ([] if promote else ["--no-promote"])
    out_path = workdir / "memory-report.json"
    samples: list[tuple[float, int]] = []
    with out_path.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.DEVNULL)
        started = time.perf_counter()
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                kb = _rss_kb(proc.pid)
                if kb is not None:
                    samples.append((time.perf_counter() - started, kb))
                stop.wait(1.0)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if timeout and time.perf_counter() - started > timeout:
                timed_out = True
                proc.send_signal(signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.5)
        elapsed = time.perf_counter() - started
        stop.set()
        th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    result: dict = {"megabytes": megabytes, "files": files, "bytes": nbytes, "generate_seconds": round(gen_seconds, 1),
                    "concurrency": concurrency, "promote": promote, "seconds": round(elapsed, 1),
                    "exit_code": proc.returncode, "timed_out": timed_out,
                    "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if samples:
        marks = [samples[int(f * (len(samples) - 1))] for f in (0.1, 0.25, 0.5, 0.75, 1.0)]
        result["rss_mb_over_time"] = [[round(s, 0), round(kb / 1024, 1)] for s, kb in marks]
    if not timed_out:
        rep = json.loads(out_path.read_text())
        result.update(documents=rep["documents"], chunks=rep["chunks"], chunks_processed=rep["chunks_processed"],
                      chunks_failed=len(rep["chunks_failed"]), triples_staged=rep["triples_staged"],
                      new_votes=rep["new_votes"], new_entities=rep["new_entities"],
                      chunks_per_second=rep["chunks_per_second"], transactions=rep["transactions"])
    else:
        from kgr.engine import Engine
        from kgr.store.cypher import add_template_dir

        add_template_dir(ROOT / "scripts" / "cypher")  # bench_ingest_progress
        with Engine.connect() as kg:
            n = kg.graph.read("bench_ingest_progress")[0]
        result.update(chunks_seen=n["all"], chunks_processed=n["done"],
                      chunks_per_second=round(n["done"] / elapsed, 2))
    return result


def _throughput_level(results: dict, args: argparse.Namespace, stub: Stub, c: int, counts: list[int], model: str,
                      work: Path) -> None:
    """One concurrency level with one model name: in process, each worker count, the bare ceiling."""
    row = bench_concurrency(stub, c, args.latency, args.seconds, work, model=model)
    results["pipeline"].append(row)
    print(f"{model}: pipeline   c={c:3d}: {row['chunks_per_second']:7.1f} chunks/s of ideal {row['ideal']:6.1f} "
          f"= {row['ratio']:.0%}  ({row['chunks']} chunks, CPU ms/chunk {row['cpu_ms_per_chunk']}, "
          f"{row['cores_busy']} cores busy, {row['transactions']} transactions)", flush=True)
    if args.executor != "inprocess":
        for w in counts:
            row = bench_concurrency(stub, c, args.latency, args.seconds, work, args.executor, w, model)
            results["executor"].append(row)
            print(f"{model}: {args.executor:8s} w={w} c={c:3d}: {row['chunks_per_second']:7.1f} chunks/s of ideal "
                  f"{row['ideal']:6.1f} = {row['ratio']:.0%}  (CPU ms/chunk {row['cpu_ms_per_chunk']}, "
                  f"{row['cores_busy']} cores busy, {row['transactions']} transactions, workers started in "
                  f"{row['start_seconds']} s, stopped in {row['stop_seconds']} s, worker peak RSS {row.get('worker_peak_rss_mb')} MB)",
                  flush=True)
    if args.skip_bare:
        return
    bare = bench_bare_llm(stub, c, args.latency, args.seconds, model)
    results["bare_litellm"].append(bare)
    print(f"{model}: bare LLM   c={c:3d}: {bare['calls_per_second']:7.1f} calls/s  = {bare['ratio']:.0%} of ideal "
          f"({bare['cpu_ms_per_call']} ms CPU/call)", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", default="1,8,32", help="comma-separated concurrency levels")
    ap.add_argument("--latency", type=float, default=0.2, help="stub seconds per call")
    ap.add_argument("--seconds", type=float, default=10.0, help="ideal duration of each throughput run")
    ap.add_argument("--memory-mb", type=int, default=50)
    ap.add_argument("--memory-concurrency", type=int, default=8)
    ap.add_argument("--memory-promote", action="store_true")
    ap.add_argument("--memory-timeout", type=float, default=None)
    ap.add_argument("--executor", choices=["inprocess", "process", "ray"], default="inprocess",
                    help="also run the throughput levels with this executor (beside in-process)")
    ap.add_argument("--workers", default="1,2,4", help="comma-separated worker counts (process/ray executors)")
    ap.add_argument("--model", default=DEFAULT_MODEL,
                    help="comma-separated litellm names for the stub, each run in turn (e.g. "
                         "openai/stub-model,hosted_vllm/stub-model: the OpenAI SDK route, litellm's own HTTP route)")
    ap.add_argument("--skip-bare", action="store_true", help="skip the bare litellm ceiling")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--json", dest="json_out", help="write the results to this file too")
    args = ap.parse_args(argv)
    if not os.environ.get("NEO4J_URI"):
        raise SystemExit("set NEO4J_URI to a throwaway database: the benchmark wipes it")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    results: dict = {"machine": {"cpus": os.cpu_count(), "loadavg_start": list(os.getloadavg())},
                     "latency": args.latency}
    with tempfile.TemporaryDirectory(prefix="kgr-bench-ingest-") as tmp:
        work = Path(tmp)
        if not args.skip_throughput:
            stub = Stub(args.latency, work)
            try:
                levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
                results["pipeline"] = []
                results["bare_litellm"] = []
                counts = [int(x) for x in args.workers.split(",") if x.strip()]
                if args.executor == "ray":
                    import ray

                    ray.init(include_dashboard=False, configure_logging=False, log_to_driver=False,
                             num_cpus=max(counts))  # logical CPUs: one per actor at most
                results["executor"] = []
                for model in [m.strip() for m in args.model.split(",") if m.strip()]:
                    for c in levels:
                        _throughput_level(results, args, stub, c, counts, model, work)
            finally:
                stub.stop()
        if not args.skip_memory:
            mem = bench_memory(args.memory_mb, args.memory_concurrency, args.memory_promote, args.memory_timeout, work)
            results["memory"] = mem
            print(f"memory: {mem['megabytes']} MB corpus, peak RSS {mem['peak_rss_mb']} MB, {mem['seconds']} s, "
                  f"{mem.get('chunks_processed')} chunks processed ({mem.get('chunks_per_second')} chunks/s)"
                  + (" [stopped at --memory-timeout]" if mem["timed_out"] else ""), flush=True)
            print(f"        RSS over time (s, MB): {mem.get('rss_mb_over_time')}", flush=True)
    results["machine"]["loadavg_end"] = list(os.getloadavg())
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
