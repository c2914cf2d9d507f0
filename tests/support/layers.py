"""The import rule of the pure packages (gauge, evidence, promotion), checked on their source.

Each may import the standard library, a few math libraries and the kgr packages below it:
``kgr.gauge`` ← ``kgr.evidence`` ← ``kgr.promotion`` (one direction only), all over ``kgr.model``
and ``kgr.errors``. Relative imports are resolved first; imports inside functions count.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys

#: Third-party libraries a pure package may import.
MATH_LIBRARIES = frozenset({"numpy", "scipy", "networkx", "pydantic", "sklearn"})


def imports_of(package: str) -> list[tuple[str, int, str]]:
    """(file, line, absolute module name) of every import in ``package``'s modules."""
    root = pathlib.Path(importlib.import_module(package).__file__).parent
    out = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out += [(path.name, node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                name = node.module or ""
                if node.level:
                    name = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *([name] if name else [])])
                out.append((path.name, node.lineno, name))
    return out


def layer_violations(package: str, allowed_kgr: tuple[str, ...]) -> list[str]:
    """Imports of ``package`` outside the standard library, :data:`MATH_LIBRARIES` and ``allowed_kgr``."""
    wrong = []
    for file, line, name in imports_of(package):
        top = name.split(".")[0]
        if top == "kgr":
            if not any(name == a or name.startswith(a + ".") for a in allowed_kgr):
                wrong.append(f"{package}/{file}:{line}: {name}")
        elif top not in MATH_LIBRARIES and top not in sys.stdlib_module_names and top != "__future__":
            wrong.append(f"{package}/{file}:{line}: {name}")
    return wrong
