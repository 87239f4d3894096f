"""The report's pages table: one row per page, which the report's script sorts and filters."""

from __future__ import annotations

from collections.abc import Callable

from visdup.report.data import StoreData
from visdup.report.html_format import num
from visdup.report.markup import Safe, row, tag
from visdup.report.pages import page_rows
from visdup.report.summary import Group


def pages_html(
    data: StoreData,
    groups: list[Group],
    max_rows: int,
    pages_file: str | None,
    short: Callable[[str], str] = str,
) -> Safe:
    rows = page_rows(data, groups)
    shown = rows[:max_rows]
    body = []
    for r in shown:
        cells = (
            short(r["url"]), r["title"], r["status"], r["verdict"], r["kind"],
            num(r["content_similarity"]), num(r["layout_similarity"]),
            r["near_duplicates"], r["template"],
        )  # fmt: skip
        body.append(row(cells))  # the script colours and filters by the verdict cell
    rest = len(rows) - len(shown)
    where = f"; all {len(rows)} are in {pages_file}" if pages_file else ""
    hint = where or " (write them all with --pages FILE)"
    more = (
        f"the first {len(shown)} of {len(rows)} pages{hint}"
        if rest > 0
        else f"all {len(rows)} pages{where}"
    )
    verdicts = sorted({r["verdict"] for r in rows if r["verdict"]})
    heads = [
        ("URL", ""),
        ("title", ""),
        ("status", "n"),
        ("verdict", ""),
        ("kind", ""),
        ("content similarity", "n"),
        ("layout similarity", "n"),
        ("near duplicates", "n"),
        ("template", "n"),
    ]
    return tag(
        "section",
        {"id": "pages-table"},
        tag("h2", None, "Pages"),
        tag(
            "div",
            {"class": "filter"},
            tag(
                "input",
                {"id": "page-filter", "type": "search", "placeholder": "filter URL or title"},
            ),
            tag(
                "select",
                {"id": "verdict-filter"},
                tag("option", {"value": ""}, "every verdict"),
                [tag("option", {"value": v}, v) for v in verdicts],
            ),
            tag(
                "span",
                {"class": "muted"},
                tag("span", {"id": "pages-shown"}, len(shown)),
                f" shown · {more}",
            ),
        ),
        tag(
            "div",
            {"class": "scroll"},
            tag(
                "table",
                {"id": "pages"},
                tag(
                    "thead",
                    None,
                    tag("tr", None, [tag("th", {"class": c or None}, h) for h, c in heads]),
                ),
                tag("tbody", None, body),
            ),
        ),
    )
