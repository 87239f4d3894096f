"""The report's drift section: the last snapshot against the one before, as data, text, HTML."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from visdup.escape import one_line

if TYPE_CHECKING:
    from visdup.report.markup import Safe
    from visdup.storage.store import Store

logger = logging.getLogger(__name__)


def drift_section(store: Store) -> dict[str, Any] | None:
    """``{"current", "baseline", "templates", "alarms": [...]}``; None without snapshots."""
    from visdup.drift.alarms import drift
    from visdup.drift.snapshot import has_tables, list_snapshots

    try:
        if not has_tables(store):
            return None
        result = drift(store)
        if result.current is None:
            return None
        section = result.to_dict()
        section["snapshots"] = len(list_snapshots(store))
        return section
    except Exception:  # the report goes on without its drift section
        logger.exception("visdup: cannot compare the store's snapshots")
        return None


def _line(alarm: dict[str, Any]) -> str:
    """What ``visdup drift`` prints for an alarm or a note: why, with its counts."""
    from visdup.drift.fields import field_text

    head = f"#{alarm['template']}"
    if alarm.get("replaced_by") is not None:
        head += f" → #{alarm['replaced_by']}"
    text = f"{alarm['severity']}: template {head} {alarm['change']}"
    if alarm.get("detail"):
        text += f": {alarm['detail']}"
    if alarm.get("fields"):
        text += "; fields " + ", ".join(field_text(f) for f in alarm["fields"])
    if alarm.get("since"):
        text += f" (since {alarm['since']})"
    return text


def _headline(section: dict[str, Any]) -> str:
    notes = len(section.get("notes") or [])
    return (
        f"snapshot {section['current']} against {section['baseline']}: "
        f"{len(section['alarms'])} alarms over {section['templates']} templates"
        + (f", {notes} notes (too little evidence to alarm, or only regrouped)" if notes else "")
    )


def text_lines(section: dict[str, Any] | None) -> list[str]:
    """The section for ``visdup report`` (empty without snapshots): the alarms, then the
    notes."""
    if not section:
        return []
    current = one_line(section["current"])
    if not section.get("baseline"):
        return ["", f"drift: snapshot {current}, no earlier snapshot to compare with"]
    lines = ["", f"drift: {one_line(_headline(section))}"]
    for alarm in [*section["alarms"], *(section.get("notes") or [])]:
        lines.append(f"  {one_line(_line(alarm))}")
        where = alarm.get("where") or {}
        if where.get("path"):
            lines.append(f"      at {one_line(where['path'])}")
    return lines


def html_section(section: dict[str, Any] | None) -> Safe:
    """The section for the HTML report (a short note without snapshots)."""
    from visdup.report.markup import tag

    if not section:
        body: list[Any] = [
            tag(
                "p",
                {"class": "muted"},
                "no snapshots: crawl again with --crawl-id (or on another day) to compare",
            )
        ]
    elif not section.get("baseline"):
        body = [tag("p", {"class": "muted"}, f"snapshot {section['current']}: nothing earlier")]
    else:
        rows = []
        for alarm in [*section["alarms"], *(section.get("notes") or [])]:
            where = alarm.get("where") or {}
            detail = [tag("div", None, _line(alarm))]
            if where.get("path"):
                detail.append(tag("div", None, tag("code", None, where["path"])))
            for key in ("before", "after"):
                if where.get(key):
                    detail.append(tag("div", {"class": "muted"}, f"{key}: ", where[key]))
            muted = " muted" if alarm["severity"] == "note" else ""
            rows.append(
                tag("li", {"class": f"drift-{alarm['severity']}{muted}"}, detail),
            )
        body = [
            tag("p", None, _headline(section)),
            tag("ul", None, rows) if rows else "",
        ]
    return tag("section", {"id": "drift"}, tag("h2", None, "Drift"), body)
