"""visdup term PATH...: the irreducible term of each page file."""

from __future__ import annotations

import argparse
import json
import sys

from visdup.errors import InputError
from visdup.page.files import page_paths, read_page
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
    status = 0
    out = sys.stdout
    for file in page_paths(args.paths):
        path = str(file)
        try:
            term = page_term(read_page(file), base_url=path)
        except InputError as exc:
            message = str(exc) if str(exc).startswith(path) else f"{path}: {exc}"
            print(f"visdup: error: {message}", file=sys.stderr)
            status = 2
            continue
        if args.json:
            out.write(
                json.dumps(
                    {"path": path, "term": str(term), "size": term.size, "nodes": term.nodes}
                )
                + "\n"
            )
        else:
            out.write(f"{path}\t{term}\n")
    return status
