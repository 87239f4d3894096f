"""Hostile and mistaken input: each case reproduces a failure seen before it was fixed.

Crawls fail fast on bad input (nothing fetched, one line, status 2), stop where told, stay in
scope and end by themselves in crawl traps; page files are read under one bounded rule in
every command; text output cannot drive a terminal and CSV cells cannot run formulas.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import article, crawl, listing, write_site
from visdup.cli import main
from visdup.demo.server import ServerHandle, serve
from visdup.errors import InputError
from visdup.structure.term import MAX_MARK

REPO = Path(__file__).resolve().parent.parent


def visdup(
    *args: str, cwd: Path | None = None, timeout: float = 120, **kw
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "visdup", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        **kw,
    )


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in result.stderr, result.stderr
    return [line for line in result.stderr.splitlines() if line.strip()]


def one_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """The run exited 2 with exactly one ``visdup: error:`` line containing ``words``."""
    lines = error_lines(result)
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("visdup: error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def page_requests(handle: ServerHandle) -> list[str]:
    return [r for r in handle.requests if not r.startswith("/robots.txt")]


def stored_urls(db_path: Path) -> list[str]:
    with sqlite3.connect(db_path) as conn:
        return [u for (u,) in conn.execute("SELECT url FROM visdup_pages")]


# --------------------------------------------------------------------------- a crawl's input


@pytest.fixture
def small_site(tmp_path) -> Iterator[ServerHandle]:
    pages = {"index.html": listing("Home", [(f"/p{i}.html", f"Page {i}") for i in range(5)])}
    for i in range(5):
        pages[f"p{i}.html"] = article(f"Page {i}", [f"text {i}"], ["/index.html"])
    with serve(write_site(tmp_path / "site", pages)) as handle:
        yield handle


@pytest.mark.parametrize(
    "args, words",
    [
        (["--db", "sqlit:///{d}/x.db"], ["sqlit"]),
        (["--db", "mysql://user:S3cretPw@127.0.0.1/x"], ["mysql"]),
        (["--db", "postgresql+psycopg://admin:S3cretPw@127.0.0.1:1/x"], ["127.0.0.1"]),
        (["--db", "sqlite:///{d}/no/such/dir/x.db"], ["no/such/dir"]),
        (["-s", "VISDUP_SIMILARITY_THRESHOLD=abc"], ["VISDUP_SIMILARITY_THRESHOLD", "abc"]),
        (["-s", "VISDUP_DUPLICATE_POLICY=bogus"], ["VISDUP_DUPLICATE_POLICY", "bogus"]),
        (["-s", "VISDUP_HAMMING_K=99"], ["VISDUP_HAMMING_K", "99"]),
        (["-s", "VISDUP_MAX_LINKS_PER_PAGE=-1"], ["VISDUP_MAX_LINKS_PER_PAGE"]),
        (
            ["-s", "VISDUP_SIMILARITY_TRESHOLD=0.9"],
            [
                "unknown setting VISDUP_SIMILARITY_TRESHOLD:",
                "did you mean VISDUP_SIMILARITY_THRESHOLD?",
            ],
        ),
        (["-s", "visdup_enabled=0"], ["did you mean VISDUP_ENABLED?"]),
        (["-s", "NOEQUALS"], ["NAME=VALUE"]),
        (["--max-pages", "-3"], ["--max-pages"]),
    ],
)
def test_crawl_refuses_bad_input_before_fetching_anything(small_site, tmp_path, args, words):
    db = ["--db", f"sqlite:///{tmp_path}/ok.db"] if "--db" not in args else []
    result = visdup(
        "crawl", small_site.url_for("/"), *db, *[a.format(d=tmp_path) for a in args], cwd=tmp_path
    )
    line = one_error(result, *words)
    assert "S3cretPw" not in result.stderr + result.stdout, line
    assert small_site.requests == [], "nothing is fetched"


@pytest.mark.parametrize("url", ["ftp://example.com/", "notaurl", "file:///etc/passwd"])
def test_crawl_refuses_urls_that_are_not_http(tmp_path, url):
    one_error(visdup("crawl", url, "--db", f"sqlite:///{tmp_path}/x.db", cwd=tmp_path), url)


def test_scrapy_crawl_without_url_is_one_clear_error(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "site",
            "-s",
            f"VISDUP_DATABASE_URL=sqlite:///{tmp_path}/x.db",
            "-s",
            "LOG_LEVEL=INFO",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "] ERROR:" in line]
    assert len(errors) == 1 and "needs a start URL" in errors[0], result.stderr
    assert "(bad_input)" in result.stderr


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("VISDUP_SIMILARITY_TRESHOLD=0.9", "did you mean VISDUP_SIMILARITY_THRESHOLD?"),
        ("VISDUP_HAMMING_K=99", "VISDUP_HAMMING_K"),
    ],
)
def test_scrapy_crawl_with_a_bad_visdup_setting_is_one_clear_error(tmp_path, setting, said):
    """Under Scrapy's own crawl command too: one ERROR line, no traceback, exit 1."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "site",
            "-a",
            "url=http://127.0.0.1:9/",
            "-s",
            f"VISDUP_DATABASE_URL=sqlite:///{tmp_path}/x.db",
            "-s",
            setting,
            "-s",
            "LOG_LEVEL=INFO",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "never retrieved" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "] ERROR:" in line]
    assert len(errors) == 1 and said in errors[0], result.stderr


