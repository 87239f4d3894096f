"""Bytes kept compressed: page bodies in the store, template samples' trees in memory.

Zstandard at level 1 where Python has it (the standard library's ``compression.zstd`` from
3.14, the ``backports.zstd`` package before): faster than zlib at its fastest level, both
ways, and smaller (``docs/performance.md``). zlib where neither is installed. Every reader
tells the two apart by the first bytes, so a store keeps what any earlier run of visdup
wrote: a zstd frame starts with its magic number, which no zlib stream can (its first two
bytes, read as a number, are a multiple of 31; the magic's are not).
"""

from __future__ import annotations

import zlib
from types import ModuleType

__all__ = ["ZSTD_MAGIC", "compress", "decompress", "zstd"]


def _zstd() -> ModuleType | None:
    try:
        from compression import zstd as module
    except ImportError:
        try:
            from backports import zstd as module
        except ImportError:
            return None
    return module


#: The Zstandard module, or None (then what is written is zlib's).
zstd = _zstd()
#: How a zstd frame begins (the frame's magic number, little-endian).
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def compress(data: bytes) -> bytes:
    """``data`` compressed for keeping: crawl time matters more than bytes (level 1)."""
    if zstd is not None:
        return zstd.compress(data, 1)
    return zlib.compress(data, 1)


def decompress(blob: bytes) -> bytes:
    """What :func:`compress` was given, whichever of the two formats ``blob`` is in."""
    if blob[:4] == ZSTD_MAGIC:
        if zstd is None:
            raise RuntimeError(
                "these bytes are Zstandard-compressed and no zstd module is installed"
                " (pip install backports.zstd)"
            )
        return zstd.decompress(blob)
    return zlib.decompress(blob)
