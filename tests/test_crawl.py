"""End-to-end crawls in process against a local HTTP server, into real databases."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import article, crawl, listing, write_site
from tests.test_verdicts import original_and_copy
from visdup.demo.server import serve
from visdup.report.summary import build_report
from visdup.storage.store import Store

PROSE = [
    "Cycling to work in winter takes some preparation, but it is far from impossible.",
    "Good lights matter more than anything else when the days are short and the roads wet.",
    "Mudguards keep you and the riders behind you dry, and they cost very little to fit.",
    "Check your tyre pressure weekly, since cold air lowers it faster than you would expect.",
]


def _site(root):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    pages = {}
    arts = [f"/a/{w}.html" for w in words]
    for i, w in enumerate(words):
        paras = [f"{w} paragraph {j} " + " ".join(words[(i + j) % 10 :]) for j in range(3 + i % 3)]
        pages[f"a/{w}.html"] = article(
            w.title(), paras, arts[:4], nav=["/index.html", "/list.html"]
        )
    # byte-identical copy under another path, and tracking parameters in a link
    pages["copy/alpha.html"] = pages["a/alpha.html"]
    pages["index.html"] = listing(
        "Home",
        [(u, u) for u in arts]
        + [
            ("/copy/alpha.html", "copy"),
            ("/a/beta.html?utm_source=x", "tracked"),
            ("/list.html", "list"),
        ],
    )
    pages["list.html"] = listing("List", [(u, u) for u in arts[:6]])
    pages["robots.txt"] = "User-agent: *\nDisallow: /private/\n"
    pages["private/secret.html"] = article("Secret", ["hidden"], [])
    return write_site(root, pages)


@pytest.fixture
def site(tmp_path):
    root = _site(tmp_path / "site")
    with serve(root, hostile=True) as server:
        yield server


def _db(tmp_path):
    return f"sqlite:///{tmp_path / 'visdup.sqlite3'}"


#: Labelling in the crawl's process, and (the default with cores to spare) analysis in worker
#: processes with labelling in the label process.
SHAPES = pytest.mark.parametrize(
    "processes", [0, 2], ids=["in-process", "workers-and-label-process"]
)


@SHAPES
@deferred_f_from_coro_f
async def test_crawl_labels_every_page_into_sqlite(site, tmp_path, processes):
    db = _db(tmp_path)
    crawler = await crawl(
        db, site.url_for("/index.html"), settings={"VISDUP_ANALYSIS_PROCESSES": processes}
    )
    stats = crawler.stats.get_stats()
    assert stats.get("visdup/label_process", 0) == (1 if processes else 0)
    store = Store.from_url(db)
    rows = {r.url: r for r in store.rows()}
    urls = {u.replace(site.url, "") for u in rows}
    assert "/a/alpha.html" in urls and "/copy/alpha.html" in urls
    assert not any("/private/" in u for u in urls), "robots.txt is obeyed"
    assert stats["visdup/pages"] == len(rows) >= 13
    assert stats.get("dupefilter/filtered", 0) == 0, "the spider asks for each URL once"
    copy = rows[site.url_for("/copy/alpha.html")]
    alpha = rows[site.url_for("/a/alpha.html")]
    # an exact copy names its twin, whichever of the two was stored first
    original, dup = original_and_copy(copy, alpha, "duplicate")
    assert dup.kind == "exact" and dup.duplicate_of == original.id
    tracked = rows[site.url_for("/a/beta.html?utm_source=x")]
    beta = rows[site.url_for("/a/beta.html")]
    original, dup = original_and_copy(tracked, beta, "duplicate")
    assert dup.kind == "exact"
    # articles share one template with new content each: same_template, not duplicates (the
    # first article of the template too: the final labels read the whole crawl)
    articles = [
        r for u, r in rows.items() if "/a/" in u and r.verdict not in {"duplicate", "original"}
    ]
    assert sum(r.verdict == "same_template" for r in articles) == len(articles) >= 8
    # a copy names its group's original, which is nobody's copy
    by_id = {r.id: r for r in rows.values()}
    copies = [r for r in rows.values() if r.verdict in {"duplicate", "moved"}]
    assert len(copies) == stats["visdup/duplicates"] == 2
    for r in copies:
        original = by_id[r.duplicate_of or r.content_duplicate_of]
        assert original.verdict not in {"duplicate", "moved"}
    assert stats["visdup/ted_calls"] >= 1 and stats["visdup/candidates"] >= 1
    report = build_report(store)
    assert report["pages"] == len(rows)
    assert any(g["members"] for g in report["groups"])
    json.dumps(report)
    assert store.run_rows()[0].finished_at is not None


@deferred_f_from_coro_f
async def test_second_crawl_finds_first_crawls_pages(site, tmp_path):
    db = _db(tmp_path)
    # depth 1 from alpha does not reach /copy/alpha.html (only the home page links to it)
    await crawl(db, site.url_for("/a/alpha.html"), settings={"DEPTH_LIMIT": 1})
    first = {r.url for r in Store.from_url(db).rows("url")}
    assert site.url_for("/copy/alpha.html") not in first
    # the second crawl starts on the byte-identical copy: it must link to the first crawl's page
    crawler = await crawl(
        db, site.url_for("/copy/alpha.html"), settings={"DEPTH_LIMIT": 1, "VISDUP_RESUME": False}
    )
    store = Store.from_url(db)
    rows = {r.url: r for r in store.rows()}
    copy = rows[site.url_for("/copy/alpha.html")]
    assert copy.duplicate_of == rows[site.url_for("/a/alpha.html")].id
    assert copy.kind == "exact"
    assert [r.id for r in store.run_rows()] == [1, 2] and copy.run_id == 2
    assert crawler.stats.get_value("visdup/duplicates") >= 1


@SHAPES
@deferred_f_from_coro_f
async def test_hostile_responses_give_stats_and_the_crawl_goes_on(tmp_path, processes):
    root = write_site(tmp_path / "site", {"ok.html": article("Fine", ["fine page text"], [])})
    with serve(root, hostile=True) as server:
        db = _db(tmp_path)
        crawler = await crawl(
            db,
            server.url_for("/hostile/index.html"),
            settings={
                "DOWNLOAD_MAXSIZE": 12 * 1024 * 1024,
                "VISDUP_ANALYSIS_PROCESSES": processes,
            },
        )
    stats = crawler.stats.get_stats()
    store = Store.from_url(db)
    rows = {r.url.replace(server.url, ""): r for r in store.rows()}
    assert rows["/hostile/empty"].problem == "empty body"
    assert rows["/hostile/binary"].problem == "binary content"
    assert rows["/hostile/deep"].truncated
    assert rows["/hostile/big"].term is not None
    wrong = rows["/hostile/wrong-charset"]
    assert wrong.encoding == "utf-8"
    assert stats.get("visdup/non_html", 0) >= 2  # the PDF and the PNG
    assert stats["visdup/errors"] >= 2
    assert store.error_rows(), "problems are recorded in the store"
    assert rows["/hostile/notext"].term is not None


@deferred_f_from_coro_f
async def test_drop_policy_drops_duplicates(site, tmp_path):
    db = _db(tmp_path)
    crawler = await crawl(
        db, site.url_for("/index.html"), settings={"VISDUP_DUPLICATE_POLICY": "drop"}
    )
    stats = crawler.stats.get_stats()
    replaced = stats.get("visdup/originals_replaced", 0)  # kept when it arrived
    assert stats.get("item_dropped_count", 0) == stats["visdup/duplicates"] - replaced
    assert stats["visdup/duplicates"] == 2


@deferred_f_from_coro_f
async def test_nofollow_policy_skips_links_of_duplicates(tmp_path):
    # chain: index -> a -> b; b is a near copy of a and alone links to /only-from-copy.html
    a = article("Same", PROSE, ["/b.html"])
    pages = {
        "index.html": listing("Home", [("/a.html", "a")]),
        "a.html": a,
        "b.html": a.replace("</footer>", "</footer><a href='/only-from-copy.html'>more</a>"),
        "only-from-copy.html": article("Leaf", ["leaf"], []),
    }
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        db = _db(tmp_path)
        crawler = await crawl(
            db,
            server.url_for("/index.html"),
            settings={
                "VISDUP_DUPLICATE_POLICY": "nofollow",
                "VISDUP_SIMILARITY_THRESHOLD": 0.9,
                "CONCURRENT_REQUESTS": 1,
            },
        )
    stats = crawler.stats.get_stats()
    urls = {r.url.replace(server.url, "") for r in Store.from_url(db).rows("url")}
    assert "/a.html" in urls and "/b.html" in urls
    assert "/only-from-copy.html" not in urls
    assert stats["visdup/nofollow_links"] >= 1


@deferred_f_from_coro_f
async def test_concurrent_near_duplicates_are_linked(tmp_path):
    """Twenty pages of one layout arriving at once: every later one links to the first."""
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(20)])}
    for i in range(20):
        pages[f"p{i}.html"] = article("Same title", ["identical body text"] * 3, []).replace(
            "Footer text", f"Footer {i}"
        )
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        db = _db(tmp_path)
        await crawl(db, server.url_for("/index.html"), settings={"CONCURRENT_REQUESTS": 32})
    rows = [r for r in Store.from_url(db).rows() if "/p" in r.url]
    originals = [r for r in rows if r.duplicate_of is None]
    assert len(rows) == 20
    assert len(originals) == 1, [(r.url, r.duplicate_of) for r in rows]


@pytest.mark.postgres
@deferred_f_from_coro_f
async def test_crawl_into_postgresql(site, tmp_path, pg_url):
    crawler = await crawl(pg_url, site.url_for("/index.html"))
    store = Store.from_url(pg_url)
    rows = store.rows()
    assert len(rows) == crawler.stats.get_value("visdup/pages") >= 13
    assert any(r.kind == "exact" for r in rows)
    store.close()


def test_sqlite_file_is_intact_after_a_kill(tmp_path):
    """kill -9 in the middle of a crawl: every committed page is still there, the file is sound."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(300)])}
    for i in range(300):
        pages[f"p{i}.html"] = article(
            f"Page {i}", [f"text {i} " * (i % 7 + 1)], [f"/p{(i + 1) % 300}.html"]
        )
    root = write_site(tmp_path / "site", pages)
    db_path = tmp_path / "visdup.sqlite3"
    with serve(root) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "visdup",
                "crawl",
                server.url_for("/index.html"),
                "--db",
                f"sqlite:///{db_path}",
                "-s",
                "LOG_LEVEL=WARNING",
                "-s",
                "CONCURRENT_REQUESTS=4",
                "-s",
                "VISDUP_ANALYSIS_PROCESSES=2",
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        count = 0
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if db_path.exists():
                try:
                    with sqlite3.connect(db_path, timeout=1) as conn:
                        count = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
                except sqlite3.Error:
                    count = 0
                if count >= 30:
                    break
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # its analysis workers see their crawl gone and end (none waits for work forever)
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workers and not [pid for pid in workers if _alive(pid)]
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            after = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
        assert after >= count >= 30
        # a resumed crawl finishes the site without storing any page twice
        subprocess.run(
            [
                sys.executable,
                "-m",
                "visdup",
                "crawl",
                server.url_for("/index.html"),
                "--db",
                f"sqlite:///{db_path}",
                "-s",
                "LOG_LEVEL=WARNING",
            ],
            cwd=tmp_path,
            check=True,
            timeout=240,
            capture_output=True,
        )
    with sqlite3.connect(db_path) as conn:
        total, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT url) FROM visdup_pages"
        ).fetchone()
    assert total == distinct == 301


