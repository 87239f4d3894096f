"""Page files given on a command line: directories walked, .gz read, bad files refused plainly.

Every command that reads page files goes through :func:`read_page` (bytes) or
:func:`load_page` (a parsed, whole document), so a binary, empty, non-HTML, unreadable, special
or endless file gets the same one-line error everywhere. Reads are bounded: the file type is
checked before the file is opened (a FIFO or ``/dev/zero`` is refused, not read), and at most
:data:`MAX_FILE_BYTES` are read, since ``st_size`` cannot be trusted for every file.
"""

from __future__ import annotations

import argparse
import codecs
import gzip
import io
import mimetypes
import os
import stat
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from visdup.errors import BAD_INPUT, InputError
from visdup.escape import print_error
from visdup.page.parse import (
    HUGE_DEPTH_LIMIT,
    Document,
    bom_encoding,
    decode,
    parse_html,
    screen,
)
from visdup.page.warc import SUFFIXES as WARC_SUFFIXES
from visdup.page.warc import is_warc, iter_warc

if TYPE_CHECKING:
    from visdup.storage.store import Store

SUFFIXES = (".html", ".htm", ".html.gz", ".htm.gz")
#: Most bytes read from one page file (and inflated from one .gz): a file this big is not a page.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Media types of named files that are pages; any other known type (``.js``, ``.png``) is not.
_PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def page_paths(paths: Sequence[str]) -> Iterator[Path]:
    """Files as given; directories recursively (.html, .htm, their .gz, WARC files), sorted."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.name.lower().endswith(SUFFIXES + WARC_SUFFIXES)
            )
            yield from found
        elif path.exists() or path.is_symlink():
            yield path
        else:
            raise InputError(f"{raw}: no such file or directory")


def _media_type(path: Path) -> str | None:
    """The media type a file's name announces (``.gz`` looked through), or None if unknown."""
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    return mimetypes.guess_type(name, strict=False)[0]


def read_bounded(path: Path) -> bytes:
    """At most MAX_FILE_BYTES of a regular file; anything else is refused before it is opened."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        kind = next((word for test, word in _SPECIAL if test(info.st_mode)), "of an unknown type")
        raise InputError(f"{path}: not a regular file ({kind}); refused without reading")
    if info.st_size > MAX_FILE_BYTES:
        raise InputError(f"{path}: {info.st_size} bytes is too large for a page")
    # O_NONBLOCK: a file swapped for a FIFO between stat and open must not block the open.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise InputError(f"{path}: not a regular file; refused without reading")
        # asked for the bound itself, the read allocates it whole (64 MiB) for every file
        expected = min(opened.st_size, MAX_FILE_BYTES)
        data = fh.read(expected + 1)
        if len(data) > expected:  # it grew since: on to the bound
            data += fh.read(MAX_FILE_BYTES + 1 - len(data))
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES} bytes, too large for a page")
    return data


def read_page(path: Path) -> bytes:
    """The bytes of one page file, or InputError naming the file and saying what is wrong.

    Refused alike by every command: missing, unreadable, special (FIFO, device), too large,
    a broken .gz, empty, binary, or a type that is not HTML by its name (``x.js``).
    """
    try:
        data = read_bounded(path)
        if path.name.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise InputError(f"{path}: inflates beyond {MAX_FILE_BYTES} bytes")
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read: {reason}") from exc
    media = _media_type(path)
    problem = screen(data, media if media and media not in _PAGE_TYPES else None)
    if problem:
        raise InputError(f"{path}: {problem}")
    return data


def load_page(path: Path) -> Document:
    """A page file parsed whole, or InputError: a page the parser truncated is not read whole."""
    return check_document(path, parse_html(read_page(path)))


def check_document(path: Path | str, doc: Document) -> Document:
    """``doc`` when it is usable and whole, else InputError naming ``path``."""
    if not doc.ok:
        raise InputError(f"{path}: {doc.problem or 'no document'}")
    if doc.truncated:
        raise InputError(_not_whole(path))
    return doc


def _not_whole(path: Path | str) -> str:
    return (
        f"{path}: nested deeper than {HUGE_DEPTH_LIMIT} levels or too large: "
        "the parser dropped part of the page"
    )


class ParsedPage(Protocol):
    """What a page's analysis says of its parse (:class:`visdup.dedup.analysis.PageAnalysis`)."""

    @property
    def unread(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def problem(self) -> str | None: ...


def iter_pages(paths: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every page: a file's path, or a WARC record's target URI.

    The first bad file raises InputError.
    """
    for path in page_paths(paths):
        if is_warc(path):
            for uri, body, _type in iter_warc(path):
                yield uri, body
        else:
            yield os.fspath(path), read_page(path)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH... or --db URL: page files, or the pages a crawl stored."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help=".html/.htm files (.gz too), dirs")
    parser.add_argument("--db", metavar="URL", help="use the pages stored in this visdup store")


def as_read(body: bytes, encoding: str | None) -> bytes:
    """A stored body as the crawl read it.

    The crawl decoded it with the response's charset, which a header may have given and the
    body may not say: read again alone, such a body decodes another way, and its text, title,
    fields and template marks with it. Then it comes back as UTF-8 behind a byte order mark,
    which every reader takes first.
    """
    if not encoding or bom_encoding(body) is not None:
        return body
    try:
        wanted = codecs.lookup(encoding).name
        found, _text = decode(body)
        if codecs.lookup(found).name == wanted:
            return body
        text = body.decode(wanted, "replace")
    except (LookupError, ValueError):
        return body
    return codecs.BOM_UTF8 + text.encode("utf-8", "surrogatepass")


def open_source(
    args: argparse.Namespace, pages: Iterator[tuple[str, bytes]] | None = None
) -> tuple[list[tuple[str, bytes]], Store | None]:
    """The (key, body) pairs to work on, and the store they came from (None for files).

    ``pages`` replaces the plain file reader (the command line passes one that reports bad
    files and goes on).
    """
    from visdup.storage.store import Store

    if bool(args.paths) == bool(args.db):
        raise InputError("give page files (PATH...) or --db URL, not both and not neither")
    if args.db:
        store = Store.from_url(args.db, create=False, migrate=False)
        found = [(url, as_read(body, encoding)) for _id, url, body, encoding in store.page_bodies()]
        if not found:
            raise InputError(f"{args.db} holds no stored page bodies (VISDUP_STORE_BODY off?)")
        return found, store
    found = list(pages if pages is not None else iter_pages(args.paths))
    if not found:
        raise InputError("no usable .html or .htm files found")
    return found, None


class PageFiles:
    """The page files under PATH...: bad ones reported one line each and skipped.

    ``failed`` counts them, so a command exits with :data:`BAD_INPUT` after printing what
    the good files gave. With ``whole=True`` each page is also parsed, and a page the parser
    could not read whole (nested deeper than its limit) is refused like an unreadable one. A
    command whose analysis parses every page anyway takes ``whole=False`` and asks
    :meth:`refused` of each analysis instead: one parse a page, not two.
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
        print_error(exc)

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

    def refused(self, name: str, page: ParsedPage) -> bool:
        """Whether an analysed page is refused, as ``whole=True`` would have refused its file
        (said on one line, like any bad file)."""
        if page.unread:
            self._fail(InputError(f"{name}: {page.problem or 'no document'}"))
        elif page.truncated:
            self._fail(InputError(_not_whole(name)))
        else:
            return False
        return True

    @property
    def status(self) -> int:
        return BAD_INPUT if self.failed else 0
