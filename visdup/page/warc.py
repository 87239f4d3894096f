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


def iter_warc(
    path: Path | str, counts: WarcCounts | None = None
) -> Iterator[tuple[str, bytes, str | None]]:
    """(URI, body, content type) of every HTML 2xx response (or resource) record, in order.

    A URI seen twice keeps its first capture (later ones are re-crawls of the same page);
    revisit, request and metadata records, redirects, errors and non-HTML bodies are skipped
    and counted. A damaged file raises InputError naming it.
    """
    archive_iterator = _archive_iterator()
    counts = counts if counts is not None else WarcCounts()
    seen: set[str] = set()
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    records = 0
    with fh:
        try:
            for record in archive_iterator(fh, arc2warc=True):
                records += 1
                if not record.rec_type:  # junk warcio took for a header block: no record
                    raise InputError(
                        f"{path}: not a readable WARC file (record {records} has no type)"
                    )
                page = _page(record, counts, seen)
                if page is not None:
                    counts.pages += 1
                    yield page
        except InputError:
            raise
        except Exception as exc:  # warcio raises plain exceptions on damaged archives
            raise InputError(f"{path}: not a readable WARC file ({exc})") from None
        size = fh.tell()
    if not records and size:  # junk warcio reads as blank lines: nothing, and no error
        raise InputError(f"{path}: not a readable WARC file (no record in {size} bytes)")
    if counts.skipped:
        logger.info(
            "visdup: %s: %d pages; skipped %s",
            path,
            counts.pages,
            ", ".join(f"{n} {why}" for why, n in sorted(counts.skipped.items())),
        )


def _page(record, counts: WarcCounts, seen: set[str]) -> tuple[str, bytes, str | None] | None:  # type: ignore[no-untyped-def]
    kind = record.rec_type
    if kind not in {"response", "resource"}:
        counts.skip(f"{kind} records")
        return None
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip().strip("<>")
    if not uri:
        counts.skip("records without a URI")
        return None
    content_type: str | None
    if kind == "response":
        if record.http_headers is None:
            counts.skip("responses without HTTP headers")
            return None
        status = record.http_headers.get_statuscode() or ""
        if not status.startswith("2"):
            counts.skip(f"{status or 'unknown'} responses")
            return None
        content_type = record.http_headers.get_header("Content-Type")
    else:
        content_type = record.rec_headers.get_header("Content-Type")
    if uri in seen:
        counts.skip("repeated captures")
        return None
    body = record.content_stream().read(MAX_RECORD_BYTES + 1)
    if len(body) > MAX_RECORD_BYTES:
        counts.skip("oversized records")
        return None
    problem = screen(body, content_type)
    if problem:
        counts.skip(problem.split(" (")[0])
        return None
    seen.add(uri)
    return uri, body, content_type