@pytest.mark.postgres
def test_two_processes_share_one_postgresql_store(tmp_path, pg_url):
    """Two crawls at once into one database: every URL once, every copy linked to one original."""
    import subprocess
    import sys

    from visdup.storage.store import Store

    Store.from_url(pg_url).close()  # schema first, so the two processes do not race on it
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(40)])}
    for i in range(40):
        pages[f"p{i}.html"] = article("Same story", PROSE, []).replace("Footer text", f"F{i}")
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "visdup",
                    "crawl",
                    server.url_for("/index.html"),
                    "--db",
                    pg_url,
                    "-s",
                    "LOG_LEVEL=WARNING",
                    "-s",
                    "CONCURRENT_REQUESTS=8",
                ],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        for proc in procs:
            _out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-2000:]
    store = Store.from_url(pg_url)
    rows = [r for r in store.rows() if "/p" in r.url]
    assert len(rows) == 40 == len({r.url for r in rows})
    originals = [r for r in rows if r.content_duplicate_of is None]
    assert len(originals) == 1, [(r.url, r.content_duplicate_of, r.verdict) for r in rows]
    assert {r.content_duplicate_of for r in rows} - {None} == {originals[0].id}
    # the final labels are the whole store's, whichever process stored what: the shortest
    # URL, first in URL order, is the original; every other page is measured against it
    assert originals[0].url.endswith("/p0.html") and originals[0].verdict == "original"
    for r in rows:
        if r is not originals[0]:
            assert (r.verdict, r.kind) == ("duplicate", "content")
            assert r.duplicate_of == originals[0].id
            assert r.content_similarity == 1.0 and r.similarity is not None
    store.close()


