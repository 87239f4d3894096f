"""The site-audit report as one self-contained HTML page.

No request leaves the file: styles are inline, pictures are inline SVG drawn by
:mod:`visdup.report.svg`, and the only script (drawing, sorting, filtering and exporting the
pages table from the pages' inert JSON block) is allowed by its hash in the
Content-Security-Policy, which forbids everything else. Every value that came from a crawled
page goes through :mod:`visdup.report.markup`; the JSON block holds no ``<`` at all.

Each section has a module of its own beside this one (``html_overview``, ``html_verdicts``,
``html_templates``, ``html_groups``, ``html_pages``, with ``html_problems`` and
``html_textdiff`` beside them; values are written by ``html_format``):
this module puts them together in one page, with its head, its style and its script.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib import resources
from urllib.parse import urlsplit

from visdup.report import MAX_ROWS
from visdup.report.data import Similarities, StoreData
from visdup.report.drift import html_section as drift_html
from visdup.report.html_format import shortener
from visdup.report.html_groups import MAX_DIFFS, groups_html
from visdup.report.html_overview import overview_html
from visdup.report.html_pages import pages_html
from visdup.report.html_responses import responses_html
from visdup.report.html_templates import templates_html
from visdup.report.html_textdiff import text_differences
from visdup.report.html_verdicts import verdicts_html
from visdup.report.lowcontent import low_content
from visdup.report.markup import Safe, tag
from visdup.report.summary import build, duplicate_groups, largest_first
from visdup.structure.term import Term

#: Groups shown (largest first); the rest are counted.
MAX_GROUPS = 2000


def _asset(name: str) -> str:
    return resources.files("visdup.report").joinpath("assets", name).read_text("utf-8")


def script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def csp(script: str) -> str:
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src '{script_hash(script)}'"
    )


def render_html(
    data: StoreData,
    *,
    load_terms: Callable[[list[int]], Mapping[int, Term]],
    similarities: Similarities,
    max_rows: int = MAX_ROWS,
    pages_file: str | None = None,
    version: str = "",
    now: datetime | None = None,
) -> str:
    report = build(data)
    groups = sorted(duplicate_groups(data.pages), key=largest_first)
    by_id = {p.id: p for p in data.pages}
    id_of = {p.url: p.id for p in data.pages}
    templates = report.get("templates", [])
    shown = groups[:MAX_GROUPS]
    need = {id_of[t["representative"]] for t in templates if t["representative"] in id_of}
    for g in shown:
        need.update(g.page_ids[: MAX_DIFFS + 1])
    terms = load_terms(sorted(need))
    words = low_content(data)
    script = _asset("report.js")
    host = _site(data)
    origin = _origin(data)
    short = shortener(origin)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        tag(
            "header",
            {"class": "top"},
            tag("h1", None, "Site audit", f" · {host}" if host else ""),
            tag("p", None, f"visdup {version} · generated {stamp} · verdicts from {data.source}"),
            tag("p", None, f"URLs of {origin} are shown from their path") if origin else "",
        ),
        _toc(),
        tag(
            "main",
            None,
            overview_html(data, report, groups, version, words),
            verdicts_html(data, report, similarities),
            templates_html(templates, data, groups, id_of, terms, short),
            groups_html(
                shown,
                len(groups),
                by_id,
                terms,
                short,
                groups,
                text_differences(shown, data.bodies),
            ),
            responses_html(data.responses, short),
            drift_html(report.get("drift")),
            pages_html(data, groups, max_rows, pages_file, origin, words),
        ),
        tag(
            "footer",
            None,
            "Written by visdup. Layout pictures are drawn from each template's irreducible "
            "term: one row per depth, box width by leaves.",
        ),
        tag("script", None, Safe(script)),
    ]
    head = tag(
        "head",
        None,
        tag("meta", {"charset": "utf-8"}),
        tag("meta", {"http-equiv": "Content-Security-Policy", "content": csp(script)}),
        tag("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        tag("meta", {"name": "referrer", "content": "no-referrer"}),
        # links open a new tab (which has no opener), the table of contents stays here
        tag("base", {"target": "_blank"}),
        tag("title", None, f"visdup site audit · {host}" if host else "visdup site audit"),
        tag("style", None, Safe(_asset("report.css"))),
    )
    return "<!DOCTYPE html>\n" + tag("html", {"lang": "en"}, head, tag("body", None, body)) + "\n"


def _toc() -> Safe:
    """The bar of links to each section."""
    return tag(
        "nav",
        {"class": "toc"},
        [
            tag("a", {"href": f"#{anchor}", "target": "_self"}, title)
            for anchor, title in (
                ("overview", "Overview"),
                ("verdicts", "Verdicts"),
                ("templates", "Templates"),
                ("groups", "Duplicate groups"),
                ("responses", "Responses"),
                ("drift", "Drift"),
                ("pages-table", "Pages"),
            )
        ],
    )


def _site(data: StoreData) -> str:
    hosts = Counter(urlsplit(p.url).netloc for p in data.pages[:1000])
    return hosts.most_common(1)[0][0] if hosts else ""


def _origin(data: StoreData) -> str:
    """scheme://host of most pages: their URLs are shown from the path on."""
    origins = Counter(
        f"{u.scheme}://{u.netloc}" for u in (urlsplit(p.url) for p in data.pages[:1000])
    )
    return origins.most_common(1)[0][0] if origins else ""
