"""The site-audit report as one self-contained HTML page.

No request leaves the file: styles are inline, pictures are inline SVG drawn by
:mod:`visdup.report.svg`, and the only script (sorting and filtering the pages table) is
allowed by its hash in the Content-Security-Policy, which forbids everything else. Every value
that came from a crawled page goes through :mod:`visdup.report.markup`.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from visdup.report import MAX_ROWS
from visdup.report.data import VERDICT_SETTINGS, PageRow, Similarities, StoreData, thresholds
from visdup.report.diff import differing_subtree, marked_tokens
from visdup.report.drift import html_section as drift_html
from visdup.report.markup import Safe, esc, row, tag
from visdup.report.pages import page_rows
from visdup.report.summary import Group, build, duplicate_groups
from visdup.report.svg import LAYOUT_CLASSES, bars, histogram, layout, legend
from visdup.structure.term import Term

#: Members of a group whose differences with the original are shown (the first side by side).
MAX_DIFFS = 4
#: Characters of each side of a difference snippet (the first difference and what follows).
SNIPPET = 160
#: Characters kept before a snippet's first difference.
SNIPPET_LEAD = 40
#: Steps of a differing subtree's path shown in a members table (the root, "…", the last ones).
PATH_STEPS = 4
#: Header of a group's members table (the end tags HTML lets go are left out).
MEMBER_HEAD = Safe("<thead><tr><th>kind<th>sim.<th>canon.<th>URL<th>layout differs at<tbody>")
#: Members listed per group.
MAX_MEMBERS = 25
#: Groups shown (largest first); the rest are counted.
MAX_GROUPS = 2000

VERDICT_ORDER = ("original", "duplicate", "moved", "same_template", "novel")


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
    groups = sorted(duplicate_groups(data.pages), key=lambda g: (-len(g.members), g.original_id))
    by_id = {p.id: p for p in data.pages}
    id_of = {p.url: p.id for p in data.pages}
    templates = report.get("templates", [])
    shown = groups[:MAX_GROUPS]
    need = {id_of[t["representative"]] for t in templates if t["representative"] in id_of}
    for g in shown:
        need.update(g.page_ids[: MAX_DIFFS + 1])
    terms = load_terms(sorted(need))
    script = _asset("report.js")
    host = _site(data)
    origin = _origin(data)
    short = _shortener(origin)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        tag(
            "header",
            {"class": "top"},
            tag("h1", None, "Site audit", f" · {host}" if host else ""),
            tag("p", None, f"visdup {version} · generated {stamp} · verdicts from {data.source}"),
            tag("p", None, f"URLs of {origin} are shown from their path") if origin else "",
        ),
        tag(
            "nav",
            {"class": "toc"},
            [
                tag("a", {"href": f"#{anchor}", "target": "_self"}, title)
                for anchor, title in (
                    ("overview", "Overview"),
                    ("verdicts", "Verdicts"),
                    ("templates", "Templates"),
                    ("groups", "Duplicate groups"),
                    ("drift", "Drift"),
                    ("pages-table", "Pages"),
                )
            ],
        ),
        tag(
            "main",
            None,
            _overview(data, report, groups, version),
            _verdicts(data, report, similarities),
            _templates(templates, data, groups, id_of, terms, short),
            _groups(shown, len(groups), by_id, terms, short),
            drift_html(report.get("drift")),
            _pages(data, groups, max_rows, pages_file, short),
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


# ---------------------------------------------------------------------------------- helpers


def _site(data: StoreData) -> str:
    hosts = Counter(urlsplit(p.url).netloc for p in data.pages[:1000])
    return hosts.most_common(1)[0][0] if hosts else ""


def _origin(data: StoreData) -> str:
    """scheme://host of most pages: their URLs are shown from the path on."""
    origins = Counter(
        f"{u.scheme}://{u.netloc}" for u in (urlsplit(p.url) for p in data.pages[:1000])
    )
    return origins.most_common(1)[0][0] if origins else ""


def _shortener(origin: str) -> Callable[[str], str]:
    """A URL as shown: from its path on when it is on ``origin`` (said once, at the top)."""
    size = len(origin)

    def short(url: str) -> str:
        if origin and url.startswith(origin) and url[size : size + 1] in ("/", "?", ""):
            return url[size:] or "/"
        return url

    return short


