"""A corpus of real API-reference documents: javadoc HTML pages and TypeScript's lib JSDoc, one file each.

    python scripts/corpus_apidocs.py OUT_DIR [--kind javadoc|tsdoc|all] [--count 120] [--seed 1129]

``javadoc``: fetches the ``-sources.jar`` of Apache Commons Lang (``org.apache.commons:commons-lang3``)
and Jackson core (``com.fasterxml.jackson.core:jackson-core``) from Maven Central, runs the JDK's own
``javadoc`` tool over each (``-quiet -Xdoclint:none -notimestamp -nonavbar``; jackson-core's shaded
``ch.randelshofer:fastdoubleparser`` jar is fetched too, for the classpath only) and keeps the per-class
pages (``Outer.Inner.html`` included) and the ``package-summary.html`` pages, not the index, help, tree,
use or search pages. They are copied unchanged and flat into ``OUT_DIR/javadoc/`` as
``<package>.<Class>.html`` (``<package>.package-summary.html``).

``tsdoc``: ``npm pack``s TypeScript and reads the JSDoc comments of its bundled declarations
(``lib/lib.es*.d.ts``, ``lib.dom.d.ts``, ``lib.webworker.d.ts``). Per ``interface X`` / ``declare var X``
(``Intl.X`` inside ``declare namespace Intl``; the declarations of one name across files merged, repeated
comments kept once) it writes ``OUT_DIR/tsdoc/X.md``: ``# X``, then each comment on the declaration and on
its members as one paragraph, with the ``/** */`` and ``*`` stripped, block tags (``@param``,
``@returns``, ``@deprecated``, ``@throws``, ``@example`` …) and ``[MDN Reference](…)`` links dropped and
``{@link Foo}`` turned into ``Foo``. Names whose prose is under 200 characters are skipped.

Each kind's candidates are shuffled with ``--seed`` and the first ``--count`` kept (``OUT_DIR/<kind>/``
is emptied first); ``OUT_DIR/SOURCES.txt`` records versions, addresses and counts. Needs Maven Central,
the npm registry, a JDK (``javadoc`` on PATH, in ``JAVA_HOME`` or ``/usr/lib/jvm``) and npm.

Licences: Commons Lang, Jackson core and TypeScript are Apache-2.0; the comments of ``lib.dom.d.ts`` and
``lib.webworker.d.ts`` come from MDN Web Docs (CC-BY-SA 2.5, by Mozilla contributors). Built for a blind
precision census of the offline extractor (docs/extract.md); the documents stay on the machine that
runs this, not in the repository.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

MAVEN = "https://repo1.maven.org/maven2"
# (group, artifact, version, package root, classpath jars as (group, artifact, version))
LIBRARIES = [("org.apache.commons", "commons-lang3", "3.14.0", "org.apache.commons.lang3", []),
             ("com.fasterxml.jackson.core", "jackson-core", "2.17.2", "com.fasterxml.jackson.core",
              [("ch.randelshofer", "fastdoubleparser", "1.0.0")])]
TYPESCRIPT = "typescript@5.9.3"
HEADER = re.compile(r"^(\s*)(?:export\s+)?(?:declare\s+)?(interface|var)\s+([A-Za-z_$][\w$]*)")
NAMESPACE = re.compile(r"^declare namespace ([A-Za-z_$][\w$.]*)\s*\{")


def maven_url(group: str, artifact: str, version: str, classifier: str = "") -> str:
    suffix = f"-{classifier}" if classifier else ""
    return f"{MAVEN}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}{suffix}.jar"


def fetch(url: str, dest: Path) -> Path:
    with urllib.request.urlopen(url, timeout=120) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out)
    return dest


def find_javadoc() -> str:
    home = os.path.join(os.environ.get("JAVA_HOME", "/nonexistent"), "bin", "javadoc")
    for path in [shutil.which("javadoc"), home, *sorted(glob.glob("/usr/lib/jvm/*/bin/javadoc"))]:
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("no javadoc tool found (install a JDK or set JAVA_HOME)")


def javadoc_pages(tmp: Path, notes: list[str]) -> list[tuple[str, Path]]:
    """(flat file name, generated page) for every class and package-summary page of LIBRARIES."""
    tool, pages = find_javadoc(), []
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip()
    notes.append(f"javadoc tool: {tool} ({version})")
    for group, artifact, ver, root, deps in LIBRARIES:
        url = maven_url(group, artifact, ver, "sources")
        src, html = tmp / artifact / "src", tmp / artifact / "html"
        src.mkdir(parents=True)
        with zipfile.ZipFile(fetch(url, tmp / f"{artifact}-sources.jar")) as jar:
            jar.extractall(src)
        for stray in src.rglob("module-info.java"):
            stray.unlink()
        classpath = [str(fetch(maven_url(*dep), tmp / f"{dep[1]}.jar")) for dep in deps]
        command = [tool, "-quiet", "-Xdoclint:none", "-notimestamp", "-nonavbar", "-encoding", "UTF-8",
                   "-d", str(html), "-sourcepath", str(src), "-subpackages", root]
        run = subprocess.run(command + (["-classpath", os.pathsep.join(classpath)] if classpath else []),
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"javadoc failed for {artifact}:\n{run.stderr[-3000:]}")
        before = len(pages)
        for page in sorted(html.rglob("*.html")):  # class-use/, doc-files/ are no package: skipped
            parts = page.relative_to(html).parts[:-1]
            package = ".".join(parts)
            if ((package + ".").startswith(root + ".") and all(p.isidentifier() for p in parts)
                    and (page.name == "package-summary.html" or page.name[0].isupper())):
                pages.append((f"{package}.{page.name}", page))
        extra = f" (classpath: {', '.join(':'.join(d) for d in deps)})" if deps else ""
        notes.append(f"{group}:{artifact}:{ver} sources: {url}{extra} -> {len(pages) - before} pages")
    return pages


def comment_prose(lines: list[str]) -> str:
    """The prose of one JSDoc comment's lines, as one paragraph."""
    text, kept, in_tag = "\n".join(lines), [], False
    text = re.sub(r"^\s*/\*\*|\*/\s*$", "", text.strip())
    for n, line in enumerate(text.split("\n")):
        line = re.sub(r"^\s*\* ?", "", line, count=1) if n else line.strip()
        if re.match(r"\s*@\w+", line):  # a block tag: its section runs to the next tag
            in_tag = True
        elif not in_tag:
            kept.append(line)
    prose = " ".join(kept)
    prose = re.sub(r"\[MDN Reference\]\([^)]*\)", "", prose)
    prose = re.sub(r"\{@link(?:code|plain)?\s+([^}\s|]+)(?:\s*\|?\s*([^}]*))?\}",
                   lambda m: (m.group(2) or "").strip() or m.group(1), prose)
    return re.sub(r"\s+", " ", prose).strip()


