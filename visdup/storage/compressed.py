"""Bytes kept compressed: page bodies in the store, template samples' trees in memory.

Zstandard at level 1 where Python has it (the standard library's ``compression.zstd`` from
3.14, the ``backports.zstd`` package before): faster than zlib at its fastest level, both
ways, and smaller (``docs/performance.md``). zlib where neither is installed. Every reader
tells the two apart by the first bytes, so a store keeps what any earlier run of visdup
wrote: a zstd frame starts with its magic number, which no zlib stream can (its first two
bytes, read as a number, are a multiple of 31; the magic's are not).
"""

from __future__ import annotations

import threading
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


#: Each thread's compressor (:func:`compress`).
_thread = threading.local()


def compress(data: bytes) -> bytes:
    """``data`` compressed for keeping: crawl time matters more than bytes (level 1).

    One compressor a thread, each call a whole frame: the frame is the one ``zstd.compress``
    writes (the same bytes), without a new compression context, its tables made and cleared
    anew, for every page. A call that fails leaves its compressor, which may hold half a
    frame, to be made again."""
    if zstd is None:
        return zlib.compress(data, 1)
    compressor = getattr(_thread, "compressor", None)
    if compressor is None:
        compressor = _thread.compressor = zstd.ZstdCompressor(level=1)
    try:
        frame: bytes = compressor.compress(data, mode=zstd.ZstdCompressor.FLUSH_FRAME)
    except BaseException:
        _thread.compressor = None
        raise
    return frame


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
