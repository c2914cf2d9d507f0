"""kgr — a knowledge-graph construction engine on Neo4j.

Relations extracted from documents are staged as ``PENDING_REL``, gather votes from distinct
sources, age while unconfirmed, and are promoted by a policy (vote quorum, the geDIG gauge,
von Neumann entropy and coverage rewards). Every change is versioned.

The Python entry point is :class:`kgr.engine.Engine`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
