"""The final answer a store gives about its pages, read through the command line, and a
readable diff between two answers (for tests/test_same_answer.py).

An answer is what an auditor reads: the per-page table of ``visdup report --pages FILE.csv``
(one row per page, keyed by URL) and the template fields of ``visdup report --json``. URLs
are shown relative to a base (a crawl's ``http://127.0.0.1:PORT``, or the directory of the
page files) so that answers from different servers and runs compare cell by cell.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO

#: Columns every table must have.
REQUIRED = ("url", "verdict", "kind", "duplicate_of", "template", "canonical")
#: Verdicts of a page that repeats another one's content (it names its original).
REPEATS = ("duplicate", "moved")
#: Differing rows shown per pair of answers.
SHOWN = 20


def compared_columns(header: Sequence[str]) -> list[str]:
    """The columns answers are compared on: every column of the table, in its order."""
    missing = [c for c in REQUIRED if c not in header]
    assert not missing, f"the pages table has no {missing} column(s): {list(header)}"
    return list(header)


def _visdup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "visdup", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def visdup(*args: str, ok: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    """``visdup ARGS...`` in a fresh process, checked to exit with one of ``ok``."""
    done = _visdup(*args)
    assert done.returncode in ok, (
        f"visdup {' '.join(args[:4])} ... exited {done.returncode}:\n{done.stderr[-3000:]}"
    )
    return done


@dataclass
class Answer:
    """What one store says about its pages."""

    label: str
    columns: list[str]
    #: relative URL -> compared column -> cell (CSV text)
    rows: dict[str, dict[str, str]]
    #: template id -> its field names, in order (``visdup report --json``'s templates)
    templates: dict[str, list[str]] = field(default_factory=dict)
    #: relative URLs in the order the pages were stored (visdup_pages.id)
    stored_order: list[str] = field(default_factory=list)
    #: relative URL -> visdup_pages.body_hash, for pages stored without a problem
    body_hashes: dict[str, str] = field(default_factory=dict)
    #: relative URL -> (kind, status, relative target) of the URLs that gave no page (the
    #: page linking there is left out: it is the one the crawl followed, which order decides)
    responses: dict[str, tuple[str, int | None, str]] = field(default_factory=dict)


def relative(text: str, base: str) -> str:
    """``text`` with every occurrence of ``base`` (scheme://host:port, or a directory) cut."""
    return text.replace(base, "") if base else text


def sqlite_path(db: str) -> Path:
    assert db.startswith("sqlite:///"), db
    return Path(db[len("sqlite:///") :])


def read_answer(label: str, db: str, work: Path, base: str) -> Answer:
    """The answer of the SQLite store ``db``: its pages table and template fields, through
    ``visdup report``, and its pages' storage order and body hashes, from the file."""
    work.mkdir(parents=True, exist_ok=True)
    table = work / "pages.csv"
    done = visdup("report", "--db", db, "--json", "--pages", str(table))
    report = json.loads(done.stdout)
    with table.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        columns = compared_columns(reader.fieldnames or [])
        rows: dict[str, dict[str, str]] = {}
        for row in reader:
            url = relative(row["url"], base)
            assert url not in rows, f"{label}: two rows for {url}"
            rows[url] = {c: relative(row[c] or "", base) for c in columns}
    templates = {str(t["id"]): list(t.get("fields") or []) for t in report.get("templates", [])}
    with sqlite3.connect(sqlite_path(db)) as conn:
        stored = conn.execute(
            "SELECT url, body_hash, problem FROM visdup_pages ORDER BY id"
        ).fetchall()
    return Answer(
        label=label,
        columns=columns,
        rows=rows,
        templates=templates,
        stored_order=[relative(url, base) for url, _h, _p in stored],
        body_hashes={relative(url, base): h for url, h, problem in stored if h and not problem},
        responses={
            relative(r["url"], base): (r["kind"], r["status"], relative(r["target"] or "", base))
            for r in report.get("responses", {}).get("urls", [])
        },
    )


# ---------------------------------------------------------------------------------- diffs


def _template_groups(rows: dict[str, dict[str, str]]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for url, row in rows.items():
        if row.get("template"):
            groups[row["template"]].add(url)
    return {frozenset(g) for g in groups.values()}


def _cell(value: str | None, width: int = 44) -> str:
    if value is None:
        return "(no row)"
    text = value if value != "" else "''"
    return text if len(text) <= width else text[: width - 1] + "…"


def row_diff(a: Answer, b: Answer, limit: int = SHOWN) -> str:
    """'' when ``a`` and ``b`` have the same rows; else the differing rows, cell by cell."""
    if a.columns != b.columns:
        return f"{a.label} and {b.label} have different columns: {a.columns} != {b.columns}"
    urls = sorted(set(a.rows) | set(b.rows))
    differing = [u for u in urls if a.rows.get(u) != b.rows.get(u)]
    if not differing:
        return ""
    lines = [
        f"{a.label} vs {b.label}: {len(differing)} of {len(urls)} pages differ "
        f"(columns {', '.join(a.columns)})"
    ]
    for url in differing[:limit]:
        ra, rb = a.rows.get(url), b.rows.get(url)
        if ra is None or rb is None:
            lines.append(f"  {url}: only in {b.label if ra is None else a.label}")
            continue
        lines.append(f"  {url}")
        for c in a.columns:
            if ra[c] != rb[c]:
                lines.append(f"      {c:<20} {_cell(ra[c]):<44} | {_cell(rb[c])}")
    if len(differing) > limit:
        lines.append(f"  ... and {len(differing) - limit} more")
    templates_differ = any(
        a.rows[u]["template"] != b.rows[u]["template"]
        for u in differing
        if u in a.rows and u in b.rows
    )
    if templates_differ and _template_groups(a.rows) == _template_groups(b.rows):
        lines.append("  (the pages fall into the same template groups: only the ids differ)")
    return "\n".join(lines)


def template_diff(a: Answer, b: Answer) -> str:
    """'' when ``a`` and ``b`` name the same templates with the same fields, else what differs."""
    if a.templates == b.templates:
        return ""
    lines = [f"{a.label} vs {b.label}: template fields differ"]
    for tid in sorted(set(a.templates) | set(b.templates), key=lambda t: (len(t), t)):
        fa, fb = a.templates.get(tid), b.templates.get(tid)
        if fa != fb:
            show_a = "(no template)" if fa is None else ", ".join(fa) or "(no fields)"
            show_b = "(no template)" if fb is None else ", ".join(fb) or "(no fields)"
            lines.append(f"  template {tid}:\n      {a.label}: {show_a}\n      {b.label}: {show_b}")
    return "\n".join(lines)


def disagreements(answers: Sequence[Answer], what: str = "rows") -> str:
    """Every answer against the first: '' when all agree."""
    diff = row_diff if what == "rows" else template_diff
    found = [d for other in answers[1:] if (d := diff(answers[0], other))]
    return "\n\n".join(found)


def exact_copy_problems(answer: Answer, limit: int = SHOWN) -> str:
    """Pages with byte-identical bodies: in each group of two or more, all pages but one are
    ``duplicate`` of kind ``exact`` and name that one, whose verdict is ``original``.
    '' when every group is so, else the groups that are not (at most ``limit``)."""
    by_hash: dict[str, list[str]] = defaultdict(list)
    for url, digest in answer.body_hashes.items():
        by_hash[digest].append(url)
    groups = sorted(sorted(g) for g in by_hash.values() if len(g) > 1)
    bad = []
    for urls in groups:
        rows = {u: answer.rows.get(u) for u in urls}
        missing = [u for u, r in rows.items() if r is None]
        if missing:
            bad.append(f"  {missing}: stored, but not in the pages table")
            continue
        copies = [
            u for u, r in rows.items() if r["verdict"] == "duplicate" and r["kind"] == "exact"
        ]
        rest = [u for u in urls if u not in copies]
        named = {rows[u]["duplicate_of"] for u in copies}
        if len(rest) != 1:
            why = f"{len(rest)} of {len(urls)} pages are not exact duplicates"
        elif named != set(rest):
            why = f"the exact duplicates name {sorted(named)}, not {rest[0]}"
        elif rows[rest[0]]["verdict"] != "original" or rows[rest[0]]["duplicate_of"]:
            r = rows[rest[0]]
            why = f"the page they name is {r['verdict'] or '(no verdict)'}, not original"
            why += f" (a copy of {r['duplicate_of']})" if r["duplicate_of"] else ""
        else:
            continue
        shown = "\n".join(
            f"      {u:<60} {r['verdict']:<14} {r['kind'] or '-':<8} -> {r['duplicate_of'] or '-'}"
            for u, r in rows.items()
            if r is not None
        )
        bad.append(f"  {why}:\n{shown}")
    if not bad:
        return ""
    head = (
        f"{answer.label}: {len(bad)} of {len(groups)} groups of byte-identical pages are not "
        "one original and its exact duplicates"
    )
    more = [f"  ... and {len(bad) - limit} more"] if len(bad) > limit else []
    return "\n".join([head, *bad[:limit], *more])
