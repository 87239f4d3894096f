"""What an auditor reads off a page or a group: canonical state, indexability, severity, names.

These are readings of the stored labels, never new labels: the verdicts and groups stay the
final pass's (:mod:`visdup.dedup.settle`); this module says what they mean for a search engine.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from visdup.page.urlpatterns import main_pattern
from visdup.report.causes import duplicate_cause
from visdup.report.data import PageRow, StoreData
from visdup.report.summary import Group
from visdup.verdicts import EXACT

#: A page's canonical link: names itself, names another page (the one its group agrees on),
#: names none, or names another page than the one its duplicate group agrees on.
SELF, OTHER, MISSING, MISMATCHED = "self", "other", "missing", "mismatched"
#: Whether a search engine would index the page as it is.
INDEXABLE, NOINDEX, CANONICALISED, NOT_200 = "indexable", "noindex", "canonicalised", "non-200"
#: A group's severity: an exact copy that no canonical resolves is an error, another
#: unresolved copy a warning, a group whose copies all name its canonical page information.
ERROR, WARNING, INFO = "error", "warning", "info"


def canonical_state(page: PageRow, group_target: str | None) -> str:
    """The page's canonical link against its own URL and the page its group agrees on."""
    if not page.canonical:
        return MISSING
    if group_target is not None and page.canonical != group_target:
        return MISMATCHED
    return SELF if page.canonical == page.url else OTHER


def indexability(page: PageRow, noindex: bool = False) -> str:
    """Non-200, then noindex (its robots meta tag), then canonicalised, else indexable."""
    if page.status is not None and page.status != 200:
        return NOT_200
    if noindex:
        return NOINDEX
    if page.canonical and page.canonical != page.url:
        return CANONICALISED
    return INDEXABLE


def severity(group: Group) -> str:
    """Error when an exact copy is unresolved, warning when another copy is, else info."""
    if any(not m.declared and m.kind == EXACT for m in group.members):
        return ERROR
    if any(not m.declared for m in group.members):
        return WARNING
    return INFO


def group_cause(group: Group) -> str:
    """The cause most of a group's copies share (the first in URL order on a tie)."""
    causes = Counter(duplicate_cause(m.url, group.original) for m in group.members)
    return causes.most_common(1)[0][0] if causes else ""


def template_names(data: StoreData) -> dict[int, str]:
    """Each template named by the path pattern of most of its pages (``/product/*.html``,
    :func:`visdup.page.urlpatterns.main_pattern`).

    ``;jsessionid=…`` and the query are left out: they name no page type, and copies add
    them. Two templates whose pages share a pattern keep it, told apart by their id
    (``#123``), so a name stands for one template and the same pages give the same names.
    """
    urls: dict[int, list[str]] = defaultdict(list)
    for p in data.pages:
        if p.cluster_id is not None:
            urls[p.cluster_id].append(p.url)
    names = {cid: main_pattern(sorted(members)) for cid, members in urls.items()}
    taken = Counter(names.values())
    return {cid: name if taken[name] == 1 else f"{name} #{cid}" for cid, name in names.items()}


def group_targets(groups: list[Group]) -> Mapping[int, str | None]:
    """The canonical page each grouped page's group agrees on, by page id."""
    out: dict[int, str | None] = {}
    for g in groups:
        for page_id in g.page_ids:
            out[page_id] = g.canonical
    return out