def _link(url: str | None, short: Callable[[str], str] = str) -> Safe:
    """A URL as text, and as a link only when it is http(s): no javascript: or data: links.

    Links open a new tab (``<base target>``), which browsers give no opener; the page sends no
    referrer (its ``referrer`` policy).
    """
    if not url:
        return Safe("")
    if urlsplit(url).scheme in {"http", "https"}:
        return tag("a", {"href": url, "class": "url"}, short(url))
    return tag("span", {"class": "url"}, url)


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "unfinished" if start is not None else ""
    seconds = (end - start).total_seconds()
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else ""


def canonical_status(group: Group, by_id: Mapping[int, PageRow]) -> tuple[str, str]:
    """(css class, words): does the group agree on one canonical page of its own?"""
    if group.canonical is not None and all(m.declared for m in group.members):
        return "b-ok", "canonical matching"
    named = [by_id[i].canonical for i in group.page_ids if i in by_id and by_id[i].canonical]
    if not named:
        return "b-none", "no canonical"
    return "b-bad", "canonical mismatched"


# ---------------------------------------------------------------------------------- sections


def _overview(data: StoreData, report: dict[str, Any], groups: list[Group], version: str) -> Safe:
    duplicates = sum(len(g.members) for g in groups)
    kpis = [
        ("pages", report["pages"], "pages"),
        ("groups", len(report["groups"]), "duplicate groups"),
        ("duplicates", duplicates, "redundant pages"),
        ("templates", len(report.get("templates", [])), "templates"),
        ("undeclared", report["undeclared"], "copies without canonical"),
    ]
    cards = [
        tag("div", {"class": "kpi"}, tag("b", {"data-kpi": key}, value), tag("span", None, words))
        for key, value, words in kpis
    ]
    runs = [
        tag(
            "tr",
            None,
            tag("td", {"class": "n"}, r.id),
            tag("td", None, r.spider),
            tag("td", None, _time(r.started_at)),
            tag("td", None, _time(r.finished_at)),
            tag("td", {"class": "n"}, _duration(r.started_at, r.finished_at)),
            tag("td", None, r.reason or ""),
            tag("td", {"class": "n"}, r.stats.get("visdup/pages", "")),
        )
        for r in data.runs[-20:]
    ]
    runs_table = tag(
        "table",
        None,
        tag(
            "thead",
            None,
            tag(
                "tr",
                None,
                [
                    tag("th", {"class": "n"} if h in {"run", "duration", "pages"} else None, h)
                    for h in ("run", "spider", "started", "finished", "duration", "reason", "pages")
                ],
            ),
        ),
        tag("tbody", None, runs),
    )
    settings = [
        tag("tr", None, tag("th", None, name), tag("td", None, str(data.settings[name])))
        for name in VERDICT_SETTINGS
        if name in data.settings
    ]
    if not settings:
        settings = [
            tag(
                "tr",
                None,
                tag("td", {"class": "muted", "colspan": 2}, "the crawl recorded no settings"),
            )
        ]
    facts = tag(
        "table",
        {"class": "kv"},
        tag(
            "tr", None, tag("th", None, "database"), tag("td", {"class": "url"}, data.database_url)
        ),
        tag("tr", None, tag("th", None, "visdup version"), tag("td", None, version)),
        tag("tr", None, tag("th", None, "verdicts from"), tag("td", None, data.source)),
        settings,
    )
    problems = report.get("problems")
    return tag(
        "section",
        {"id": "overview"},
        tag("h2", None, "Overview"),
        tag("div", {"class": "kpis"}, cards),
        tag(
            "div",
            {"class": "grid"},
            tag("div", None, tag("h3", None, "Settings that shaped the verdicts"), facts),
            tag(
                "div",
                None,
                tag("h3", None, "Runs"),
                runs_table if runs else tag("p", {"class": "muted"}, "no runs recorded"),
                tag(
                    "p",
                    {"class": "muted"},
                    "problems: " + ", ".join(f"{k} {v}" for k, v in problems.items()),
                )
                if problems
                else "",
            ),
        ),
    )


