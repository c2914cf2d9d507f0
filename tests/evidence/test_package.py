"""kgr.evidence's layer rule: it builds on the gauge, never on promotion (promotion → evidence → gauge)."""

from __future__ import annotations

from tests.support.layers import layer_violations

ALLOWED = ("kgr.errors", "kgr.model", "kgr.gauge", "kgr.evidence")


def test_evidence_imports_only_gauge_model_errors_and_math_libraries():
    assert layer_violations("kgr.evidence", ALLOWED) == []


def test_the_check_would_see_an_import_of_promotion(monkeypatch):
    import tests.support.layers as layers

    real = layers.imports_of
    monkeypatch.setattr(layers, "imports_of", lambda p: [*real(p), ("features.py", 1, "kgr.promotion.cut")])
    assert layers.layer_violations("kgr.evidence", ALLOWED) == ["kgr.evidence/features.py:1: kgr.promotion.cut"]


def _public_callables():
    import importlib
    import inspect
    import pkgutil

    import kgr.evidence

    for info in pkgutil.iter_modules(kgr.evidence.__path__):
        module = importlib.import_module(f"kgr.evidence.{info.name}")
        assert module.__doc__ and hasattr(module, "__all__"), info.name
        for name in module.__all__:
            obj = getattr(module, name)
            if getattr(obj, "__module__", "") != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
            elif inspect.isclass(obj):
                for attr, fn in vars(obj).items():
                    if inspect.isfunction(fn) and not attr.startswith("_"):
                        yield f"{info.name}.{name}.{attr}", fn


def test_public_functions_have_numpydoc_parameters_and_returns():
    """The numpydoc layout of the math modules: a summary, then Parameters and Returns sections."""
    import inspect

    missing = []
    for where, fn in _public_callables():
        doc = inspect.getdoc(fn) or ""
        takes = [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]
        sections = ("Parameters\n----------", "Returns\n-------") if takes else ()
        missing += [f"{where}: {s.splitlines()[0]}" for s in sections if s not in doc]
        if not doc:
            missing.append(f"{where}: no docstring")
    assert missing == []
