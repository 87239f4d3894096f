"""The overview's reading of the crawl: its worst problems, most serious first, and what
duplicates cost its budget."""

from __future__ import annotations

from collections import Counter

from visdup.report.audit import ERROR, MISMATCHED, WARNING, canonical_state, severity
from visdup.report.budget import Budget, crawl_budget
from visdup.report.causes import duplicate_cause
from visdup.report.data import StoreData
from visdup.report.lowcontent import MEASURE, Words
from visdup.report.markup import Safe, tag
from visdup.report.summary import Group, Member
from visdup.verdicts import EXACT

__all__ = ["budget_html", "crawl_budget", "worst_problems"]


def worst_problems(
    data: StoreData,
    groups: list[Group],
    problems: dict[str, int] | None,
    words: Words | None = None,
) -> Safe:
    """A list of what to fix, errors first: each line a count, what it means, where to look."""
    items: list[tuple[str, int, str, str]] = []
    exact = [(g, m) for g in groups for m in g.members if not m.declared and m.kind == EXACT]
    in_error = sum(severity(g) == ERROR for g in groups)
    if exact:
        items.append(
            (
                ERROR,
                len(exact),
                f"exact copies name no canonical page, in {in_error} groups ({_causes(exact)})",
                "#groups",
            )
        )
    other = [(g, m) for g in groups for m in g.members if not m.declared and m.kind != EXACT]
    if other:
        items.append(
            (
                WARNING,
                len(other),
                f"near-duplicate copies name no canonical page ({_causes(other)})",
                "#groups",
            )
        )
    by_id = {p.id: p for p in data.pages}
    mismatched = sum(
        1
        for g in groups
        for i in g.page_ids
        if i in by_id and canonical_state(by_id[i], g.canonical) == MISMATCHED
    )
    if mismatched:
        items.append(
            (
                WARNING,
                mismatched,
                "pages name another canonical page than the one their group agrees on",
                "#pages-table",
            )
        )
    if words is not None and words.low:
        urls = sorted(by_id[i].url for i in words.low if i in by_id)
        shown = ", ".join(urls[:5]) + (f" and {len(urls) - 5} more" if len(urls) > 5 else "")
        what = "low-content page" if len(urls) == 1 else "low-content pages"
        items.append((WARNING, len(urls), f"{what}, {MEASURE}: {shown}", "#pages-table"))
    for kind, n in sorted((problems or {}).items(), key=lambda kv: -kv[1]):
        items.append((WARNING, n, f"pages stored with a problem: {kind}", "#pages-table"))
    items.extend(_response_problems(data))
    items.sort(key=lambda item: item[0] != ERROR)  # errors first, each kind in its order
    if not items:
        return tag("p", {"class": "muted", "id": "problems"}, "nothing to fix was found")
    return tag(
        "ol",
        {"id": "problems"},
        [
            tag(
                "li",
                {"data-severity": level},
                tag("i", {"class": "b-bad" if level == ERROR else "b-warn"}, level),
                tag("b", None, n),
                " ",
                words,
                " · ",
                tag("a", {"href": href, "target": "_self"}, "see"),
            )
            for level, n, words, href in items
        ],
    )


def _response_problems(data: StoreData) -> list[tuple[str, int, str, str]]:
    """Links to URLs that answer no page: broken ones are errors, redirects a warning."""
    counts = data.responses.counts()
    found = []
    for kind, level, answer in (
        ("client_error", ERROR, "{} 4xx: broken links"),
        ("server_error", ERROR, "{} 5xx after retries"),
        ("failed", ERROR, "{} nothing (refused, timed out, unresolved)"),
        ("redirect", WARNING, "{} with a redirect: link to its target instead"),
    ):
        n = counts.get(kind, 0)
        if n:
            subject = "URL the site links to answers" if n == 1 else "URLs the site links to answer"
            found.append((level, n, answer.format(subject), "#responses"))
    return found


def _causes(pairs: list[tuple[Group, Member]]) -> str:
    counts = Counter(duplicate_cause(m.url, g.original) for g, m in pairs)
    return ", ".join(f"{c} {n}" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def budget_html(b: Budget) -> Safe:
    """The fetches duplicates took, by cause, and the estimate of what nofollow saves."""
    if not b.duplicates:
        return tag("p", {"id": "budget"}, "No fetched page was a duplicate of another.")
    causes = ", ".join(f"{c} {n}" for c, n in b.by_cause)
    saved = (
        "The crawl ran with a nofollow policy: the links of duplicates were not followed."
        if b.nofollow
        else f"VISDUP_DUPLICATE_POLICY = nofollow would still fetch each duplicate (its verdict "
        f"needs its bytes) but not follow its links: at most {b.through_duplicates} fetches "
        "saved, an estimate that counts the pages whose referrer was a duplicate (a page a "
        "duplicate linked to may be linked from an original too, and would be fetched anyway; "
        "a referrer is the first page the crawl followed to it, so the figure varies between "
        "crawls of one site)."
    )
    return tag(
        "p",
        {"id": "budget", "data-duplicates": b.duplicates, "data-saved": b.through_duplicates},
        tag("b", None, f"{b.duplicates} of {b.pages} fetched pages ({b.share:.0%})"),
        f" were duplicates of another page; by cause: {causes}. ",
        saved,
    )
