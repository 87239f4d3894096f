"""Page files given on a command line: directories walked, .gz read, errors made plain."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from visdup.errors import InputError

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
