"""visdup cluster PATH...: group pages by template (layout signatures, as a crawl does)."""

from __future__ import annotations

import argparse
import json

from visdup.cli.output import add_engine_arguments, open_engine, read_source
from visdup.cli.similarity import add_threshold_argument, cluster_similarity
from visdup.escape import terminal
from visdup.page.files import PageFiles, add_source_arguments
from visdup.report.recut import stored_items
from visdup.templates.extract import page_inputs
from visdup.templates.layout import layout_key
from visdup.templates.layouts import layout_clusters

HELP = "group page files (directories recursively) into template clusters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help='{"clusters": [{"id", "size", ...}]}')
    add_threshold_argument(parser)
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    threshold = cluster_similarity(args)
    files = PageFiles(args.paths)
    source = read_source(args, files)
    if source is None:  # every file given was bad, and each said why
        return files.status
    pages, store = source
    engine = open_engine(args)
    try:
        inputs = page_inputs(pages, engine=engine)
    finally:
        engine.close()
    clusters = layout_clusters(
        ((key, found.layout) for key, found in inputs.items()), threshold=threshold
    )
    if store is not None:  # the batch result replaces the crawl's online clusters
        ids = {url: page_id for page_id, url in store.rows("id", "url")}
        store.save_clusters(stored_items(clusters, inputs, ids), current_key=layout_key)
        store.close()
    if args.json:
        print(json.dumps({"clusters": [c.to_dict() for c in clusters]}, indent=2))
        return files.status
    for c in clusters:
        print(f"cluster {c.id}  size {c.size}  representative {terminal(c.representative)}")
        for member in c.members:
            print(f"  {terminal(member)}")
    return files.status
