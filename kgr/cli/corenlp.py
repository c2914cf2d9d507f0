"""``kgr corenlp install|parse|stop``: the optional dependency parser of the rules extractor (Stanford CoreNLP).

``install`` downloads the CoreNLP jars and English models with Maven into the cache once (about 480 MB;
CI runs it before the tests); ``parse TEXT`` starts a server for the call, parses and stops it (to see
what the extractor's checks read); ``stop`` ends the servers left on the port (a process killed before
it could stop its own). All print JSON with ``--json``; errors are one line on stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, emit, errors_to_exit, out

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help=(
    "The optional dependency parser of the rules extractor: Stanford CoreNLP (GPL-3.0-or-later), fetched from "
    "Maven Central on first use and run as a local server (kgr ingest --parser corenlp)."))


@app.command()
@errors_to_exit
def install(json_: JsonOpt = False) -> None:
    """Download the CoreNLP jars and models into the cache (once; KGR_CACHE_DIR, KGR_MVN)."""
    from kgr.runtime.corenlp import CoreNLPConfig, install_corenlp
    from kgr.runtime.progress import Progress

    config = CoreNLPConfig()
    lib = install_corenlp(config, Progress())
    emit({"version": config.version, "lib": str(lib), "jars": len(list(lib.glob("*.jar")))}, json_,
         lambda v: out.print(f"Stanford CoreNLP {v['version']}: {v['jars']} jars in {v['lib']}", markup=False))


@app.command()
@errors_to_exit
def parse(text: Annotated[str, typer.Argument(help="One sentence (or several, one a line).")],
          json_: JsonOpt = False) -> None:
    """Parse TEXT with a CoreNLP server (started for the call on KGR_CORENLP_PORT, then stopped)."""
    from kgr.runtime.corenlp import CoreNLPServer
    from kgr.runtime.corenlp_client import ParseClient
    from kgr.runtime.progress import Progress

    with CoreNLPServer(progress=Progress()) as server:
        parses = ParseClient(server.config.url).parse([line for line in text.splitlines() if line.strip()])
    rows = [[{"i": t.i, "word": t.word, "lemma": t.lemma, "pos": t.pos, "head": t.head, "dep": t.dep}
             for t in p.tokens] if p is not None else [] for p in parses]

    def human(value: list) -> None:
        for sent in value:
            for t in sent:
                head = sent[t["head"]]["word"] if t["head"] >= 0 else "ROOT"
                out.print(f"{t['i']:3} {t['word']:20} {t['pos']:6} {t['dep']:12} <- {head}", markup=False)
            out.print("", markup=False)

    emit(rows, json_, human)


@app.command()
@errors_to_exit
def stop(json_: JsonOpt = False) -> None:
    """Stop every CoreNLP server listening on KGR_CORENLP_PORT (SIGTERM)."""
    import os
    import signal

    from kgr.runtime.corenlp import CoreNLPConfig, find_servers

    config = CoreNLPConfig()
    pids = find_servers(config.port)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    emit({"port": config.port, "stopped": pids}, json_,
         lambda v: out.print(f"CoreNLP on port {v['port']}: stopped {v['stopped'] or 'nothing'}", markup=False))
