"""visdup drift --db URL: what changed between two snapshots of a crawl, template by template.

Each alarm says why in words: a layout's median fit against the baseline's template, a field's
counts and p-value ("price emptied (filled 30/30 → 2/30, p < 0.001)"). Notes (what moved with
too little evidence to alarm, templates only regrouped) follow the alarms and never fail a run.

Exit status: 0, or 1 with ``--fail-on LEVEL`` when an alarm at that level (or above) exists, for
cron and CI; 2 bad input (no such store or snapshot).
"""

from __future__ import annotations

import argparse
import json
import sys

from visdup import config

HELP = "drift alarms: a snapshot of a crawl against an earlier one (layout, fields, templates)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", help=f"SQLAlchemy URL of the store (default {config.VISDUP_DATABASE_URL})"
    )
    parser.add_argument(
        "--baseline", metavar="NAME", help="the snapshot compared with (default: the one before)"
    )
    parser.add_argument(
        "--current", metavar="NAME", help="the snapshot checked (default: the last one measured)"
    )
    parser.add_argument(
        "--json", action="store_true", help='{"alarms": [...], "notes": [...]} on one line'
    )
    parser.add_argument(
        "--fail-on",
        choices=("warning", "error"),
        help="exit with status 1 when an alarm at this level (or above) exists",
    )


def run(args: argparse.Namespace) -> int:
    from visdup.drift.alarms import drift
    from visdup.drift.compare import at_level
    from visdup.escape import one_line
    from visdup.storage.store import Store

    store = Store.from_url(args.db or config.VISDUP_DATABASE_URL, create=False, migrate=False)
    try:
        result = drift(store, baseline=args.baseline, current=args.current)
    finally:
        store.close()
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    else:
        out = sys.stdout
        if result.current is None:
            out.write("no snapshot in this store yet\n")
        elif result.baseline is None:
            out.write(f"snapshot {one_line(result.current.name)}: no earlier snapshot\n")
        else:
            counts = result.counts()
            notes = f", {counts['note']} notes" if counts["note"] else ""
            out.write(
                f"snapshot {one_line(result.current.name)} against "
                f"{one_line(result.baseline.name)}: {result.templates} templates, "
                f"{len(result.alarms)} alarms ({counts['error']} errors, "
                f"{counts['warning']} warnings){notes}\n"
            )
        for alarm in [*result.alarms, *result.notes]:
            out.write(f"  {one_line(alarm.line())}\n")
            where = alarm.where or {}
            for key in ("before", "after"):
                if where.get(key):
                    out.write(f"      {key}: {one_line(where[key])}\n")
    if args.fail_on and at_level(result.alarms, args.fail_on):
        return 1
    return 0
