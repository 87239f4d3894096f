"""visdup cluster PATH...: group page files by template (Simple Tree Matching, CURE-style)."""

from __future__ import annotations

import argparse
import json

from visdup.cli.output import PageFiles, add_engine_arguments, open_engine, read_source
from visdup.cli.similarity import add_threshold_argument, cluster_distance
from visdup.escape import terminal
from visdup.page.files import add_source_arguments
from visdup.templates.cluster import cluster_trees
from visdup.templates.extract import page_trees

HELP = "group page files (directories recursively) into template clusters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help='{"clusters": [{"id", "size", ...}]}')
    add_threshold_argument(parser)
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    distance = cluster_distance(args)
    files = PageFiles(args.paths)
    source = read_source(args, files)
    if source is None:  # every file given was bad, and each said why
        return files.status
    pages, store = source
    engine = open_engine(args)
    try:
        trees = page_trees(pages, engine=engine)
    finally:
        engine.close()
    clusters = cluster_trees(trees.items(), threshold=distance)
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
        return files.status
    for c in clusters:
        print(f"cluster {c.id}  size {c.size}  representative {terminal(c.representative)}")
        for member in c.members:
            print(f"  {terminal(member)}")
    return files.status
