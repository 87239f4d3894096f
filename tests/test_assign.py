"""A crawl's template clusters persist in the store and are shared between processes."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import FIXTURES
from visdup.page.files import iter_pages
from visdup.storage.store import Store
from visdup.templates.assign import CrawlClusters
from visdup.templates.sample import sample_rank
from visdup.templates.signature import page_input

SITE = FIXTURES / "sites" / "templates"


def _trees():
    pages = {}
    for path, body in iter_pages([str(SITE)]):
        found = page_input(body, url=path)
        if found.layout.nodes:
            pages[path.split("templates/", 1)[1]] = found
    return pages


def _assign_all(url: str, order: list[str], split: bool) -> dict[str, int]:
    """Assign the pages, alternating between two clusterers when ``split`` (two processes)."""
    trees = _trees()
    store_a, store_b = Store.from_url(url), Store.from_url(url)
    a = CrawlClusters(store_a, template_min_pages=3)
    b = CrawlClusters(store_b, template_min_pages=3)
    out = {}
    for i, name in enumerate(order):
        clusters = b if split and i % 2 else a
        out[name] = clusters.assign(name, trees[name]).cluster
    store_a.close()
    store_b.close()
    return out


def _check(assigned: dict[str, int]) -> None:
    events = {
        c for p, c in assigned.items() if p.startswith("events/") and p != "events/index.html"
    }
    people = {
        c for p, c in assigned.items() if p.startswith("people/") and p != "people/index.html"
    }
    assert len(events) == 1 and len(people) == 1 and events != people


def test_clusters_survive_a_restart(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    names = sorted(_trees())
    first = _assign_all(url, names, split=False)
    _check(first)
    # a new process on the same store puts the same pages in the same clusters
    store = Store.from_url(url)
    again = CrawlClusters(store)
    trees = _trees()
    assert {n: again.assign(n, trees[n]).cluster for n in names} == first
    again.finish()
    templates = [row for row in store.cluster_rows() if row.template]
    assert templates, "clusters with enough pages got a template"


@pytest.mark.parametrize("extract", [False, True])
def test_templates_are_built_off_the_page_path_and_rebuilt_as_the_crawl_ends(tmp_path, extract):
    store = Store.from_url(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    clusters = CrawlClusters(store, template_min_pages=2, extract=extract)
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    built = []
    records = []
    for name in events:
        assignment = clusters.assign(name, trees[name])
        records.append(len(assignment.records))
        cid = assignment.cluster
        built.append(clusters.built_at.get(cid, 0))
    clusters.finish()
    if extract:
        # the first template at once, with the records of the pages before it; rebuilt
        # each time the cluster doubled, for the records still to come
        assert records == [0, 2, 1, 1, 1]
        assert built == [0, 2, 2, 4, 4]
    else:
        # built once it had 2 pages, no record and no waiting; no rebuild on the way
        assert records == [0, 0, 0, 0, 0]
        assert built == [0, 2, 2, 2, 2]
    rows = {row.id: row for row in store.cluster_rows()}
    # pages came after the last build: rebuilt once more, from them all, as the crawl ends
    assert rows[cid].template and json.loads(rows[cid].template)["pages"] == 5
    store.close()


def _in_orders(tmp_path, names: list[str], seeds: int, **options: Any) -> Iterator[Any]:
    """Per seed, ``names`` placed in a shuffled order on a store of their own: yields the
    store, its clusters (not finished yet) and the last page's cluster id."""
    trees = _trees()
    for seed in range(seeds):
        order = names[:]
        random.Random(seed).shuffle(order)
        store = Store.from_url(f"sqlite:///{tmp_path / f'o{seed}.sqlite3'}")
        clusters = CrawlClusters(store, extract=False, **options)
        for name in order:
            cid = clusters.assign(name, trees[name]).cluster
        try:
            yield store, clusters, cid
        finally:
            store.close()


def test_every_template_a_crawl_ends_with_is_the_same_in_any_order(tmp_path):
    """A cluster whose sample never filled was last built when it doubled, from whichever
    pages had come by then (the demo's 19 product pages: from the first 16): its fields
    changed from one crawl of the same site to the next."""
    stored = []
    for store, clusters, _cid in _in_orders(tmp_path, sorted(_trees()), 4, template_min_pages=2):
        clusters.finish()
        stored.append({row.id: row.template for row in store.cluster_rows() if row.template})
    assert stored[0] and all(s == stored[0] for s in stored)


