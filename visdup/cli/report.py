"""visdup report: pages, duplicate groups, verdicts and templates stored by crawls."""

from __future__ import annotations

import argparse

from visdup.config import VISDUP_DATABASE_URL
from visdup.report.summary import build_report, render_json, render_text
from visdup.storage.store import Store

HELP = "summarise a visdup store: duplicate groups, verdicts, templates"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=VISDUP_DATABASE_URL, help="SQLAlchemy URL of the store")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from visdup.errors import InputError

    if args.db.startswith("sqlite:///") and not Path(args.db[len("sqlite:///") :]).exists():
        raise InputError(f"no store at {args.db}")
    report = build_report(Store.from_url(args.db))
    print(render_json(report) if args.json else render_text(report))
    return 0
