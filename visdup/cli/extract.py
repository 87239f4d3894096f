"""visdup extract PATH... --out FILE: one record per page from its cluster's template."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visdup.errors import InputError
from visdup.page.files import add_source_arguments, open_source
from visdup.templates.cluster import DEFAULT_THRESHOLD
from visdup.templates.extract import DEFAULT_MIN_FIT, extract_pages, write_dataset

HELP = "cluster page files, infer a template per cluster and write its fields (.jsonl or .csv)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE", help="output file, .jsonl or .csv")
    parser.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"largest STM distance within a cluster, 0..1 (default {DEFAULT_THRESHOLD})",
    )
    parser.add_argument(
        "--min-cluster-size",
        type=int,
        default=2,
        help="clusters smaller than this get no template of their own (default 2)",
    )
    parser.add_argument(
        "--min-fit",
        type=float,
        default=DEFAULT_MIN_FIT,
        help="share of a template's required nodes a page must map (default 0.95)",
    )


def run(args: argparse.Namespace) -> int:
    if Path(args.out).suffix.lower() not in {".jsonl", ".csv"}:
        raise InputError(f"--out must end in .jsonl or .csv, not {args.out!r}")
    if not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold must be between 0 and 1, not {args.threshold}")
    if not 0.0 <= args.min_fit <= 1.0:
        raise InputError(f"--min-fit must be between 0 and 1, not {args.min_fit}")
    pages, store = open_source(args)
    dataset = extract_pages(
        pages,
        threshold=args.threshold,
        min_cluster_size=max(1, args.min_cluster_size),
        min_fit=args.min_fit,
    )
    if store is None:  # page files: rows name a path, not a URL
        dataset.key = "path"
        for record in dataset.records:
            record["path"] = record.pop("url")
            record.update({k: record.pop(k) for k in list(record) if k != "path"})
    else:
        store.save_templates([t.to_dict() for t in dataset.templates], dataset.records)
        store.close()
    try:
        count = write_dataset(dataset, args.out)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    fitted = sum(1 for r in dataset.records if r["fits"])
    print(
        f"{count} records, {fitted} fit one of {len(dataset.templates)} templates -> {args.out}",
        file=sys.stderr,
    )
    return 0