FAILING_PIPELINE = """
class Failing:
    def process_item(self, item):
        raise RuntimeError("this pipeline fails on every page")
"""


def test_crawl_exit_status_says_whether_the_crawl_failed(small_site, tmp_path):
    (tmp_path / "failing_pipeline.py").write_text(FAILING_PIPELINE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    common = [
        "crawl",
        small_site.url_for("/"),
        "-s",
        'ITEM_PIPELINES={"failing_pipeline.Failing": 100}',
        "-s",
        "LOG_LEVEL=CRITICAL",
    ]
    failed = visdup(
        *common, "--db", f"sqlite:///{tmp_path}/a.db", "--max-errors", "2", cwd=tmp_path, env=env
    )
    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("visdup: error: the crawl lost work: ")
        and failed.stderr.count("visdup: error:") == 1
    ), failed.stderr
    assert "callback and pipeline errors (more than --max-errors 2); 0 pages stored" in last
    assert "Run the same command again" in last
    tolerated = visdup(
        *common, "--db", f"sqlite:///{tmp_path}/b.db", "--max-errors", "100", cwd=tmp_path, env=env
    )
    assert tolerated.returncode == 0, tolerated.stderr
    fine = visdup(
        "crawl", small_site.url_for("/"), "--db", f"sqlite:///{tmp_path}/c.db", cwd=tmp_path
    )
    assert fine.returncode == 0 and len(stored_urls(tmp_path / "c.db")) == 7, fine.stderr


