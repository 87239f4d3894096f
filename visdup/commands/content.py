"""`visdup content PATH...`: the title and main text of saved pages."""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from visdup.denoise import extract
from visdup.errors import InputError

logger = logging.getLogger(__name__)

HELP = "print the title and main content text of saved HTML pages"

_SUFFIXES = (".html", ".htm", ".html.gz", ".htm.gz")
#: Inflated size above which a gzip file is refused (a small bomb inflates to gigabytes).
MAX_PAGE_BYTES = 64 * 1024 * 1024


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


def _is_page(path: Path) -> bool:
    return path.name.lower().endswith(_SUFFIXES)


def _pages(paths: list[str]) -> Iterator[Path]:
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _is_page(p))
            if not found:
                logger.warning("No .html/.htm files under %s", path)
            yield from found
        elif path.is_file():
            yield path
        else:
            raise InputError(f"{name}: no such file or directory")


def _read(path: Path) -> bytes:
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read(MAX_PAGE_BYTES + 1)
            if len(data) > MAX_PAGE_BYTES:
                raise InputError(f"{path}: inflates beyond {MAX_PAGE_BYTES // 2**20} MiB")
            return data
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    for path in _pages(args.paths):
        content = extract(_read(path))
        if args.json:
            record = {"path": str(path), "title": content.title, "text": content.text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            out.write(f"==> {path} <==\n")
            out.write(f"# {content.title or '(no title)'}\n\n")
            out.write(content.text + ("\n\n" if content.text else "\n"))
    return 0