def test_a_full_sample_is_rebuilt_once_as_the_crawl_ends_the_same_in_any_order(tmp_path):
    events = sorted(n for n in _trees() if n.startswith("events/") and n != "events/index.html")
    smallest = sorted(events, key=sample_rank)[:2]
    stored = []
    sized = {"template_min_pages": 2, "template_max_pages": 2}
    for store, clusters, cid in _in_orders(tmp_path, events, 3, **sized):
        # built at 2 pages (the sample full), and not again before the end
        assert clusters.built_at[cid] == 2 and not clusters._final
        clusters.finish()
        template = json.loads({row.id: row for row in store.cluster_rows()}[cid].template)
        assert template["representative"] in smallest
        stored.append(template)
    assert stored[0] == stored[1] == stored[2]


def test_the_template_sample_does_not_depend_on_page_order(tmp_path):
    samples = []
    for _store, clusters, _cid in _in_orders(tmp_path, sorted(_trees()), 3, template_max_pages=3):
        clusters.finish()
        samples.append(sorted(sorted(u for _r, u, *_rest in s) for s in clusters.samples.values()))
    assert samples[0] == samples[1] == samples[2]


@pytest.mark.postgres
def test_two_processes_share_clusters_on_postgresql(pg_url):
    _check(_assign_all(pg_url, sorted(_trees()), split=True))


@pytest.mark.postgres
def test_templates_stored_at_the_end_read_the_other_processes_first(pg_url):
    """A process stores its last templates after another process has placed pages: the
    version it writes follows theirs, and it still reads what they stored."""
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    people = sorted(n for n in trees if n.startswith("people/") and n != "people/index.html")
    store_a, store_b = Store.from_url(pg_url), Store.from_url(pg_url)
    a = CrawlClusters(store_a, template_min_pages=2, template_max_pages=2, extract=False)
    b = CrawlClusters(store_b, template_min_pages=2, template_max_pages=2, extract=False)
    for name in sorted(events, key=sample_rank, reverse=True):  # the sample changes after
        a.assign(name, trees[name])
    assert any(map(a._changed_since_built, a.built_at))  # rebuilt as it ends
    new = next(n for n in people if trees[n].layout.key not in a.clusterer.atoms)
    b.assign(new, trees[new])  # another process: one more version in the store
    a.finish()
    assert trees[new].layout.key in a.clusterer.atoms
    with store_a.engine.connect() as conn:
        assert a.version == store_a.clusters_version(conn)
    b.finish()
    store_a.close()
    store_b.close()


def test_placing_a_known_signature_takes_no_write_transaction_on_sqlite(tmp_path):
    """A page whose signature is known and that merges nothing changes nothing stored: on
    SQLite its placing takes no write lock and makes no commit (the label process places
    every page, one after another; template builds commit from their own thread)."""
    import threading

    from sqlalchemy import event

    store = Store.from_url(f"sqlite:///{tmp_path / 'k.sqlite3'}")
    clusters = CrawlClusters(store, template_min_pages=2, extract=False)
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    placing = threading.get_ident()
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda conn: commits.append(threading.get_ident()))
    first = clusters.assign(events[0], trees[events[0]])
    assert commits.count(placing) == 1, "a new signature is stored"
    for name in events[1:]:
        clusters.assign(name, trees[name])
    clusters.finish()
    before = commits.count(placing)
    again = CrawlClusters(store, template_min_pages=2, extract=False)
    for name in events:  # known signatures now
        placed = again.assign(name + "?again", trees[name])
        assert placed.cluster == first.cluster and not placed.merged
    assert commits.count(placing) == before
    again.finish()
    store.close()


