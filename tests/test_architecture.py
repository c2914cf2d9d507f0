"""The house rules, checked on the source (issue 14; docs/architecture.md explains them).

1. **Layers.** The layer order is written once, in :data:`LAYERS`: a module may import from its own
   layer and the layers before it, never from a later one. Packages that share a layer but must
   stay apart are listed in :data:`APART`; those stacked in one direction inside a layer
   (promotion → evidence → gauge) in :data:`WITHIN`.
2. **Only the store talks to Neo4j.** Outside ``kgr/store`` (and the managed-Neo4j runtime, which
   runs the JVM but sends no query) no module imports ``neo4j``, renders a Cypher template or runs
   one: no ``kgr.store.cypher``, no ``.read(``/``.write(``/``.stream(`` on a graph, no ``tx.run``,
   ``write_unit``, ``read_unit``, ``run_script`` or ``.driver``.
3. **Size.** No module over 500 lines and no function over 80 lines of code, in every package (the
   gauge included), except those listed in :data:`LONG_MODULES` / :data:`LONG_FUNCTIONS` with the
   reason they stay. A function's length is its code from ``def`` to its last line *minus its
   docstring*: the numpydoc sections STYLE.md asks for (formula, Parameters, Notes, References,
   doctested Examples) are not what makes a function hard to read, and counting them would push the
   best-documented functions into the exception list.
4. **No import circles** among kgr's modules (an import inside a function closes a circle as well
   as one at the top), and **no private imports across modules**: no ``from m import _name`` of
   another module's private name, and no import of a private module (``pkg._mod``) from outside
   its package.

Imports inside functions count as much as those at the top of a module; imports under
``if TYPE_CHECKING:`` do not run and are left out of the circle check.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

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
    frozenset({"kgr.connect", "kgr.engine", "kgr.browser", "kgr.catalog"}),  # the front door; the catalogue over it
    frozenset({"kgr.demo"}),
    frozenset({"kgr.server"}),
    frozenset({"kgr.cli"}),
)

#: Packages of one layer that must not import each other.
APART: tuple[frozenset[str], ...] = (frozenset({"kgr.store", "kgr.runtime"}), frozenset({"kgr.errors", "kgr.text"}),
                                   frozenset({"kgr.tools", "kgr.slices"}),
                                   frozenset({"kgr.resolution", "kgr.gauge"}), frozenset({"kgr.resolution", "kgr.evidence"}),
                                   frozenset({"kgr.resolution", "kgr.promotion"}))

#: Packages of one layer stacked in one direction: each may import only those before it
#: (promotion → evidence → gauge: policies over learned evidence over graph math; the served tools'
#: catalogue over the engine).
WITHIN: tuple[tuple[str, ...], ...] = (("kgr.gauge", "kgr.evidence", "kgr.promotion"), ("kgr.engine", "kgr.catalog"))

#: Where Neo4j may be imported (the store queries it; the runtime only runs the server process).
NEO4J_ALLOWED = ("kgr.store", "kgr.runtime")

#: Modules allowed past 500 lines, and why.
LONG_MODULES: dict[str, str] = {}

#: Functions allowed past 80 lines of code ("module:function"), and why.
LONG_FUNCTIONS: dict[str, str] = {}

#: Private names still imported across modules ("importer -> module.name"), and why.
_RESOLVE_REWRITE = ("kgr/store/merge_wave.py and kgr/store/split.py are being rewritten for speed (issue 30, "
                    "worktree wt-speed): rename kgr.store.merge's shared helpers public once that is merged")
PRIVATE_IMPORTS: dict[str, str] = {
    "kgr.store.merge_wave -> kgr.store.merge._check_pair": _RESOLVE_REWRITE,
    "kgr.store.merge_wave -> kgr.store.merge._Moves": _RESOLVE_REWRITE,
    "kgr.store.split -> kgr.store.merge._unite": _RESOLVE_REWRITE,
    "kgr.store.split -> kgr.store.merge._votes_of": _RESOLVE_REWRITE,
}



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
            elif any(src in order and dst in order and order.index(dst) > order.index(src) for order in WITHIN):
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {src} imports {name}, which builds on it")
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


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` (its decorators not counted) to the function's end, less its docstring."""
    length = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        length -= (first.end_lineno or first.lineno) - first.lineno + 1
    return length


def _long_functions(tree: ast.Module, module: str) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = _code_lines(node)
            if length > 80:
                out.append((f"{module}:{node.name}", length))
    return out


