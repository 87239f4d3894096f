"""The same pages give the same answer: final labels are a function of the set of pages and
the settings, never of the order the pages arrived in or of how many were fetched at once.

Each test gets one answer per arrival order (crawls of the demo site at four concurrencies;
``visdup dups`` over the same files in three shuffles) and compares them row by row: the
per-page table of ``visdup report --pages`` keyed by URL, and the template fields. A failure
prints the differing rows (see tests/_same_answer.py).
"""

from __future__ import annotations

import csv
import os
import random
from pathlib import Path

import pytest
import pytest_twisted
from scrapy.utils.defer import deferred_from_coro

from tests._same_answer import (
    Answer,
    disagreements,
    exact_copy_problems,
    read_answer,
    relative,
    visdup,
)
from tests.conftest import REPO, SHARED_DATA
from tests.crawling import crawl
from visdup import config
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.page.files import page_paths

# ------------------------------------------------------------------ the demo site, crawled

CONCURRENCY = (1, 2, 8, 16)


async def _crawl_demo(tmp: Path) -> dict[int, tuple[Answer, list[str]]]:
    """One crawl of the demo site per concurrency, each into its own store, with visdup's
    default analysis setup (worker processes where there are cores to spare)."""
    found = {}
    for n in CONCURRENCY:
        db = f"sqlite:///{tmp / f'c{n}.sqlite3'}"
        with serve(SITE_ROOT) as server:
            crawler = await crawl(
                db,
                server.url_for("/"),
                settings={
                    "CONCURRENT_REQUESTS": n,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": n,
                    "VISDUP_ANALYSIS_PROCESSES": config.VISDUP_ANALYSIS_PROCESSES,
                },
            )
            base = server.url
        stats = crawler.stats.get_stats()
        assert stats.get("finish_reason") == "finished", stats.get("finish_reason")
        assert stats.get("visdup/errors", 0) == 0, f"CONCURRENT_REQUESTS={n}: errors in {stats}"
        answer = read_answer(f"CONCURRENT_REQUESTS={n}", db, tmp / f"c{n}", base)
        # the dataset `visdup extract --db` writes from the stored pages (this stores its own
        # templates, so it runs after the crawl's answer is read)
        out = tmp / f"c{n}" / "extract.csv"
        visdup("extract", "--db", db, "--out", str(out))
        with out.open(encoding="utf-8", newline="") as f:
            header = next(csv.reader(f))
        found[n] = (answer, header)
    return found


@pytest_twisted.async_fixture(scope="module")
async def demo_crawls(tmp_path_factory) -> dict[int, tuple[Answer, list[str]]]:
    return await deferred_from_coro(_crawl_demo(tmp_path_factory.mktemp("same-answer-demo")))


def test_demo_crawls_are_different_arrival_orders(demo_crawls):
    """The premise: the crawls stored the same pages in different orders."""
    answers = [a for a, _h in demo_crawls.values()]
    assert len(answers[0].rows) >= 45
    orders = {tuple(a.stored_order) for a in answers}
    assert len(orders) > 1, "every concurrency stored the pages in one order: nothing is tested"
    assert all(set(a.stored_order) == set(answers[0].stored_order) for a in answers)


def test_demo_crawls_give_the_same_pages_table(demo_crawls):
    answers = [a for a, _h in demo_crawls.values()]
    assert len(answers[0].rows) >= 45
    diff = disagreements(answers, "rows")
    assert not diff, "the same pages got different labels:\n" + diff


def test_demo_crawls_give_the_same_template_fields(demo_crawls):
    answers = [a for a, _h in demo_crawls.values()]
    assert answers[0].templates, "the crawl stored no template"
    assert any(answers[0].templates.values()), "no template has fields"
    diff = disagreements(answers, "templates")
    assert not diff, "the same pages got different templates:\n" + diff


def test_demo_crawls_give_the_same_extraction_header(demo_crawls):
    headers = {n: header for n, (_a, header) in demo_crawls.items()}
    first = headers[CONCURRENCY[0]]
    assert first[:3] == ["url", "cluster", "fits"] and len(first) > 3
    differing = {n: h for n, h in headers.items() if h != first}
    assert not differing, "visdup extract --db wrote other columns:\n" + "\n".join(
        f"  CONCURRENT_REQUESTS={n}: {','.join(h)}"
        for n, h in [(CONCURRENCY[0], first), *differing.items()]
    )


def test_demo_byte_identical_pages_are_exact_duplicates_of_one_original(demo_crawls):
    """The planted copies: URLs that differ only by tracking parameters, a session id or the
    old date-based path, serving the same bytes, are exact duplicates of one page."""
    problems = []
    for answer, _header in demo_crawls.values():
        groups = {}
        for url, digest in answer.body_hashes.items():
            groups.setdefault(digest, []).append(url)
        # the old /blog/2024/ copy of an article, at least
        assert any(len(g) > 1 for g in groups.values()), f"{answer.label}: no byte twins"
        if found := exact_copy_problems(answer):
            # the first crawl's groups in full, the others' counts
            problems.append(found if not problems else found.splitlines()[0])
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------ page files in three orders

SEEDS = (1, 2, 3)


def python_manual() -> Path:
    """The Python 3.11 manual, where bench/_data.py finds it (VISDUP_DEBIAN_DOCS honoured)."""
    base = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs"))
    path = base / "usr" / "share" / "doc" / "python3.11" / "html"
    if not path.is_dir():
        pytest.skip(
            f"{path} is absent: run `bash {SHARED_DATA / 'get-debian-docs.sh'} {base}` "
            "(or set VISDUP_DEBIAN_DOCS)"
        )
    return path


def warpcore() -> Path:
    path = SHARED_DATA / "warpcore" / "site"
    if not path.is_dir():
        pytest.skip(f"{path} is absent (the development data in ../shared/data)")
    return path


def dups_answers(root: Path, tmp: Path) -> list[Answer]:
    """``visdup dups --db`` over every page file under ``root``, given as explicit paths in
    three seeded shuffles, each into its own store."""
    files = [str(p) for p in page_paths([str(root)])]
    assert len(files) >= 400
    answers = []
    for seed in SEEDS:
        order = random.Random(seed).sample(files, len(files))
        db = f"sqlite:///{tmp / f'order{seed}.sqlite3'}"
        # exit status 2: some file was refused (warpcore's empty none.html), the rest labelled
        visdup("dups", "--db", db, "--json", *order, ok=(0, 2))
        answer = read_answer(f"shuffle {seed}", db, tmp / f"order{seed}", str(root))
        given = [relative(p, str(root)) for p in order]
        stored = set(answer.stored_order)
        assert len(stored) >= len(files) - 5, f"{answer.label}: most files were refused"
        # dups labels in the order it is given (the premise of the comparison)
        assert answer.stored_order == [u for u in given if u in stored], (
            f"{answer.label}: the pages were not stored in the order given"
        )
        answers.append(answer)
    assert len({tuple(a.stored_order) for a in answers}) == len(SEEDS)
    return answers


def test_warpcore_files_in_any_order_give_the_same_pages_table(tmp_path):
    answers = dups_answers(warpcore(), tmp_path)
    diff = disagreements(answers, "rows")
    assert not diff, "the same pages got different labels:\n" + diff


@pytest.mark.slow
def test_python_manual_files_in_any_order_give_the_same_pages_table(tmp_path):
    answers = dups_answers(python_manual(), tmp_path)
    diff = disagreements(answers, "rows")
    assert not diff, "the same pages got different labels:\n" + diff
