"""A page item's middlewares get that item's answer from the pipelines, not another's."""

from __future__ import annotations

from visdup.handoff import HandOff
from visdup.items import Page


def _page(url: str) -> Page:
    return Page(url=url, final_url=url, status=200)


def _result(d):
    found = []
    d.addCallback(found.append)
    return found


def test_two_items_of_one_url_each_get_their_own_verdict() -> None:
    handoff = HandOff()
    first, second = _page("http://x.test/a.html"), _page("http://x.test/a.html")
    a, b = _result(handoff.expect_verdict(first)), _result(handoff.expect_verdict(second))
    ra, rb = _result(handoff.expect_records(first)), _result(handoff.expect_records(second))
    handoff.give_verdict(second, "duplicate")
    assert (a, b) == ([], ["duplicate"])
    handoff.give_verdict(first, "original")
    assert (a, b) == (["original"], ["duplicate"])
    assert handoff.give_records(first, ["r1"]) and (ra, rb) == ([["r1"]], [])
    handoff.gone(second)
    assert rb == [[]] and len(handoff) == 0


def test_an_item_a_pipeline_replaced_is_matched_by_its_url() -> None:
    handoff = HandOff()
    item = _page("http://x.test/b.html")
    verdict = _result(handoff.expect_verdict(item))
    handoff.give_verdict({"url": "http://x.test/b.html", "verdict": "novel"}, "novel")
    assert verdict == ["novel"]
    assert not handoff.give_records(_page("http://x.test/other.html"), ["r"])


def test_closing_answers_every_waiter() -> None:
    handoff = HandOff()
    item = _page("http://x.test/c.html")
    verdict, records = _result(handoff.expect_verdict(item)), _result(handoff.expect_records(item))
    handoff.close()
    assert (verdict, records, len(handoff)) == ([None], [[]], 0)
