"""The final labels are a function of the set of pages and the settings, not of their order.

Pages are labelled by ``visdup dups``'s own machinery (:func:`visdup.dedup.offline.label_files`)
in several orders; the rows each order leaves in the store must be the same, and say what an
auditor expects: the original by canonical link, then the cleanest URL; every copy measured
against its original; byte copies ``exact``.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from tests import test_originals as originals
from tests.crawling import article, listing
from visdup.dedup.label import build_labeller
from visdup.dedup.offline import label_files, settings_getter
from visdup.dedup.settle import derive, settle
from visdup.report.data import load
from visdup.report.pages import page_rows
from visdup.report.summary import duplicate_groups
from visdup.storage.store import Store
from visdup.verdicts import CONTENT, DUPLICATE, EXACT, MOVED, NOVEL, ORIGINAL, SAME_TEMPLATE

#: The originals tests' articles, the river's one sentence longer (a one-word edit of five
#: long sentences stays above the content threshold).
RIVER = [
    *originals.RIVER,
    "Shops along the quay opened late, their owners sweeping silt from the doorsteps outside.",
]
ORCHARD = originals.ORCHARD
MARKET = [
    "The Saturday market moved to the old tram depot while the square is being repaved.",
    "Stallholders said the covered hall kept their bread and cheese dry through the storms.",
    "A new bus stop outside the depot brings shoppers from the estates on the far hill.",
    "The council will decide in spring whether the market stays in the depot for good.",
]
BRIDGE = [
    "Cyclists can cross the new footbridge from Monday, linking the station to the park.",
    "Its deck is made of recycled plastic planks that will not rot in the damp river air.",
    "Lights along the railing switch on at dusk and dim after midnight to spare the bats.",
    "The old ferry will keep running on summer weekends for visitors who want the ride.",
]


def _site() -> dict[str, str]:
    river = article("River", RIVER, ["/orchard.html"])
    edited = [*RIVER[:2], RIVER[2].replace("walkers", "pedestrians"), *RIVER[3:]]
    orchard = originals._with_canonical(
        article("Orchard", ORCHARD, []), "http://site.test/news/orchard.html"
    )
    return {
        # a group without canonicals: the clean short URL is its original, whatever comes first
        "http://site.test/river.html": river,
        "http://site.test/river.html?utm_source=mail&utm_medium=news": river,
        "http://site.test/river-2.html": article("River", edited, ["/orchard.html"]),
        "http://site.test/print/river.html": originals._print_version("River", RIVER),
        # a group whose pages name a longer URL canonical: that one is the original
        "http://site.test/news/orchard.html": orchard,
        "http://site.test/o.html": orchard,
        "http://site.test/o.html;jsessionid=8F2C41A09B7E": orchard,
        # same template, new content: no copies
        "http://site.test/market.html": article("Market", MARKET, ["/river.html"]),
        "http://site.test/bridge.html": article("Bridge", BRIDGE, []),
        # a layout of its own
        "http://site.test/index.html": listing(
            "Index", [(f"/p{i}.html", f"Story number {i}") for i in range(12)]
        ),
    }


def _rows(pages: list[tuple[str, str]], db: Path, **overrides: Any) -> dict[str, dict[str, Any]]:
    items = [(url, html.encode()) for url, html in pages]
    store, _tmp = label_files(items, db=f"sqlite:///{db}", overrides=overrides)
    try:
        data = load(store)
        rows = page_rows(data, duplicate_groups(data.pages))
    finally:
        store.close()
    return {row["url"]: row for row in rows}


def _orders(pages: dict[str, str], n: int, seed: int = 7) -> list[list[tuple[str, str]]]:
    items = sorted(pages.items())
    rng = random.Random(seed)
    orders = [items, items[::-1]]
    while len(orders) < n:
        shuffled = items[:]
        rng.shuffle(shuffled)
        orders.append(shuffled)
    return orders


def test_every_order_gives_the_same_rows(tmp_path: Path) -> None:
    results = [
        _rows(order, tmp_path / f"order{i}.sqlite3") for i, order in enumerate(_orders(_site(), 5))
    ]
    first = results[0]
    for other in results[1:]:
        assert other == first


def test_the_rows_say_what_each_page_is(tmp_path: Path) -> None:
    rows = _rows(list(_site().items())[::-1], tmp_path / "v.sqlite3")
    river = "http://site.test/river.html"
    assert rows[river]["verdict"] == ORIGINAL
    utm = rows["http://site.test/river.html?utm_medium=news&utm_source=mail"]
    assert (utm["verdict"], utm["kind"], utm["duplicate_of"]) == (DUPLICATE, EXACT, river)
    assert utm["content_similarity"] == 1.0 and utm["layout_similarity"] == 1.0
    edit = rows["http://site.test/river-2.html"]
    assert (edit["verdict"], edit["kind"], edit["duplicate_of"]) == (DUPLICATE, CONTENT, river)
    assert 0.8 <= edit["content_similarity"] < 1.0
    assert edit["layout_similarity"] == 1.0
    printed = rows["http://site.test/print/river.html"]
    assert (printed["verdict"], printed["kind"], printed["duplicate_of"]) == (MOVED, CONTENT, river)
    assert printed["content_similarity"] == 1.0
    assert printed["layout_similarity"] is not None and printed["layout_similarity"] < 0.75
    orchard = "http://site.test/news/orchard.html"
    assert rows[orchard]["verdict"] == ORIGINAL
    for copy in ("http://site.test/o.html", "http://site.test/o.html;jsessionid=8F2C41A09B7E"):
        assert (rows[copy]["verdict"], rows[copy]["kind"]) == (DUPLICATE, EXACT)
        assert rows[copy]["duplicate_of"] == orchard
    assert rows[river]["near_duplicates"] == 3
    for lone in ("http://site.test/market.html", "http://site.test/bridge.html"):
        assert rows[lone]["verdict"] == SAME_TEMPLATE
        assert rows[lone]["kind"] == "" and rows[lone]["duplicate_of"] == ""
        assert rows[lone]["layout_similarity"] is None
    assert rows["http://site.test/index.html"]["verdict"] == NOVEL


def test_a_copy_linked_through_another_copy_is_measured_against_the_original(
    tmp_path: Path,
) -> None:
    """A chain: b repeats a closely, c repeats b closely; c's numbers are c against a."""
    base = [*RIVER, "A final line was added to close the report on the flood in the valley."]
    b = base[:]
    b[1] = b[1].replace("market square", "town hall")
    c = b[:]
    c[3] = c[3].replace("embankment", "old sea wall")
    pages = {
        "http://site.test/a.html": article("River", base, []),
        "http://site.test/b/copy.html": article("River", b, []),
        "http://site.test/c/copy/again.html": article("River", c, []),
    }
    for i, order in enumerate(itertools.permutations(sorted(pages.items()))):
        rows = _rows(list(order), tmp_path / f"chain{i}.sqlite3")
        assert rows["http://site.test/a.html"]["verdict"] == ORIGINAL
        for url in ("http://site.test/b/copy.html", "http://site.test/c/copy/again.html"):
            assert rows[url]["duplicate_of"] == "http://site.test/a.html"
        assert (
            rows["http://site.test/c/copy/again.html"]["content_similarity"]
            < rows["http://site.test/b/copy.html"]["content_similarity"]
        )


def test_settling_again_changes_nothing_and_a_replay_agrees(tmp_path: Path) -> None:
    db = tmp_path / "v.sqlite3"
    _rows(list(_site().items()), db)
    store = Store.from_url(f"sqlite:///{db}")
    try:
        labeller = build_labeller(store, settings_getter(), lambda _k, _n: None)
        stored = {r.id: r for r in store.rows("id", "verdict", "kind", "duplicate_of")}
        derived = derive(store, labeller)
        assert {i: (r.verdict, r.kind, r.duplicate_of) for i, r in stored.items()} == {
            i: (d["verdict"], d["kind"], d["duplicate_of"]) for i, d in derived.items()
        }
        assert settle(store, labeller).changed == 0
    finally:
        store.close()


@pytest.mark.parametrize("content", [True, False])
def test_structure_alone_and_with_content_are_order_free(tmp_path: Path, content: bool) -> None:
    results = [
        _rows(order, tmp_path / f"s{content}{i}.sqlite3", VISDUP_CONTENT_ENABLED=content)
        for i, order in enumerate(_orders(_site(), 3, seed=11))
    ]
    assert results[1] == results[0] and results[2] == results[0]
