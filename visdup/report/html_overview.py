"""The report's overview: the counts that matter, the settings behind the verdicts, the runs."""

from __future__ import annotations

from typing import Any

from visdup.report.audit import ERROR, severity
from visdup.report.data import VERDICT_SETTINGS, StoreData
from visdup.report.html_format import duration, moment
from visdup.report.html_problems import budget_html, crawl_budget, worst_problems
from visdup.report.lowcontent import Words
from visdup.report.markup import Safe, tag
from visdup.report.summary import Group

#: Runs listed (the latest).
MAX_RUNS = 20


def overview_html(
    data: StoreData,
    report: dict[str, Any],
    groups: list[Group],
    version: str,
    words: Words | None = None,
) -> Safe:
    runs = _run_rows(data)
    problems = report.get("problems")
    return tag(
        "section",
        {"id": "overview", "data-section": "overview"},
        tag("h2", None, "Overview"),
        tag("div", {"class": "kpis"}, _cards(report, groups)),
        tag("h3", None, "The worst problems first"),
        worst_problems(data, groups, problems, words),
        tag("h3", None, "Crawl budget"),
        budget_html(crawl_budget(data, groups)),
        tag(
            "details",
            {"class": "settings"},
            tag("summary", None, "Settings that shaped the verdicts, and the runs"),
            tag(
                "div",
                {"class": "grid"},
                tag("div", None, _facts(data, version)),
                tag(
                    "div",
                    None,
                    _runs_table(runs) if runs else tag("p", {"class": "muted"}, "no runs recorded"),
                    tag(
                        "p",
                        {"class": "muted"},
                        "problems: " + ", ".join(f"{k} {v}" for k, v in problems.items()),
                    )
                    if problems
                    else "",
                ),
            ),
        ),
    )


def _cards(report: dict[str, Any], groups: list[Group]) -> list[Safe]:
    """The crawl in five numbers, each on a card (``data-kpi`` names it for a script)."""
    duplicates = sum(len(g.members) for g in groups)
    kpis = [
        ("pages", report["pages"], "pages"),
        ("groups", len(report["groups"]), "duplicate groups"),
        ("duplicates", duplicates, "redundant pages"),
        ("templates", len(report.get("templates", [])), "templates"),
        ("undeclared", report["undeclared"], "copies without canonical"),
        ("errors", sum(severity(g) == ERROR for g in groups), "groups in error"),
    ]
    return [
        tag("div", {"class": "kpi"}, tag("b", {"data-kpi": key}, value), tag("span", None, words))
        for key, value, words in kpis
    ]


def _run_rows(data: StoreData) -> list[Safe]:
    """A row per crawl run that wrote into the store, the latest :data:`MAX_RUNS`."""
    return [
        tag(
            "tr",
            None,
            tag("td", {"class": "n"}, r.id),
            tag("td", None, r.spider),
            tag("td", None, moment(r.started_at)),
            tag("td", None, moment(r.finished_at)),
            tag("td", {"class": "n"}, duration(r.started_at, r.finished_at)),
            tag("td", None, r.reason or ""),
            tag("td", {"class": "n"}, r.stats.get("visdup/pages", "")),
        )
        for r in data.runs[-MAX_RUNS:]
    ]


def _runs_table(runs: list[Safe]) -> Safe:
    heads = ("run", "spider", "started", "finished", "duration", "reason", "pages")
    numeric = {"run", "duration", "pages"}
    return tag(
        "table",
        None,
        tag(
            "thead",
            None,
            tag(
                "tr", None, [tag("th", {"class": "n"} if h in numeric else None, h) for h in heads]
            ),
        ),
        tag("tbody", None, runs),
    )


def _facts(data: StoreData, version: str) -> Safe:
    """Where the verdicts come from: the store, visdup's version, and the settings that shaped
    them (those the crawl recorded)."""
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
    return tag(
        "table",
        {"class": "kv"},
        tag(
            "tr", None, tag("th", None, "database"), tag("td", {"class": "url"}, data.database_url)
        ),
        tag("tr", None, tag("th", None, "visdup version"), tag("td", None, version)),
        tag("tr", None, tag("th", None, "verdicts from"), tag("td", None, data.source)),
        settings,
    )
