"""``python -m kgr.cli`` runs the command line (same as the ``kgr`` script)."""

from kgr.cli import imports_uncollected

with imports_uncollected():
    from kgr.cli.main import app

app(prog_name="kgr")
