"""What a crawl found, from the store: duplicate groups, verdicts, templates, problems."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from visdup.escape import one_line
from visdup.page.urlpatterns import url_patterns
from visdup.report.data import PageRow, StoreData, load
from visdup.report.drift import text_lines as drift_lines
from visdup.report.responses import summary_line
from visdup.storage.store import Store
from visdup.verdicts import CONTENT, DUPLICATE_VERDICTS, EXACT, KINDS, STRUCTURAL


@dataclass
class Member:
    page_id: int
    url: str
    #: The measure of its kind: 1.0 for an exact copy, the content similarity for a content
    #: copy, the layout similarity for a thin or structural one.
    similarity: float | None
    kind: str
    canonical: str | None
    declared: bool = False
    #: Its own similarities to the group's original, each channel's measure.
    content_similarity: float | None = None
    layout_similarity: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "similarity": self.similarity,
            "kind": self.kind,
            "content_similarity": self.content_similarity,
            "layout_similarity": self.layout_similarity,
            "canonical": self.canonical,
            "declared": self.declared,
        }


@dataclass
class Group:
    """A page nobody duplicates (the first stored) and the pages that repeat it."""

    original_id: int
    original: str
    canonical: str | None
    members: list[Member] = field(default_factory=list)

    @property
    def page_ids(self) -> list[int]:
        return [self.original_id, *(m.page_id for m in self.members)]


def build_report(store: Store, *, sample: int = 5) -> dict[str, Any]:
    return build(load(store), sample=sample)


def build(data: StoreData, *, sample: int = 5) -> dict[str, Any]:
    """The report as a JSON-ready dict (`report --json`)."""
    groups = duplicate_groups(data.pages)
    report: dict[str, Any] = {
        "pages": len(data.pages),
        "groups": [
            {
                "original": g.original,
                "canonical": g.canonical,
                "members": [m.as_json() for m in g.members],
            }
            for g in groups
        ],
        "undeclared": sum(not m.declared for g in groups for m in g.members),
    }
    verdicts = Counter(p.verdict for p in data.pages if p.verdict)
    if verdicts:
        report["verdicts"] = dict(sorted(verdicts.items()))
    problems = Counter((p.problem or "").split(":")[0] for p in data.pages if p.problem)
    if problems:
        report["problems"] = dict(sorted(problems.items()))
    templates = template_summaries(data, sample)
    if templates:
        report["templates"] = templates
    if data.drift:
        report["drift"] = data.drift
    report["responses"] = data.responses.as_json()
    return report


def largest_first(group: Group) -> tuple[int, str, int]:
    """The HTML report's order of groups: the largest first, then by their original's URL (not
    its page id, which the order of a crawl gives)."""
    return -len(group.members), group.original, group.original_id


def duplicate_groups(pages: list[PageRow]) -> list[Group]:
    """Groups in the URL order of their originals, each group's copies in URL order: the
    same pages give the same listing, whatever order they were stored in."""
    url_of = {p.id: p.url for p in pages}
    canonical_of = {p.id: p.canonical for p in pages}
    parent: dict[int, int] = {}
    members: dict[int, Member] = {}
    for p in pages:
        original, member = _membership(p)
        if original is not None and member is not None:
            parent[p.id], members[p.id] = original, member
    grouped: dict[int, list[Member]] = defaultdict(list)
    for page_id, member in members.items():
        grouped[_root(parent, page_id)].append(member)
    groups = []
    for original, group in sorted(grouped.items(), key=lambda kv: (url_of.get(kv[0], ""), kv[0])):
        group.sort(key=lambda m: (m.url, m.page_id))
        # SEO: do the group's pages agree, through rel=canonical, on one page of the group?
        urls = {url_of.get(original)} | {m.url for m in group}
        votes = Counter(
            c for c in [canonical_of.get(original), *(m.canonical for m in group)] if c in urls
        )
        target = votes.most_common(1)[0][0] if votes else None
        for m in group:
            m.declared = target is not None and m.canonical == target
        groups.append(Group(original, url_of.get(original, str(original)), target, group))
    return groups


def _root(parent: dict[int, int], page_id: int) -> int:
    """A copy of a copy belongs to the first page's group (an exact copy of a moved article)."""
    seen = {page_id}
    while page_id in parent and parent[page_id] not in seen:
        page_id = parent[page_id]
        seen.add(page_id)
    return page_id