def _closed_port() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound by no listener: every connection is refused."""
    import socket

    with socket.socket() as held:  # bound, never listening: the port stays ours and closed
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/"


closed_port = pytest.fixture(_closed_port)


def _crawl_error(result: subprocess.CompletedProcess[str], status: int, *words: str) -> str:
    """The crawl exited ``status``, its last line its one error, and no traceback."""
    assert result.returncode == status, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("visdup: error:") == 1, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("visdup: error: "), result.stderr[-3000:]
    for word in words:
        assert word in last, last
    return last


@pytest.fixture
def odd_site(tmp_path) -> Iterator[ServerHandle]:
    links = [(f"/p{i}.html", f"Page {i}") for i in range(3)] + [("/data.json", "Data")]
    pages = {"index.html": listing("Home", links)}
    for i in range(3):
        pages[f"p{i}.html"] = article(f"Page {i}", [f"text {i}"], ["/index.html"])
    pages["data.json"] = '{"not": "a page"}'
    with serve(write_site(tmp_path / "odd", pages)) as handle:
        yield handle


@pytest.mark.parametrize(
    "start, words",
    [
        ("closed", ["nothing stored: http://127.0.0.1:", "cannot be fetched", "refused"]),
        ("/data.json", ["nothing stored: ", "/data.json is not an HTML page (application/json)"]),
        ("/missing.html", ["nothing stored: ", "/missing.html answered HTTP 404"]),
    ],
)
def test_a_start_url_that_gives_no_page_stores_nothing_and_exits_2(
    odd_site, closed_port, tmp_path, start, words
):
    url = closed_port if start == "closed" else odd_site.url_for(start)
    result = visdup("crawl", url, "--db", f"sqlite:///{tmp_path}/x.db", cwd=tmp_path)
    _crawl_error(result, 2, *words)
    assert stored_urls(tmp_path / "x.db") == []


def test_a_start_url_that_fails_beside_good_ones_exits_1_and_says_what_next(
    odd_site, closed_port, tmp_path
):
    good = odd_site.url_for("/index.html")
    result = visdup("crawl", good, closed_port, "--db", f"sqlite:///{tmp_path}/x.db", cwd=tmp_path)
    last = _crawl_error(result, 1, "1 of 2 start URLs gave no page", "4 pages stored")
    assert "cannot be fetched" in last and "run the same command again" in last
    assert len(stored_urls(tmp_path / "x.db")) == 4


def test_a_crawl_that_stored_its_pages_exits_0_without_an_error_line(odd_site, tmp_path):
    """The site links to a JSON file: a non-HTML page that is no start URL is only counted."""
    result = visdup(
        "crawl", odd_site.url_for("/index.html"), "--db", f"sqlite:///{tmp_path}/x.db", cwd=tmp_path
    )
    assert result.returncode == 0 and "visdup: error" not in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr


@deferred_f_from_coro_f
async def test_the_second_of_two_crawls_on_one_sqlite_file_fails_in_its_check(small_site, tmp_path):
    """The writer lock taken by a crawl's check is kept for its crawl: a second crawl started
    at the same moment fails in its own check, in one line, having fetched nothing. Released
    between the two, it let the second pass its check and fail mid-crawl in 107 lines."""
    from visdup.cli.crawl import check_store
    from visdup.storage.store import Store

    path = tmp_path / "one.sqlite3"
    db = f"sqlite:///{path}"
    release = check_store(db)  # the first crawl, checked, its crawl about to start
    try:
        second = visdup("crawl", small_site.url_for("/"), "--db", db, cwd=tmp_path)
        one_error(second, "another visdup process", f"pid {os.getpid()} ", "one writer")
        assert small_site.requests == [], "the second crawl fetched nothing"
        await crawl(db, small_site.url_for("/"))  # the first crawl's store takes the lock over
    finally:
        release()
    assert len(stored_urls(path)) == 7
    Store.from_url(db, writer=True).close()  # free once the crawl is over
    unused = f"sqlite:///{tmp_path / 'unused.sqlite3'}"
    check_store(unused)()  # a check whose crawl never ran frees the file too
    Store.from_url(unused, writer=True).close()


def test_warnings_are_printed_once_under_visdup_crawl(small_site, tmp_path):
    result = visdup(
        "crawl",
        small_site.url_for("/"),
        "--db",
        f"sqlite:///{tmp_path}/x.db",
        "-s",
        "VISDUP_TEMPLATE_BUDGET=2",
        "-s",
        "LOG_LEVEL=WARNING",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    budget = [line for line in result.stderr.splitlines() if "VISDUP_TEMPLATE_BUDGET" in line]
    assert len(budget) == 1, result.stderr


def test_main_adds_no_log_handler_that_outlives_it(tmp_path, capsys):
    root = logging.getLogger()
    before = list(root.handlers)
    for _ in range(3):
        assert main(["compress", "grp(text)"]) == 0
    assert root.handlers == before
    capsys.readouterr()


# --------------------------------------------------------------------------- where a crawl stops


def _pages_site(root: Path, n: int) -> Path:
    """An index linking n article pages (with #fragments), each linking on to the next ones."""
    pages = {"index.html": listing("Home", [(f"/a/{i}.html#top", f"Page {i}") for i in range(n)])}
    for i in range(n):
        prose = [
            f"Article {i} sentence {j} about a subject of its own, written out long."
            for j in range(4)
        ]
        nxt = [f"/a/{(i + k) % n}.html#section-{k}" for k in (1, 2, 3)]
        pages[f"a/{i}.html"] = article(f"Article {i}", prose, nxt, nav=["/index.html#nav"])
    return write_site(root, pages)


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "worker-process"])
@deferred_f_from_coro_f
async def test_max_pages_fetches_exactly_n_and_a_second_run_continues(tmp_path, processes):
    """With a worker process the spider follows a page's links once its analysis is back (the
    worker read them): the budget still closes the crawl at exactly N pages."""
    db_path = tmp_path / "visdup.sqlite3"
    db = f"sqlite:///{db_path}"
    settings = {"VISDUP_ANALYSIS_PROCESSES": processes}
    with serve(_pages_site(tmp_path / "site", 60)) as handle:
        first = await crawl(db, handle.url_for("/"), settings=settings, max_pages=12)
        assert first.stats.get_value("finish_reason") == "max_pages"
        assert len(stored_urls(db_path)) == 12
        assert len(page_requests(handle)) == 12, "no page is fetched past the limit"
        fetched = list(page_requests(handle))
        await crawl(db, handle.url_for("/"), settings=settings, max_pages=12)
        urls = stored_urls(db_path)
        assert len(urls) == 24 and len(set(urls)) == 24
        again = page_requests(handle)[len(fetched) :]
        assert len(again) == 12 and not set(again) & set(fetched), "nothing stored is fetched"
        assert not any("#" in u for u in urls)


