"""Same pages, same answer: template clusters, their ids, representatives and fields do not
depend on the order pages come in, on crawl concurrency, or on the host and port a site is
served on; a crawl and the batch commands build the same templates from the same pages."""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import shared_data
from tests.crawling import crawl
from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.drift.files import snapshot_files
from visdup.page.files import page_paths
from visdup.storage.store import Store
from visdup.templates.assign import CrawlClusters
from visdup.templates.extract import extract_pages
from visdup.templates.sample import (
    choose_sample,
    cleaned,
    cleanest,
    keep_in_sample,
    sample_order,
    sample_rank,
)
from visdup.templates.signature import page_input

_HOST = re.compile(r"127\.0\.0\.1:\d+")


def _masked(value: Any) -> Any:
    """``value`` with every ``127.0.0.1:PORT`` written ``HOST`` (JSON-able values)."""
    return json.loads(_HOST.sub("HOST", json.dumps(value, sort_keys=True)))


# ---------------------------------------------------------------------------- the sample


def test_a_pages_rank_is_its_path_and_query_without_tracking():
    plain = "http://127.0.0.1:8001/shop/products/x.html?b=2&a=1"
    for other in (
        "http://127.0.0.1:9002/shop/products/x.html?a=1&b=2",
        "https://example.org/shop/products/x.html;jsessionid=8F2C?a=1&utm_source=mail&b=2",
        "http://127.0.0.1:8001/shop/products/x.html?a=1&b=2&sid=77#reviews",
    ):
        assert sample_rank(other) == sample_rank(plain)
    assert sample_rank("http://h/shop/products/y.html") != sample_rank(plain)
    # copies on one site are one page; the same path on two sites is two
    assert cleaned("http://h/a.html;jsessionid=1") == cleaned("https://H:443/a.html?fbclid=2")
    assert cleaned("http://h:8080/a.html") != cleaned("http://g:8080/a.html")
    assert cleaned("pages/0001.htm") == ("", "pages/0001.htm")


def test_the_cleanest_spelling_stands_for_a_page():
    urls = [
        "http://h/articles/b.html?utm_source=home",
        "http://h/articles/b.html;jsessionid=8F2C",
        "http://h/articles/zz.html",
        "http://h/articles/b/print.html",
        "http://h/articles/aa.html",
    ]
    assert cleanest(urls) == "http://h/articles/aa.html"  # untracked, shortest, then URL order
    assert cleanest(urls[:2]) == "http://h/articles/b.html;jsessionid=8F2C"  # shorter of two
    assert cleanest(["http://H/x.html?b=1&a=2#top"]) == "http://h/x.html?a=2&b=1"  # canonical


def test_a_sample_kept_page_by_page_is_the_sample_of_all_pages():
    base = [f"http://h/p/{i}.html" for i in range(30)]
    urls = base + [f"{u};jsessionid=S{i}" for i, u in enumerate(base[::3])]
    urls += [f"{u}?utm_source=x" for u in base[::4]]
    expected = choose_sample([(sample_order(u), u) for u in urls], 8)
    assert len(expected) == 8 and len({cleaned(u) for _o, u in expected}) == 8
    assert not any(";" in u or "?" in u for _o, u in expected)  # the untracked spelling
    for seed in range(20):
        order = urls[:]
        random.Random(seed).shuffle(order)
        sample: list[tuple[Any, str]] = []
        for url in order:
            keep_in_sample(sample, (sample_order(url), url), 8)
        assert sample == expected


# ----------------------------------------------------------------- the demo, in any order


def _demo_pages() -> list[tuple[str, bytes]]:
    """The demo site's pages by path, with the copies a crawl meets: product pages under a
    session id, articles under tracking parameters."""
    pages = []
    for path in page_paths([str(SITE_ROOT)]):
        rel = path.relative_to(SITE_ROOT).as_posix()
        if rel.startswith(("private/", "static/")):
            continue
        body = path.read_bytes()
        rel = rel.removesuffix("index.html")
        pages.append((f"/{rel}", body))
        if rel.startswith("shop/products/"):
            pages.append((f"/{rel};jsessionid=8F2C41A09B7E", body))
        if rel.startswith("articles/") and rel.count("/") == 1:
            pages.append((f"/{rel}?utm_source=home&utm_medium=featured", body))
    return pages


