"""What duplicates cost a crawl: the fetches they took, by cause, and what nofollow would save.

Every duplicate was fetched: its verdict needs its bytes, so no policy saves that fetch. What
``VISDUP_DUPLICATE_POLICY = nofollow`` saves is the pages reached through a duplicate's links;
the store keeps each page's referrer (the page whose link was followed to it), so the pages a
duplicate referred are counted. That is an upper bound, and said to be: a page a duplicate
referred may be linked from an original too, and would then be fetched all the same.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from visdup.report.causes import duplicate_cause
from visdup.report.data import StoreData
from visdup.report.summary import Group


@dataclass
class Budget:
    pages: int
    duplicates: int
    by_cause: list[tuple[str, int]]
    #: Pages fetched through a duplicate's link: what nofollow would save, at most.
    through_duplicates: int
    #: Whether the crawl already ran with a nofollow policy.
    nofollow: bool

    @property
    def share(self) -> float:
        return self.duplicates / self.pages if self.pages else 0.0


def crawl_budget(data: StoreData, groups: list[Group]) -> Budget:
    copies = {m.url for g in groups for m in g.members}
    causes = Counter(duplicate_cause(m.url, g.original) for g in groups for m in g.members)
    through = sum(1 for p in data.pages if p.referer in copies)
    policy = str(data.settings.get("VISDUP_DUPLICATE_POLICY", "label"))
    return Budget(
        pages=len(data.pages),
        duplicates=len(copies),
        by_cause=sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])),
        through_duplicates=through,
        nofollow="nofollow" in policy,
    )
