"""A store that goes away mid-crawl: the crawl waits for it and loses no page; one that stays
away stops the crawl cleanly, and the next run stores what it could not.

The store is PostgreSQL reached through a TCP proxy on 127.0.0.1 that the test cuts (every
connection closed, new ones closed as they come) and restores: the machine's server is never
touched; or a SQLite file on a small tmpfs that fills, then grows. The crawls run with their
worker processes and label process, as users run them.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import sqlite3
import string
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from sqlalchemy import create_engine, text

from tests.conftest import REPO
from tests.crawling import article, crawl, write_site
from visdup.demo.server import serve

PAGES = 30


class Proxy:
    """TCP forwarding from a free port on 127.0.0.1 to PostgreSQL, which the test can cut."""

    def __init__(self, target: tuple[str, int] = ("127.0.0.1", 5432)):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.up = False
        with self._lock:
            connections, self._open = self._open, []
        for s in connections:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()

    def url(self, pg_url: str) -> str:
        head, tail = pg_url.split("@", 1)
        return f"{head}@127.0.0.1:{self.port}/{tail.split('/', 1)[1]}"


def _site(root: Path) -> Path:
    names = [f"p{n:02d}.html" for n in range(PAGES)]
    pages = {"index.html": article("Home", ["The start page of the site."], names)}
    for n, name in enumerate(names):
        words = " ".join(f"topic{n}word{i}" for i in range(40))
        pages[name] = article(
            f"Page {n}", [f"Page {n} tells of {words}.", f"A second paragraph of page {n}."], []
        )
    return write_site(root, pages)


def _stored(pg_url: str) -> list[str]:
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT url FROM visdup_pages"))]
    finally:
        engine.dispose()


async def _crawl_cut(db: str, base: str, proxy: Proxy, restore_after: float | None, **settings):
    """Crawl, cutting the store away as the first page is stored."""
    from scrapy.utils.test import get_crawler

    from tests.crawling import crawl_settings
    from visdup.spiders.site import SiteSpider

    crawler = get_crawler(SiteSpider, crawl_settings(db, **settings))

    def first_page(item, response, spider):  # a named function: signals keep weak refs
        if proxy.up and not getattr(first_page, "done", False):
            first_page.done = True  # type: ignore[attr-defined]
            proxy.cut()
            if restore_after is not None:
                threading.Timer(restore_after, proxy.restore).start()

    crawler.signals.connect(first_page, signal=signals.item_scraped)
    await crawler.crawl_async(url=base + "/index.html")
    return crawler


@deferred_f_from_coro_f
async def test_a_store_away_for_seconds_costs_no_page(tmp_path, pg_url, caplog):
    caplog.set_level(logging.INFO)
    proxy = Proxy()
    try:
        db = proxy.url(pg_url)
        with serve(_site(tmp_path / "site")) as server:
            crawler = await _crawl_cut(db, server.url, proxy, restore_after=2.0)
        stats = crawler.stats
        assert stats.get_value("finish_reason") == "finished"
        assert stats.get_value("visdup/store_outages", 0) >= 1
        assert stats.get_value("visdup/store_outage/not_stored", 0) == 0
        urls = _stored(pg_url)
        assert len(urls) == len(set(urls)) == PAGES + 1
        said = [r.getMessage() for r in caplog.records if r.name.startswith("visdup")]
        assert sum("went away" in m for m in said) >= 1
        assert sum("the store is back" in m for m in said) >= 1
    finally:
        proxy.close()


@deferred_f_from_coro_f
async def test_a_store_that_stays_away_stops_the_crawl_and_the_next_run_stores_the_rest(
    tmp_path, pg_url, caplog
):
    caplog.set_level(logging.INFO)
    proxy = Proxy()
    try:
        db = proxy.url(pg_url)
        with serve(_site(tmp_path / "site")) as server:
            crawler = await _crawl_cut(
                db, server.url, proxy, restore_after=None, VISDUP_STORE_OUTAGE_TIMEOUT=1.5
            )
            assert crawler.stats.get_value("finish_reason") == "store_outage"
            errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            assert len(errors) == 1 and "stayed away" in errors[0]  # one line, no traceback
            stored_first = len(_stored(pg_url))
            assert stored_first < PAGES + 1
            proxy.restore()
            again = await crawl(db, server.url + "/index.html")
        assert again.stats.get_value("finish_reason") == "finished"
        urls = _stored(pg_url)
        assert len(urls) == len(set(urls)) == PAGES + 1
    finally:
        proxy.close()


@pytest.fixture
def small_disk(tmp_path):
    """A 384 KiB file system (tmpfs), made larger by ``grow()``: a disk that fills mid-crawl."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {made.stderr.strip()}")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=32m", str(mount)], check=True)

    try:
        yield mount, grow
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _big_site(root: Path) -> Path:
    """61 pages whose bodies do not compress much: the store outgrows the small disk."""
    rnd = random.Random(3)
    names = [f"p{n:02d}.html" for n in range(60)]
    pages = {"index.html": article("Home", ["The start page."], names)}
    for n, name in enumerate(names):
        words = " ".join(
            "".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(3, 9)))
            for _ in range(2500)
        )
        pages[name] = article(f"Page {n}", [words, f"Second paragraph of page {n}."], [])
    return write_site(root, pages)


def _visdup_crawl(url: str, db: str, *settings: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "visdup", "crawl", url, "--db", db, "-s", "LOG_LEVEL=WARNING"]
    for setting in settings:
        args += ["-s", setting]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=REPO)


def test_a_full_disk_stops_the_crawl_in_a_few_lines_and_a_resume_stores_every_page(
    tmp_path, small_disk
):
    mount, grow = small_disk
    db = f"sqlite:///{mount / 'visdup.sqlite3'}"
    with serve(_big_site(tmp_path / "site")) as server:
        url = server.url + "/index.html"
        full = _visdup_crawl(url, db, "VISDUP_STORE_OUTAGE_TIMEOUT=2")
        lines = full.stderr.strip().splitlines()
        assert full.returncode == 1, full.stderr
        assert len(lines) <= 5, full.stderr
        assert "Traceback" not in full.stderr
        assert any("stayed away" in line for line in lines)
        grow()  # room made
        again = _visdup_crawl(url, db)
        assert again.returncode == 0, again.stderr
    with sqlite3.connect(mount / "visdup.sqlite3") as conn:
        urls = [row[0] for row in conn.execute("SELECT url FROM visdup_pages")]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(urls) == len(set(urls)) == 61
