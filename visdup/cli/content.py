"""`visdup content PATH...`: the title and main text of saved pages."""

from __future__ import annotations

import argparse
import json
import sys

from visdup.content.denoise import extract
from visdup.page.files import iter_pages

HELP = "print the title and main content text of saved HTML pages"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="HTML files (.html, .htm, or their .gz); directories are searched recursively",
    )
    parser.add_argument(
        "--json", action="store_true", help='one JSON object per line: {"path", "title", "text"}'
    )


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    for path, data in iter_pages(args.paths):
        content = extract(data)
        if args.json:
            record = {"path": path, "title": content.title, "text": content.text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            out.write(f"==> {path} <==\n# {content.title or '(no title)'}\n\n")
            out.write(content.text + ("\n\n" if content.text else "\n"))
    return 0