@pytest.mark.postgres
def test_placing_a_known_signature_takes_no_transaction_on_postgresql(pg_url):
    """With several writers a known signature is placed without the clusters' lock and
    transaction (no commit) while no other process has written a cluster since; once one
    has, the next placing reads what it wrote, under the lock, as before."""
    import threading

    from sqlalchemy import event

    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    people = sorted(n for n in trees if n.startswith("people/") and n != "people/index.html")
    store_a, store_b = Store.from_url(pg_url), Store.from_url(pg_url)
    a = CrawlClusters(store_a, template_min_pages=50, extract=False)
    b = CrawlClusters(store_b, template_min_pages=50, extract=False)
    placing = threading.get_ident()
    commits: list[int] = []
    event.listen(store_b.engine, "commit", lambda conn: commits.append(threading.get_ident()))
    first = b.assign(events[0], trees[events[0]])
    assert commits.count(placing) == 1  # a new signature, stored
    for name in events:
        placed = b.assign(name + "?again", trees[name])
        assert placed.cluster == first.cluster and not placed.merged
    known = commits.count(placing)
    assert known == 1 + len({trees[n].layout.key for n in events} - {trees[events[0]].layout.key})
    for name in events:  # every signature known now: no transaction at all
        assert b.assign(name + "?third", trees[name]).cluster == first.cluster
    assert commits.count(placing) == known
    new = next(n for n in people if trees[n].layout.key not in b.clusterer.atoms)
    a.assign(new, trees[new])  # another process writes a cluster
    with store_b.engine.connect() as conn:
        moved = store_b.clusters_version(conn)
    assert moved > b.version
    b.assign(events[0] + "?fourth", trees[events[0]])  # known, but the store moved on
    assert b.version == moved and trees[new].layout.key in b.clusterer.atoms
    a.finish()
    b.finish()
    store_a.close()
    store_b.close()


