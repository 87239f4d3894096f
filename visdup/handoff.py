"""What a page item's spider middlewares wait for from the item pipelines, one waiter per item.

A page's links wait for its verdict (``VISDUP_DUPLICATE_POLICY`` "nofollow": a duplicate's
links are not followed), and the dataset records its template gave follow the page's own
output. The middleware yields the item, the pipelines label it, and the answer comes back
through a :class:`~twisted.internet.defer.Deferred` kept here for that item. Waiters are keyed
by the item itself, not its URL: a spider may yield two items of one URL, and each gets its
own answer. A project's pipeline that hands on another object in place of the item (a dict)
is matched by URL, to the oldest waiter of that URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.defer import Deferred


@dataclass(eq=False)
class _Waiter:
    item: Any
    url: str | None
    verdict: Deferred[str | None] = field(default_factory=Deferred)
    records: Deferred[list[Any]] = field(default_factory=Deferred)


def _field(item: Any, name: str) -> Any:
    """A page item's field, whether a project's pipeline made it a dict or not."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _url_of(item: Any) -> str | None:
    url = _field(item, "url")
    return url if isinstance(url, str) else None


class HandOff:
    """The waiters of the items in flight (reactor thread only, like the pipelines)."""

    def __init__(self) -> None:
        self._waiters: dict[int, _Waiter] = {}

    def __len__(self) -> int:
        return len(self._waiters)

    def _find(self, item: Any) -> _Waiter | None:
        found = self._waiters.get(id(item))
        if found is not None and found.item is item:
            return found
        url = _url_of(item)
        if url is None:
            return None
        return next((w for w in self._waiters.values() if w.url == url), None)

    def _waiter(self, item: Any) -> _Waiter:
        found = self._waiters.get(id(item))
        if found is None or found.item is not item:
            found = self._waiters[id(item)] = _Waiter(item, _url_of(item))
        return found

    def _done(self, waiter: _Waiter) -> None:
        if waiter.verdict.called and waiter.records.called:
            self._waiters.pop(id(waiter.item), None)

    def expect_verdict(self, item: Any) -> Deferred[str | None]:
        return self._waiter(item).verdict

    def expect_records(self, item: Any) -> Deferred[list[Any]]:
        return self._waiter(item).records

    def give_verdict(self, item: Any, verdict: str | None) -> None:
        waiter = self._find(item)
        if waiter is None:
            return
        if not waiter.verdict.called:
            waiter.verdict.callback(verdict)
        self._done(waiter)

    def give_records(self, item: Any, records: list[Any]) -> bool:
        """Hand an item's records to the middleware waiting for them; False when none waits."""
        waiter = self._find(item)
        if waiter is None or waiter.records.called:
            return False
        waiter.records.callback(records)
        self._done(waiter)
        return True

    def gone(self, item: Any) -> None:
        """An item left the pipelines: what it did not give, it never will."""
        waiter = self._find(item)
        if waiter is not None:
            _answer(waiter, _field(item, "verdict"))
            self._waiters.pop(id(waiter.item), None)

    def close(self) -> None:
        """The spider closed: every waiter gets its answer, none."""
        for waiter in list(self._waiters.values()):  # a callback may ask for another waiter
            _answer(waiter, None)
        self._waiters.clear()


def _answer(waiter: _Waiter, verdict: str | None) -> None:
    """Whatever the waiter has not been given yet: ``verdict``, and no records."""
    if not waiter.verdict.called:
        waiter.verdict.callback(verdict)
    if not waiter.records.called:
        waiter.records.callback([])
