"""The house rules, checked on the source (issue 14; docs/architecture.md explains them).

1. **Layers.** The layer order is written once, in :data:`LAYERS`: a module may import from its own
   layer and the layers before it, never from a later one. Packages that share a layer but must
   stay apart are listed in :data:`APART`.
2. **Only the store talks to Neo4j.** Outside ``kgr/store`` (and the managed-Neo4j runtime, which
   runs the JVM but sends no query) no module imports ``neo4j``, renders a Cypher template or runs
   one: no ``kgr.store.cypher``, no ``.read(``/``.write(``/``.stream(`` on a graph, no ``tx.run``,
   ``write_unit``, ``read_unit``, ``run_script`` or ``.driver``.
3. **Size.** No module over 500 lines and no function over 80 lines, except those listed in
   :data:`LONG_MODULES` / :data:`LONG_FUNCTIONS` with the reason they stay.
4. **No circles, no private imports across modules** (in :data:`NO_CIRCLES_OR_PRIVATE_IMPORTS`): no
   circle of imports, and no module imports another's ``_name`` (a package-private module such as
   ``kgr.tools._kg`` is imported only from inside its package).

Imports inside functions count as much as those at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1] / "kgr"

#: The layer order, lowest first. ``kgr`` itself (the package's ``__init__``, ``__version__``) is below all.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"kgr.errors", "kgr.text", "kgr.gc_freeze", "kgr.litellm_offline"}),
    frozenset({"kgr.model"}),
    frozenset({"kgr.gauge", "kgr.evidence", "kgr.promotion", "kgr.resolution"}),  # pure: math, evidence, policies, entity resolution (no Neo4j)
    frozenset({"kgr.store", "kgr.runtime"}),
    frozenset({"kgr.tools", "kgr.slices"}),
    frozenset({"kgr.extract"}),
    frozenset({"kgr.ingest"}),
    frozenset({"kgr.agent"}),
    frozenset({"kgr.connect", "kgr.engine", "kgr.browser"}),
    frozenset({"kgr.demo"}),
    frozenset({"kgr.server"}),
    frozenset({"kgr.cli"}),
)

#: Packages of one layer that must not import each other.
APART: tuple[frozenset[str], ...] = (frozenset({"kgr.store", "kgr.runtime"}), frozenset({"kgr.errors", "kgr.text"}),
                                   frozenset({"kgr.tools", "kgr.slices"}))

#: Where Neo4j may be imported (the store queries it; the runtime only runs the server process).
NEO4J_ALLOWED = ("kgr.store", "kgr.runtime")

#: Modules allowed past 500 lines, and why.
LONG_MODULES: dict[str, str] = {}

#: Functions allowed past 80 lines ("module:function"), and why.
LONG_FUNCTIONS: dict[str, str] = {}

GAUGE_MATH = "kgr.gauge"  # the gauge's math is exempt from the size rules (formulas read best whole)


def _modules() -> list[tuple[str, Path, ast.Module]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return out


MODULES = _modules()


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _layer(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"{package} is in no layer: add it to LAYERS in tests/test_architecture.py")


def _imports(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import, relative ones resolved."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if _is_package(module) else 0)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.append((node.lineno, name))
    return out


def _is_package(module: str) -> bool:
    return (ROOT.parent / Path(*module.split(".")) / "__init__.py").exists()


def test_every_package_has_a_layer():
    packages = {_package(m) for m, _, _ in MODULES if m != "kgr"}
    for p in sorted(packages):
        _layer(p)


def test_no_import_points_up_or_across():
    wrong = []
    for module, path, tree in MODULES:
        if module == "kgr":
            continue
        src = _package(module)
        for line, name in _imports(tree, module):
            if not name.startswith("kgr.") or _package(name) == src:
                continue
            dst = _package(name)
            if _layer(dst) > _layer(src):
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {src} (layer {_layer(src)}) imports "
                             f"{name} (layer {_layer(dst)})")
            elif any({src, dst} <= apart for apart in APART):
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {src} and {dst} must stay apart")
    assert not wrong, "\n".join(wrong)


_DB_CALLS = {"read", "write", "stream", "write_unit", "read_unit", "run_script", "execute_query"}


def _database_access(tree: ast.Module) -> list[tuple[int, str]]:
    """Calls that reach Neo4j or render Cypher: ``x.read("template", ...)``, ``tx.run(...)``, ``.driver``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "driver":
            found.append((node.lineno, ".driver"))
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr, first = node.func.attr, node.args[0] if node.args else None
        template = isinstance(first, ast.Constant) and isinstance(first.value, str)
        if attr in {"read", "write", "stream", "run"} and template and "{" not in str(first.value) \
                and " " not in str(first.value) and str(first.value).replace("_", "").isalnum():
            found.append((node.lineno, f".{attr}({first.value!r})"))  # a template name: Cypher by the back door
        elif attr in _DB_CALLS - {"read", "write", "stream"}:
            found.append((node.lineno, f".{attr}(...)"))
    return found


