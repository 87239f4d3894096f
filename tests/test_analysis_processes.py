"""Pages analysed in worker processes get the labels and clusters of pages analysed in threads."""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FIXTURES
from tests.crawling import crawl
from visdup.demo.server import serve
from visdup.storage.store import Store

SITE = FIXTURES / "sites" / "templates"


def _templated(db: str) -> set[int]:
    """Clusters whose template was built and stored (in the worker processes, when any)."""
    store = Store.from_url(db)
    try:
        return {row.id for row in store.cluster_rows() if row.template}
    finally:
        store.close()


def _labels(db: str, base: str) -> dict[str, tuple[object, ...]]:
    store = Store.from_url(db)
    try:
        # verdicts name whichever page of a group was stored first: crawl order, not compared
        rows = store.rows("url", "simhash", "content_simhash", "cluster_id", "title", "term")
        return {r.url.replace(base, ""): tuple(r)[1:] for r in rows}
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_worker_processes_give_the_same_labels(tmp_path):
    got = []
    templated = []
    for processes in (0, 2):
        db = f"sqlite:///{tmp_path / f'p{processes}.sqlite3'}"
        with serve(SITE) as server:
            crawler = await crawl(
                db, server.url_for("/"), settings={"VISDUP_ANALYSIS_PROCESSES": processes}
            )
            base = server.url
        assert crawler.stats.get_value("visdup/errors") == 0
        got.append(_labels(db, base))
        templated.append(_templated(db))
    assert len(got[0]) >= 14
    assert got[0] == got[1]
    # every cluster that reached VISDUP_TEMPLATE_MIN_PAGES has its template, either way
    assert templated[0] and templated[0] == templated[1]
