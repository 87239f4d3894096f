"""Label page files without a crawl, with the crawl's own machinery.

Each file goes through the same analysis and the same Labeller (channels, indexes,
confirmation, verdicts) as a crawled page, into a store: a temporary SQLite file by default.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from visdup.config import defaults, options
from visdup.content.titles import SiteTitles, retitle
from visdup.dedup.analysis import AnalysisOptions, PageAnalysis, analyse
from visdup.dedup.label import Labeller, Pending, build_labeller
from visdup.dedup.settle import settle_labels
from visdup.engine import Engine, LocalEngine
from visdup.errors import InputError
from visdup.storage.store import Store

logger = logging.getLogger(__name__)


def settings_getter(overrides: Mapping[str, Any] | None = None) -> Callable[[str], Any]:
    """A setting's value by name: the override, else the default."""
    base = defaults()
    over = dict(overrides or {})
    return lambda name: over.get(name, base[name])


class FileLabeller:
    """Feeds (name, bytes) pairs through analysis and labelling into a store."""

    def __init__(self, store: Store, overrides: Mapping[str, Any] | None = None):
        self.store = store
        #: The settings: the overrides' values, else the defaults (typed and checked).
        self.settings = options(settings_getter(overrides))
        self.counts: dict[str, int] = {}
        #: Title affixes the pages' sites share, learned over the pages given, as a crawl does.
        self.titles = SiteTitles()
        self.labeller: Labeller = build_labeller(store, self.settings, count=self._count)
        self.labeller.warm()
        self.run_id = store.begin_run("files")
        self.keep_body = self.settings.store_body
        # labels only: files are clustered by ``visdup cluster``; the body is stored by add()
        self.options = replace(
            AnalysisOptions.from_settings(self.settings, template=False), keep_body=False
        )

    def _count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def add(
        self, name: str, body: bytes, page: PageAnalysis | None = None, cluster: int | None = None
    ) -> int | None:
        """Label one page; ``page`` is its analysis when an engine already made it, ``cluster``
        its template cluster when one was assigned (``visdup dups --crawl-id``)."""
        if page is None:
            page = analyse(body, url=name, options=self.options)
        record = page.record(keep_body=self.keep_body, body=body)
        record.cluster_id = cluster
        title = record.title
        record.title = self.titles.own(name, title)  # without the site's affixes
        prepared: dict[str, Pending] = {
            "structure": self.labeller.prepare("structure", page.simhash, page.term)
        }
        if page.content is not None:
            prepared["content"] = self.labeller.prepare(
                "content", record.content_simhash, page.content
            )
        if record.problem:
            self._count("visdup/errors")
            self.store.add_error(self.run_id, name, "parse", record.problem)
        page_id = self.labeller.commit(record, prepared, self.run_id)
        if page_id is not None:  # its title is set again at the end, by the whole set
            self.titles.remember(page_id, name, title, record.title)
        return page_id

    def settle(self) -> None:
        """The final titles and labels of the store: the same for the same pages in any
        order."""
        retitle(self.store, self.titles, self._count)
        settle_labels(self.store, self.labeller, self._count)

    def add_all(
        self,
        pages: Iterable[tuple[str, bytes]],
        engine: Engine | None = None,
        refuse: Refuse | None = None,
    ) -> int:
        """Analyse on ``engine`` (any order, any machine), label here in input order.

        Labelling decides against the pages stored before, so it stays in this process and in
        order: every engine gives the same verdicts. ``refuse``: whether an analysed page is
        left out (:meth:`visdup.page.files.PageFiles.refused`: a file that gave no document,
        or not all of one), checked on the analysis's own parse.
        """
        engine = engine or LocalEngine()
        analyse_one = partial(_analyse_item, self.options)
        n = 0
        it = iter(pages)
        while chunk := list(islice(it, CHUNK)):
            for (name, body), page in zip(chunk, engine.map(analyse_one, chunk), strict=True):
                if refuse is not None and refuse(name, page):
                    continue
                self.add(name, body, page)
                n += 1
        self.settle()
        self.store.finish_run(self.run_id, "finished", self.counts)
        return n


#: Whether an analysed page is left out of the labelling (and said why).
Refuse = Callable[[str, PageAnalysis], bool]

#: Pages analysed per round before they are labelled: bounds what is held in memory while an
#: engine's workers stay busy.
CHUNK = 512


def _analyse_item(options: AnalysisOptions, item: tuple[str, bytes]) -> PageAnalysis:
    name, body = item
    return analyse(body, url=name, options=options)


def temporary_store() -> tuple[Store, Path]:
    handle, path = tempfile.mkstemp(prefix="visdup-", suffix=".sqlite3")
    os.close(handle)
    return Store.from_url(f"sqlite:///{path}"), Path(path)


def label_files(
    pages: Iterable[tuple[str, bytes]],
    *,
    db: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    refuse: Refuse | None = None,
) -> tuple[Store, Path | None]:
    """Label pages into ``db`` (or a temporary SQLite file, returned for the caller to delete);
    ``refuse``: see :meth:`FileLabeller.add_all`."""
    if db:
        store, tmp = Store.from_url(db), None
    else:
        store, tmp = temporary_store()
        # no one reads the bodies of a store that goes when the command ends
        overrides = {**(overrides or {}), "VISDUP_STORE_BODY": False}
    try:
        FileLabeller(store, overrides).add_all(pages, engine, refuse)
    except InputError:
        store.close()
        if tmp:
            tmp.unlink(missing_ok=True)
        raise
    return store, tmp