@deferred_f_from_coro_f
async def test_cluster_cap_drops_pages_beyond_the_cap(tmp_path):
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(12)])}
    for i in range(12):
        pages[f"p{i}.html"] = article("Same", PROSE, []).replace("Footer text", f"F{i}")
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        crawler = await crawl(
            _db(tmp_path), server.url_for("/index.html"), settings={"VISDUP_CLUSTER_CAP": 5}
        )
    stats = crawler.stats.get_stats()
    # the first page is the original, four more join its group, the other seven are dropped
    assert stats["visdup/capped"] == 7
    assert stats["visdup/pages"] == 13, "capped pages are still labelled and stored"


def _groups(rows) -> set[frozenset[str]]:
    """Pages linked as copies (either channel), as unordered groups of paths."""
    parent = {r.id: r.id for r in rows}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for r in rows:
        exact = r.duplicate_of if r.kind == "exact" else None
        for other in (exact, r.content_duplicate_of):
            if other is not None:
                parent[root(r.id)] = root(other)
    groups: dict[int, set[str]] = {}
    for r in rows:
        groups.setdefault(root(r.id), set()).add(r.url)
    return {frozenset(g) for g in groups.values() if len(g) > 1}


@deferred_f_from_coro_f
async def test_results_do_not_depend_on_pipeline_order(tmp_path):
    """Priorities swapped: the same analysis per page, the same copies, the same clusters."""
    from tests.conftest import FIXTURES

    reversed_order = {
        "ITEM_PIPELINES": {
            "visdup.pipelines.LabelPipeline": 100,
            "visdup.pipelines.ContentPipeline": 110,
            "visdup.pipelines.ClusterPipeline": 120,
            "visdup.pipelines.TermPipeline": 130,
        }
    }
    results = []
    with serve(FIXTURES / "sites" / "basic") as server:
        for n, extra in enumerate([{}, reversed_order]):
            db = f"sqlite:///{tmp_path / f'{n}.sqlite3'}"
            await crawl(db, server.url_for("/"), settings=extra)
            store = Store.from_url(db)
            rows = [r for r in store.rows() if r.term is not None]
            store.close()
            base = server.url
            analysis = {
                r.url.replace(base, ""): (
                    r.term,
                    r.simhash,
                    r.content_print,
                    r.content_simhash,
                    r.title,
                    r.canonical,
                )
                for r in rows
            }
            clusters: dict[int, set[str]] = {}
            for r in rows:
                clusters.setdefault(r.cluster_id, set()).add(r.url.replace(base, ""))
            copies = {frozenset(u.replace(base, "") for u in g) for g in _groups(rows)}
            results.append((analysis, {frozenset(c) for c in clusters.values()}, copies))
    (analysis_a, clusters_a, copies_a), (analysis_b, clusters_b, copies_b) = results
    assert len(analysis_a) >= 14 and None not in {a[1] for a in analysis_a.values()}
    assert analysis_a == analysis_b
    assert copies_a == copies_b and len(copies_a) == 3
    assert clusters_a == clusters_b and len(clusters_a) >= 2


