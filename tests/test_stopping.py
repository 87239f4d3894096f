"""A crawl stopped from outside: its processes neither restart nor stall in silence.

SIGTERM sent to the crawl's whole process group (a service manager's or a container's stop,
``kill -- -PGID``) once killed each analysis worker and the label process, and the crawl's
process took them for crashes and started new ones as it stopped. A label process stopped
with SIGSTOP stalled the crawl with nothing in its log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import article, crawl, listing, write_site
from tests.test_bounded_memory import _children
from visdup.context import CrawlContext
from visdup.demo.server import ServerHandle, serve
from visdup.runtime.label_process import LabelService

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _site(root: Path, n: int = 20) -> Path:
    links = [(f"/a{i}.html", f"A{i}") for i in range(n)] + [("/hostile/slow", "slow")]
    pages = {"index.html": listing("Home", links)}
    for i in range(n):
        prose = [f"Sentence {j} of article {i}, long enough to be read." for j in range(5)]
        pages[f"a{i}.html"] = article(f"Article {i}", prose, [])
    return write_site(root, pages)


@pytest.fixture
def site(tmp_path) -> Iterator[ServerHandle]:
    with serve(_site(tmp_path / "site"), hostile=True, slow_seconds=3.0) as handle:
        yield handle


def _spawned(pid: int) -> list[int]:
    """The processes ``pid`` spawned through multiprocessing (its workers, its label process)."""
    found = []
    for child in _children().get(pid, []):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            found.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _until(condition, what: str, limit: float = 120.0) -> None:
    """Wait for ``condition`` (a hang fails the test after ``limit`` seconds)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_sigterm_to_the_group_restarts_no_process(site, tmp_path):
    args = [sys.executable, "-m", "visdup", "crawl", site.url_for("/")]
    args += ["--db", f"sqlite:///{tmp_path / 'v.db'}", "-s", "VISDUP_ANALYSIS_PROCESSES=2"]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        # two workers and the label process up, and the crawl in the middle of a page
        _until(lambda: len(_spawned(process.pid)) >= 3, "the crawl's processes started")
        _until(lambda: "/hostile/slow" in site.requests, "the slow page was asked for")
        spawned = _spawned(process.pid)
        os.killpg(process.pid, signal.SIGTERM)
        _out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert "'finish_reason': 'shutdown'" in err, err[-3000:]
    assert "died" not in err and "takes its place" not in err, err[-3000:]
    assert "visdup/analysis/restarts" not in err and "label_process/restarts" not in err
    assert "Traceback" not in err, err[-3000:]
    _until(lambda: not any(_alive(pid) for pid in spawned), "the processes ended")


# -------------------------------------------------------------------- a stopped label process


class _Resume(logging.Handler):
    """Sends SIGCONT to the stopped label process once the crawl warns about it (the pid the
    warning names)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        found = re.search(r"the label process \(pid (\d+)\) has not answered", message)
        if found:
            self.warnings.append(message)
            os.kill(int(found[1]), signal.SIGCONT)


RESUME = _Resume()


class StopLabelProcess:
    """An item pipeline that stops the label process (SIGSTOP) at the third page."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_item(self, item):
        self.seen += 1
        if self.seen == 3:
            service = CrawlContext.of(self.crawler).labeller.service
            assert service is not None, "no label process"
            os.kill(service.process.pid, signal.SIGSTOP)
            # never a hung test: resumed anyway after two minutes (the test then fails)
            timer = threading.Timer(120, _resume, (service.process.pid,))
            timer.daemon = True
            timer.start()
            self.crawler.stats.inc_value("test/stopped")
        return item


def _resume(pid: int) -> None:
    """SIGCONT to a process that may have ended since (the crawl resumed and closed it)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


@deferred_f_from_coro_f
async def test_a_stopped_label_process_is_warned_about_and_costs_no_page(
    site, tmp_path, monkeypatch
):
    monkeypatch.setattr(LabelService, "SILENCE", 1.0)
    RESUME.warnings.clear()
    logging.getLogger().addHandler(RESUME)
    try:
        crawler = await crawl(
            f"sqlite:///{tmp_path / 'v.db'}",
            site.url_for("/"),
            settings={
                "VISDUP_ANALYSIS_PROCESSES": 1,
                "ITEM_PIPELINES": {"tests.test_stopping.StopLabelProcess": 1000},
            },
        )
    finally:
        logging.getLogger().removeHandler(RESUME)
    stats = crawler.stats
    assert stats.get_value("test/stopped") == 1
    assert RESUME.warnings, "the stall was never reported"
    warning = RESUME.warnings[0]
    assert "stopped" in warning and "kill -CONT" in warning, warning
    assert stats.get_value("visdup/label_process/restarts") is None
    assert stats.get_value("visdup/errors", 0) == 0
    # "/" and "/index.html", 20 articles and the slow page: every one labelled
    assert stats.get_value("visdup/pages") == stats.get_value("item_scraped_count") == 23
