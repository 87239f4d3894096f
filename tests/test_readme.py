"""The README and the docs say what visdup does today.

The demo's output shown in the README is what ``visdup demo`` prints; the README's Scrapy project
(its settings lines and its ``CrawlSpider``) crawls a local site into a store with verdicts; the
package builds from a git URL and runs once installed; the versions, settings and links the
README and docs name exist.
"""

from __future__ import annotations

import ast
import csv
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from visdup import config
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.verdicts import VERDICTS

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
#: Environment variables (not Scrapy settings) that the docs name.
ENVIRONMENT = {
    "VISDUP_PURE_PYTHON",
    "VISDUP_CHROMIUM",
    "VISDUP_TEST_POSTGRES",
    "VISDUP_TEST_REDIS",
    "VISDUP_DEBIAN_DOCS",
}
#: What varies from one demo run to the next: the server's port and the snapshot's date.
_VARIES = (
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"\d{4}-\d\d-\d\d"), "DATE"),
)
#: A line of the README's demo block that stands for lines left out.
ELLIPSIS = "..."


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """The fenced code blocks of a Markdown text: (info string, lines)."""
    blocks: list[tuple[str, list[str]]] = []
    info: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if info is None:
                info, lines = line[3:].strip(), []
            else:
                blocks.append((info, lines))
                info = None
        elif info is not None:
            lines.append(line)
    return blocks


def readme_block(first_line: str) -> list[str]:
    """The README's fenced block whose first line starts with ``first_line``."""
    found = [b for _, b in fenced_blocks(README.read_text()) if b and b[0].startswith(first_line)]
    assert len(found) == 1, f"README.md needs one fenced block starting with {first_line!r}"
    return found[0]


def python_block(containing: str) -> str:
    found = [
        "\n".join(b)
        for info, b in fenced_blocks(README.read_text())
        if info == "python" and containing in "\n".join(b)
    ]
    assert len(found) == 1, f"README.md needs one python block with {containing!r}"
    return found[0] + "\n"


