"""A test module for tests/test_conftest_safety.py's inner pytest runs (collected only when named on
the command line): it records which database the fixtures chose and what the environment holds."""

from __future__ import annotations

import json
import os


def test_probe(neo4j_settings):
    with open(os.environ["KGR_PROBE_OUT"], "w", encoding="utf-8") as fh:
        json.dump({"uri": neo4j_settings.uri, "env_uri": os.environ.get("NEO4J_URI"),
                   "env_password": os.environ.get("NEO4J_PASSWORD")}, fh)