@pytest.mark.parametrize(
    ("settings", "error", "says"),
    [
        ({"VISDUP_HAMMING_K": 99}, "ConfigError", "VISDUP_HAMMING_K"),
        ({"VISDUP_DUPLICATE_POLICY": "bogus"}, "ConfigError", "VISDUP_DUPLICATE_POLICY"),
        ({"VISDUP_DATABASE_URL": "sqlit:///x.db"}, "StoreError", "sqlit"),
        (
            {"VISDUP_DATABASE_URL": "postgresql+psycopg://postgres:S3cret@127.0.0.1:1/x"},
            "StoreError",
            "127.0.0.1",
        ),
    ],
)
@deferred_f_from_coro_f
async def test_a_crawl_that_cannot_store_fails_before_fetching(
    site, tmp_path, caplog, settings, error, says
):
    import logging

    caplog.set_level(logging.INFO)
    db = settings.pop("VISDUP_DATABASE_URL", _db(tmp_path))
    with pytest.raises(Exception) as raised:
        await crawl(db, site.url_for("/index.html"), settings=settings)
    assert type(raised.value).__name__ == error and says in str(raised.value)
    assert "S3cret" not in str(raised.value)
    errors = [r for r in caplog.records if r.levelname == "ERROR" and r.name.startswith("visdup")]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert says in errors[0].getMessage() and "S3cret" not in errors[0].getMessage()
    assert site.requests == [], "nothing fetched"