def test_only_the_store_talks_to_neo4j():
    wrong = []
    for module, path, tree in MODULES:
        if _package(module) in NEO4J_ALLOWED:
            continue
        rel = path.relative_to(ROOT.parent)
        for line, name in _imports(tree, module):
            if name == "neo4j" or name.startswith("neo4j.") or name == "kgr.store.cypher":
                wrong.append(f"{rel}:{line}: imports {name}")
        wrong += [f"{rel}:{line}: {what}" for line, what in _database_access(tree)]
    assert not wrong, "\n".join(wrong)


def _long_functions(tree: ast.Module, module: str) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > 80:
                out.append((f"{module}:{node.name}", length))
    return out


def test_no_god_modules_or_functions():
    wrong = []
    for module, path, tree in MODULES:
        if module.startswith(GAUGE_MATH):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 500 and module not in LONG_MODULES:
            wrong.append(f"{module}: {lines} lines")
        wrong += [f"{name}: {n} lines" for name, n in _long_functions(tree, module) if name not in LONG_FUNCTIONS]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("graph.read('pending_edges', {})", [".read('pending_edges')"]),
    ("self.graph.write_unit(lambda tx: tx.run('finish_chunks', {}))", [".write_unit(...)", ".run('finish_chunks')"]),
    ("g.driver.execute_query('MATCH (n) RETURN n')", [".driver", ".execute_query(...)"]),
    ("path.read_text(); f.read(); q.write('a b')", []),  # not templates
])
def test_the_access_check_finds_what_it_should(source, expected):
    found = [what for _, what in sorted(_database_access(ast.parse(source)))]
    assert sorted(found) == sorted(expected)


#: The statements that write votes and processed marks, and the only modules that may run them: the
#: staging write path (the CLI's bulk staging also upserts each batch's entities ahead of its lane).
WRITE_PATH: dict[str, frozenset[str]] = {
    "stage_votes": frozenset({"kgr.store.group_commit"}),
    "claim_chunks": frozenset({"kgr.store.chunk_marks"}),
    "finish_chunks": frozenset({"kgr.store.chunk_marks"}),
    "stage_entities": frozenset({"kgr.store.group_commit", "kgr.store.staging"}),
}


def test_one_staging_write_path():
    """Votes and processed marks are written by one path (kgr.store.group_commit, used by the CLI,
    the pipeline and the server): no other module names their statements."""
    wrong = []
    for module, _, tree in MODULES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in WRITE_PATH and module not in WRITE_PATH[node.value]:
                wrong.append(f"{module}:{node.lineno} runs {node.value}")
    assert not wrong, "\n".join(wrong)


#: Packages held to "no import circles and no private names across modules" (issue 33); the others
#: join as their circles and private imports go (the gauge's are being split apart).
NO_CIRCLES_OR_PRIVATE_IMPORTS = ("kgr.tools", "kgr.server")