@deferred_f_from_coro_f
async def test_records_do_not_count_toward_max_pages(tmp_path):
    db_path = tmp_path / "visdup.sqlite3"
    with serve(_pages_site(tmp_path / "site", 40)) as handle:
        crawler = await crawl(
            f"sqlite:///{db_path}",
            handle.url_for("/"),
            settings={"VISDUP_EXTRACT_ITEMS": True, "VISDUP_TEMPLATE_MIN_PAGES": 3},
            max_pages=20,
        )
    assert len(stored_urls(db_path)) == 20
    assert crawler.stats.get_value("visdup/records", 0) > 0, "records flowed, and did not count"


@deferred_f_from_coro_f
async def test_scope_is_scheme_host_and_port(tmp_path):
    other_pages = {"index.html": article("Other", ["elsewhere"], []), "x.html": "<p>x</p>"}
    with serve(write_site(tmp_path / "other", other_pages)) as other:
        pages = {
            "index.html": listing("Home", [("/a.html", "a"), (other.url_for("/x.html"), "x")]),
            "a.html": article("A", ["a page"], [other.url_for("/index.html")]),
        }
        with serve(write_site(tmp_path / "site", pages)) as handle:
            await crawl(f"sqlite:///{tmp_path / 'v.db'}", handle.url_for("/"))
        assert page_requests(other) == [], "the same host on another port is out of scope"
    ports = {urlsplit(u).port for u in stored_urls(tmp_path / "v.db")}
    assert ports == {handle.port}


# --------------------------------------------------------------------------- crawl traps


class _TrapHandler(BaseHTTPRequestHandler):
    """A page with 100,000 links and an endless calendar, generated on request."""

    LINKS = 100_000

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        if path == "/":
            body = "<a href='/big.html'>big</a> <a href='/calendar/2026/1/'>calendar</a>"
        elif path == "/big.html":
            body = "".join(f"<a href='/item/{i}.html'>item {i}</a> " for i in range(self.LINKS))
        elif path.startswith("/item/"):
            body = f"<h1>{path}</h1><p>An item page.</p><a href='/'>home</a>"
        elif m := re.fullmatch(r"/calendar/(\d+)/(\d+)/", path):
            year, month = int(m[1]), int(m[2])
            nxt = (year + month // 12, month % 12 + 1)
            prev = (year - (month == 1), (month - 2) % 12 + 1)
            body = (
                f"<h1>{year}-{month:02d}</h1><table><tr><td>1</td><td>2</td></tr></table>"
                f"<a href='/calendar/{nxt[0]}/{nxt[1]}/'>next</a>"
                f"<a href='/calendar/{prev[0]}/{prev[1]}/'>previous</a>"
            )
        elif path == "/robots.txt":
            self.send_error(404)
            return
        else:
            self.send_error(404)
            return
        data = f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>"
        raw = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def trap_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TrapHandler)
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()


@deferred_f_from_coro_f
async def test_crawl_traps_end_by_themselves_within_the_limits(trap_site, tmp_path):
    url = f"http://127.0.0.1:{trap_site.server_address[1]}/"
    crawler = await crawl(
        f"sqlite:///{tmp_path / 'v.db'}",
        url,
        settings={
            "VISDUP_MAX_LINKS_PER_PAGE": 500,
            "VISDUP_TEMPLATE_BUDGET": 25,
            "LOG_LEVEL": "WARNING",
        },
    )
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    paths = [p for p in trap_site.paths if p != "/robots.txt"]
    calendar = [p for p in paths if p.startswith("/calendar/")]
    items = [p for p in paths if p.startswith("/item/")]
    assert len(calendar) == 25 and len(items) == 25, (len(calendar), len(items))
    assert len(paths) == 2 + 25 + 25
    assert stats["visdup/links_over_page_cap"] == _TrapHandler.LINKS - 500
    assert stats["visdup/pages_over_link_cap"] == 1
    assert stats["visdup/patterns_over_budget"] == 2
    assert stats["visdup/links_over_budget"] >= 1 + (500 - 25)