def test_scrapy_crawl_with_a_bad_setting_exits_non_zero_in_one_error_line(site, tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "site",
            "-a",
            f"url={site.url_for('/index.html')}",
            "-s",
            f"VISDUP_DATABASE_URL=sqlite:///{tmp_path / 'v.sqlite3'}",
            "-s",
            "VISDUP_SIMILARITY_THRESHOLD=abc",
        ],
        cwd=tmp_path,
        env={**os.environ, "SCRAPY_SETTINGS_MODULE": "visdup.project_settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if "[visdup" in line and "ERROR" in line]
    assert len(ours) == 1, done.stderr[-3000:]
    assert "VISDUP_SIMILARITY_THRESHOLD must be a number, not 'abc'" in ours[0]
    assert site.requests == [] and "Spider opened" not in done.stderr


def _plain_page(title: str, links: list[str]) -> str:
    anchors = "".join(f"<a href='{u}'>{u}</a>" for u in links)
    text = " ".join(
        f"Crème brûlée number {i} is served at the café near the fjord." for i in range(6)
    )
    head = f"<html><head><title>{title}</title></head>"
    return f"{head}<body><h1>{title}</h1><p>{text}</p>{anchors}</body></html>"


@pytest.mark.parametrize("processes", [0, 1])
@deferred_f_from_coro_f
async def test_charset_notes_only_for_declared_charsets_and_logged_once(
    tmp_path, caplog, processes
):
    """A lying header is noted (once in the log, every time in the stats); no charset, no note.
    The same whether the analysis reuses the spider's tree (threads) or reads the bytes alone
    (worker processes)."""
    import logging

    caplog.set_level(logging.WARNING)
    names = [f"/p{i}.html" for i in range(4)]
    pages = {n.lstrip("/"): _plain_page(f"Café {n}", names) for n in names}
    lying = write_site(tmp_path / "lying", pages)  # UTF-8 bytes, header says Latin-1
    mode = {"VISDUP_ANALYSIS_PROCESSES": processes}
    with serve(lying, charset="iso-8859-1") as server:
        crawler = await crawl(_db(tmp_path), server.url_for("/p0.html"), settings=mode)
    stats = crawler.stats.get_stats()
    assert stats["visdup/notes/charset"] == 4
    noted = [r.getMessage() for r in caplog.records if "charset declared" in r.getMessage()]
    assert len(noted) == 1 and "the body is utf-8" in noted[0]
    rows = Store.from_url(_db(tmp_path)).rows()
    assert {r.encoding for r in rows} == {"utf-8"} and all("Café" in r.title for r in rows)

    caplog.clear()
    undeclared = tmp_path / "undeclared"
    undeclared.mkdir()
    for n in names:  # cp1252 bytes, no charset in the header nor in the page
        (undeclared / n.lstrip("/")).write_bytes(_plain_page(f"Café {n}", names).encode("cp1252"))
    db = f"sqlite:///{tmp_path / 'undeclared.sqlite3'}"
    with serve(undeclared) as server:
        crawler = await crawl(db, server.url_for("/p0.html"), settings=mode)
    assert "visdup/notes/charset" not in crawler.stats.get_stats()
    assert not [r for r in caplog.records if "charset" in r.getMessage()]
    rows = Store.from_url(db).rows()
    assert len(rows) == 4 and all("Café" in r.title for r in rows), [r.title for r in rows]


ALONE = {
    "visdup.pipelines.TermPipeline": None,
    "visdup.pipelines.ClusterPipeline": None,
    "visdup.pipelines.ContentPipeline": None,
    "visdup.pipelines.LabelPipeline": None,
}


@pytest.mark.parametrize(
    ("keep", "content", "clusters"),
    [
        ("visdup.pipelines.LabelPipeline", False, False),
        ("visdup.pipelines.ClusterPipeline", None, True),
        (("visdup.pipelines.LabelPipeline", "visdup.pipelines.ContentPipeline"), True, False),
    ],
)
@deferred_f_from_coro_f
async def test_each_pipeline_works_alone(site, tmp_path, keep, content, clusters):
    keep = (keep,) if isinstance(keep, str) else keep
    pipelines = {**ALONE, **{name: 300 for name in keep}}
    db = _db(tmp_path)
    crawler = await crawl(db, site.url_for("/index.html"), settings={"ITEM_PIPELINES": pipelines})
    stats = crawler.stats.get_stats()
    rows = Store.from_url(db).rows()
    assert (stats.get("visdup/clusters", 0) >= 2) is clusters
    if content is None:  # nothing labels or stores pages
        assert rows == [] and stats["visdup/pages"] == 0
        return
    assert len(rows) == stats["visdup/pages"] >= 13
    assert all(r.term is not None for r in rows)
    assert any(r.content_print for r in rows) is content
    assert all(r.cluster_id is None for r in rows)


class Flatten:
    """A project's pipeline that turns every item into a plain dict before visdup sees it."""

    def process_item(self, item):
        from itemadapter import ItemAdapter

        return ItemAdapter(item).asdict()


@deferred_f_from_coro_f
async def test_pages_a_project_pipeline_turns_into_dicts_release_their_waiters(site, tmp_path):
    """The middlewares wait on pages that never reach visdup: the crawl still finishes."""
    settings = {
        "ITEM_PIPELINES": {"tests.test_crawl.Flatten": 100},
        "VISDUP_EXTRACT_ITEMS": True,
        "VISDUP_DUPLICATE_POLICY": "nofollow",
    }
    crawler = await crawl(_db(tmp_path), site.url_for("/index.html"), settings=settings)
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["visdup/pages"] == 0 and stats["item_scraped_count"] >= 13


def _children(pid: int) -> list[int]:
    """Child processes of ``pid`` (Linux's /proc; the crawl's analysis workers)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; only its parent has not read its status yet


@pytest.mark.parametrize("processes", [0, 1])
@deferred_f_from_coro_f
async def test_titles_stored_before_the_sites_affix_was_known_lose_it_at_the_end(
    tmp_path, processes
):
    """Every page's <title> ends in the site's name: the pages labelled before visdup had
    seen enough of them keep it when stored, and get their own title when the crawl ends, so
    no stored title depends on the crawl's order."""
    names = [f"/p{i}.html" for i in range(12)]
    text = " ".join(f"Sentence {i} about this page and what it holds." for i in range(5))
    pages = {
        n.lstrip("/"): (
            f"<html><head><title>Page {i} — Example Docs</title></head><body>"
            f"<p>{text}</p>{''.join(f'<a href={u!r}>{u}</a>' for u in names)}</body></html>"
        )
        for i, n in enumerate(names)
    }
    root = write_site(tmp_path / "site", pages)
    db = _db(tmp_path)
    with serve(root) as server:
        crawler = await crawl(
            db, server.url_for("/p0.html"), settings={"VISDUP_ANALYSIS_PROCESSES": processes}
        )
        base = server.url
    titles = {r.url.replace(base, ""): r.title for r in Store.from_url(db).rows("url", "title")}
    assert titles == {n: f"Page {i}" for i, n in enumerate(names)}
    assert crawler.stats.get_value("visdup/titles_retitled", 0) >= 4