def _verdicts(data: StoreData, report: dict[str, Any], sims: Similarities) -> Safe:
    counts = report.get("verdicts", {})
    ordered = {k: counts.get(k, 0) for k in VERDICT_ORDER}
    ordered.update({k: v for k, v in counts.items() if k not in ordered})
    theta, template_theta, content_theta = thresholds(data.settings)
    keys = legend([("h-acc", "confirmed"), ("h-rej", "rejected")])
    complete = "complete" if sims.complete else "incomplete"
    return tag(
        "section",
        {"id": "verdicts"},
        tag("h2", None, "Verdicts and similarities"),
        tag(
            "div",
            {"class": "grid"},
            tag("div", None, tag("h3", None, "Verdicts"), bars(ordered, label="pages per verdict")),
            tag(
                "div",
                None,
                tag("h3", None, "Structure: tree edit similarity"),
                tag(
                    "p",
                    {"class": "muted", "data-complete": str(sims.complete).lower()},
                    f"histograms {complete}: {sims.source}; ",
                    keys,
                ),
                histogram(
                    sims.structure_accepted,
                    sims.structure_rejected,
                    {"near-duplicate": theta, "template": template_theta},
                    label="structural similarity of compared pages",
                    attrs=_counted("structure", sims.structure_accepted, sims.structure_rejected),
                ),
                tag("h3", None, "Content: shared long sentences"),
                histogram(
                    sims.content_accepted,
                    sims.content_rejected,
                    {"content": content_theta},
                    label="content similarity of compared pages",
                    attrs=_counted("content", sims.content_accepted, sims.content_rejected),
                ),
            ),
        ),
    )


def _counted(channel: str, accepted: list[float], rejected: list[float]) -> dict[str, object]:
    """What a histogram counts, for a reader that cannot see the bars."""
    return {
        "data-channel": channel,
        "data-compared": len(accepted) + len(rejected),
        "data-confirmed": len(accepted),
    }


def _templates(
    templates: list[dict[str, Any]],
    data: StoreData,
    groups: list[Group],
    id_of: Mapping[str, int],
    terms: Mapping[int, Term],
    short: Callable[[str], str] = str,
) -> Safe:
    total = len(data.pages) or 1
    cluster_of = {p.id: p.cluster_id for p in data.pages}
    groups_in = Counter(cluster_of.get(g.original_id) for g in groups)
    items = []
    for t in templates:
        term = terms.get(id_of.get(t["representative"], -1))
        picture = (
            layout(
                term,
                label=f"layout of template {t['id']}",
                attrs={"data-template": t["id"]},
            )
            if term is not None
            else tag("p", {"class": "muted", "data-template": t["id"]}, "no stored term")
        )
        share = t["size"] / total
        items.append(
            tag(
                "div",
                {"class": "template", "id": f"template-{t['id']}"},
                tag(
                    "div",
                    None,
                    tag("h3", None, f"Template #{t['id']}"),
                    tag("div", None, f"{t['size']} pages · {share:.1%} of the crawl"),
                    tag("div", {"class": "share"}, tag("i", {"style": f"width:{share:.1%}"})),
                    # a definition list without the end tags HTML lets go: 200 cards add up
                    Safe("<dl><dt>representative<dd>"),
                    _link(t["representative"], short),
                    Safe('<dt>URL patterns<dd><ul class="url">'),
                    [Safe("<li>" + esc(p)) for p in t["url_patterns"]],
                    Safe("</ul><dt>duplicate groups inside<dd>"),
                    groups_in.get(t["id"], 0),
                    Safe("<dt>fields<dd>" + esc(", ".join(t["fields"][:12])))
                    if t.get("fields")
                    else "",
                    Safe("</dl>"),
                ),
                tag("div", None, picture),
            )
        )
    keys = legend([(cls, name) for name, cls in LAYOUT_CLASSES.items()])
    return tag(
        "section",
        {"id": "templates"},
        tag("h2", None, f"Templates ({len(templates)})"),
        tag("p", {"class": "muted"}, "largest first; pictures: ", keys),
        items or tag("p", {"class": "muted"}, "no templates stored"),
    )