def _crawl_templates(tmp_path: Path, name: str, pages: list[tuple[str, bytes]]) -> Any:
    """The pages placed one at a time, as a crawl's label step does, and what it stores."""
    store = Store.from_url(f"sqlite:///{tmp_path / f'{name}.sqlite3'}")
    try:
        clusters = CrawlClusters(store, extract=False)
        for url, body in pages:
            clusters.assign(url, page_input(body, url=url))
        clusters.finish()
        rows = store.cluster_rows()
        return {row.id: json.loads(row.template) for row in rows if row.template}
    finally:
        store.close()


def test_crawl_and_batch_templates_hold_still_in_any_order_and_on_any_port(tmp_path):
    """Each product page of the demo comes with a session-id copy: a sample ranked by whole
    URLs (port included) that holds a page beside its copy starts from another page and sees
    other pages on each port, and the product template's fields change with it."""
    pages = _demo_pages()
    seen = []
    for seed, port in enumerate((8001, 39725, 51234)):
        order = [(f"http://127.0.0.1:{port}{path}", body) for path, body in pages]
        random.Random(seed).shuffle(order)
        templates = _crawl_templates(tmp_path, f"run{seed}", order)
        batch = {t.cluster: t.to_dict() for t in extract_pages(order).templates}
        assert _masked(templates) == _masked(batch)  # the batch builds what the crawl built
        seen.append(_masked(templates))
    assert len(seen[0]) >= 3
    assert seen[1] == seen[0] and seen[2] == seen[0]
    for template in seen[0].values():
        assert ";jsessionid" not in template["representative"]
        assert "utm_" not in template["representative"]


def _snapshot_fits(tmp_path: Path, name: str, pages: list[tuple[str, bytes]]) -> Any:
    """A snapshot of ``pages`` in the order given: each page's template and fit, and each
    template's stored aggregates, by URL (the stored ids differ with the order)."""
    db = f"sqlite:///{tmp_path / f'{name}.sqlite3'}"
    snapshot_files(pages, db=db, name="site")
    with sqlite3.connect(tmp_path / f"{name}.sqlite3") as conn:
        fits = conn.execute(
            "SELECT p.url, s.cluster_id, s.fit FROM visdup_snapshot_pages s"
            " JOIN visdup_pages p ON p.id = s.page_id ORDER BY p.url"
        ).fetchall()
        stats = conn.execute(
            "SELECT cluster_id, stats FROM visdup_snapshot_templates ORDER BY cluster_id"
        ).fetchall()
    return _masked(fits), _masked([(cid, json.loads(text)) for cid, text in stats])


def test_a_snapshots_fits_hold_still_in_any_order(tmp_path):
    """A page's fit as it is placed is measured against its template of then, which the
    pages before it decide: the snapshot stores each fit measured again as the run ends."""
    pages = [(f"http://127.0.0.1:8001{path}", body) for path, body in _demo_pages()]
    seen = []
    for seed in range(3):
        order = list(pages)
        random.Random(seed).shuffle(order)
        seen.append(_snapshot_fits(tmp_path, f"run{seed}", order))
    fits, stats = seen[0]
    assert sum(1 for _url, _cid, fit in fits if fit is not None) >= len(pages) // 2
    assert len({fit for _url, _cid, fit in fits}) >= 3  # not all 1.0: the fits were measured
    assert len(stats) >= 3
    assert seen[1] == seen[0] and seen[2] == seen[0]


def test_every_page_gets_its_record_when_copies_stay_out_of_the_sample(tmp_path):
    """A copy of a sampled page has no place in the sample, yet it came before the template
    like the others: its record comes with theirs."""
    # each page just before its copy: the copy comes while the page holds its place
    pages = [
        (f"http://127.0.0.1:8001{path}", body)
        for path, body in _demo_pages()
        if path.startswith("/shop/products/")
    ]
    assert any(";jsessionid=" in url for url, _body in pages[:6])
    store = Store.from_url(f"sqlite:///{tmp_path / 'records.sqlite3'}")
    try:
        clusters = CrawlClusters(store, template_min_pages=6)
        records = []
        for url, body in pages:
            records += clusters.assign(url, page_input(body, url=url)).records
        clusters.finish()
    finally:
        store.close()
    assert sorted(r["url"] for r in records) == sorted(url for url, _body in pages)
    assert all(r["fits"] for r in records)


# ------------------------------------------------------ the batch commands, in any order


