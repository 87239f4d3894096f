"""The per-page table an auditor sorts and filters: one row per stored page (.jsonl or .csv)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from visdup.errors import InputError
from visdup.escape import csv_cell
from visdup.report.audit import canonical_state, indexability, severity, template_names
from visdup.report.causes import duplicate_cause
from visdup.report.data import PageRow, StoreData
from visdup.report.lowcontent import Words, low_content
from visdup.report.summary import Group, Member
from visdup.verdicts import DUPLICATE_VERDICTS

COLUMNS = (
    "url",
    "status",
    "title",
    "verdict",
    "kind",
    "duplicate_of",
    "content_similarity",
    "layout_similarity",
    "near_duplicates",
    "template",
    "canonical",
    "canonical_url",
    "indexability",
    "cause",
    "severity",
    "template_id",
    "words",
    "low_content",
)

#: Verdicts whose page repeats another one's content: only these name an original.
REPEATS = DUPLICATE_VERDICTS


def page_rows(
    data: StoreData, groups: list[Group], words: Words | None = None
) -> list[dict[str, Any]]:
    """One row per page, in URL order.

    ``kind`` says how a page repeats its group's original (exact, content, thin, structural);
    ``duplicate_of`` is that original's URL, ``content_similarity`` and ``layout_similarity``
    the copy's own measures against it, and ``cause`` why its URL exists (tracking
    parameters, session id, print copy...), set only for duplicate and moved pages;
    ``near_duplicates`` how many other pages share its group (the original's copies) and
    ``severity`` how serious that group is. ``template`` names the page's template by its
    URL pattern (``template_id`` is its id), ``canonical`` says what the page's canonical link
    names (self, other, missing, mismatched: another page than its group agrees on), and
    ``canonical_url`` is that link. ``words`` counts the page's visible words and
    ``low_content`` says ``yes`` when they are few for its template (:mod:`.lowcontent`).
    """
    where: dict[int, tuple[Group, Member | None]] = {}
    for g in groups:
        where[g.original_id] = (g, None)
        for m in g.members:
            where[m.page_id] = (g, m)
    names = template_names(data)
    words = low_content(data) if words is None else words
    severities = {g.original_id: severity(g) for g in groups}
    rows = []
    for p in sorted(data.pages, key=lambda p: (p.url, p.id)):
        group, member = where.get(p.id, (None, None))
        row = _row(p, group, member, names, severities)
        row["words"] = words.counts.get(p.id)
        row["low_content"] = "yes" if p.id in words.low else ""
        if p.id in words.noindex:
            row["indexability"] = indexability(p, noindex=True)
        rows.append(row)
    return rows


def _row(
    p: PageRow,
    group: Group | None,
    member: Member | None,
    names: dict[int, str],
    severities: dict[int, str],
) -> dict[str, Any]:
    copy = member if member is not None and p.verdict in REPEATS else None
    original = group.original if group is not None and copy is not None else ""
    return {
        "url": p.url,
        "status": p.status,
        "title": p.title or "",
        "verdict": p.verdict or "",
        "kind": member.kind if member is not None else "",
        "duplicate_of": original,
        "content_similarity": _rounded(copy.content_similarity if copy else None),
        "layout_similarity": _rounded(copy.layout_similarity if copy else None),
        "near_duplicates": len(group.members) if group is not None else 0,
        "template": names.get(p.cluster_id, "") if p.cluster_id is not None else "",
        "canonical": canonical_state(p, group.canonical if group is not None else None),
        "canonical_url": p.canonical or "",
        "indexability": indexability(p),
        "cause": duplicate_cause(p.url, original) if original else "",
        "severity": severities.get(group.original_id, "") if group is not None else "",
        "template_id": p.cluster_id,
    }


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def write_pages(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write the table; the format follows the suffix (.jsonl or .csv). Returns the row count."""
    suffix = path.suffix.lower()
    if suffix not in {".jsonl", ".csv"}:
        raise InputError(f"--pages writes .jsonl or .csv, not {path.name!r}")
    n = 0
    try:
        with path.open("w", encoding="utf-8", newline="") as out:
            if suffix == ".csv":
                writer = csv.DictWriter(out, fieldnames=COLUMNS)
                writer.writeheader()
                for row in rows:
                    writer.writerow(
                        {k: "" if row[k] is None else csv_cell(row[k]) for k in COLUMNS}
                    )
                    n += 1
            else:
                for row in rows:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    n += 1
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return n