def test_no_god_modules_or_functions():
    wrong = []
    for module, path, tree in MODULES:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 500 and module not in LONG_MODULES:
            wrong.append(f"{module}: {lines} lines")
        wrong += [f"{name}: {n} lines" for name, n in _long_functions(tree, module) if name not in LONG_FUNCTIONS]
    assert not wrong, "\n".join(wrong)


def test_the_size_rule_counts_code_not_docstrings():
    long_doc = "def f():\n    \"\"\"" + "doc\n" * 100 + "    \"\"\"\n    return 1\n"
    long_code = "def g():\n    \"\"\"One line.\"\"\"\n" + "    x = 1\n" * 81
    assert _long_functions(ast.parse(long_doc), "m") == []
    assert _long_functions(ast.parse(long_code), "m") == [("m:g", 82)]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if _is_package(module) else 0)]
    return ".".join([*base, node.module] if node.module else base)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of the imports under ``if TYPE_CHECKING:`` (never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return out


def _import_edges(modules: list[tuple[str, Path, ast.Module]]) -> list[tuple[str, str, int, str | None]]:
    """(importer, imported kgr module, line, imported name or None) for every import of a kgr module.

    ``from pkg import sub`` names the submodule when ``sub`` is one; otherwise the edge goes to the
    module named in the ``from``. The implicit import of a parent package is not an edge.
    """
    known = {m for m, _, _ in modules}
    edges = []
    for module, _, tree in modules:
        skip = _type_checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges += [(module, a.name, node.lineno, None) for a in node.names
                          if a.name.startswith("kgr.") and node.lineno not in skip]
            elif isinstance(node, ast.ImportFrom) and node.lineno not in skip:
                base = _resolve(module, node)
                if base != "kgr" and not base.startswith("kgr."):
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    edges.append((module, sub, node.lineno, None) if sub in known else (module, base, node.lineno, a.name))
    return edges


def _cycles(edges: list[tuple[str, str, int, str | None]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for src, dst, _, _ in edges:
        if src != dst:
            graph.setdefault(src, set()).add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert _cycles(_import_edges(MODULES)) == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(edges: list[tuple[str, str, int, str | None]]) -> list[str]:
    wrong = []
    for src, dst, line, name in edges:
        if name is not None and _private(name) and dst != src and f"{src} -> {dst}.{name}" not in PRIVATE_IMPORTS:
            wrong.append(f"{src}:{line} imports {dst}.{name}")
        parts = dst.split(".")
        for i, part in enumerate(parts):
            owner = ".".join(parts[:i])
            if _private(part) and src != owner and not src.startswith(owner + "."):
                wrong.append(f"{src}:{line} imports the private module {dst} from outside {owner}")
    return wrong


def test_no_private_imports_across_modules():
    assert _private_imports(_import_edges(MODULES)) == []


@pytest.mark.parametrize("source, module, expected", [
    ("from kgr.store.group_commit import _write_group", "kgr.store.staging",
     ["kgr.store.staging:1 imports kgr.store.group_commit._write_group"]),
    ("from kgr.tools import _score_memo", "kgr.tools.quality", []),  # a private module of its own package
    ("from kgr.tools._kg import EntityIndex", "kgr.catalog.graph_tools",
     ["kgr.catalog.graph_tools:1 imports the private module kgr.tools._kg from outside kgr.tools"]),
    ("from .gedig import _gauge_on_view", "kgr.gauge.batch", ["kgr.gauge.batch:1 imports kgr.gauge.gedig._gauge_on_view"]),
    ("from kgr.gauge.gedig import gauge_on_view", "kgr.promotion.gedig", []),
])
def test_the_private_import_check_finds_what_it_should(source, module, expected):
    mods = [(module, Path("x.py"), ast.parse(source)), ("kgr.tools._score_memo", Path("y.py"), ast.parse(""))]
    assert _private_imports(_import_edges(mods)) == expected


def test_the_layer_check_sees_a_pure_package_importing_the_one_above_it(monkeypatch):
    fake = ("kgr.gauge.fake", ROOT / "gauge" / "fake.py", ast.parse("from kgr.promotion.cut import cut\n"))
    monkeypatch.setattr(sys.modules[__name__], "MODULES", [fake])
    with pytest.raises(AssertionError, match="kgr.gauge imports kgr.promotion.cut, which builds on it"):
        test_no_import_points_up_or_across()


def test_the_circle_check_sees_imports_inside_functions():
    a = ast.parse("import kgr.x.b\n")
    b = ast.parse("def f():\n    from kgr.x import a\n")
    c = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kgr.x.a import A\n")
    mods = [("kgr.x.a", Path("a.py"), a), ("kgr.x.b", Path("b.py"), b)]
    assert _cycles(_import_edges(mods)) == [["kgr.x.a", "kgr.x.b"]]
    assert _cycles(_import_edges([mods[0], ("kgr.x.b", Path("b.py"), c)])) == []


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


#: What the store may use of the promotion package: settings and schema readings, never a policy (the
#: store runs a round with the policy it is handed, :func:`kgr.store.rounds.run_round`; it decides nothing).
STORE_PROMOTION_SURFACE = {
    "kgr.promotion.gedig": "PromotionConfig, the settings a metrics report prints",
    "kgr.promotion.constraints": "functional_relations: which relations the schema declares functional",
}


def test_the_store_decides_nothing():
    """Issue 33: no module of the store builds or imports a promotion policy or the evidence scorer."""
    wrong = [f"{path.relative_to(ROOT.parent)}:{line}: {name}"
             for module, path, tree in MODULES if module.startswith("kgr.store.")
             for line, name in _imports(tree, module)
             if _in(name, ("kgr.promotion", "kgr.evidence")) and name not in STORE_PROMOTION_SURFACE]
    assert not wrong, "\n".join(wrong)


#: What the server and the tool catalogue may use of the store or the ingestion package besides
#: :class:`kgr.engine.Engine` and :mod:`kgr.connect`: nothing (the types they pass around, ``Graph``,
#: ``Neo4jSettings`` and ``GroupWriter``, come re-exported by the front door).
SERVER_STORE_SURFACE: dict[str, str] = {}

#: Where served tools are defined: the catalogue (``kgr.catalog``: every served tool is listed there, and
#: those beyond the six agent tools are defined there, over :class:`kgr.engine.Engine`) and the six agent
#: tools' own modules (``kgr.tools``, registered with ``@tool``; the ingestion loop calls them below the engine).
TOOL_CATALOGUE = ("kgr.catalog", "kgr.tools")


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_server_goes_through_the_engine():
    """Issue 33: the server (and the catalogue of the tools it serves) calls :class:`kgr.engine.Engine`,
    never the store or the ingestion pipeline."""
    wrong = [f"{path.relative_to(ROOT.parent)}:{line}: {name}"
             for module, path, tree in MODULES if _in(module, ("kgr.server", "kgr.catalog"))
             for line, name in _imports(tree, module)
             if _in(name, ("kgr.store", "kgr.ingest")) and name not in SERVER_STORE_SURFACE]
    assert not wrong, "\n".join(wrong)


def _tool_definitions(tree: ast.Module) -> list[tuple[int, str]]:
    """Where a module defines a tool: builds a ``ToolSpec`` or registers a function with ``@tool(...)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name == "ToolSpec" or (name == "tool" and any(k.arg == "read_only" for k in node.keywords)):
                found.append((node.lineno, name))
    return found


def test_every_served_tool_is_defined_in_the_one_catalogue():
    """Issue 33: no module outside the catalogue defines a tool, and every served tool comes from it."""
    wrong = [f"{path.relative_to(ROOT.parent)}:{line}: {what}(...)"
             for module, path, tree in MODULES if not _in(module, TOOL_CATALOGUE)
             for line, what in _tool_definitions(tree)]
    assert not wrong, "tools defined outside the catalogue:\n" + "\n".join(wrong)
    from kgr.catalog import served_tools

    specs = served_tools()
    assert len(specs) == 22
    assert [s.name for s in specs if not _in(s.func.__module__, TOOL_CATALOGUE)] == []


@pytest.mark.parametrize("source, expected", [
    ("spec = ToolSpec(name='x', description='', input_model=I, output_model=O, func=f, read_only=True, "
     "destructive=False, idempotent=True, needs_graph=True)", [(1, "ToolSpec")]),
    ("@registry.tool(read_only=True, idempotent=True)\ndef f(p: I) -> O: ...", [(1, "tool")]),
    ("tool = pick_tool(); tool(); ToolSpec.input_schema(s)", []),
])
def test_the_tool_definition_check_finds_what_it_should(source, expected):
    assert _tool_definitions(ast.parse(source)) == expected
