"""The report's pages table: one row per page, which the report's script sorts and filters.

Every page is in one JSON data block (inert: the policy runs no script but the report's own);
the script draws the table from it, the first ``--rows`` pages that pass the filters in the
chosen order, counts every page for the filters, and writes the export links' CSV from it, so
no count and no export stops at the rows the table shows. A page is written once, compactly,
instead of as a row of markup: 8,000 pages fit in the size of 500 rows.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from visdup.report.audit import group_cause, severity
from visdup.report.data import StoreData
from visdup.report.lowcontent import Words
from visdup.report.markup import Safe, tag
from visdup.report.pages import COLUMNS, page_rows
from visdup.report.summary import Group, largest_first

#: The table's columns: (column, heading, numeric); the others are in the rows' attributes
#: and in the export.
SHOWN = (
    ("url", "URL", False),
    ("status", "status", True),
    ("title", "title", False),
    ("verdict", "verdict", False),
    ("kind", "kind", False),
    ("duplicate_of", "duplicate of", False),
    ("content_similarity", "content sim.", True),
    ("layout_similarity", "layout sim.", True),
    ("near_duplicates", "near dups", True),
    ("template", "template", False),
    ("canonical", "canonical", False),
    ("canonical_url", "canonical URL", False),
    ("indexability", "indexability", False),
    ("cause", "cause", False),
)
#: The filters, each a ``select[data-filter]`` over every page, with counts.
FILTERS = ("verdict", "kind", "template", "canonical", "cause", "status")
#: Columns the data block writes as an index into a list of their values.
ENUMS = (
    "status", "title", "verdict", "kind", "template", "canonical", "indexability", "cause",
    "severity", "template_id", "low_content",
)  # fmt: skip
#: Columns that hold a URL: shown from their path, and links.
URLS = ("url", "duplicate_of", "canonical_url")


def pages_html(
    data: StoreData,
    groups: list[Group],
    max_rows: int,
    pages_file: str | None,
    origin: str = "",
    words: Words | None = None,
) -> Safe:
    rows = page_rows(data, groups, words)
    shown = rows[:max_rows]
    rest = len(rows) - len(shown)
    where = f"; all {len(rows)} are in {pages_file}" if pages_file else ""
    more = (
        f"the table shows the first {len(shown)} pages that match (--rows); the filters' "
        f"counts and the export cover all {len(rows)}{where}"
        if rest > 0
        else f"all {len(rows)} pages{where}"
    )
    heads = [
        tag("th", {"data-col": col, "class": "n" if numeric else None}, words)
        for col, words, numeric in SHOWN
    ]
    return tag(
        "section",
        {"id": "pages-table", "data-section": "pages"},
        tag("h2", None, "Pages"),
        tag("div", {"class": "filter"}, _filters(rows)),
        tag(
            "p",
            {"class": "muted"},
            tag("span", {"id": "pages-matching"}, len(rows)),
            " pages match, ",
            tag("span", {"id": "pages-shown"}, len(shown)),
            f" shown · {more} · export ",
            tag("a", {"download": "pages.csv", "href": "#", "id": "export-pages"}, "pages (CSV)"),
            " ",
            tag(
                "a", {"download": "groups.csv", "href": "#", "id": "export-groups"}, "groups (CSV)"
            ),
        ),
        tag(
            "div",
            {"class": "scroll"},
            tag(
                "table",
                {"id": "pages", "data-rows": len(shown)},
                tag("thead", None, tag("tr", None, heads)),
                tag("tbody", None),
            ),
        ),
        _data_block(rows, groups, data, origin, max_rows),
    )


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _filters(rows: list[dict[str, Any]]) -> list[Safe]:
    out = [
        tag("input", {"id": "page-filter", "type": "search", "placeholder": "filter URL or title"})
    ]
    for col in FILTERS:
        counts = Counter(_text(r[col]) for r in rows)
        values = sorted((v for v in counts if v), key=lambda v: (-counts[v], v))
        out.append(
            tag(
                "select",
                {"data-filter": col, "aria-label": col, "id": f"{col}-filter"},
                tag("option", {"value": ""}, f"every {col} ({len(rows)})"),
                [tag("option", {"value": v}, f"{v} ({counts[v]})") for v in values],
            )
        )
    return out


def _data_block(
    rows: list[dict[str, Any]], groups: list[Group], data: StoreData, origin: str, limit: int
) -> Safe:
    """Every page (and every group) as compact JSON: enumerations as indexes, URLs of the
    site from their path, a crawled page's URL as its row's index."""
    enums: dict[str, list[str]] = {c: [] for c in ENUMS}
    seen: dict[str, dict[str, int]] = {c: {} for c in ENUMS}
    index = {r["url"]: i for i, r in enumerate(rows)}
    cut = len(origin)

    def encode(col: str, value: object) -> object:
        if col in seen:
            text = _text(value)
            if text not in seen[col]:
                seen[col][text] = len(enums[col])
                enums[col].append(text)
            return seen[col][text]
        if col in URLS and col != "url" and isinstance(value, str) and value in index:
            return index[value]
        if col in URLS and isinstance(value, str) and origin and value.startswith(origin):
            return value[cut:] or "/"
        return value

    table = [[encode(c, r[c]) for c in COLUMNS] for r in rows]
    # URLs in order share their start with the one before: each keeps what it adds, after
    # how many characters it shares (a third of the block on a site of long paths)
    shared, before = [], ""
    for r in table:
        url = str(r[0])
        n = _common(before, url)
        shared.append(n)
        before, r[0] = url, url[n:]
    by_id = {p.id: p.url for p in data.pages}
    group_rows = [
        [severity(g), group_cause(g), index.get(by_id.get(g.original_id, ""), -1)]
        + [index.get(m.url, -1) for m in g.members]
        for g in sorted(groups, key=largest_first)
    ]
    payload = {
        "origin": origin,
        "limit": limit,
        "cols": COLUMNS,
        "enums": enums,
        "rows": table,
        "shared": shared,
        "groups": group_rows,
    }
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c")  # no markup, not even inert, in the data block
    return Safe(f'<script type="application/json" id="pages-data">{text}</script>')


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
