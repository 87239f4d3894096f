"""WARC files in: the same pages as files and as one WARC give the same answers."""

from __future__ import annotations

import gzip
import io
import json
import random
from pathlib import Path

import pytest

from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.page.parse import screen
from visdup.page.warc import WarcCounts, iter_warc

warcio = pytest.importorskip(
    "warcio", reason="warcio is not installed (pip install 'visdup[warc]')"
)
from warcio.statusandheaders import StatusAndHeaders  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

BASE = "http://site.test/"
WARCORE = Path(__file__).resolve().parents[2] / "shared" / "data" / "warpcore" / "site"


def _response(
    writer: WARCWriter,
    uri: str,
    body: bytes,
    status: str = "200 OK",
    content_type: str = "text/html; charset=utf-8",
) -> None:
    headers = StatusAndHeaders(status, [("Content-Type", content_type)], protocol="HTTP/1.1")
    record = writer.create_warc_record(
        uri, "response", payload=io.BytesIO(body), http_headers=headers
    )
    writer.write_record(record)


def _write_warc(path: Path, root: Path, files: list[Path], noise: bool = True) -> None:
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=path.name.endswith(".gz"))
        if noise:
            req = writer.create_warc_record(
                BASE, "request", payload=io.BytesIO(b"GET / HTTP/1.1\r\n\r\n")
            )
            writer.write_record(req)
            _response(
                writer, BASE + "missing.html", b"<html><body>gone</body></html>", "404 Not Found"
            )
            _response(
                writer,
                BASE + "logo.png",
                b"\x89PNG\r\n\x1a\n" + bytes(200),
                content_type="image/png",
            )
        for f in files:
            _response(writer, BASE + f.relative_to(root).as_posix(), f.read_bytes())
        if noise and files:  # a second capture of the first page: the first one counts
            _response(
                writer, BASE + files[0].relative_to(root).as_posix(), b"<html><p>later</p></html>"
            )


def _groups(argv: list[str], capsys, key) -> set[frozenset[str]]:
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    return {
        frozenset([key(g["original"])] + [key(m["path"]) for m in g["members"]])
        for g in out["groups"]
    }


def _pages(root: Path, limit: int | None = None) -> list[Path]:
    files = sorted(p for p in root.rglob("*.html") if p.is_file())
    return files[:limit] if limit else files


def test_iter_warc_takes_html_responses_and_counts_the_rest(tmp_path):
    files = _pages(SITE_ROOT)[:5]
    warc = tmp_path / "a.warc.gz"
    _write_warc(warc, SITE_ROOT, files)
    counts = WarcCounts()
    got = list(iter_warc(warc, counts))
    assert [uri for uri, _b, _t in got] == [
        BASE + f.relative_to(SITE_ROOT).as_posix() for f in files
    ]
    assert got[0][1] == files[0].read_bytes()  # the first capture, not the later one
    assert counts.pages == 5
    assert counts.skipped == {
        "request records": 1,
        "404 responses": 1,
        "not HTML": 1,
        "repeated captures": 1,
    }


@pytest.mark.parametrize("suffix", [".warc", ".warc.gz"])
def test_same_groups_from_files_and_from_a_warc(tmp_path, capsys, suffix):
    files = _pages(SITE_ROOT)
    warc = tmp_path / f"demo{suffix}"
    _write_warc(warc, SITE_ROOT, files)
    from_files = _groups(
        ["dups", "--json", str(SITE_ROOT)],
        capsys,
        lambda p: Path(p).resolve().relative_to(SITE_ROOT).as_posix(),
    )
    from_warc = _groups(["dups", "--json", str(warc)], capsys, lambda u: u[len(BASE) :])
    assert from_files and from_files == from_warc


@pytest.mark.skipif(not WARCORE.is_dir(), reason="../shared/data/warpcore is absent")
def test_two_hundred_real_pages_as_files_and_as_a_warc(tmp_path, capsys):
    files = [f for f in _pages(WARCORE, 210) if screen(f.read_bytes()) is None][:200]
    copy = tmp_path / "site"
    for f in files:
        dest = copy / f.relative_to(WARCORE)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    warc = tmp_path / "site.warc.gz"
    _write_warc(warc, WARCORE, files, noise=False)
    from_files = _groups(
        ["dups", "--json", str(copy)],
        capsys,
        lambda p: Path(p).resolve().relative_to(copy.resolve()).as_posix(),
    )
    from_warc = _groups(["dups", "--json", str(warc)], capsys, lambda u: u[len(BASE) :])
    assert from_files == from_warc