def _membership(p: PageRow) -> tuple[int | None, Member | None]:
    """Which group a page belongs to, and how: exact copy, same content, or same structure.

    Pages that merely share a template with others (verdict same_template) are no duplicates
    and join no group; the templates section lists them. Without the content channel a
    structural match is all there is, and counts.
    """
    if p.verdict not in DUPLICATE_VERDICTS:
        return None, None

    def member(similarity: float | None, kind: str) -> Member:
        return Member(
            p.id,
            p.url,
            similarity,
            kind,
            p.canonical,
            content_similarity=p.content_similarity,
            layout_similarity=p.similarity,
        )

    if p.kind == EXACT and p.duplicate_of is not None:
        return p.duplicate_of, member(1.0, EXACT)
    if p.kind in (CONTENT, None) and p.content_duplicate_of is not None:
        return p.content_duplicate_of, member(p.content_similarity, CONTENT)
    if p.duplicate_of is not None:  # thin, or structural when structure decides alone
        return p.duplicate_of, member(p.similarity, p.kind if p.kind in KINDS else STRUCTURAL)
    return None, None


def template_summaries(data: StoreData, sample: int = 5) -> list[dict[str, Any]]:
    """Templates largest first: size, representative, sample URLs, URL patterns, fields."""
    members: dict[int, list[str]] = defaultdict(list)
    for p in data.pages:
        if p.cluster_id is not None:
            members[p.cluster_id].append(p.url)
    if not members:
        return []
    reps = {c.id: c.representative for c in data.clusters}
    fields = {c.id: c.fields for c in data.clusters}
    out = []
    for cid, urls in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        urls.sort()  # the same sample and patterns whatever order the pages were stored in
        out.append(
            {
                "id": cid,
                "size": len(urls),
                "representative": reps.get(cid) or urls[0],
                "sample": urls[:sample],
                "url_patterns": url_patterns(urls),
                "fields": fields.get(cid, []),
            }
        )
    return out


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)


def render_text(report: dict[str, Any]) -> str:
    """The report for a terminal: page text (URLs, patterns, fields) cannot drive it."""
    pages, groups = report["pages"], len(report["groups"])
    lines = [
        f"{pages} page{'' if pages == 1 else 's'}, "
        f"{groups} duplicate group{'' if groups == 1 else 's'}"
    ]
    if report.get("groups"):
        lines.append(
            f"{report['undeclared']} copies name no page of their group as canonical (marked *)"
        )
    if report.get("verdicts"):
        lines.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in report["verdicts"].items()))
    if report.get("problems"):
        lines.append("problems: " + ", ".join(f"{k} {v}" for k, v in report["problems"].items()))
    if report.get("responses"):
        lines.append(f"responses: {summary_line(report['responses'])}")
    sims = report.get("similarities")
    if sims:
        s, c = sims["structure"], sims["content"]
        lines.append(
            f"similarities: {s['compared']} structural comparisons ({s['confirmed']} at or above "
            f"{s['threshold']:.2f}), {c['compared']} content ({c['confirmed']} at or above "
            f"{c['threshold']:.2f}); histogram "
            + ("complete" if sims["complete"] else "incomplete")
            + f": {sims['source']}"
        )
    for group in report["groups"]:
        lines.append("")
        lines.append(f"original  {one_line(group['original'])}")
        if group.get("canonical") and group["canonical"] != group["original"]:
            lines.append(f"canonical {one_line(group['canonical'])}")
        for m in group["members"]:
            sim = f"{m['similarity']:.3f}" if m["similarity"] is not None else "  -  "
            mark = " " if m.get("declared") else "*"
            lines.append(f"  {m['kind']:<10} {sim} {mark} {one_line(m['url'])}")
    if report.get("templates"):
        lines.append("")
        lines.append(f"{len(report['templates'])} templates")
        for t in report["templates"]:
            unit = "page " if t["size"] == 1 else "pages"
            lines.append(f"  #{t['id']:<4} {t['size']:>5} {unit}  {one_line(t['representative'])}")
            shown = t["url_patterns"][:3]
            for pattern in shown:
                lines.append(f"        {one_line(pattern)}")
            rest = t["size"] - sum(_pattern_count(p) for p in shown)
            if rest > 0:  # the counts then add up to the template's pages
                lines.append(f"        and {rest} more {'page' if rest == 1 else 'pages'}")
            if t.get("fields"):
                more = f" (+{len(t['fields']) - 8})" if len(t["fields"]) > 8 else ""
                fields = one_line(", ".join(t["fields"][:8]))
                lines.append(f"        fields: {fields}{more}")
    lines += drift_lines(report.get("drift"))
    return "\n".join(lines)


def _pattern_count(pattern: str) -> int:
    """The page count a URL pattern line ends in (``/a/*.html (9)`` → 9)."""
    head, _, count = pattern.rpartition(" (")
    return int(count.rstrip(")")) if head and count.rstrip(")").isdigit() else 0
