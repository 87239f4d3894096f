"""What a crawl found, from the store: duplicate groups, verdicts, templates, problems."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from visdup.report.urlpatterns import url_patterns
from visdup.storage.store import Store


def build_report(store: Store, *, sample: int = 5) -> dict[str, Any]:
    rows = store.rows(
        "id",
        "url",
        "duplicate_of",
        "similarity",
        "kind",
        "content_duplicate_of",
        "content_similarity",
        "content_kind",
        "verdict",
        "problem",
        "cluster_id",
        "canonical",
    )
    url_of = {r.id: r.url for r in rows}
    parent: dict[int, int] = {}
    members: dict[int, dict[str, Any]] = {}
    for r in rows:
        original, member = _membership(r)
        if original is not None:
            member["canonical"] = r.canonical
            parent[r.id], members[r.id] = original, member
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for page_id, member in members.items():
        groups[_root(parent, page_id)].append(member)
    canonical_of = {r.id: r.canonical for r in rows}
    group_canonical: dict[int, str | None] = {}
    undeclared = 0
    for original, group in groups.items():
        # SEO: do the group's pages agree, through rel=canonical, on one page of the group?
        urls = {url_of.get(original)} | {m["url"] for m in group}
        votes = Counter(
            c for c in [canonical_of.get(original), *(m["canonical"] for m in group)] if c in urls
        )
        target = votes.most_common(1)[0][0] if votes else None
        group_canonical[original] = target
        for m in group:
            m["declared"] = target is not None and m["canonical"] == target
            undeclared += not m["declared"]
    report: dict[str, Any] = {
        "pages": len(rows),
        "groups": [
            {
                "original": url_of.get(orig, str(orig)),
                "canonical": group_canonical[orig],
                "members": members,
            }
            for orig, members in sorted(groups.items())
        ],
        "undeclared": undeclared,
    }
    verdicts = Counter(r.verdict for r in rows if r.verdict)
    if verdicts:
        report["verdicts"] = dict(sorted(verdicts.items()))
    problems = Counter((r.problem or "").split(":")[0] for r in rows if r.problem)
    if problems:
        report["problems"] = dict(sorted(problems.items()))
    templates = _templates(store, rows, sample)
    if templates:
        report["templates"] = templates
    return report


def _root(parent: dict[int, int], page_id: int) -> int:
    """A copy of a copy belongs to the first page's group (an exact copy of a moved article)."""
    seen = {page_id}
    while page_id in parent and parent[page_id] not in seen:
        page_id = parent[page_id]
        seen.add(page_id)
    return page_id


def _membership(r: Any) -> tuple[int | None, dict[str, Any]]:
    """Which group a page belongs to, and how: exact copy, same content, or same structure.

    Pages that merely share a template with others (verdict same_template) are no duplicates
    and join no group; the templates section lists them. Without the content channel a
    structural match is all there is, and counts.
    """
    if r.kind == "exact" and r.duplicate_of is not None:
        return r.duplicate_of, {"url": r.url, "similarity": 1.0, "kind": "exact"}
    if r.verdict in {"duplicate", "moved"} and r.content_duplicate_of is not None:
        member = {"url": r.url, "similarity": r.content_similarity, "kind": "content"}
        return r.content_duplicate_of, member
    if r.verdict == "duplicate" and r.duplicate_of is not None:
        return r.duplicate_of, {"url": r.url, "similarity": r.similarity, "kind": "structural"}
    return None, {}


def _templates(store: Store, rows: list[Any], sample: int) -> list[dict[str, Any]]:
    members: dict[int, list[str]] = defaultdict(list)
    for r in rows:
        if r.cluster_id is not None:
            members[r.cluster_id].append(r.url)
    if not members:
        return []
    stored = store.cluster_rows()
    reps = {c.id: c.representative for c in stored}
    fields = {c.id: _field_names(c.template) for c in stored}

    out = []
    for cid, urls in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
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


def _field_names(template: str | None) -> list[str]:
    if not template:
        return []
    return [f["name"] for f in json.loads(template).get("fields", [])]


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)


def render_text(report: dict[str, Any]) -> str:
    lines = [f"{report['pages']} pages, {len(report['groups'])} duplicate groups"]
    if report.get("groups"):
        lines.append(
            f"{report['undeclared']} copies name no page of their group as canonical (marked *)"
        )
    if report.get("verdicts"):
        lines.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in report["verdicts"].items()))
    if report.get("problems"):
        lines.append("problems: " + ", ".join(f"{k} {v}" for k, v in report["problems"].items()))
    for group in report["groups"]:
        lines.append("")
        lines.append(f"original  {group['original']}")
        if group.get("canonical") and group["canonical"] != group["original"]:
            lines.append(f"canonical {group['canonical']}")
        for m in group["members"]:
            sim = f"{m['similarity']:.3f}" if m["similarity"] is not None else "  -  "
            mark = " " if m.get("declared") else "*"
            lines.append(f"  {m['kind']:<10} {sim} {mark} {m['url']}")
    if report.get("templates"):
        lines.append("")
        lines.append(f"{len(report['templates'])} templates")
        for t in report["templates"]:
            lines.append(f"  #{t['id']:<4} {t['size']:>5} pages  {t['representative']}")
            for pattern in t["url_patterns"][:3]:
                lines.append(f"        {pattern}")
            if t.get("fields"):
                more = f" (+{len(t['fields']) - 8})" if len(t["fields"]) > 8 else ""
                lines.append(f"        fields: {', '.join(t['fields'][:8])}{more}")
    return "\n".join(lines)
