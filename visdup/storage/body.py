"""Stored page bodies: compressed, and without SQLAlchemy, so that an analysis worker
process can pack a body where it already holds it."""

from __future__ import annotations

import zlib


def pack_body(body: bytes | None) -> bytes | None:
    return None if body is None else zlib.compress(body, 1)  # crawl time matters more than bytes


def unpack_body(blob: bytes | None) -> bytes | None:
    return None if blob is None else zlib.decompress(blob)
