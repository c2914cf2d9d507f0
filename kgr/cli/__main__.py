"""``python -m kgr.cli`` runs the command line (same as the ``kgr`` script)."""

from kgr.gc_freeze import cycle_collector_paused

with cycle_collector_paused():  # imports: many long-lived objects, next to no garbage
    from kgr.cli.main import app

app(prog_name="kgr")
