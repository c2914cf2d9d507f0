"""``python -m kgr.ingest.executors FD``: one worker process of the process executor
(:func:`kgr.ingest.executors.process.serve` on the socket ``FD`` its job passed it)."""

import sys
from multiprocessing.connection import Connection

from kgr.ingest.executors.process import serve

if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
