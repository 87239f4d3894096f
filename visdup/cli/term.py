"""visdup term PATH...: the irreducible term of each page file."""

from __future__ import annotations

import argparse
import json
import sys

from visdup.escape import terminal
from visdup.page.files import PageFiles
from visdup.structure.term import page_term

HELP = "print the irreducible visual term of page files (directories recursively)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help=".html/.htm files (or .gz), directories"
    )
    parser.add_argument(
        "--json", action="store_true", help='one {"path","term","size","nodes"} per line'
    )


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    files = PageFiles(args.paths)
    for path, doc in files.documents():
        term = page_term(doc)
        if args.json:
            record = {"path": path, "term": str(term), "size": term.size, "nodes": term.nodes}
            out.write(json.dumps(record) + "\n")
        else:
            out.write(f"{terminal(path)}\t{term}\n")
    return files.status
