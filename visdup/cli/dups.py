"""visdup dups PATH...: near-duplicate groups among page files, as a crawl would find them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from visdup.cli.output import add_engine_arguments, open_engine
from visdup.dedup.offline import label_files
from visdup.errors import InputError
from visdup.escape import one_line
from visdup.page.files import PageFiles
from visdup.report.summary import build_report

HELP = "near-duplicate groups among page files (exact, content, structural), like a crawl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="page files or directories")
    parser.add_argument("--json", action="store_true", help='{"groups": [...]} on one line')
    parser.add_argument("--db", help="keep the labels in this store instead of a temporary one")
    parser.add_argument(
        "--crawl-id",
        metavar="NAME",
        help="store the pages as the snapshot NAME (needs --db) and compare it with the "
        "previous one (visdup drift); files are named by their path under PATH",
    )
    add_engine_arguments(parser)
    parser.add_argument(
        "-s", "--set", action="append", default=[], metavar="NAME=VALUE", help="a visdup setting"
    )


def run(args: argparse.Namespace) -> int:
    from visdup.cli.crawl import parse_overrides

    overrides = parse_overrides(args.set)
    if args.crawl_id and not args.db:
        raise InputError("--crawl-id keeps a snapshot in a store: it needs --db")
    engine = open_engine(args)  # bad input (an unreachable scheduler) before any work
    snapshot = None
    if args.crawl_id:
        from visdup.drift.files import SiteNamedFiles, snapshot_files
        from visdup.storage.store import Store

        files: Any = SiteNamedFiles(args.paths)
        try:
            snapshot = snapshot_files(
                files, db=args.db, name=args.crawl_id, overrides=overrides, engine=engine
            )
        finally:
            engine.close()
        store, tmp = Store.from_url(args.db), None
    else:
        files = PageFiles(args.paths, whole=False)  # the analysis parses each page once
        try:
            store, tmp = label_files(
                files, db=args.db, overrides=overrides, engine=engine, refuse=files.refused
            )
        finally:
            engine.close()
    try:
        report = build_report(store)
    finally:
        store.close()
        if tmp:
            tmp.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                tmp.with_name(tmp.name + suffix).unlink(missing_ok=True)
    groups = [
        {
            "original": g["original"],
            "members": [
                {
                    "path": m["url"],
                    "similarity": m["similarity"],
                    "kind": m["kind"],
                    "content_similarity": m["content_similarity"],
                    "layout_similarity": m["layout_similarity"],
                }
                for m in g["members"]
            ],
        }
        for g in report["groups"]
    ]
    if args.json:
        payload: dict[str, Any] = {"groups": groups}
        if snapshot is not None:
            payload.update(snapshot=snapshot.snapshot, **snapshot.drift.to_dict())
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return files.status
    out = sys.stdout
    pages = report["pages"]
    out.write(f"{pages} page{'' if pages == 1 else 's'}, {len(groups)} duplicate groups\n")
    if report.get("verdicts"):
        out.write(
            "verdicts: " + ", ".join(f"{k} {v}" for k, v in report["verdicts"].items()) + "\n"
        )
    for g in groups:
        out.write(f"\n{one_line(g['original'])}\n")
        for m in g["members"]:
            sim = "    -" if m["similarity"] is None else f"{m['similarity']:.3f}"
            out.write(f"  {m['kind']:<10} {sim}  {one_line(m['path'])}\n")
    if snapshot is not None:
        result = snapshot.drift
        against = result.baseline.name if result.baseline else "no earlier snapshot"
        out.write(
            f"\nsnapshot {one_line(snapshot.snapshot)}: {snapshot.pages} pages, "
            f"{len(result.alarms)} drift alarms against {one_line(against)}\n"
        )
        for alarm in result.alarms:
            out.write(f"  {one_line(alarm.line())}\n")
    return files.status
