"""The public surface of kgr.gauge and its layer rule."""

from __future__ import annotations

import ast
import importlib
import pathlib

import kgr.gauge

MODULES = ["laplacian", "entropy", "coverage", "reward", "gedig", "gates", "calibration"]
ALLOWED_THIRD_PARTY = {"numpy", "scipy", "networkx", "pydantic", "sklearn"}
STDLIB = {"__future__", "math", "numbers", "hashlib", "heapq", "zlib", "collections", "typing", "dataclasses", "re",
          "json", "time", "functools", "itertools", "warnings", "importlib", "sys", "types"}  # the last three: the lazy re-exports


def test_every_module_has_all_and_the_package_reexports_it():
    exported = set(kgr.gauge.__all__)
    for name in MODULES:
        module = importlib.import_module(f"kgr.gauge.{name}")
        assert module.__doc__ and module.__all__, name
        for public in module.__all__:
            assert public in exported, f"kgr.gauge does not re-export {name}.{public}"
            assert getattr(kgr.gauge, public) is getattr(module, public)


def test_public_functions_have_numpydoc_sections():
    for name in MODULES:
        module = importlib.import_module(f"kgr.gauge.{name}")
        for public in module.__all__:
            obj = getattr(module, public)
            if callable(obj) and not isinstance(obj, type) and getattr(obj, "__module__", "") == module.__name__:
                doc = obj.__doc__ or ""
                for section in ("Parameters", "Returns", "Raises", "Notes", "References", "Examples", ".. math::"):
                    assert section in doc, f"{name}.{public} lacks {section}"


def test_layer_rule_imports_only_errors_model_and_math_libraries():
    root = pathlib.Path(kgr.gauge.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for mod in names:
                top = mod.split(".")[0]
                if top == "kgr":
                    assert mod.startswith(("kgr.errors", "kgr.model", "kgr.gauge")), f"{path.name}: {mod}"
                elif top not in ALLOWED_THIRD_PARTY:
                    assert top in STDLIB, f"{path.name}: {mod}"
