"""What every command shares: one error line, page files read under one rule.

Bad input, wherever it is found, is one line ``visdup: error: ...`` on stderr, with control
characters escaped (a file name or a page title can carry terminal escapes), and the command
exits with status 2 once it has done what the good input allows.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from visdup.engine import ENGINES, Engine, make_engine
from visdup.errors import InputError
from visdup.escape import one_line
from visdup.page.files import check_document, load_page, open_source, page_paths, read_page
from visdup.page.parse import Document, parse_html
from visdup.page.warc import is_warc, iter_warc

if TYPE_CHECKING:
    from visdup.storage.store import Store

#: Exit status for bad input (files, options, settings, URLs).
BAD_INPUT = 2


def error(message: object) -> None:
    """Print one ``visdup: error:`` line on stderr, escaped so that a terminal only shows it."""
    print(f"visdup: error: {one_line(message)}", file=sys.stderr, flush=True)


class PageFiles:
    """The page files under PATH...: bad ones reported one line each and skipped.

    ``failed`` counts them, so a command exits with :data:`BAD_INPUT` after printing what
    the good files gave. With ``whole=True`` each page is also parsed, and a page the parser
    could not read whole (nested deeper than its limit) is refused like an unreadable one.
    """

    def __init__(self, paths: Sequence[str], *, whole: bool = True):
        self.paths = paths
        self.whole = whole
        self.failed = 0

    def _files(self) -> Iterator[Path]:
        for raw in self.paths:
            try:
                yield from page_paths([raw])
            except InputError as exc:
                self._fail(exc)

    def _fail(self, exc: InputError) -> None:
        self.failed += 1
        error(exc)

    def _warc(self, path: Path) -> Iterator[tuple[str, bytes]]:
        """The HTML responses of a WARC file, each named by its target URI."""
        try:
            yield from ((uri, body) for uri, body, _type in iter_warc(path))
        except InputError as exc:
            self._fail(exc)

    def _entries(self, path: Path) -> Iterator[tuple[str, bytes]]:
        """(name, bytes) of the pages one path holds: one file, or a WARC's records."""
        if is_warc(path):
            yield from self._warc(path)
            return
        try:
            yield os.fspath(path), read_page(path)
        except InputError as exc:
            self._fail(exc)

    def documents(self) -> Iterator[tuple[str, Document]]:
        """(path, parsed page) of every usable file."""
        for path in self._files():
            if is_warc(path):
                for uri, body in self._warc(path):
                    try:
                        yield uri, check_document(uri, parse_html(body, url=uri))
                    except InputError as exc:
                        self._fail(exc)
                continue
            try:
                yield os.fspath(path), load_page(path)
            except InputError as exc:
                self._fail(exc)

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        """(path, bytes) of every usable file (parsed once to check it when ``whole``)."""
        for path in self._files():
            for name, data in self._entries(path):
                try:
                    if self.whole:
                        check_document(name, parse_html(data))
                except InputError as exc:
                    self._fail(exc)
                    continue
                yield name, data

    @property
    def status(self) -> int:
        return BAD_INPUT if self.failed else 0


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """--engine local|dask [--scheduler ADDRESS]: where the per-page work runs."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="run the per-page analysis here (local) or on Dask (pip install 'visdup[dask]')",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT); without it, a local cluster on this machine",
    )


def open_engine(args: argparse.Namespace) -> Engine:
    return make_engine(args.engine, args.scheduler)


def read_source(
    args: argparse.Namespace, files: PageFiles
) -> tuple[list[tuple[str, bytes]], Store | None] | None:
    """The pages to work on (PATH... or --db), and their store; None when every file was bad.

    Each bad file has already said why, so the caller only exits with ``files.status``.
    """
    try:
        return open_source(args, iter(files))
    except InputError:
        if files.failed:
            return None
        raise
