"""The README says what the code does (issue 32, item 6): every environment variable kgr and its
tests read is documented, and the /health example says the number of tools the server serves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: a quoted KGR_*/NEO4J_* name: what os.environ.get, getenv and the runtime's _env() are given
_VAR = re.compile(r"""["']((?:KGR|NEO4J)_[A-Z0-9_]+)["']""")


def _variables() -> set[str]:
    files = [*(ROOT / "kgr").rglob("*.py"), ROOT / "tests" / "conftest.py", *(ROOT / "tests").glob("*/conftest.py"),
             ROOT / "tests" / "browser" / "test_browser_e2e.py"]
    found: set[str] = set()
    for f in files:
        text = f.read_text(encoding="utf-8")
        if not re.search(r"environ|getenv|_env\(|_env_port\(|token_env|setenv", text):
            continue  # a file that reads no environment
        for m in _VAR.finditer(text):
            if not re.search(rf"^{m.group(1)}\s*=", text, re.M):  # (a module constant in __all__ is no variable)
                found.add(m.group(1))
    return found


def test_every_environment_variable_is_in_the_readme():
    variables = _variables()
    assert {"NEO4J_URI", "KGR_NEO4J_HOME", "KGR_SLICE_KEY", "KGR_PROGRESS_SECONDS"} <= variables  # the scan works
    missing = sorted(v for v in variables if v not in README)
    assert not missing, f"README.md does not document {missing}"


def test_the_health_example_says_the_true_tool_count():
    """The README said 11 tools; the server had 18. Every /health example (README and docs/) says
    the number the server serves: a tool added or removed without the docs fails here."""
    from kgr.catalog import served_tools

    docs = README + "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    counts = [int(n) for n in re.findall(r'/health.*"tools":\s*(\d+)', docs)]
    assert re.search(r'/health.*"tools":\s*\d+', README)  # the README has one
    assert counts and set(counts) == {len(served_tools())}, (counts, len(served_tools()))


def test_the_readme_fits_on_a_few_screens_and_its_links_resolve():
    """Issue 33: the README is short (detail lives in docs/), and every page it links to exists."""
    assert len(README.splitlines()) <= 300
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 10 and all((ROOT / p).is_file() for p in links), [p for p in links if not (ROOT / p).is_file()]
