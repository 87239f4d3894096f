"""The report's duplicate groups: each group's copies, and where their layouts differ.

One snippet per group (the first copy that differs, side by side with the original) keeps a
report of thousands of groups small; the paths of the other copies say whether they differ in
the same place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from visdup.report.audit import ERROR, INFO, canonical_state, group_cause, severity
from visdup.report.causes import duplicate_cause
from visdup.report.data import PageRow
from visdup.report.diff import differing_subtree, marked_tokens
from visdup.report.html_format import link, num
from visdup.report.html_textdiff import MAX_TEXT_DIFFS
from visdup.report.markup import Safe, esc, row, tag
from visdup.report.summary import Group
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
MEMBER_HEAD = Safe(
    "<thead><tr><th>kind<th>sim.<th>canonical<th>URL<th>cause, if not the group's"
    "<th>layout differs at<tbody>"
)
#: What a group's severity means, said with the group (the section's introduction says why).
SEVERITY_WORDS = {
    ERROR: "error: exact copy without canonical",
    "warning": "warning: copy without canonical",
    INFO: "info: resolved by canonical",
}
SEVERITY_CLASS = {ERROR: "b-bad", "warning": "b-warn", INFO: "b-ok"}
#: Members listed per group.
MAX_MEMBERS = 25


def canonical_status(group: Group, by_id: Mapping[int, PageRow]) -> tuple[str, str]:
    """(css class, words): does the group agree on one canonical page of its own?"""
    if group.canonical is not None and all(m.declared for m in group.members):
        return "b-ok", "canonical matching"
    named = [by_id[i].canonical for i in group.page_ids if i in by_id and by_id[i].canonical]
    if not named:
        return "b-none", "no canonical"
    return "b-bad", "canonical mismatched"


def groups_html(
    groups: list[Group],
    total: int,
    by_id: Mapping[int, PageRow],
    terms: Mapping[int, Term],
    short: Callable[[str], str] = str,
    groups_all: list[Group] | None = None,
    texts: Mapping[int, Safe] | None = None,
) -> Safe:
    items = [
        _group(n, g, by_id, terms, short, (texts or {}).get(g.original_id, Safe("")))
        for n, g in enumerate(groups)
    ]
    note = (
        tag("p", {"class": "muted"}, f"the {total - len(groups)} smallest groups are left out")
        if total > len(groups)
        else ""
    )
    if len(groups) > MAX_TEXT_DIFFS:
        note += tag(
            "p",
            {"class": "muted"},
            f"the text that differs is shown for the {MAX_TEXT_DIFFS} largest groups",
        )
    return tag(
        "section",
        {"id": "groups"},
        tag("h2", None, f"Duplicate groups ({total})"),
        tag(
            "p",
            {"class": "muted"},
            "Largest first. Severity: error when an exact copy names no canonical page of its "
            "group (search engines find one page at two URLs and choose one themselves), warning "
            "when another copy names none or another page, info when every copy names the "
            "group's canonical page (resolved). Canonical matching: every copy names the page "
            "the group agrees on; mismatched: some copies name none or another page; no "
            "canonical: no page of the group names one. The cause is why a copy's URL exists "
            "beside its original's, read from the URLs. Open a group for its copies (sim.: the "
            "similarity to the original; a URL that only adds to the original's is shown from "
            "there, …?page=2), the text that differs, and where the layouts part.",
        ),
        _rollup(groups_all or groups),
        items or tag("p", {"class": "muted"}, "no duplicates found"),
        note,
    )


def _rollup(groups: list[Group]) -> Safe:
    """Duplicate URLs by cause: how many groups and copies each explains, how many unresolved."""
    rows: dict[str, list[int]] = {}
    for g in groups:
        for m in g.members:
            cause = duplicate_cause(m.url, g.original)
            counts = rows.setdefault(cause, [0, 0, 0, 0])
            counts[1] += 1
            counts[2] += 0 if m.declared else 1
            counts[3] += 1 if not m.declared and m.kind == "exact" else 0
        for cause in {duplicate_cause(m.url, g.original) for m in g.members}:
            rows[cause][0] += 1
    if not rows:
        return Safe("")
    order = sorted(rows, key=lambda c: (-rows[c][2], -rows[c][1], c))
    heads = ("cause", "groups", "copies", "without canonical", "of them exact")
    return tag(
        "table",
        {"id": "causes", "class": "rollup"},
        tag("thead", None, tag("tr", None, [tag("th", None, h) for h in heads])),
        tag(
            "tbody",
            None,
            [
                tag(
                    "tr",
                    {"data-cause": c},
                    tag("td", None, c),
                    [tag("td", {"class": "n"}, v) for v in rows[c]],
                )
                for c in order
            ],
        ),
    )


def _group(
    n: int,
    g: Group,
    by_id: Mapping[int, PageRow],
    terms: Mapping[int, Term],
    short: Callable[[str], str],
    text: Safe,
) -> Safe:
    css, words = canonical_status(g, by_id)
    level, cause = severity(g), group_cause(g)
    paths, snippet = _differences(g, terms)
    members = [
        row(
            (
                m.kind,
                num(m.similarity),
                canonical_state(by_id[m.page_id], g.canonical) if m.page_id in by_id else "",
                _beside(m.url, g.original, short),
                _other(duplicate_cause(m.url, g.original), cause),
                paths.get(m.page_id, ""),
            )
        )
        for m in g.members[:MAX_MEMBERS]
    ]
    if len(g.members) > MAX_MEMBERS:
        members.append(row([f"… {len(g.members) - MAX_MEMBERS} more"]))
    # the optional end tags of the table's parts are left out: a thousand groups add up
    table = Safe(f'<table class="members">{MEMBER_HEAD}{"".join(members)}</table>')
    return tag(
        "details",
        {"id": f"group-{n + 1}", "data-severity": level, "data-cause": cause},
        tag(
            "summary",
            None,
            tag("b", None, f"{len(g.page_ids)} pages"),
            tag("i", {"class": SEVERITY_CLASS[level]}, SEVERITY_WORDS[level]),
            tag("i", {"class": css}, words),
            tag("i", {"class": "b-none"}, cause),
            short(g.original),
        ),
        tag("div", None, "canonical: ", link(g.canonical, short))
        if g.canonical and g.canonical != g.original
        else "",
        table,
        text,
        snippet,
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


def _other(cause: str, group: str) -> str:
    """A copy's cause where it is not its group's (the group's is in its summary line)."""
    return "" if cause == group else cause


def _beside(url: str, original: str, short: Callable[[str], str]) -> str:
    """A copy's URL as its group shows it: from where it leaves the original's URL ("…?utm=1")
    when it only adds to it, which copies made by query parameters do."""
    if len(url) > len(original) and url.startswith(original):
        return "…" + url[len(original) :]
    return short(url)


def _marked(runs: list[tuple[str, bool]], cls: str) -> list[Safe]:
    return [tag("mark", {"class": cls}, text) if differs else esc(text) for text, differs in runs]
