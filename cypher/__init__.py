"""Cypher templates (Jinja2, *.cypher.j2), shipped inside the kgr package as kgr.cypher."""