def masked(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        for pattern, mask in _VARIES:
            line = pattern.sub(mask, line)
        out.append(line.rstrip())
    return out


def assert_shown_in(shown: list[str], printed: list[str]) -> None:
    """Every run of lines the README shows is printed, in order, without a gap inside a run;
    the README's first and last lines are the output's unless ``...`` stands there."""
    shown, printed = masked(shown), masked(printed)
    runs: list[list[str]] = [[]]
    for line in shown:
        if line == ELLIPSIS:
            runs.append([])
        else:
            runs[-1].append(line)
    at = 0
    report = "visdup demo printed (masked):\n" + "\n".join(printed)
    for n, run in enumerate(runs):
        if not run:
            continue
        starts = [
            i for i in range(at, len(printed) - len(run) + 1) if printed[i : i + len(run)] == run
        ]
        assert starts, f"README lines not printed in this order:\n{chr(10).join(run)}\n\n{report}"
        if n == 0:
            assert starts[0] == 0, f"the README's first lines are not the first printed\n{report}"
        at = starts[0] + len(run)
    if runs[-1]:
        assert at == len(printed), f"the README's last lines are not the last printed\n{report}"


def demo_command() -> tuple[list[str], list[str]]:
    """The README's demo block: the ``visdup`` arguments of its ``$`` line, and what it shows."""
    block = readme_block("$ visdup demo")
    argv = shlex.split(block[0][2:])
    assert argv[0] == "visdup"
    return argv[1:], block[1:]


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{argv} exited {result.returncode}\n{result.stderr[-4000:]}"
    return result


# --------------------------------------------------------------------------- the demo's output


def test_the_readme_shows_what_visdup_demo_prints(tmp_path):
    args, shown = demo_command()
    assert ELLIPSIS in shown and len(shown) > 20
    result = run([sys.executable, "-m", "visdup", *args], tmp_path)
    assert_shown_in(shown, result.stdout.splitlines())


def test_a_gap_or_a_changed_line_in_the_shown_output_is_caught():
    printed = ["a 127.0.0.1:1", "b", "c", "d 2026-01-02"]
    assert_shown_in(["a 127.0.0.1:2", ELLIPSIS, "c", "d 2031-12-30"], printed)
    assert_shown_in([ELLIPSIS, "b", "c", ELLIPSIS], printed)
    for wrong in (["a 127.0.0.1:2", "c", ELLIPSIS], ["b", ELLIPSIS], [ELLIPSIS, "c"], ["c", "b"]):
        with pytest.raises(AssertionError):
            assert_shown_in(wrong, printed)


# ------------------------------------------------------------ the README's Scrapy project


def test_the_readme_project_crawls_a_site_into_a_store_with_verdicts(tmp_path):
    """``scrapy startproject``, the README's settings lines, its spider, ``scrapy crawl``,
    then the README's ``visdup report`` command: as a newcomer would."""
    settings_lines = python_block("ADDONS")
    spider = python_block("CrawlSpider")
    assert '"example.com"' in spider and '"https://example.com/"' in spider
    run([sys.executable, "-m", "scrapy", "startproject", "myproject"], tmp_path)
    project = tmp_path / "myproject"
    with (project / "myproject" / "settings.py").open("a") as f:
        f.write("\n" + settings_lines)
    with serve(SITE_ROOT) as server:
        start = server.url_for("/")
        local = spider.replace('"https://example.com/"', repr(start))
        local = local.replace('"example.com"', repr(server.host))
        (project / "myproject" / "spiders" / "pages.py").write_text(local)
        # the project template's DOWNLOAD_DELAY of 1 s would make the crawl last a minute
        fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16"]
        run([sys.executable, "-m", "scrapy", "crawl", "pages", *fast], project)
    db = project / "visdup.sqlite3"
    with sqlite3.connect(db) as conn:
        verdicts = dict(conn.execute("SELECT url, verdict FROM visdup_pages"))
    assert len(verdicts) >= 60
    assert verdicts[start] in VERDICTS  # the start page, kept by parse_start_url
    assert set(verdicts.values()) <= set(VERDICTS)
    assert {"original", "duplicate", "moved", "same_template"} <= set(verdicts.values())
    assert verdicts[server.url_for("/articles/winter-riding-tips.html")] == "original"
    assert verdicts[server.url_for("/articles/winter-riding-tips/print.html")] == "moved"
    assert not any("/private/" in url for url in verdicts)  # robots.txt, as the project obeys
    with sqlite3.connect(db) as conn:  # what gave no page, with the page linking to it
        answers = {
            u: (k, r) for u, k, r in conn.execute("SELECT url, kind, referer FROM visdup_responses")
        }
    about = server.url_for("/about.html")
    assert answers[server.url_for("/private/staff-rota.html")] == ("robots", about)
    assert answers[server.url_for("/about/route-map-2019.html")] == ("client_error", about)
    report = re.search(r"^\s+(visdup report .*)$", README.read_text(), re.MULTILINE)
    assert report, "README.md shows no visdup report command"
    argv = shlex.split(report.group(1))
    run([sys.executable, "-m", "visdup", *argv[1:]], project)
    assert "<html" in (project / "report.html").read_text()
    with (project / "pages.csv").open(newline="") as f:
        rows = {row["url"]: row["verdict"] for row in csv.DictReader(f)}
    assert rows == verdicts


# ------------------------------------------------------------------------------ install


def test_the_package_built_from_a_git_url_installs_and_runs(tmp_path):
    """The README's ``pip install "visdup @ git+file:///..."``, without the network: the wheel
    is built from the repository's committed HEAD (``--no-build-isolation``: the build needs
    setuptools and lxml, taken from this environment), installed without its dependencies
    into a fresh environment that reads them from this one, and run from there."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: pip cannot build from a git URL")
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a git checkout: nothing to build from a git URL")
    assert "git+file://" in README.read_text()
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    url = f"git+file://{REPO.as_posix()}"
    run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), url], tmp_path)
    (wheel,) = wheels.glob("visdup-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = z.read(meta).decode()
        (entry,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = z.read(entry).decode()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert f"Requires-Python: {project['requires-python']}" in metadata
    extras = set(re.findall(r"^Provides-Extra: (\S+)$", metadata, re.MULTILINE))
    assert extras == set(project["optional-dependencies"])
    readme_extras = set(re.findall(r"^\| `(\w+)` \|", README.read_text(), re.MULTILINE))
    readme_extras |= {"test", "bench"}  # one row of the README's table names both
    assert extras <= readme_extras, f"extras the README does not name: {extras - readme_extras}"
    assert "visdup = visdup.cli:main" in entry_points
    for name in ("visdup/py.typed", "visdup/demo/site/index.html", "visdup/demo/site/robots.txt"):
        assert name in names
    assert any(n.startswith("visdup/report/assets/") for n in names)
    compiled = any(n.startswith("visdup/_native/_") and n.endswith((".so", ".pyd")) for n in names)

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], tmp_path)
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path
    )
    Path(site.stdout.strip(), "visdup-test-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    check = run(
        [
            str(python),
            "-c",
            "import visdup, visdup.structure.distance as d; print(visdup.__file__, d.KERNEL)",
        ],
        tmp_path,
    )
    where, kernel = check.stdout.split()
    assert Path(where).resolve().is_relative_to(venv.resolve())
    assert kernel == ("c" if compiled else "python")
    script = venv / ("Scripts/visdup.exe" if os.name == "nt" else "bin/visdup")
    demo = run([str(script), "demo", "--db", "sqlite:///demo.sqlite3"], tmp_path)
    assert re.search(r"^\d+ pages, \d+ duplicate groups$", demo.stdout, re.MULTILINE)


def test_the_supported_versions_are_the_package_requirements():
    text = README.read_text()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    table = dict(re.findall(r"^\| (Python|Scrapy|SQLAlchemy) \| ([^|]+) \|$", text, re.MULTILINE))

    def bounds(spec: str) -> str:
        parts = sorted(spec.split(","), key=lambda p: p.startswith("<"))
        words = [
            f"{p[2:]} or newer" if p.startswith(">=") else f"below {p[1:]}"
            for p in parts
            if p.startswith((">=", "<"))
        ]
        return ", ".join(words)

    requirements = {re.split(r"[<>=]", d, maxsplit=1)[0]: d for d in project["dependencies"]}
    assert table["Python"].strip() == bounds(project["requires-python"])
    for name, package in (("Scrapy", "scrapy"), ("SQLAlchemy", "sqlalchemy")):
        assert table[name].strip() == bounds(requirements[package][len(package) :])


# -------------------------------------------------------------------- settings and links


def test_every_setting_the_docs_name_is_declared_and_the_readme_shows_its_default():
    declared = config.defaults()
    for path in (README, *DOCS):
        named = set(re.findall(r"\bVISDUP_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
        unknown = named - set(declared) - ENVIRONMENT
        assert not unknown, f"{path.name} names settings that do not exist: {sorted(unknown)}"
    table = re.findall(r"^\| `(VISDUP_\w+)` \| `([^`]+)` \|", README.read_text(), re.MULTILINE)
    assert len(table) >= 5
    for name, shown in table:
        assert ast.literal_eval(shown) == declared[name], f"README.md: {name} = {shown}"


def _slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown file, as GitHub makes them."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            slug, n = _slug(heading.group(1)), 1
            while slug in found:
                slug = f"{_slug(heading.group(1))}-{n}"
                n += 1
            found.add(slug)
    return found


def test_the_slugs_are_githubs():
    assert _slug("The frame's heading outline") == "the-frames-heading-outline"
    assert _slug("`report --json`") == "report---json"
    assert _slug("VISDUP_CLUSTER_CAP") == "visdup_cluster_cap"
    assert _slug("Template clusters: layout signatures") == "template-clusters-layout-signatures"


def test_the_readme_and_docs_link_only_to_files_and_headings_that_exist():
    for path in (README, REPO / "CHANGELOG.md", *DOCS):
        text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.name} links to {target}: no such file"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked), f"{path.name} links to {target}: no such heading"


def test_the_readme_is_short():
    data = README.read_bytes()
    assert data.count(b"\n") <= 300 and len(data) <= 25_000
