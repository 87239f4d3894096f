"""The fixture HTTP server, its hostile routes, and the sites it serves to crawl tests."""

from __future__ import annotations

import difflib
import gzip
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest

from visdup.demo import SITE_ROOT
from visdup.demo.server import (
    BIG_SIZE,
    BINARY_SIZE,
    DEEP_LEVELS,
    GZIP_BOMB_SIZE,
    HOSTILE_ROUTES,
    ServerHandle,
    serve,
)
from visdup.errors import InputError

FIXTURE_SITES = Path(__file__).parent / "fixtures" / "sites"
REPO_ROOT = Path(__file__).resolve().parent.parent


def fetch(
    handle: ServerHandle, path: str, *, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request on a fresh connection; no redirects followed, no decoding applied."""
    conn = http.client.HTTPConnection(handle.host, handle.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def demo() -> Iterator[ServerHandle]:
    with serve(SITE_ROOT, hostile=True, slow_seconds=0.2) as handle:
        yield handle


def links(base_url: str, body: bytes) -> list[str]:
    """Absolute same-page-stripped hrefs of <a> elements, as a crawler would follow them."""
    if not body.strip():
        return []
    root = lxml.html.fromstring(body)
    return [urljoin(base_url, href).split("#", 1)[0] for href in root.xpath("//a/@href")]


def crawl(handle: ServerHandle, start: str) -> dict[str, int]:
    """Breadth-first crawl of the local host: target (path + query) -> status."""
    seen: dict[str, int] = {}
    queue = [start]
    while queue:
        target = queue.pop(0)
        if target in seen:
            continue
        status, headers, body = fetch(handle, target)
        seen[target] = status
        if status != 200 or not headers.get("Content-Type", "").startswith("text/html"):
            continue
        for url in links(handle.url_for(target), body):
            parts = urlsplit(url)
            if parts.netloc != f"{handle.host}:{handle.port}":
                continue
            queue.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return seen


def page_path(target: str) -> str:
    """The page a target serves: query and `;params` removed, as the server maps them."""
    path = target.split("?", 1)[0]
    return "/".join(segment.split(";", 1)[0] for segment in path.split("/"))


# ---------------------------------------------------------------------------
# Static files


def test_serves_files_with_types(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/static/style.css")
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert body == (SITE_ROOT / "static" / "style.css").read_bytes()
    assert int(headers["Content-Length"]) == len(body)

    status, headers, body = fetch(demo, "/")
    assert status == 200
    assert headers["Content-Type"] == "text/html"
    assert body == (SITE_ROOT / "index.html").read_bytes()


def test_head_sends_headers_only(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/about.html", method="HEAD")
    assert status == 200
    assert body == b""
    assert int(headers["Content-Length"]) == (SITE_ROOT / "about.html").stat().st_size


@pytest.mark.parametrize(
    "target",
    [
        "/articles/fixing-a-flat.html?utm_source=x&utm_medium=y",
        "/articles/fixing-a-flat.html;jsessionid=ABC123",
        "/articles/fixing-a-flat.html;jsessionid=ABC123?sid=9#frag",
        "/articles/fixing%2Da%2Dflat.html",
        "/articles/./fixing-a-flat.html",
    ],
)
def test_query_and_params_do_not_change_the_file(demo: ServerHandle, target: str) -> None:
    status, _, body = fetch(demo, target)
    assert status == 200
    assert body == (SITE_ROOT / "articles" / "fixing-a-flat.html").read_bytes()


def test_directory_redirects_then_serves_its_index(demo: ServerHandle) -> None:
    status, headers, _ = fetch(demo, "/blog?page=1")
    assert status == 301
    assert headers["Location"] == "/blog/?page=1"
    assert fetch(demo, "/blog;jsessionid=1")[1]["Location"] == "/blog/"
    status, _, body = fetch(demo, "/blog/;jsessionid=1")
    assert status == 200
    assert body == (SITE_ROOT / "blog" / "index.html").read_bytes()


@pytest.mark.parametrize(
    "target", ["/nope.html", "/../pyproject.toml", "/%2e%2e/pyproject.toml", "/static/"]
)
def test_missing_and_escaping_paths_are_404(demo: ServerHandle, target: str) -> None:
    status, headers, body = fetch(demo, target)
    assert status == 404
    assert headers["Content-Type"] == "text/html"
    assert b"404" in body


def test_gzip_files_serve_the_plain_name(tmp_path: Path) -> None:
    page = b"<!DOCTYPE html><html><body><p>Packed page</p></body></html>"
    (tmp_path / "page.html.gz").write_bytes(gzip.compress(page))
    (tmp_path / "corrupt.html.gz").write_bytes(b"not gzip at all")
    with serve(tmp_path) as handle:
        status, headers, body = fetch(handle, "/page.html", headers={"Accept-Encoding": "gzip"})
        assert status == 200
        assert headers["Content-Encoding"] == "gzip"
        assert headers["Content-Type"] == "text/html"
        assert gzip.decompress(body) == page

        status, headers, body = fetch(handle, "/page.html?x=1")
        assert status == 200
        assert headers["Content-Encoding"] is None
        assert body == page

        refused = {"Accept-Encoding": "gzip;q=0, identity"}
        assert fetch(handle, "/page.html", headers=refused)[2] == page
        assert fetch(handle, "/corrupt.html")[0] == 500


def test_symlinks_out_of_the_root_are_404(tmp_path: Path) -> None:
    outside = tmp_path / "secret.html"
    outside.write_bytes(b"<p>secret</p>")
    root = tmp_path / "site"
    root.mkdir()
    (root / "inside.html").write_bytes(b"<p>inside</p>")
    (root / "leak.html").symlink_to(outside)
    (root / "alias.html").symlink_to(root / "inside.html")
    with serve(root) as handle:
        assert fetch(handle, "/leak.html")[0] == 404
        assert fetch(handle, "/alias.html")[2] == b"<p>inside</p>"


def test_charset_option_applies_to_text_only(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text("<p>é</p>", encoding="utf-8")
    (tmp_path / "b.svg").write_text("<svg/>", encoding="utf-8")
    with serve(tmp_path, charset="utf-8") as handle:
        assert fetch(handle, "/a.html")[1]["Content-Type"] == "text/html; charset=utf-8"
        assert "charset" not in fetch(handle, "/b.svg")[1]["Content-Type"]


def test_request_log_keeps_targets_in_order(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_bytes(b"<p>a</p>")
    with serve(tmp_path) as handle:
        fetch(handle, "/a.html?utm_source=t")
        fetch(handle, "/missing.html", method="HEAD")
        assert handle.requests == ["/a.html?utm_source=t", "/missing.html"]
        assert handle.url == f"http://127.0.0.1:{handle.port}"
        assert handle.url_for("a.html") == handle.url + "/a.html"


def test_not_a_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        serve(tmp_path / "absent")


# ---------------------------------------------------------------------------
# Hostile routes


def test_hostile_routes_only_when_asked(tmp_path: Path) -> None:
    with serve(tmp_path) as handle:
        assert fetch(handle, "/hostile/empty")[0] == 404


def test_hostile_index_links_every_listed_route(demo: ServerHandle) -> None:
    status, _, body = fetch(demo, "/hostile/index.html")
    assert status == 200
    hrefs = set(links(demo.url_for("/hostile/"), body))
    listed = {name for name in HOSTILE_ROUTES if name != "gzip-bomb"}
    assert hrefs == {demo.url_for(f"/hostile/{name}") for name in listed}
    assert fetch(demo, "/hostile/")[2] == body
    assert fetch(demo, "/hostile/nothing-here")[0] == 404


def test_empty(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/empty")
    assert (status, headers["Content-Type"], headers["Content-Length"], body) == (
        200,
        "text/html",
        "0",
        b"",
    )


def test_binary_is_seeded(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/binary")
    assert status == 200
    assert headers["Content-Type"] == "text/html"
    assert len(body) == BINARY_SIZE
    assert fetch(demo, "/hostile/binary?again=1")[2] == body
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")


def test_big(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/big")
    assert status == 200
    assert headers["Content-Type"] == "text/html"
    assert len(body) == BIG_SIZE == int(headers["Content-Length"])
    assert body.startswith(b"<!DOCTYPE html>")
    assert body.rstrip().endswith(b"</html>")
    assert body.count(b'<div class="entry">') > 10_000


def test_deep(demo: ServerHandle) -> None:
    status, _, body = fetch(demo, "/hostile/deep")
    assert status == 200
    assert body.count(b"<div>") == DEEP_LEVELS == body.count(b"</div>")
    assert b"<div>" * DEEP_LEVELS in body


@pytest.mark.parametrize("route", ["wrong-charset", "wrong-charset-meta"])
def test_wrong_charset(demo: ServerHandle, route: str) -> None:
    status, headers, body = fetch(demo, f"/hostile/{route}")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=iso-8859-1"
    text = body.decode("utf-8")  # the body really is UTF-8
    non_ascii = sum(1 for char in text if ord(char) > 127)
    assert non_ascii > 200
    assert "Ã" in body.decode("iso-8859-1")  # what believing the header produces
    assert (b'<meta charset="utf-8">' in body) == route.endswith("meta")


def test_no_charset(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/no-charset")
    assert status == 200
    assert headers["Content-Type"] == "text/html"
    assert b"charset" not in body.lower()
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    text = body.decode("cp1252")
    assert "€" in text
    assert "“Winter”" in text


def test_pdf(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/pdf")
    assert (status, headers["Content-Type"]) == (200, "application/pdf")
    assert body.startswith(b"%PDF-1.4")
    assert body.rstrip().endswith(b"%%EOF")
    xref = int(body.rsplit(b"startxref\n", 1)[1].split(b"\n", 1)[0])
    assert body[xref:].startswith(b"xref")


def test_image_is_a_valid_png(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/image")
    assert (status, headers["Content-Type"]) == (200, "image/png")
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(body):
        (length,) = struct.unpack(">I", body[pos : pos + 4])
        kind, data = body[pos + 4 : pos + 8], body[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", body[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + data) & 0xFFFFFFFF == crc
        chunks[kind] = data
        pos += 12 + length
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    assert len(zlib.decompress(chunks[b"IDAT"])) == height * (1 + 3 * width)
    assert b"IEND" in chunks


def test_notext(demo: ServerHandle) -> None:
    status, _, body = fetch(demo, "/hostile/notext")
    assert status == 200
    root = lxml.html.fromstring(body)
    assert root.text_content().strip() == ""
    assert len(root.xpath("//img")) >= 3
    assert len(root.xpath("//div")) >= 10


def test_broken(demo: ServerHandle) -> None:
    status, _, body = fetch(demo, "/hostile/broken")
    assert status == 200
    assert b"<<<" in body
    assert body.count(b"</div>") > body.count(b"<div")
    assert lxml.html.fromstring(body) is not None  # lenient parsers still get a tree


def test_redirect_then_target(demo: ServerHandle) -> None:
    status, headers, _ = fetch(demo, "/hostile/redirect")
    assert status == 302
    assert headers["Location"] == "/hostile/target"
    status, _, body = fetch(demo, headers["Location"])
    assert status == 200
    assert b"Redirect target" in body


def test_server_error(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/500")
    assert status == 500
    assert headers["Content-Type"] == "text/html"
    assert b"Internal Server Error" in body


def test_slow_waits(demo: ServerHandle) -> None:
    started = time.monotonic()
    status, _, body = fetch(demo, "/hostile/slow")
    assert status == 200
    assert b"Slow page" in body
    assert time.monotonic() - started >= 0.2


def test_gzip_bomb(demo: ServerHandle) -> None:
    status, headers, body = fetch(demo, "/hostile/gzip-bomb")
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert len(body) < GZIP_BOMB_SIZE // 500
    assert len(gzip.decompress(body)) == GZIP_BOMB_SIZE


# ---------------------------------------------------------------------------
# Closing


def test_close_is_prompt_and_idempotent(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_bytes(b"<p>a</p>")
    handle = serve(tmp_path, hostile=True, slow_seconds=5)
    idle = http.client.HTTPConnection(handle.host, handle.port, timeout=5)
    idle.request("GET", "/a.html")  # a kept-alive connection stays open after this
    assert idle.getresponse().read() == b"<p>a</p>"
    errors: list[BaseException] = []

    def slow_request() -> None:
        try:
            fetch(handle, "/hostile/slow")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    waiter = threading.Thread(target=slow_request)
    waiter.start()
    time.sleep(0.1)
    started = time.monotonic()
    handle.close()
    assert time.monotonic() - started < 1.0
    handle.close()
    waiter.join(timeout=6)
    idle.close()
    with pytest.raises(OSError), socket.create_connection((handle.host, handle.port), timeout=1):
        pass


def test_entry_point_serves_until_interrupted(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_bytes(b"<p>home</p>")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "visdup.demo.server", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        conn = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=5)
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"<p>home</p>"
        conn.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0  # generous: a loaded machine is slow, not wrong
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_entry_point_rejects_a_missing_directory(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "visdup.demo.server", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        env=env,
        timeout=10,
    )
    assert result.returncode == 2
    assert "not a directory" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------
# The sites: every planted case is where EXPECTED.json says it is


def load_expected(root: Path) -> dict:
    return json.loads((root / "EXPECTED.json").read_text(encoding="utf-8"))


def paragraphs(body: bytes) -> list[str]:
    root = lxml.html.fromstring(body)
    texts = (" ".join(el.text_content().split()) for el in root.xpath("//p | //div[@class='para']"))
    return [text for text in texts if text]


def article_text(body: bytes) -> list[str]:
    root = lxml.html.fromstring(body)
    (article,) = root.xpath("//article")
    return [" ".join(p.text_content().split()) for p in article.xpath(".//p[not(@class)]")]


@pytest.mark.parametrize("name", ["basic", "templates"])
def test_fixture_site_matches_expected(name: str) -> None:
    root = FIXTURE_SITES / name
    expected = load_expected(root)
    pages = {path for paths in expected["templates"].values() for path in paths}
    files = {
        "/" + str(path.relative_to(root)).removesuffix("index.html")
        for path in root.rglob("*.html")
    }
    assert pages == files
    assert 10 <= len(pages) <= 20
    with serve(root) as handle:
        seen = crawl(handle, expected["start"])
        assert {page_path(target) for target in seen} == pages
        assert set(seen.values()) == {200}
        for a, b in expected["exact"]:
            assert fetch(handle, a)[2] == fetch(handle, b)[2]
        for original, mirror in expected["mirrors"]:
            mirror_text = paragraphs(fetch(handle, mirror)[2])
            assert all(p in mirror_text for p in article_text(fetch(handle, original)[2]))
    if name == "templates":
        assert expected["exact"] == expected["mirrors"] == []
        assert len(expected["templates"]) == 3
        html_files = list(root.rglob("*.html"))
        assert len({path.read_bytes() for path in html_files}) == len(html_files)


@pytest.fixture(scope="module")
def demo_crawl(demo: ServerHandle) -> dict[str, int]:
    return crawl(demo, "/")


def test_demo_site_is_reachable_and_complete(demo_crawl: dict[str, int]) -> None:
    expected = load_expected(SITE_ROOT)
    pages = {path for paths in expected["templates"].values() for path in paths}
    files = {
        "/" + str(path.relative_to(SITE_ROOT)).removesuffix("index.html")
        for path in SITE_ROOT.rglob("*.html")
    }
    assert pages == files
    assert 40 <= len(pages) <= 60
    ok = {page_path(t) for t, status in demo_crawl.items() if status == 200}
    assert ok == pages | set(expected["not_html"])
    moved = {page_path(t) for t, status in demo_crawl.items() if 300 <= status < 400}
    assert moved == set(expected["redirects"])
    missing = {page_path(t) for t, status in demo_crawl.items() if status == 404}
    assert missing == set(expected["missing"])
    for base, variants in expected["url_variants"].items():
        for variant in variants:
            assert demo_crawl[variant] == 200
        assert base in pages


def test_demo_site_duplicates(demo: ServerHandle) -> None:
    expected = load_expected(SITE_ROOT)
    for a, b in expected["exact"]:
        assert fetch(demo, a)[2] == fetch(demo, b)[2]
    for original, mirror in expected["mirrors"]:
        original_body, mirror_body = fetch(demo, original)[2], fetch(demo, mirror)[2]
        assert original_body != mirror_body
        mirror_text = paragraphs(mirror_body)
        assert all(p in mirror_text for p in article_text(original_body))
    for a, b in expected["near"]:
        lines_a = fetch(demo, a)[2].decode().splitlines()
        lines_b = fetch(demo, b)[2].decode().splitlines()
        changed = [d for d in difflib.ndiff(lines_a, lines_b) if d[:1] in "+-"]
        assert len(changed) == 2  # one line out, one line in
    for base, variants in expected["url_variants"].items():
        body = fetch(demo, base)[2]
        assert all(fetch(demo, variant)[2] == body for variant in variants)
    (thin,) = expected["thin"]
    assert lxml.html.fromstring(fetch(demo, thin)[2]).xpath("//li[@class='teaser']") == []


def test_demo_robots_disallows_a_linked_page(demo: ServerHandle) -> None:
    expected = load_expected(SITE_ROOT)
    status, headers, body = fetch(demo, "/robots.txt")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert "Disallow: /private/" in body.decode()
    (private,) = expected["disallowed"]
    assert private.startswith("/private/")
    about = links(demo.url_for("/about.html"), fetch(demo, "/about.html")[2])
    assert demo.url_for(private) in about


def test_demo_plants_a_redirect_a_feed_and_a_noindex_page(demo: ServerHandle) -> None:
    expected = load_expected(SITE_ROOT)
    about = links(demo.url_for("/about.html"), fetch(demo, "/about.html")[2])
    for path, (code, target) in expected["redirects"].items():
        status, headers, _ = fetch(demo, path)
        assert (status, headers["Location"]) == (code, target)
        assert fetch(demo, target)[0] == 200
        assert demo.url_for(path) in about
    (feed,) = expected["not_html"]
    status, headers, _ = fetch(demo, feed)
    assert status == 200 and headers["Content-Type"].startswith("application/xml")
    assert demo.url_for(feed) in about
    (noindex,) = expected["noindex"]
    page = lxml.html.fromstring(fetch(demo, noindex)[2])
    assert page.xpath("//meta[@name='robots']/@content") == ["noindex, follow"]
    assert fetch(demo, "/_redirects")[0] == 404  # the server's own table is not served
