"""visdup report: pages, duplicate groups, verdicts and templates stored by crawls.

``--html FILE`` writes the site-audit page, ``--pages FILE`` the per-page table, and
``--threshold`` / ``--content-threshold`` recompute verdicts from the store without fetching
anything, ``--cluster-threshold`` cuts the template clusters again from the stored pages'
layout signatures (``--save`` stores either in place of the crawl's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visdup.config import VISDUP_DATABASE_URL
from visdup.report import MAX_ROWS

HELP = "summarise a visdup store: duplicate groups, verdicts, templates (text, JSON, HTML, table)"


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=VISDUP_DATABASE_URL, help="SQLAlchemy URL of the store")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--html", metavar="FILE", help="write the site-audit report as one HTML file"
    )
    parser.add_argument(
        "--pages", metavar="FILE", help="write one row per page (.jsonl or .csv by suffix)"
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=MAX_ROWS,
        metavar="N",
        help=f"rows of the HTML pages table (default {MAX_ROWS}; --pages FILE has them all)",
    )
    parser.add_argument(
        "--threshold",
        type=_fraction,
        metavar="θ",
        help="re-analyse at this structural near-duplicate threshold (no fetching)",
    )
    parser.add_argument(
        "--template-threshold",
        type=_fraction,
        metavar="θ",
        help=(
            "re-analyse duplicates: the duplicate channel's template floor, the similarity at"
            " which two pages of one template count as near-duplicates (clusters unchanged)"
        ),
    )
    parser.add_argument(
        "--cluster-threshold",
        type=_fraction,
        metavar="θ",
        help=(
            "re-cut template clusters: layout-signature similarity at which two pages share a"
            " template (as VISDUP_CLUSTER_THRESHOLD; higher: more, tighter templates), read"
            " from the stored pages without fetching"
        ),
    )
    parser.add_argument(
        "--content-threshold", type=_fraction, metavar="θ", help="re-analyse: content threshold"
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help=(
            "store the re-analysed verdicts, or the re-cut clusters, in place of the crawl's"
            " (default: report only)"
        ),
    )


def _recut(args: argparse.Namespace, store: Any, data: Any) -> Any:
    """``data`` with its templates re-cut at ``--cluster-threshold`` (saved with ``--save``)."""
    from visdup.report.recut import recut

    data, read = recut(store, data, args.cluster_threshold, save=args.save)
    kept = "saved to the store" if args.save else "stored clusters unchanged"
    print(
        f"templates re-cut at {args.cluster_threshold:.2f} from {read} stored pages ({kept})",
        file=sys.stderr,
    )
    return data


def run(args: argparse.Namespace) -> int:
    from visdup import __version__
    from visdup.errors import InputError
    from visdup.escape import terminal
    from visdup.report import data as store_data
    from visdup.report.summary import build, duplicate_groups, render_json, render_text
    from visdup.storage.store import Store

    for option in ("html", "pages"):
        target = getattr(args, option)
        if target and not Path(target).resolve().parent.is_dir():
            raise InputError(f"--{option}: no directory for {target}")
    reanalyse = any(
        v is not None for v in (args.threshold, args.template_threshold, args.content_threshold)
    )
    recut = args.cluster_threshold is not None
    if args.save and not (reanalyse or recut):
        raise InputError(
            "--save stores re-analysed verdicts or re-cut clusters: give --threshold,"
            " --content-threshold or --cluster-threshold"
        )
    store = Store.from_url(args.db, create=False, migrate=False)
    data = store_data.load(store, args.db)
    if recut:
        data = _recut(args, store, data)
    comparisons, missing = store_data.load_comparisons(store)
    similarities = None
    if reanalyse:
        from visdup.report.reanalysis import Thresholds, save
        from visdup.report.reanalysis import reanalyse as replay

        thresholds = Thresholds.of(
            data.settings,
            similarity=args.threshold,
            template=args.template_threshold,
            content=args.content_threshold,
        )
        data, similarities = replay(store, data, thresholds, comparisons, missing)
        if args.save:
            save(store, data)
            data.source = data.source.replace(
                "stored crawl verdicts unchanged", "saved to the store"
            )
        print(f"verdicts from {data.source}", file=sys.stderr)
    if similarities is None:
        similarities = store_data.similarities(data.pages, data.settings, comparisons, missing)
    report = build(data)
    report["similarities"] = similarities.as_json(data.settings)
    wrote = []
    if args.pages:
        from visdup.report.pages import page_rows, write_pages

        n = write_pages(Path(args.pages), page_rows(data, duplicate_groups(data.pages)))
        wrote.append(f"{n} pages to {args.pages}")
    if args.html:
        from visdup.report.html import render_html
        from visdup.structure.term import Term

        def load_terms(ids: list[int]) -> dict[int, Term]:
            return {i: Term.parse(t) for i, t in store_data.terms(store, ids).items()}

        text = render_html(
            data,
            load_terms=load_terms,
            similarities=similarities,
            max_rows=max(0, args.rows),
            pages_file=args.pages,
            version=__version__,
        )
        try:
            Path(args.html).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {args.html}: {exc.strerror or exc}") from exc
        wrote.append(f"the report to {args.html} ({len(text.encode()) / 1024:.0f} KiB)")
    if wrote:
        print("wrote " + " and ".join(wrote), file=sys.stderr)
        if not args.json:
            return 0
    print(render_json(report) if args.json else terminal(render_text(report)))
    return 0
