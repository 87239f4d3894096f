"""Bytes kept compressed (visdup.storage.compressed): what is written reads back, whichever
format wrote it, so a store keeps its older bodies readable."""

from __future__ import annotations

import threading
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visdup.storage import compressed
from visdup.storage.body import pack_body, unpack_body
from visdup.templates.flat_tree import FlatTree, PackedTree

PAGE = (
    b"<html><head><title>A page</title></head><body>"
    + b"<div class='row'><p>Some text of the page, again and again.</p></div>" * 200
    + b"</body></html>"
)


def test_bodies_are_zstandard_where_python_has_it():
    if compressed.zstd is None:
        pytest.skip("no zstd module here: bodies are written with zlib")
    blob = pack_body(PAGE)
    assert blob is not None and blob.startswith(compressed.ZSTD_MAGIC)
    assert len(blob) < len(zlib.compress(PAGE, 1))  # smaller than what was written before
    assert unpack_body(blob) == PAGE


@given(st.binary(max_size=4096))
@settings(max_examples=200, deadline=None)
def test_either_format_reads_back(data):
    assert compressed.decompress(compressed.compress(data)) == data
    # what an earlier visdup wrote: a zlib stream, at any level
    for level in (1, 6, 9):
        written = zlib.compress(data, level)
        assert not written.startswith(compressed.ZSTD_MAGIC)
        assert compressed.decompress(written) == data


def test_no_zlib_stream_starts_like_a_zstd_frame():
    """A zlib stream's first two bytes, read as a big-endian number, are a multiple of 31:
    the frame's magic never is, so the two formats are told apart by their first bytes."""
    first_two = int.from_bytes(compressed.ZSTD_MAGIC[:2], "big")
    assert first_two % 31 != 0
    for wbits in range(9, 16):  # every window a zlib stream may declare
        for level in range(10):
            c = zlib.compressobj(level, zlib.DEFLATED, wbits)
            assert not (c.compress(PAGE) + c.flush()).startswith(compressed.ZSTD_MAGIC[:2])


def test_a_zstd_blob_without_the_module_says_what_is_missing(monkeypatch):
    if compressed.zstd is None:
        pytest.skip("no zstd module here to write a frame with")
    blob = compressed.compress(PAGE)
    monkeypatch.setattr(compressed, "zstd", None)
    with pytest.raises(RuntimeError, match="zstd"):
        compressed.decompress(blob)
    # zlib is still read, and written
    assert compressed.decompress(compressed.compress(PAGE)) == PAGE
    assert compressed.compress(PAGE).startswith(b"\x78")


def test_kept_trees_read_back_compressed_or_not():
    tree = FlatTree(
        ("div", "p", "#text", "p", "#text"),
        (5, 2, 1, 2, 1),
        ("", "", "first", "", "second"),
        ("div.row", "p", "", "p#x", ""),
    )
    for packed in (PackedTree.of(tree), PackedTree.of(tree, compress=False).compact()):
        assert packed.compressed
        back = packed.unpack()
        assert (back.labels, back.sizes, back.texts, back.hints) == (
            tree.labels,
            tree.sizes,
            tree.texts,
            tree.hints,
        )


def test_a_store_with_older_bodies_reads_them(tmp_path):
    """Pages whose bodies an earlier visdup stored with zlib, beside pages stored now: the
    store a reading command opens gives both back."""
    from visdup.storage.store import PageRecord, Store

    db = f"sqlite:///{tmp_path / 'mixed.sqlite3'}"
    bodies = {
        "http://example.test/old.html": (PAGE.replace(b"A page", b"Old"), zlib.compress),
        "http://example.test/new.html": (PAGE.replace(b"A page", b"New"), pack_body),
    }
    store = Store.from_url(db, writer=True)
    try:
        run = store.begin_run("site", crawl="example.test")
        with store.engine.begin() as conn:
            for url, (body, packing) in bodies.items():
                record = PageRecord(url=url, status=200, depth=0, simhash=5, links=[])
                record.body = packing(body)
                assert store.insert_page(conn, record, run) is not None
    finally:
        store.close()
    reading = Store.from_url(db, create=False, migrate=False)
    try:
        found = {url: body for _id, url, body, _encoding in reading.page_bodies()}
    finally:
        reading.close()
    assert found == {url: body for url, (body, _packing) in bodies.items()}


@given(st.lists(st.binary(max_size=70_000), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_each_call_writes_the_frame_a_fresh_compressor_writes(bodies):
    """One compressor serves a thread's calls: each still gets a whole frame, the bytes
    ``zstd.compress`` gives, however many came before it and in whichever thread."""
    if compressed.zstd is None:
        pytest.skip("no zstd module here")
    for body in [*bodies, PAGE, *bodies]:
        assert compressed.compress(body) == compressed.zstd.compress(body, 1)
    found: list[bytes] = []
    thread = threading.Thread(target=lambda: found.extend(map(compressed.compress, bodies)))
    thread.start()
    thread.join()
    assert found == [compressed.zstd.compress(body, 1) for body in bodies]


def test_a_call_that_fails_leaves_no_half_frame(monkeypatch):
    if compressed.zstd is None:
        pytest.skip("no zstd module here")
    real = compressed.zstd.ZstdCompressor
    failing = {"once": True}

    class Failing:  # the module's compressor, failing once half-way through a frame
        CONTINUE, FLUSH_FRAME = real.CONTINUE, real.FLUSH_FRAME

        def __init__(self, level: int | None = None, **more: object) -> None:
            self.inner = real(level=level, **more)

        def compress(self, data: bytes, mode: int = real.CONTINUE) -> bytes:
            if failing.pop("once", False):
                self.inner.compress(data[: len(data) // 2], mode=real.CONTINUE)
                raise MemoryError
            return self.inner.compress(data, mode=mode)

    monkeypatch.setattr(compressed, "_thread", threading.local())
    monkeypatch.setattr(compressed.zstd, "ZstdCompressor", Failing)
    with pytest.raises(MemoryError):
        compressed.compress(PAGE)
    assert compressed.compress(PAGE) == compressed.zstd.compress(PAGE, 1)
    assert compressed.decompress(compressed.compress(PAGE)) == PAGE
