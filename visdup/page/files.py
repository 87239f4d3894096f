"""Page files given on a command line: directories walked, .gz read, errors made plain."""

from __future__ import annotations

import argparse
import gzip
import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from visdup.errors import InputError

if TYPE_CHECKING:
    from visdup.storage.store import Store

SUFFIXES = (".html", ".htm", ".html.gz", ".htm.gz")
#: Larger files are refused: a page file this big is not a page.
MAX_FILE_BYTES = 64 * 1024 * 1024


def page_paths(paths: Sequence[str]) -> Iterator[Path]:
    """Files as given, directories recursively (.html, .htm and their .gz), sorted."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES)
            )
            yield from found
        elif path.exists():
            yield path
        else:
            raise InputError(f"{raw}: no such file or directory")


def read_page(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"{path}: {size} bytes is too large for a page")
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            with gzip.GzipFile(fileobj=__import__("io").BytesIO(data)) as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise InputError(f"{path}: inflates beyond {MAX_FILE_BYTES} bytes")
        return data
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read: {reason}") from exc


def iter_pages(paths: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    for path in page_paths(paths):
        yield os.fspath(path), read_page(path)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH... or --db URL: page files, or the pages a crawl stored."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help=".html/.htm files (.gz too), dirs")
    parser.add_argument("--db", metavar="URL", help="use the pages stored in this visdup store")


def open_source(args: argparse.Namespace) -> tuple[list[tuple[str, bytes]], Store | None]:
    """The (key, body) pairs to work on, and the store they came from (None for files)."""
    from visdup.storage.store import Store

    if bool(args.paths) == bool(args.db):
        raise InputError("give page files (PATH...) or --db URL, not both and not neither")
    if args.db:
        if args.db.startswith("sqlite:///") and not Path(args.db[len("sqlite:///") :]).exists():
            raise InputError(f"no store at {args.db}")
        store = Store.from_url(args.db)
        pages = [(url, body) for _id, url, body in store.page_bodies()]
        if not pages:
            raise InputError(f"{args.db} holds no stored page bodies (VISDUP_STORE_BODY off?)")
        return pages, store
    pages = list(iter_pages(args.paths))
    if not pages:
        raise InputError("no .html or .htm files found")
    return pages, None