def test_a_template_the_store_refused_on_the_way_is_stored_as_the_crawl_ends(tmp_path, caplog):
    """A background build whose store went away as it stored the template (the crawl goes on
    once the store is back) is built again and stored as the crawl ends; the end does not
    fail for it (a failed end left every merge of the run undone)."""
    import sqlite3
    import threading

    from sqlalchemy.exc import OperationalError

    caplog.set_level(logging.INFO, logger="visdup")
    store = Store.from_url(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    clusters = CrawlClusters(store, template_min_pages=2, extract=False)
    put = store.put_cluster
    refused: list[int] = []

    def away_once(conn, cid, **kwargs):
        if (
            kwargs.get("template")
            and not refused
            and threading.current_thread().name != "MainThread"
        ):
            refused.append(cid)
            raise OperationalError("UPDATE", {}, sqlite3.OperationalError("disk I/O error"))
        return put(conn, cid, **kwargs)

    store.put_cluster = away_once  # type: ignore[method-assign]
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    for name in events[:3]:
        cid = clusters.assign(name, trees[name]).cluster
    for job in clusters._pending:
        job.result(timeout=30)  # the background build ran, and its store was refused
    assert refused == [cid]
    assert not any(row.template for row in store.cluster_rows() if row.id == cid)
    # the write rolled back: the version this process goes by is the store's
    assert clusters.version == store.clusters_version_now()
    clusters.finish()
    rows = {row.id: row for row in store.cluster_rows()}
    assert rows[cid].template and json.loads(rows[cid].template)["pages"] == 3
    assert "stored as the crawl ends" in caplog.text
    store.close()


def _refusing(store: Store, method: str, when: Any) -> list[Any]:
    """Make ``store.<method>`` raise as an outage once, for the first call ``when`` accepts;
    the calls it refused."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    real = getattr(store, method)
    refused: list[Any] = []

    def away_once(conn, *args, **kwargs):
        if not refused and when(*args, **kwargs):
            refused.append(args)
            raise OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error"))
        return real(conn, *args, **kwargs)

    setattr(store, method, away_once)
    return refused


def _stored_layouts(store: Store) -> dict[int, int]:
    """Signature key → the cluster its stored row names."""
    from sqlalchemy import select

    from visdup.storage.schema import layouts

    with store.reading() as conn:
        rows = conn.execute(select(layouts.c.key, layouts.c.cluster_id))
        return {(k + (1 << 64) if k < 0 else k): c for k, c in rows}


def test_a_placing_the_store_refused_is_stored_when_its_page_comes_again(tmp_path):
    """The store goes away inside the transaction that places a page of a new signature:
    the page is sent again once it is back. The signature this process already holds in
    memory is stored then (before, it counted as known and was never stored: another
    process, or the next run, placed that kind of page in a cluster of its own), and the
    page counts once."""
    url = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    store = Store.from_url(url)
    clusters = CrawlClusters(store, template_min_pages=3, extract=False)
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    first = trees[events[0]]
    refused = _refusing(store, "put_cluster", lambda cid, **kw: True)
    with pytest.raises(Exception, match="disk I/O"):
        clusters.assign(events[0], first)
    assert refused and _stored_layouts(store) == {}
    assert clusters.version == store.clusters_version_now()
    placed = clusters.assign(events[0], first)  # the store is back: the page comes again
    assert placed.new_cluster
    assert _stored_layouts(store) == {first.layout.key: placed.cluster}
    assert clusters.clusterer.counts[first.layout.key] == 1
    assert clusters.sizes[placed.cluster] == 1
    assert clusters.version == store.clusters_version_now()
    for name in events[1:]:
        assert clusters.assign(name, trees[name]).cluster == placed.cluster
    clusters.finish()
    store.close()
    # the next run (or another process) reads the signature and places the kind with it
    store = Store.from_url(url)
    again = CrawlClusters(store, template_min_pages=3, extract=False)
    assert again.assign(events[0] + "?next", first).cluster == placed.cluster
    assert {row.id for row in store.cluster_rows()} >= {placed.cluster}
    again.finish()
    store.close()


def test_a_merge_the_store_refused_is_stored_with_the_next_placing(tmp_path):
    """A new signature merges (renames) a cluster in a transaction the store refuses; the
    page does not come again (it went without a cluster). The next placing, of a signature
    already known, stores the merge: the signature and the cluster it absorbed."""
    from tests.test_label_process import _EXTRAS, _article, _renaming

    (_, older), (_, newer) = _renaming([_article(e) for e in _EXTRAS[:2]])
    store = Store.from_url(f"sqlite:///{tmp_path / 'm.sqlite3'}")
    clusters = CrawlClusters(store, template_min_pages=5, extract=False)
    first = clusters.assign("http://example.test/a.html", older)
    _refusing(store, "merge_clusters", lambda into, absorbed: True)
    with pytest.raises(Exception, match="disk I/O"):
        clusters.assign("http://example.test/b.html", newer)
    assert _stored_layouts(store) == {older.layout.key: first.cluster}
    assert clusters.sizes.get(clusters.live(first.cluster)) == 1  # b's placing taken back
    placed = clusters.assign("http://example.test/c.html", older)  # known signature
    assert placed.cluster != first.cluster and not placed.new_cluster
    assert _stored_layouts(store) == {
        older.layout.key: placed.cluster,
        newer.layout.key: placed.cluster,
    }
    assert first.cluster not in {row.id for row in store.cluster_rows()}
    assert clusters.version == store.clusters_version_now()
    clusters.finish()
    store.close()


def test_a_placing_refused_as_it_stored_its_template_comes_again_whole(tmp_path):
    """With records asked for, the placing that completes a cluster builds its template and
    stores it in its own transaction; refused there, the page is taken back whole (its
    count, its place in the sample and among the pages waiting for records, the template)
    and, sent again, gives every record once."""
    store = Store.from_url(f"sqlite:///{tmp_path / 'r.sqlite3'}")
    clusters = CrawlClusters(store, template_min_pages=2, extract=True)
    trees = _trees()
    events = sorted(n for n in trees if n.startswith("events/") and n != "events/index.html")
    first = clusters.assign(events[0], trees[events[0]])
    assert first.records == []
    _refusing(store, "put_cluster", lambda cid, **kw: bool(kw.get("template")))
    with pytest.raises(Exception, match="disk I/O"):
        clusters.assign(events[1], trees[events[1]])
    cid = first.cluster
    assert clusters.sizes[cid] == 1 and cid not in clusters.templates
    assert [u for u, *_ in clusters._early[cid]] == [events[0]]
    assert [entry[1] for entry in clusters.samples[cid]] == [events[0]]
    placed = clusters.assign(events[1], trees[events[1]])
    assert sorted(r["url"] for r in placed.records) == sorted(events[:2])
    [row] = [row for row in store.cluster_rows() if row.id == cid]
    assert json.loads(row.template)["pages"] == 2
    clusters.finish()
    store.close()
