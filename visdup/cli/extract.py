"""visdup extract PATH... --out FILE: one record per page from its cluster's template."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visdup import config
from visdup.cli.output import add_engine_arguments, open_engine, read_source
from visdup.cli.similarity import add_threshold_argument, cluster_similarity
from visdup.errors import InputError
from visdup.escape import one_line
from visdup.page.files import PageFiles, add_source_arguments
from visdup.templates.extract import extract_pages, write_dataset

HELP = "cluster page files, infer a template per cluster and write its fields (.jsonl or .csv)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE", help="output file, .jsonl or .csv")
    add_threshold_argument(parser)
    add_engine_arguments(parser)
    parser.add_argument(
        "--min-cluster-size",
        type=int,
        default=config.VISDUP_TEMPLATE_MIN_PAGES,
        help=(
            "clusters smaller than this get no template of their own; their pages take the "
            f"template they fit best (default {config.VISDUP_TEMPLATE_MIN_PAGES}, as a crawl)"
        ),
    )
    parser.add_argument(
        "--min-fit",
        type=float,
        default=config.VISDUP_EXTRACT_MIN_FIT,
        help=(
            "share of a template's required nodes a page must map "
            f"(default {config.VISDUP_EXTRACT_MIN_FIT}, as VISDUP_EXTRACT_MIN_FIT)"
        ),
    )


def run(args: argparse.Namespace) -> int:
    if Path(args.out).suffix.lower() not in {".jsonl", ".csv"}:
        raise InputError(f"--out must end in .jsonl or .csv, not {args.out!r}")
    threshold = cluster_similarity(args)
    if not 0.0 <= args.min_fit <= 1.0:
        raise InputError(f"--min-fit must be between 0 and 1, not {args.min_fit}")
    files = PageFiles(args.paths)
    source = read_source(args, files)
    if source is None:  # every file given was bad, and each said why
        return files.status
    pages, store = source
    engine = open_engine(args)
    try:
        dataset = extract_pages(
            pages,
            threshold=threshold,
            min_cluster_size=max(1, args.min_cluster_size),
            min_fit=args.min_fit,
            engine=engine,
        )
    finally:
        engine.close()
    if store is None:  # page files: rows name a path, not a URL
        dataset.key = "path"
        for record in dataset.records:
            record["path"] = record.pop("url")
            record.update({k: record.pop(k) for k in list(record) if k != "path"})
    else:
        store.save_templates(
            [t.to_dict() for t in dataset.templates],
            dataset.records,
            dataset.clusters,
            representatives=dataset.representatives,
        )
        store.close()
    try:
        count = write_dataset(dataset, args.out)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    fitted = sum(1 for r in dataset.records if r["fits"])
    print(
        f"{count} records, {fitted} fit one of {len(dataset.templates)} templates "
        f"-> {one_line(args.out)}",
        file=sys.stderr,
    )
    return files.status
