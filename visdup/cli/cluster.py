"""visdup cluster PATH...: group page files by template (Simple Tree Matching, CURE-style)."""

from __future__ import annotations

import argparse
import json

from visdup.errors import InputError
from visdup.page.files import add_source_arguments, open_source
from visdup.templates.cluster import DEFAULT_THRESHOLD, cluster_trees
from visdup.templates.stm import page_tree

HELP = "group page files (directories recursively) into template clusters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help='{"clusters": [{"id", "size", ...}]}')
    parser.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"largest STM distance within a cluster, 0..1 (default {DEFAULT_THRESHOLD})",
    )


def run(args: argparse.Namespace) -> int:
    if not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold must be between 0 and 1, not {args.threshold}")
    pages, store = open_source(args)
    trees = {key: page_tree(data, url=key) for key, data in pages}
    clusters = cluster_trees(trees.items(), threshold=args.threshold)
    if store is not None:  # the batch result replaces the crawl's online clusters
        ids = {url: page_id for page_id, url in store.rows("id", "url")}
        store.save_clusters(
            [
                {
                    "id": c.id,
                    "size": c.size,
                    "representative": c.representative,
                    "members": [ids[m] for m in c.members if m in ids],
                }
                for c in clusters
            ]
        )
        store.close()
    if args.json:
        print(json.dumps({"clusters": [c.to_dict() for c in clusters]}, indent=2))
        return 0
    for c in clusters:
        print(f"cluster {c.id}  size {c.size}  representative {c.representative}")
        for member in c.members:
            print(f"  {member}")
    return 0
