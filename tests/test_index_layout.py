"""VISDUP_INDEX_LAYOUT in a crawl: the pair-key band table labels a site as the bands one does.

Real crawls against a local HTTP server into real PostgreSQL databases (one per layout, made
and dropped here); skipped with the reason when PostgreSQL is absent.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import POSTGRES_URL
from tests.crawling import article, crawl, listing, write_site
from visdup.demo.server import serve
from visdup.errors import StoreError
from visdup.index.base import BandLayout
from visdup.index.sql import band_index
from visdup.storage.schema import FINGERPRINTS
from visdup.storage.store import Store

sqlalchemy = pytest.importorskip("sqlalchemy")

pytestmark = pytest.mark.postgres

PROSE = [
    "Cycling to work in winter takes some preparation, but it is far from impossible.",
    "Good lights matter more than anything else when the days are short and the roads wet.",
    "Mudguards keep you and the riders behind you dry, and they cost very little to fit.",
]


@pytest.fixture
def pg_urls():
    """Two fresh PostgreSQL databases, dropped afterwards."""
    pytest.importorskip("psycopg")
    admin_url = POSTGRES_URL.rsplit("/", 1)[0] + "/postgres"
    names = [f"visdup_test_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    try:
        admin = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for name in names:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except Exception as exc:
        pytest.skip(f"PostgreSQL is not reachable at {admin_url}: {exc.__class__.__name__}")
    yield [POSTGRES_URL.rsplit("/", 1)[0] + "/" + name for name in names]
    with admin.connect() as conn:
        for name in names:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


@pytest.fixture
def site(tmp_path):
    """Three article families (each a few near copies: another footer) and unique listings."""
    pages = {}
    links = []
    for family in range(3):
        paras = [f"family {family} " + p for p in PROSE[family:] + PROSE[:family]]
        for copy in range(5):
            path = f"f{family}/c{copy}.html"
            links.append((f"/{path}", path))
            pages[path] = article(f"Story {family}", paras, []).replace(
                "Footer text", f"Footer {copy}"
            )
    for n in range(4):
        rows = [(f"/other/{n}/{i}.html", f"item {n}.{i}") for i in range(n + 2)]
        pages[f"list{n}.html"] = listing(f"List {n}", rows)
        links.append((f"/list{n}.html", f"list {n}"))
    pages["index.html"] = listing("Home", links)
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        yield server


def _labels(url: str) -> tuple[set[frozenset[str]], Counter[str], int]:
    """(duplicate groups as sets of paths, verdict counts, pages) of a store."""
    store = Store.from_url(url)
    try:
        rows = store.rows("id", "url", "verdict", "duplicate_of", "content_duplicate_of")
    finally:
        store.close()
    path = {r.id: r.url.split("/", 3)[3] for r in rows}
    groups: dict[int, set[str]] = {}
    for r in rows:
        original = r.duplicate_of or r.content_duplicate_of
        if original is not None:
            groups.setdefault(original, {path[original]}).add(path[r.id])
    return {frozenset(g) for g in groups.values()}, Counter(r.verdict for r in rows), len(rows)


def _layouts_written(url: str) -> set[tuple[int, int]]:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            keys = conn.exec_driver_sql(f"SELECT b0 FROM {FINGERPRINTS}").scalars().all()
    finally:
        engine.dispose()
    return {BandLayout.decode(key) for key in keys}


@deferred_f_from_coro_f
async def test_a_crawl_with_pairs_labels_as_with_bands(site, pg_urls):
    start = site.url_for("/index.html")
    settings = {"VISDUP_HAMMING_K": 3, "CONCURRENT_REQUESTS": 4}
    for url, layout in zip(pg_urls, ("bands", "pairs"), strict=True):
        crawler = await crawl(url, start, settings={**settings, "VISDUP_INDEX_LAYOUT": layout})
        assert crawler.stats.get_value("finish_reason") == "finished"
    assert _layouts_written(pg_urls[0]) == {(4, 1)}
    assert _layouts_written(pg_urls[1]) == {(5, 2)}
    banded, paired = _labels(pg_urls[0]), _labels(pg_urls[1])
    assert banded == paired
    groups, _verdicts, pages = paired
    assert pages == 20
    assert len(groups) == 3 and all(len(g) == 5 for g in groups), groups


@pytest.mark.parametrize("first", ["bands", "pairs"])
def test_a_store_refuses_a_second_layout(pg_url, first):
    """Bands first: its table lacks the pair columns; pairs first: its rows hold other keys."""
    store = Store.from_url(pg_url)
    try:
        store.index_layout = first
        band_index(store, "structure", 3).add(1, 42)
        store.index_layout = "pairs" if first == "bands" else "bands"
        with pytest.raises(StoreError, match="VISDUP_INDEX_LAYOUT"):
            band_index(store, "structure", 3)
    finally:
        store.close()