def ts_comments(path: Path, docs: dict[str, list[str]]) -> None:
    """Append the prose of the comments on each interface / declare var (and its members) of one file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    pending: str | None = None  # the prose of the last comment outside any owned block
    owner = closer = None
    namespace, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("/**"):
            start = i
            while "*/" not in lines[i]:
                i += 1
            prose = comment_prose(lines[start:i + 1])
            if owner and prose:
                docs.setdefault(owner, []).append(prose)
            pending = None if owner else prose
        elif owner and line.rstrip() in (closer, closer + ";"):
            owner = None
        elif not owner and (m := NAMESPACE.match(line)):
            namespace, pending = m.group(1) + ".", None
        elif not owner and namespace and line.rstrip() == "}":
            namespace, pending = "", None
        elif not owner and (m := HEADER.match(line)):
            name = (namespace if m.group(1) else "") + m.group(3)
            if pending:
                docs.setdefault(name, []).append(pending)
            pending = None
            body = line.rstrip()
            if "{" in body and not body.endswith(("}", "};")):
                owner, closer = name, m.group(1) + "}"
        elif line.strip():
            pending = None
        i += 1


def tsdoc_docs(tmp: Path, notes: list[str]) -> list[tuple[str, str]]:
    """(file name, Markdown text) per interface / var of TypeScript's lib files with enough prose."""
    run = subprocess.run(["npm", "pack", TYPESCRIPT, "--silent"], cwd=tmp, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"npm pack {TYPESCRIPT} failed:\n{run.stderr[-3000:]}")
    tarball = tmp / run.stdout.strip().splitlines()[-1]
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp, filter="data")
    lib = tmp / "package" / "lib"
    order = {"lib.es5.d.ts": 0, "lib.dom.d.ts": 2, "lib.webworker.d.ts": 3}
    files = sorted([*lib.glob("lib.es*.d.ts"), lib / "lib.dom.d.ts", lib / "lib.webworker.d.ts"],
                   key=lambda p: (order.get(p.name, 1), p.name))
    docs: dict[str, list[str]] = {}
    for path in files:
        ts_comments(path, docs)
    out = []
    for name, paragraphs in sorted(docs.items()):
        unique = list(dict.fromkeys(p for p in paragraphs if p))
        if sum(len(p) for p in unique) >= 200:
            out.append((f"{name}.md", f"# {name}\n\n" + "\n\n".join(unique) + "\n"))
    notes.append(f"{tarball.name} ({TYPESCRIPT} from the npm registry): {len(files)} lib files, "
                 f"{len(docs)} documented names, {len(out)} with >= 200 characters of prose")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--kind", choices=["javadoc", "tsdoc", "all"], default="all")
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1129)
    args = parser.parse_args()
    kinds = ["javadoc", "tsdoc"] if args.kind == "all" else [args.kind]
    summary = [f"corpus_apidocs.py --kind {args.kind} --count {args.count} --seed {args.seed}", ""]
    for kind in kinds:
        notes: list[str] = []
        with tempfile.TemporaryDirectory(prefix=f"apidocs-{kind}-") as tmp:
            items = javadoc_pages(Path(tmp), notes) if kind == "javadoc" else tsdoc_docs(Path(tmp), notes)
            random.Random(args.seed).shuffle(items)
            target = args.out_dir / kind
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            size = 0
            for name, content in items[:args.count]:
                if isinstance(content, Path):
                    shutil.copyfile(content, target / name)
                else:
                    (target / name).write_text(content, encoding="utf-8")
                size += (target / name).stat().st_size
        line = f"[{kind}] {min(args.count, len(items))} of {len(items)} candidates kept in {kind}/, {size} bytes"
        summary += [line, *notes, ""]
        print(line, file=sys.stderr)
    summary.append("Licences: commons-lang3, jackson-core, TypeScript: Apache-2.0; lib.dom/lib.webworker "
                   "comments from MDN Web Docs, CC-BY-SA 2.5 (Mozilla contributors).")
    (args.out_dir / "SOURCES.txt").write_text("\n".join(summary) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
