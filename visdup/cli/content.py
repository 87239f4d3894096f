"""`visdup content PATH...`: the title and main text of saved pages."""

from __future__ import annotations

import argparse
import json
import sys

from visdup.content import extract
from visdup.content.titles import SiteTitles
from visdup.escape import one_line, terminal
from visdup.page.files import PageFiles

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
    files = PageFiles(args.paths)
    # the titles lose the affixes the pages share (a site's name), learned over all of them
    titles = SiteTitles()
    pages = []
    for path, data in files:
        content = extract(data)
        titles.own(path, content.title)
        pages.append((path, content))
    for path, content in pages:
        own = titles.final(path, content.title)
        if args.json:
            record = {"path": path, "title": own, "text": content.text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            title = one_line(own) if own else "(no title)"
            out.write(f"==> {one_line(path)} <==\n# {title}\n\n")
            out.write(terminal(content.text) + ("\n\n" if content.text else "\n"))
    return files.status