# --------------------------------------------------------------------------- page files, one rule

BAD_FILES = {
    "empty.html": (b"", "empty"),
    "binary.html": (bytes(range(256)) * 64, "binary"),
    "script.js": (b"var x = 1; function f() { return x; }\n", "not HTML"),
    "broken.html.gz": (b"not gzip at all", "cannot read"),
}
COMMANDS = [["term"], ["content"], ["dups"], ["cluster"], ["extract", "--out", "{d}/out.csv"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_every_command_refuses_a_bad_file_alike(tmp_path, command, name):
    data, words = BAD_FILES[name]
    bad = tmp_path / name
    bad.write_bytes(data)
    result = visdup(*[a.format(d=tmp_path) for a in command], str(bad))
    one_error(result, str(bad), words)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_bad_file_among_good_ones_is_reported_and_the_rest_done(tmp_path, command):
    good = [tmp_path / f"good{i}.html" for i in range(3)]
    for i, path in enumerate(good):
        path.write_text(article(f"Good {i}", [f"good page number {i}"], ["/x.html"]))
    (tmp_path / "bad.html").write_bytes(bytes(range(256)) * 64)
    result = visdup(
        *[a.format(d=tmp_path) for a in command], *map(str, good), str(tmp_path / "bad.html")
    )
    assert result.returncode == 2, result.stderr
    errors = [x for x in error_lines(result) if x.startswith("visdup: error:")]
    assert len(errors) == 1 and "bad.html: binary" in errors[0], result.stderr
    if command[0] == "extract":
        with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))  # main_text cells hold line breaks
        assert len(rows) == 3 and all("/good" in row["path"] for row in rows), rows
    else:
        assert "good0.html" in result.stdout


def test_compare_refuses_bad_files_alike(tmp_path):
    (tmp_path / "a.html").write_text("<p>a</p>")
    (tmp_path / "b.html").write_bytes(b"\x00\x01\x02" * 100)
    one_error(
        visdup("compare", str(tmp_path / "a.html"), str(tmp_path / "b.html")), "b.html", "binary"
    )


def test_endless_and_special_files_are_refused_without_reading(tmp_path):
    one_error(visdup("term", "/dev/zero", timeout=30), "/dev/zero", "not a regular file")
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    for command in (["term"], ["content"], ["dups"], ["compare", str(fifo)]):
        one_error(visdup(*command, str(fifo), timeout=30), "pipe.html", "FIFO")
    one_error(visdup("compress", f"@{fifo}", timeout=30), "FIFO")
    one_error(visdup("compare", "--terms", "@/dev/zero", "grp", timeout=30), "/dev/zero")


def test_a_file_is_read_to_its_bound_and_no_further(tmp_path, monkeypatch):
    """A file past the bound is refused by its size before it is read; one that grew after
    its size was read is read on to the bound: whole when it stays within it, refused when
    it goes past."""
    from visdup.page import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    page = tmp_path / "p.html"
    page.write_bytes(b"<p>" + b"x" * 997)
    assert files.read_bounded(page) == page.read_bytes()
    page.write_bytes(b"<p>" + b"x" * 998)
    with pytest.raises(InputError, match="1001 bytes is too large"):
        files.read_bounded(page)

    def seen_small(found: os.stat_result) -> os.stat_result:  # its size before it grew
        return os.stat_result([*found[:6], 10, *found[7:10]])

    real_fstat, real_stat = os.fstat, Path.stat
    for size, refused in ((500, False), (998, True)):
        page.write_bytes(b"<p>" + b"x" * size)
        with monkeypatch.context() as grown:
            grown.setattr(os, "fstat", lambda fd: seen_small(real_fstat(fd)))
            grown.setattr(Path, "stat", lambda path: seen_small(real_stat(path)))
            if refused:
                with pytest.raises(InputError, match="larger than 1000 bytes"):
                    files.read_bounded(page)
            else:
                assert files.read_bounded(page) == page.read_bytes()