def _groups(
    groups: list[Group],
    total: int,
    by_id: Mapping[int, PageRow],
    terms: Mapping[int, Term],
    short: Callable[[str], str] = str,
) -> Safe:
    items = []
    for n, g in enumerate(groups):
        css, words = canonical_status(g, by_id)
        paths, snippet = _differences(g, terms)
        members = [
            row(
                (
                    m.kind,
                    _num(m.similarity),
                    "yes" if m.declared else "no",
                    _beside(m.url, g.original, short),
                    paths.get(m.page_id, ""),
                )
            )
            for m in g.members[:MAX_MEMBERS]
        ]
        if len(g.members) > MAX_MEMBERS:
            members.append(row([f"… {len(g.members) - MAX_MEMBERS} more"]))
        # the optional end tags of the table's parts are left out: a thousand groups add up
        table = Safe(f'<table class="members">{MEMBER_HEAD}{"".join(members)}</table>')
        items.append(
            tag(
                "details",
                {"id": f"group-{n + 1}"},
                tag(
                    "summary",
                    None,
                    tag("b", None, f"{len(g.page_ids)} pages"),
                    tag("i", {"class": css}, words),
                    short(g.original),
                ),
                tag("div", None, "canonical: ", _link(g.canonical, short))
                if g.canonical and g.canonical != g.original
                else "",
                table,
                snippet,
            )
        )
    note = (
        tag("p", {"class": "muted"}, f"the {total - len(groups)} smallest groups are left out")
        if total > len(groups)
        else ""
    )
    return tag(
        "section",
        {"id": "groups"},
        tag("h2", None, f"Duplicate groups ({total})"),
        tag(
            "p",
            {"class": "muted"},
            "largest first; open a group to see where each copy's layout differs from the "
            "original's (the path of the differing subtree in the visual term, the first one side "
            "by side with the differences marked). Canonical matching: every copy names the page "
            "the group agrees on; mismatched: some copies name none or another page; no "
            "canonical: no page of the group names one. In a group's table, sim. is the copy's "
            "similarity to the original, canon. whether it names the group's canonical page, "
            "and a URL that only adds to the original's is shown from there (…?page=2).",
        ),
        items or tag("p", {"class": "muted"}, "no duplicates found"),
        note,
    )


def _differences(g: Group, terms: Mapping[int, Term]) -> tuple[dict[int, str], Safe]:
    """Where the first copies' layouts part from the original's, and the first one side by side.

    One snippet per group keeps a report of thousands of groups small; the paths of the
    other copies say whether they differ in the same place.
    """
    paths: dict[int, str] = {}
    snippet = Safe("")
    left = terms.get(g.original_id)
    for m in g.members[:MAX_DIFFS]:
        right = terms.get(m.page_id)
        if left is None or right is None:
            paths[m.page_id] = "no stored term"
            continue
        d = differing_subtree(left, right)
        if d.identical:
            paths[m.page_id] = "same layout"
            continue
        steps = d.path if len(d.path) <= PATH_STEPS else [d.path[0], "…", *d.path[2 - PATH_STEPS :]]
        paths[m.page_id] = " › ".join(steps)
        if snippet:
            continue
        marks_a, marks_b = marked_tokens(d.left, d.right, limit=SNIPPET, lead=SNIPPET_LEAD)
        # which copy: its row in the table above (its URL is there, once); the caption
        # ("copy 2 beside the original") and the sides' come from the style sheet
        snippet = tag(
            "div",
            {"class": "diff", "data-copy": g.members.index(m) + 1},
            tag("pre", None, _marked(marks_a, "del")),
            tag("pre", None, _marked(marks_b, "ins")),
        )
    return paths, snippet


def _beside(url: str, original: str, short: Callable[[str], str]) -> str:
    """A copy's URL as its group shows it: from where it leaves the original's URL ("…?utm=1")
    when it only adds to it, which copies made by query parameters do."""
    if len(url) > len(original) and url.startswith(original):
        return "…" + url[len(original) :]
    return short(url)


def _marked(runs: list[tuple[str, bool]], cls: str) -> list[Safe]:
    return [tag("mark", {"class": cls}, text) if differs else esc(text) for text, differs in runs]


def _pages(
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
            _num(r["content_similarity"]), _num(r["layout_similarity"]),
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