def _shuffled(paths: list[str], seed: int) -> list[str]:
    order = paths[:]
    random.Random(seed).shuffle(order)
    return order


def _batch_runs(tmp_path: Path, files: list[str], capsys: Any) -> list[Any]:
    """``visdup cluster --json`` and ``visdup extract`` over ``files`` in three orders."""
    runs = []
    for seed in range(3):
        order = files if seed == 0 else _shuffled(files, seed)
        status = main(["cluster", "--json", *order])
        clusters = json.loads(capsys.readouterr().out)["clusters"]
        out = tmp_path / f"rows{seed}.csv"
        assert main(["extract", "--out", str(out), *order]) == status
        capsys.readouterr()
        runs.append((status, clusters, out.read_text(encoding="utf-8")))
    return runs


def _check_batch_runs(runs: list[Any]) -> None:
    status, clusters, rows = runs[0]
    assert clusters and rows.count("\n") > len(clusters)
    for again in runs[1:]:
        assert again[0] == status
        # the same partition, ids, sizes and representatives
        assert again[1] == clusters
        # the same header (field names in the same order) and the same values
        assert again[2].splitlines()[0] == rows.splitlines()[0]
        assert again[2] == rows


def _header_in_any_order(tmp_path, capsys, *where: str) -> list[str]:
    """The batch commands over a development set in several orders, checked to agree; the
    dataset's header."""
    files = [str(p) for p in page_paths([str(shared_data(*where))])]
    runs = _batch_runs(tmp_path, files, capsys)
    _check_batch_runs(runs)
    return runs[0][2].splitlines()[0].split(",")


def test_batch_commands_on_warpcore_in_any_order(tmp_path, capsys):
    header = _header_in_any_order(tmp_path, capsys, "warpcore", "site")
    assert len(header) > 4  # its templates have fields


def test_batch_commands_on_swde_booksamillion_in_any_order(tmp_path, capsys):
    header = _header_in_any_order(tmp_path, capsys, "swde-booksamillion", "pages")
    for name in ("title", "author", "isbn_13", "publisher", "date"):
        assert name in header


# ------------------------------------------------------- real crawls of the demo site


def _stored(db: str) -> dict[str, Any]:
    """What a crawl leaves for the templates: each page's cluster, each cluster's
    representative and template."""
    store = Store.from_url(db)
    try:
        pages = {r.url: r.cluster_id for r in store.rows("url", "cluster_id")}
        clusters = {
            row.id: {
                "representative": row.representative,
                "template": json.loads(row.template) if row.template else None,
            }
            for row in store.cluster_rows()
        }
    finally:
        store.close()
    return {"pages": pages, "clusters": clusters}


@deferred_f_from_coro_f
async def test_two_crawls_of_the_demo_on_two_ports_store_the_same_templates(tmp_path, capsys):
    runs = []
    for n, concurrency in enumerate((16, 2)):
        db = f"sqlite:///{tmp_path / f'crawl{n}.sqlite3'}"
        with serve(SITE_ROOT) as server:
            settings = {
                "CONCURRENT_REQUESTS": concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
            }
            await crawl(db, server.url_for("/"), settings=settings)
            base = server.url
        runs.append((db, base))
    assert runs[0][1] != runs[1][1], "the site answered on two ports"
    first = _stored(runs[0][0])
    assert _masked(_stored(runs[1][0])) == _masked(first)  # partition, ids, representatives,
    # templates and their fields in the same order
    members: dict[int, list[str]] = {}
    for url, cid in first["pages"].items():
        members.setdefault(cid, []).append(url)
    products = None
    for cid, cluster in first["clusters"].items():
        # the cleanest of its pages, as the store spells it
        assert cluster["representative"] == cleanest(members[cid]) in members[cid]
        template = cluster["template"]
        if template is not None:
            assert template["representative"] in members[cid]
            if "/shop/products/" in cluster["representative"]:
                products = template
    assert products is not None and len(products["fields"]) >= 3
    # the batch command rebuilds from the stored pages what the crawl built
    copy = tmp_path / "batch.sqlite3"
    shutil.copy(tmp_path / "crawl0.sqlite3", copy)
    assert main(["extract", "--db", f"sqlite:///{copy}", "--out", str(tmp_path / "x.csv")]) == 0
    capsys.readouterr()
    assert _stored(f"sqlite:///{copy}") == first