def test_binary_error_names_the_file(tmp_path):
    path = tmp_path / "junk.html"
    path.write_bytes(random.Random(1).randbytes(5000).replace(b"<", b"x"))  # no BOM by chance
    one_error(visdup("term", str(path)), f"{path}: binary content")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_utf16_and_utf32_pages_with_a_bom_are_read(tmp_path, encoding):
    html = (
        "<html><head><title>Größe</title></head>"
        "<body><h1>Größe</h1><p>Straße und Maß</p></body></html>"
    )
    bom = {"utf-16-be": b"\xfe\xff", "utf-32-be": b"\x00\x00\xfe\xff"}.get(encoding, b"")
    path = tmp_path / "wide.html"
    path.write_bytes(bom + html.encode(encoding))
    result = visdup("content", "--json", str(path))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["title"] == "Größe" and "Straße und Maß" in out["text"]
    assert visdup("term", str(path)).returncode == 0


# --------------------------------------------------------------------------- terms


def test_huge_marks_are_refused_when_a_term_is_read():
    one_error(
        visdup(
            "compare", "--terms", "[9223372036854775807]grp(text,row)", "[9223372036854775807]text"
        ),
        "maximum",
    )
    one_error(visdup("compress", "[" + "9" * 30 + "]grp"), "maximum")
    one_error(visdup("compress", f"[{MAX_MARK}]grp([{MAX_MARK}]text)"), "maximum")
    result = visdup(
        "compare",
        "--json",
        "--terms",
        f"[{MAX_MARK // 2}]grp([{MAX_MARK // 2}]text)",
        f"[{MAX_MARK}]text",
    )
    assert result.returncode == 0, result.stderr
    assert 0.0 <= json.loads(result.stdout)["similarity"] <= 1.0


@pytest.mark.parametrize("term", ["[²]grp", "[٣]grp", "[1.5]grp", "[-1]grp", "[]grp"])
def test_marks_that_are_not_ascii_digits_are_a_clear_error(term):
    one_error(visdup("compress", term), "repetition mark")


# --------------------------------------------------------------------------- outputs


ESC_TITLE = "Hi\x1b]0;pwned\x07\x1b[2J there"


def test_text_output_escapes_control_characters(tmp_path):
    page = tmp_path / "evil.html"
    page.write_text(
        "<html><head><title>Hi&#27;]0;pwned&#7;&#27;[2J there</title></head><body>"
        "<h1>Head\x1b[31m red</h1><p>"
        + "A sentence that is long enough to be the main text. " * 5
        + "\x1b]0;again\x07</p></body></html>"
    )
    named = tmp_path / "odd\x1b[2Jname.html"
    named.write_text(article("Odd", ["an odd name"], []))
    for args in (["content", str(page)], ["term", str(named)], ["dups", str(page), str(named)]):
        result = visdup(*args)
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout, args
    content = visdup("content", str(page)).stdout
    assert "# Hi\\e]0;pwned\\x07\\e[2J there" in content
    as_json = json.loads(visdup("content", "--json", str(page)).stdout)
    assert as_json["title"] == ESC_TITLE, "--json keeps the text as it is"
    bad = visdup("term", str(tmp_path / "missing\x1b[2J.html"))
    assert "\x1b" not in bad.stderr and "missing\\e[2J.html" in bad.stderr


def test_csv_files_escape_control_characters(tmp_path):
    """pages.csv and the extract CSV are read with cat and less too: no raw ESC or BEL."""
    pages = tmp_path / "pages"
    pages.mkdir()
    for i in range(3):
        (pages / f"p{i}\x1b[2J.html").write_text(
            f"<html><head><title>Hi&#27;]0;pwned&#7;&#27;[2J there {i}</title></head><body>"
            f"<div class=top><a href='/'>Shop</a></div><div class=product><h1>Item {i}</h1>"
            f"<p class=price>Price: {i}.99 \x1b]0;again\x07</p></div></body></html>"
        )
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    assert visdup("dups", str(pages), "--db", db).returncode == 0
    table = tmp_path / "pages.csv"
    result = visdup("report", "--db", db, "--pages", str(table))
    assert result.returncode == 0, result.stderr
    extracted = tmp_path / "out.csv"
    result = visdup("extract", str(pages), "--out", str(extracted))
    assert result.returncode == 0, result.stderr
    for out in (table, extracted):
        text = out.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text, out
        assert "\\e[2J" in text, "shown escaped, as the terminal report shows them"
        rows = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
        assert len(rows) == 3, out
    titles = [r["title"] for r in csv.DictReader(table.open(newline="", encoding="utf-8"))]
    assert sorted(titles)[0] == "Hi\\e]0;pwned\\x07\\e[2J there 0"