def _in_scope(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in NO_CIRCLES_OR_PRIVATE_IMPORTS)


def _is_module(name: str) -> bool:
    path = ROOT.parent / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _parent(name: str) -> str:
    return name.rsplit(".", 1)[0]


def _private_imports(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    """(line, what) of every import of a private name from another module: a ``_name`` that is not a
    module, or a private module (``kgr.tools._kg``) imported from outside its own package."""
    importer_package = module if _is_package(module) else _parent(module)

    def private_module(name: str) -> bool:
        return any(part.startswith("_") and not part.startswith("__") for part in name.split(".")) \
            and _parent(name) != importer_package

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, f"import {a.name}") for a in node.names if private_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if private_module(node.module):
                out.append((node.lineno, f"from {node.module} import ..."))
                continue
            for a in node.names:
                if not a.name.startswith("_") or a.name.startswith("__"):
                    continue
                full = f"{node.module}.{a.name}"
                if not _is_module(full) or private_module(full):
                    out.append((node.lineno, f"from {node.module} import {a.name}"))
    return out


def _module_imports(tree: ast.Module) -> set[str]:
    """The kgr modules a module imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.add(full if _is_module(full) else node.module)
    return {name for name in out if name.startswith("kgr.")}


def test_no_private_imports_across_modules():
    wrong = [f"{path.relative_to(ROOT.parent)}:{line}: {what}"
             for module, path, tree in MODULES if _in_scope(module)
             for line, what in _private_imports(tree, module)]
    assert not wrong, "\n".join(wrong)


def test_no_import_circles():
    """No circle of imports among the modules in scope (imports inside functions count)."""
    graph = nx.DiGraph()
    for module, _, tree in MODULES:
        if _in_scope(module):
            graph.add_node(module)
            graph.add_edges_from((module, name) for name in _module_imports(tree) if _in_scope(name) and name != module)
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, "import circles: " + "; ".join(" ↔ ".join(c) for c in circles)


@pytest.mark.parametrize("module, source, expected", [
    ("kgr.server.slice_tools", "from kgr.server.helpers import _graph, spec_of", ["from kgr.server.helpers import _graph"]),
    ("kgr.tools.quality", "from kgr.tools import _score_memo\nfrom kgr.tools._kg import distinct_entities", []),
    ("kgr.server.app", "import kgr.tools._score_memo\nfrom kgr.tools._text import analyze_text",
     ["import kgr.tools._score_memo", "from kgr.tools._text import ..."]),
    ("kgr.tools.feedback", "from kgr.tools.density import __all__, min_count", []),
])
def test_the_private_import_check_finds_what_it_should(module, source, expected):
    assert [what for _, what in _private_imports(ast.parse(source), module)] == expected


#: What the command line may use of the ingestion package besides :class:`kgr.engine.Engine`: the
#: job's settings models and the listing of the paths a user names (no pipeline, no store).
CLI_INGEST_SURFACE = {
    "kgr.ingest.config": "IngestConfig, the job's settings (typer options map onto it)",
    "kgr.ingest.chunking": "ChunkingConfig, a settings model (kgr agent)",
    "kgr.ingest.loaders": "path_kind / iter_files: which paths hold documents, for messages and progress totals",
}


def test_the_command_line_goes_through_the_engine():
    """Issue 33: the CLI calls :class:`kgr.engine.Engine`, never the store or the ingestion pipeline."""
    wrong = [f"{path.relative_to(ROOT.parent)}:{line}: {name}"
             for module, path, tree in MODULES if module == "kgr.cli" or module.startswith("kgr.cli.")
             for line, name in _imports(tree, module)
             if name.startswith("kgr.store") or (name.startswith("kgr.ingest") and name not in CLI_INGEST_SURFACE)]
    assert not wrong, "\n".join(wrong)
