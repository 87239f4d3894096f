"""The package's shape: no import cycles, no reactor on import, one pure-Python switch."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "visdup"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """visdup modules ``name`` imports, at any level (functions too), except typing-only ones."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    todo: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            todo.extend(node.orelse)  # the typing-only branch never runs
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from visdup.x import y`` imports the module visdup.x.y when there is one
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            targets = []
        for target in targets:
            while target and target not in modules:  # ``import visdup.x.y`` names visdup.x.y
                target = target.rpartition(".")[0]
            if target.startswith("visdup") and target != name:
                out.add(target)
        todo.extend(ast.iter_child_nodes(node))
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "visdup" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n    from visdup.sub import c\n"
        "def f():\n    from ..sub.d import thing\n    import visdup.e\n"
    )
    names = ["visdup.sub.a", "visdup.sub.b", "visdup.sub.c", "visdup.sub.d", "visdup.e"]
    found = _imports("visdup.sub.a", pkg / "a.py", dict.fromkeys(names, tmp_path))
    assert found == {"visdup.sub.b", "visdup.sub.d", "visdup.e"}  # c is typing-only
    assert "visdup.dedup.analysis" in import_graph()["visdup.context"]


def test_no_import_cycles_among_visdup_modules():
    assert cycles(import_graph()) == []


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


IMPORT_ALL = """
    import importlib, pkgutil, sys
    import visdup
    names = sorted(
        m.name for m in pkgutil.walk_packages(visdup.__path__, "visdup.")
        if not m.name.endswith("__main__")
    )
    for name in names:
        importlib.import_module(name)
"""


def test_importing_every_visdup_module_installs_no_reactor():
    done = _run(
        IMPORT_ALL
        + """
    import json
    print(json.dumps({"modules": len(names), "reactor": "twisted.internet.reactor" in sys.modules}))
    """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["modules"] >= 40
    assert result["reactor"] is False


@pytest.mark.parametrize(
    ("process", "settings", "reactor"),
    [
        ("AsyncCrawlerProcess", {"TWISTED_REACTOR_ENABLED": False}, False),
        ("AsyncCrawlerProcess", {}, True),
        (
            "CrawlerProcess",
            {"TWISTED_REACTOR": "twisted.internet.selectreactor.SelectReactor"},
            True,
        ),
    ],
    ids=["no-reactor", "asyncio-reactor", "select-reactor"],
)
def test_a_crawl_after_importing_everything(tmp_path, process, settings, reactor):
    """With or without a Twisted reactor, asyncio or not: pages stored, links held, records out."""
    site = tmp_path / "site"
    site.mkdir()
    body = "<html><head><title>{t}</title></head><body><h1>{t}</h1><p>{p}</p>{links}</body></html>"
    prose = "A sentence long enough to count as one of the page's long sentences, number {}."
    for i in range(6):
        links = "".join(f"<a href='/p{j}.html'>{j}</a>" for j in range(6))
        text = " ".join(prose.format(k) for k in range(8))
        (site / f"p{i}.html").write_text(body.format(t=f"Page {i % 2}", p=text, links=links))
    settings = {
        **settings,
        "ADDONS": {"visdup.Addon": 100},
        "VISDUP_DATABASE_URL": f"sqlite:///{tmp_path / 'v.sqlite3'}",
        "VISDUP_DUPLICATE_POLICY": "nofollow",
        "VISDUP_EXTRACT_ITEMS": True,
        "VISDUP_TEMPLATE_MIN_PAGES": 2,
        "LOG_LEVEL": "WARNING",
    }
    done = _run(
        IMPORT_ALL
        + f"""
    import json
    import scrapy
    from scrapy.crawler import {process} as Process
    from visdup.demo.server import serve
    from visdup.items import Page, Record

    records = []

    class Own(scrapy.Spider):
        name = "own"

        def parse(self, response):
            yield Page.from_response(response)
            yield from response.follow_all(css="a")

    class Keep:
        def process_item(self, item):
            if isinstance(item, Record):
                records.append(item["url"])
            return item

    with serve({str(site)!r}) as server:
        Own.start_urls = [server.url_for("/p0.html")]
        process = Process({{**{settings!r}, "ITEM_PIPELINES": {{Keep: 900}}}})
        crawler = process.create_crawler(Own)
        process.crawl(crawler)
        process.start()
    stats = crawler.stats.get_stats()
    print(json.dumps({{
        "reactor": "twisted.internet.reactor" in sys.modules,
        "failed": process.bootstrap_failed,
        "pages": stats.get("visdup/pages"),
        "exact": stats.get("visdup/duplicates/exact", 0),
        "held": stats.get("visdup/nofollow_links", 0),
        "records": stats.get("visdup/records", 0),
        "emitted": len(records),
    }}))
    """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["reactor"] is reactor and result["failed"] is False, done.stderr[-3000:]
    assert (result["pages"], result["exact"]) == (6, 4), result
    assert result["held"] >= 4 * 6, "the links of the four exact copies are not followed"
    assert result["emitted"] == result["records"] >= 4, result


def test_one_switch_turns_every_kernel_to_python():
    probe = """
    import json
    from visdup.structure import distance, term
    from visdup.templates import stm
    print(json.dumps([term.KERNEL, distance.KERNEL, stm.use_compiled()]))
    """
    for value in ("1", "true", "yes"):
        done = _run(probe, VISDUP_PURE_PYTHON=value)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.strip()) == ["python", "python", False], value
    done = _run(probe, VISDUP_PURE_PYTHON="0")
    compiled = json.loads(done.stdout.strip())
    if any(p.suffix == ".so" for p in (PACKAGE / "_native").iterdir()):
        assert compiled == ["c", "c", True]
