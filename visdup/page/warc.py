"""Pages from WARC files (Common Crawl, Browsertrix, ``wget --warc-file``).

Every HTML response record becomes one page named by its ``WARC-Target-URI``, so ``visdup
dups``, ``cluster``, ``extract``, ``content`` and ``term`` give the same answers for a WARC as
for the same pages saved as files. Reading needs the optional ``warcio`` package
(``pip install 'visdup[warc]'``); the core install does not.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from visdup.errors import InputError
from visdup.page.parse import screen

logger = logging.getLogger(__name__)

SUFFIXES = (".warc", ".warc.gz")
#: Most bytes taken from one record's payload: a larger one is no page (the file reader's cap).
MAX_RECORD_BYTES = 64 * 1024 * 1024


def is_warc(path: Path | str) -> bool:
    return str(path).lower().endswith(SUFFIXES)


@dataclass
class WarcCounts:
    """What a WARC held besides the pages taken, for one summary line."""

    pages: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _archive_iterator():  # type: ignore[no-untyped-def]
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError:
        raise InputError("reading WARC files needs warcio: pip install 'visdup[warc]'") from None
    return ArchiveIterator


def _http_parser():  # type: ignore[no-untyped-def]
    from warcio.statusandheaders import StatusAndHeadersParser

    return StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)


#: Why a record was skipped when the file ended before its Content-Length did.
CUT_SHORT = "records cut short"


def iter_warc(
    path: Path | str, counts: WarcCounts | None = None
) -> Iterator[tuple[str, bytes, str | None]]:
    """(URI, body, content type) of every HTML 2xx response (or resource) record, in order.

    A URI seen twice keeps its first capture (later ones are re-crawls of the same page);
    revisit, request and metadata records, redirects, errors and non-HTML bodies are skipped
    and counted. A record the file ends inside (a download or copy cut short, or a
    Content-Length larger than the record) is skipped too, with a WARNING, rather than read
    as a partial page or dropped without a word. A damaged file raises InputError naming it.

    warcio reads each record's HTTP headers here, not in its own loader: the loader fails on a
    response record without a ``WARC-Target-URI`` (``'NoneType' object has no attribute
    'startswith'``), where such a record is only one to skip.
    """
    archive_iterator = _archive_iterator()
    http = _http_parser()
    counts = counts if counts is not None else WarcCounts()
    seen: set[str] = set()
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    records = 0
    end = 0  # where the last whole record ends in the file
    with fh:
        try:
            iterator = archive_iterator(fh, arc2warc=True, no_record_parse=True)
            for record in iterator:
                records += 1
                if not record.rec_type:  # junk warcio took for a header block: no record
                    raise InputError(
                        f"{path}: not a readable WARC file (record {records} has no type)"
                    )
                page, why = _page(record, http, seen)
                # read to the record's end: whether the file held all of it is known there
                offset, length = iterator.get_record_offset(), iterator.get_record_length()
                end = offset + length
                cut = _cut_short(record)
                if cut:
                    counts.skip(CUT_SHORT)
                    logger.warning(
                        "visdup: %s: record %d (%s) %s; it is skipped",
                        path,
                        records,
                        _uri(record) or "no URI",
                        cut,
                    )
                    continue
                if page is None:
                    counts.skip(why or "unreadable records")
                    continue
                seen.add(page[0])
                counts.pages += 1
                yield page
        except InputError:
            raise
        except OverflowError:
            raise InputError(
                f"{path}: not a readable WARC file (record {records + 1} declares a "
                "Content-Length larger than any file)"
            ) from None
        except Exception as exc:  # warcio raises plain exceptions on damaged archives
            raise InputError(f"{path}: not a readable WARC file ({exc})") from None
        size = fh.seek(0, 2)
        fh.seek(end)
        tail = fh.read(65536)
    _finished(path, counts, records, size - end, tail)


def _finished(path: Path, counts: WarcCounts, records: int, unread: int, tail: bytes) -> None:
    """What the end of a WARC file tells: nothing readable in it (an error), a last record
    cut off (``tail``: the ``unread`` bytes after the last whole record), what was skipped."""
    if not records and unread:  # junk warcio reads as blank lines: nothing, and no error
        raise InputError(f"{path}: not a readable WARC file (no record in {unread} bytes)")
    if tail.strip():  # a gzip member, or a record's header, cut off before its end
        counts.skip(CUT_SHORT)
        logger.warning(
            "visdup: %s: the file ends inside the record after record %d (its last %d bytes "
            "are not read): the file was cut short",
            path,
            records,
            unread,
        )
    if counts.skipped:
        logger.info(
            "visdup: %s: %d pages; skipped %s",
            path,
            counts.pages,
            ", ".join(f"{n} {why}" for why, n in sorted(counts.skipped.items())),
        )


def _cut_short(record) -> str | None:  # type: ignore[no-untyped-def]
    """How the file ended inside this record, or None when it holds the whole record."""
    declared = record.length
    if declared is None:  # WARC requires one: the header block itself was cut off
        return "has no Content-Length: the file ends inside its headers (cut short)"
    missing = getattr(record.raw_stream, "limit", 0) or 0
    if missing <= 0:
        return None
    return (
        f"declares {declared} bytes and the file holds {declared - missing} of them (cut "
        "short, or a wrong Content-Length)"
    )


def _uri(record) -> str:  # type: ignore[no-untyped-def]
    return (record.rec_headers.get_header("WARC-Target-URI") or "").strip().strip("<>")


def _page(  # type: ignore[no-untyped-def]
    record, http, seen: set[str]
) -> tuple[tuple[str, bytes, str | None] | None, str | None]:
    """The record's page, or None and why it is skipped (its body is read only for a page)."""
    kind = record.rec_type
    if kind not in {"response", "resource"}:
        return None, f"{kind} records"
    uri = _uri(record)
    if not uri:
        return None, "records without a URI"
    content_type: str | None
    if kind == "response":
        if not uri.lower().startswith(("http:", "https:")):
            return None, "responses without HTTP headers"
        try:
            record.http_headers = http.parse(record.raw_stream)
        except Exception:  # EOFError, or a first line that is no HTTP status line
            return None, "responses without HTTP headers"
        status = record.http_headers.get_statuscode() or ""
        if not status.startswith("2"):
            return None, f"{status or 'unknown'} responses"
        content_type = record.http_headers.get_header("Content-Type")
    else:
        content_type = record.rec_headers.get_header("Content-Type")
    if uri in seen:
        return None, "repeated captures"
    body = record.content_stream().read(MAX_RECORD_BYTES + 1)
    if len(body) > MAX_RECORD_BYTES:
        return None, "oversized records"
    problem = screen(body, content_type)
    if problem:
        return None, problem.split(" (")[0]
    return (uri, body, content_type), None
