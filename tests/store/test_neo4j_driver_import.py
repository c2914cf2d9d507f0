"""kgr imports the Neo4j driver without pandas (:mod:`kgr.store.neo4j_driver`): 0.5 s of start-up.

A stand-in ``pandas`` package on the path records whether anything imported it, whether or not the
real pandas is installed here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


#: Any attribute path the driver reads (``pd.NA``, ``pd.core.arrays.ExtensionArray``) is a fresh class.
_STAND_IN = """
STAND_IN = True


class _Any(type):
    def __getattr__(cls, name):
        return _Any(name, (), {})


def __getattr__(name):
    return _Any(name, (), {})
"""


def _run(code: str, tmp_path: Path) -> str:
    fake = tmp_path / "pandas"
    fake.mkdir(exist_ok=True)
    (fake / "__init__.py").write_text(_STAND_IN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_the_driver_alone_imports_pandas(tmp_path):
    """The control: the driver imported directly pulls in the stand-in."""
    assert _run("import sys, neo4j; print('pandas' in sys.modules)", tmp_path) == "True"


def test_kgr_imports_the_driver_without_pandas_and_leaves_pandas_importable(tmp_path):
    code = ("import sys; import kgr.store.connection, kgr.store.inspect, kgr.cli.main; "
            "import neo4j._optional_deps as deps; "
            "print('pandas' in sys.modules, deps.pd is None, end=' '); "
            "import pandas; print(pandas.STAND_IN)")
    assert _run(code, tmp_path) == "False True True"


def test_a_program_that_imported_pandas_first_keeps_the_drivers_pandas_support(tmp_path):
    code = ("import pandas, kgr.store.connection; import neo4j._optional_deps as deps; "
            "print(deps.pd is pandas)")
    assert _run(code, tmp_path) == "True"


def test_no_module_of_kgr_imports_pandas():
    """What makes hiding pandas from the driver safe: no pandas value can reach a query."""
    import re

    import kgr

    root = Path(kgr.__file__).parent
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if re.search(r"^\s*(import pandas|from pandas\b)", p.read_text(encoding="utf-8"), re.M)]
    assert found == []
