"""Stored page bodies: compressed (:mod:`visdup.storage.compressed`), and without
SQLAlchemy, so that an analysis worker process can pack a body where it already holds it."""

from __future__ import annotations

from visdup.storage.compressed import compress, decompress


def pack_body(body: bytes | None) -> bytes | None:
    return None if body is None else compress(body)


def unpack_body(blob: bytes | None) -> bytes | None:
    return None if blob is None else decompress(blob)