def test_csv_cells_cannot_start_formulas(tmp_path):
    titles = [
        '=HYPERLINK("http://evil.example/","x")',
        "+1+2",
        "-3+cmd",
        "@SUM(A1)",
        "\tTabbed",
        "Plain",
    ]
    for i, title in enumerate(titles):
        (tmp_path / f"p{i}.html").write_text(
            "<html><body><div class=top><a href='/'>Shop</a></div><div class=product>"
            f"<h1>{title}</h1><p class=price>Price: {i}.99</p><p>ISBN: 978-{i}</p>"
            "</div><div class=foot>Footer</div></body></html>"
        )
    out = tmp_path / "out.csv"
    result = visdup("extract", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(out.open(newline="", encoding="utf-8")))
    cells = [cell for row in rows[1:] for cell in row]
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), cells
    assert any(c == "'" + titles[0] for c in cells), cells
    jsonl = tmp_path / "out.jsonl"
    assert visdup("extract", str(tmp_path), "--out", str(jsonl)).returncode == 0
    values = [v for line in jsonl.read_text().splitlines() for v in json.loads(line).values()]
    assert titles[0] in values, "JSON lines keep values as they are"


def test_version_and_json_newline(tmp_path):
    from visdup import __version__

    result = visdup("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"visdup {__version__}"
    (tmp_path / "a.html").write_text(article("A", ["one"], []))
    dups = visdup("dups", "--json", str(tmp_path / "a.html"))
    assert dups.returncode == 0 and dups.stdout.endswith("}\n"), dups.stdout


def test_cluster_threshold_is_a_similarity(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"a{i}.html").write_text(article(f"A {i}", [f"text {i}"] * 3, ["/x.html"]))
    (tmp_path / "odd.html").write_text(
        "<html><body><table>" + "<tr><td>x</td></tr>" * 30 + "</table></body></html>"
    )
    sizes = {}
    for threshold in ("0.0", "0.6", "1.0"):
        assert main(["cluster", "--json", "--threshold", threshold, str(tmp_path)]) == 0
        sizes[threshold] = sorted(
            c["size"] for c in json.loads(capsys.readouterr().out)["clusters"]
        )
    assert sizes["0.0"] == [4], "similarity 0: everything joins"
    assert sizes["0.6"] == [1, 3], "the default: one template, and the odd page alone"
    assert len(sizes["1.0"]) >= 2
    assert main(["cluster", "--threshold", "1.5", str(tmp_path)]) == 2
    assert "similarity from 0 to 1" in capsys.readouterr().err


# --------------------------------------------------------------------------- visdup serve


def test_serve_never_follows_symlinks_out_of_its_root(tmp_path):
    import http.client

    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    root = tmp_path / "root"
    root.mkdir()
    (root / "index.html").write_text("<p>home</p>")
    (root / "leak.html.gz").symlink_to(secret)
    (root / "plain.html").symlink_to(secret)
    (root / "dir").symlink_to(tmp_path)
    packed = tmp_path / "outside.html.gz"
    packed.write_bytes(gzip.compress(b"<p>outside</p>"))
    (root / "zipped.html.gz").symlink_to(packed)
    os.mkfifo(root / "fifo.html")
    with serve(root) as handle:
        for path in (
            "/leak.html",
            "/leak.html.gz",
            "/plain.html",
            "/dir/secret.txt",
            "/zipped.html",
            "/fifo.html",
        ):
            conn = http.client.HTTPConnection(handle.host, handle.port, timeout=10)
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            conn.close()
            assert response.status == 404 and b"secret" not in body and b"outside" not in body, path


def test_page_feeds_have_no_empty_body_or_tree_columns():
    import io

    from scrapy.exporters import CsvItemExporter
    from scrapy.http import HtmlResponse

    from visdup.items import Page

    response = HtmlResponse("http://example.com/", body=b"<p>x</p>", encoding="utf-8")
    response.selector.css("p")  # read by the spider: its tree goes with the page
    page = Page.from_response(response, links=["http://example.com/a"])
    assert page.body == b"<p>x</p>" and page.tree is not None, "the pipelines still get both"
    out = io.BytesIO()
    exporter = CsvItemExporter(out)
    exporter.start_exporting()
    exporter.export_item(page)
    exporter.finish_exporting()
    header = out.getvalue().decode().splitlines()[0].split(",")
    assert "url" in header and not {"body", "tree", "analysis"} & set(header), header
