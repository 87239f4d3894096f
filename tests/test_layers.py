"""visdup's modules import only downwards: a page's path (fetch, parse, structure and content,
index, dedup, templates, storage, report) is the order of its layers, and a newcomer reading
one layer needs only the layers below it.

Every import counts: module level, inside functions and under ``TYPE_CHECKING``. A module may
import its own layer and the layers below; no two modules may import each other, even through
others.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "visdup"

#: Lowest first. ``engine`` (where a batch step's map runs: here, or on Dask) imports nothing
#: of visdup but its errors, and every batch step maps over it, so it sits with the basics.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"_native", "errors", "config", "settings_declared", "verdicts", "escape", "engine"}),
    frozenset({"page", "storage"}),
    frozenset({"structure", "content", "index"}),
    frozenset({"templates"}),
    frozenset({"dedup", "drift"}),
    frozenset({"report"}),
    frozenset({"runtime"}),
    frozenset(
        {
            "addon",
            "pipelines",
            "middlewares",
            "items",
            "spiders",
            "frontier",
            "scheduler",
            "progress",
            "collector",
            "context",
            "handoff",
            "store_outage",
            "responses",
            "response_log",
            "project_settings",
        }
    ),
    frozenset({"cli", "demo", "__main__"}),
)

#: Upward imports left to undo, each named: the check fails on any other, and on any of these
#: once it is gone (so that the list only shrinks).
PENDING: frozenset[tuple[str, str]] = frozenset()


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "visdup":
        return None
    if len(parts) == 1:
        return len(LAYERS)  # the package itself: the public names, above everything
    for i, names in enumerate(LAYERS):
        if parts[1] in names:
            return i
    raise AssertionError(f"{module} is in no layer: add visdup.{parts[1]} to LAYERS")


def _imports() -> dict[str, set[str]]:
    """Module -> the visdup modules (or packages) it imports, by any import statement."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    found: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                # "from visdup.x import y": y may be a module of package visdup.x
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            found[module].update(n for n in names if n.split(".")[0] == "visdup" and n != module)
    return found


def _upward(imports: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, what it imports) for every import that climbs a layer. The package's own
    ``visdup`` (its version, the public names) is read from anywhere."""
    upward = set()
    for module, targets in imports.items():
        mine = _layer(module)
        for target in targets:
            theirs = _layer(target)
            assert mine is not None and theirs is not None
            if target != "visdup" and module != "visdup" and theirs > mine:
                upward.add((module, target))
    return upward


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, through others or not (Tarjan)."""
    modules = set(graph) | {t for ts in graph.values() for t in ts}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if "visdup" in (v, w):
                continue  # the package's public names reach into every layer by design
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return cycles


def test_every_import_points_down() -> None:
    upward = _upward(_imports())
    assert upward - PENDING == set(), "imports that climb a layer"
    assert PENDING - upward == set(), "undone: take them off PENDING"


def test_no_two_modules_import_each_other() -> None:
    assert _cycles(_imports()) == []


def test_the_check_sees_a_climbing_import_and_a_cycle(tmp_path: Path, monkeypatch) -> None:
    """The checker itself, on a package made for it: a function-level import from a low
    layer into the report is caught, and so are two modules of one layer importing each
    other through a third."""
    fake = tmp_path / "visdup"
    files = {
        "__init__.py": "",
        "page/__init__.py": "",
        "page/parse.py": "def f():\n    from visdup.report.html import x\n    return x\n",
        "report/__init__.py": "",
        "report/html.py": "from visdup.page import parse\nx = 1\n",
        "dedup/__init__.py": "",
        "dedup/a.py": "from . import b\n",
        "dedup/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
        "dedup/c.py": "from visdup.dedup.a import *\nclass C: ...\n",
    }
    for name, text in files.items():
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(text)
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    imports = _imports()
    assert _upward(imports) == {("visdup.page.parse", "visdup.report.html")}
    assert _cycles(imports) == [
        ["visdup.dedup.a", "visdup.dedup.b", "visdup.dedup.c"],
        ["visdup.page.parse", "visdup.report.html"],
    ]


#: The database libraries: only the storage layer speaks to them.
DRIVERS = ("sqlalchemy", "sqlite3", "psycopg", "psycopg2")


def _runtime_driver_imports(path: Path) -> list[str]:
    """The database libraries a module imports outside ``if TYPE_CHECKING:`` (type names
    alone are no SQL)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in DRIVERS]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in DRIVERS:
            found.append(node.module or "")
    return found


def test_sql_only_in_storage() -> None:
    """Statements, transactions and dialects live in visdup.storage; the layers above hand
    it plain records."""
    outside = {
        _module(path): names
        for path in PACKAGE.rglob("*.py")
        if "storage" not in path.relative_to(PACKAGE).parts
        and (names := _runtime_driver_imports(path))
    }
    assert outside == {}


#: A room a newcomer can read: the longest module and function in visdup/.
MODULE_LINES = 600
FUNCTION_LINES = 80


def test_no_module_or_function_too_long_to_read() -> None:
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if (n := text.count("\n")) > MODULE_LINES:
            too_long.append(f"{_module(path)}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    too_long.append(f"{_module(path)}.{node.name}: {length} lines")
    assert too_long == []
