"""The report's responses section: every URL the crawl met that gave no HTML page, with the
page that linked to it, the most serious kind first (broken links before redirects)."""

from __future__ import annotations

from collections.abc import Callable

from visdup.report.html_format import link
from visdup.report.markup import Safe, tag
from visdup.report.responses import BROKEN, KIND_WORDS, NOT_RECORDED, Responses

#: Rows written into the file (a row is ~250 bytes); ``report --json`` lists every one.
MAX_RESPONSES = 500

COLUMNS = (
    ("url", "URL"),
    ("kind", "what it is"),
    ("answer", "answer"),
    ("linked_from", "linked from"),
)


def responses_html(responses: Responses, short: Callable[[str], str] = str) -> Safe:
    head = tag("h2", None, f"Responses that are no page ({len(responses.rows)})")
    section = {"id": "responses", "data-section": "responses"}
    if not responses.recorded:
        return tag("section", section, head, tag("p", {"class": "muted"}, NOT_RECORDED))
    if not responses.rows:
        words = "every URL the crawl met answered with an HTML page"
        return tag("section", section, head, tag("p", {"class": "muted"}, words))
    counts = responses.counts()
    chips = [
        tag(
            "span",
            {"class": "chip", "data-kind": kind},
            tag("i", {"class": "b-bad" if kind in BROKEN else "b-warn"}, n),
            f" {KIND_WORDS[kind]}",
        )
        for kind, n in counts.items()
    ]
    shown = responses.rows[:MAX_RESPONSES]
    rows = [
        tag(
            "tr",
            {"data-kind": r.kind, "data-status": "" if r.status is None else r.status},
            tag("td", None, link(r.url, short, None)),
            tag("td", None, KIND_WORDS.get(r.kind, r.kind)),
            tag(
                "td",
                None,
                r.answer() if r.kind != "redirect" else _redirect(r.status, r.target, short),
            ),
            tag("td", None, link(r.referer, short, None) if r.referer else "(a start URL)"),
        )
        for r in shown
    ]
    more = len(responses.rows) - len(shown)
    return tag(
        "section",
        section,
        head,
        tag(
            "p",
            {"class": "muted"},
            "Redirects, 4xx and 5xx answers, other content and URLs robots.txt forbade: a page "
            "links to each. Fix a broken link where it is; link to a redirect's target.",
        ),
        tag("p", {"class": "chips"}, chips),
        tag(
            "div",
            {"class": "scroll"},
            tag(
                "table",
                {"id": "responses-table"},
                tag(
                    "thead",
                    None,
                    tag("tr", None, [tag("th", {"data-col": c}, w) for c, w in COLUMNS]),
                ),
                tag("tbody", None, rows),
            ),
        ),
        tag("p", {"class": "muted"}, f"{more} more in `visdup report --json`") if more else "",
    )


def _redirect(status: int | None, target: str | None, short: Callable[[str], str]) -> Safe:
    return Safe(f"{status} → {link(target, short, None)}") if target else Safe(str(status))