def test_content_and_cluster_read_warc(tmp_path, capsys):
    files = _pages(SITE_ROOT / "articles")
    warc = tmp_path / "articles.warc"
    _write_warc(warc, SITE_ROOT / "articles", files, noise=False)
    assert main(["content", str(warc)]) == 0
    assert BASE in capsys.readouterr().out
    assert main(["cluster", "--json", str(warc)]) == 0
    assert BASE in capsys.readouterr().out


@pytest.mark.parametrize(
    "junk",
    [
        bytes(random.Random(7).getrandbits(8) for _ in range(300)),
        # junk warcio reads as one record without a type, without an error of its own
        bytes(random.Random(17).getrandbits(8) for _ in range(300)),
        b"\n" + bytes(random.Random(3).getrandbits(8) for _ in range(299)),
        b"\x1f\x8b\x08\x00" + b"\xff" * 60,  # a gzip header, then no deflate stream
    ],
    ids=["random", "typeless-record", "newline-first", "broken-gzip"],
)
def test_damaged_warc_is_one_clear_error(tmp_path, capsys, junk):
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(junk)
    assert main(["dups", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.warc.gz" in err and "visdup: error:" in err and "Traceback" not in err


def _three_pages(path: Path) -> list[bytes]:
    """Three HTML responses, one gzip member each for .warc.gz; each record's bytes."""
    files = _pages(SITE_ROOT)[:3]
    records = []
    for f in files:
        one = io.BytesIO()
        _response(WARCWriter(one, gzip=path.name.endswith(".gz")), BASE + f.name, f.read_bytes())
        records.append(one.getvalue())
    path.write_bytes(b"".join(records))
    return records


@pytest.mark.parametrize("suffix", [".warc", ".warc.gz"])
@pytest.mark.parametrize("kept", [0.1, 0.5, 0.9], ids=["headers", "half", "most"])
def test_a_cut_short_warc_says_so_and_counts_the_record(tmp_path, caplog, suffix, kept):
    """A download cut short keeps the records before the cut, and says one was lost: the
    partial record was read as a shorter page (.warc) or dropped without a word (.warc.gz)."""
    warc = tmp_path / f"cut{suffix}"
    records = _three_pages(warc)
    whole = warc.read_bytes()
    warc.write_bytes(whole[: len(whole) - int(len(records[-1]) * (1 - kept))])
    counts = WarcCounts()
    with caplog.at_level("WARNING", logger="visdup.page.warc"):
        got = [uri for uri, _body, _type in iter_warc(warc, counts)]
    assert len(got) == 2 and counts.pages == 2
    assert counts.skipped == {"records cut short": 1}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and str(warc) in warnings[0] and "cut short" in warnings[0]


def test_whole_warcs_say_nothing_of_cuts(tmp_path, caplog):
    for suffix in (".warc", ".warc.gz"):
        warc = tmp_path / f"whole{suffix}"
        _three_pages(warc)
        counts = WarcCounts()
        with caplog.at_level("WARNING", logger="visdup.page.warc"):
            assert len(list(iter_warc(warc, counts))) == 3
        assert counts.skipped == {} and caplog.records == []


def _with_header(record: bytes, name: bytes, value: bytes | None) -> bytes:
    """The record with one WARC header set to ``value`` (None: removed)."""
    start = record.index(name + b": ")
    stop = record.index(b"\r\n", start) + 2
    header = b"" if value is None else name + b": " + value + b"\r\n"
    return record[:start] + header + record[stop:]


def test_a_huge_content_length_and_a_missing_uri_are_counted_not_fatal(tmp_path, capsys):
    """A record claiming more bytes than the file holds, and a response without its
    WARC-Target-URI: each is skipped, said and counted, the others read (warcio's loader
    failed on the latter with "'NoneType' object has no attribute 'startswith'")."""
    warc = tmp_path / "odd.warc"
    records = _three_pages(warc)
    no_uri = _with_header(records[0], b"WARC-Target-URI", None)
    huge = _with_header(records[2], b"Content-Length", b"99999999999999")
    warc.write_bytes(no_uri + records[1] + huge)
    counts = WarcCounts()
    got = [uri for uri, _body, _type in iter_warc(warc, counts)]
    assert got == [BASE + _pages(SITE_ROOT)[1].name]
    assert counts.skipped == {"records without a URI": 1, "records cut short": 1}
    assert main(["term", str(warc)]) == 0
    err = capsys.readouterr().err
    assert "NoneType" not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "declares 99999999999999 bytes" in lines[0], err
    gz = tmp_path / "odd.warc.gz"  # each record its own gzip member
    gz.write_bytes(b"".join(gzip.compress(r) for r in (no_uri, records[1], huge)))
    counts = WarcCounts()
    assert [uri for uri, _b, _t in iter_warc(gz, counts)] == got
    assert counts.skipped == {"records without a URI": 1, "records cut short": 1}
