"""Serve a static directory over HTTP from a thread, for the demo and for crawl tests.

Real crawls meet URLs that differ only in tracking or session parameters, pre-compressed
pages, and pages that break parsers. This server reproduces those in-process so tests can
crawl them without a network: the query string and `;params` never affect which file is
served, `name.gz` answers for `name`, and (with `hostile=True`) `/hostile/...` routes serve
inputs generated in code (see `HOSTILE_ROUTES`).

Run `python -m visdup.demo.server [DIR] [--port N]` to serve a directory until interrupted.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import html
import logging
import mimetypes
import random
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from visdup.demo.redirects import REDIRECTS_FILE, read_redirects
from visdup.errors import InputError

logger = logging.getLogger(__name__)

BINARY_SIZE, BINARY_SEED = 64 * 1024, 20091
"""Bytes of seeded random data served by `/hostile/binary`, and their seed."""
BIG_SIZE = 10_000_000
"""Exact length of `/hostile/big`: 10 MB, just under a 10 MiB download limit."""
DEEP_LEVELS = 100_000
"""Nesting depth of `/hostile/deep`, far past libxml2's 256 (or 2048 with huge_tree)."""
GZIP_BOMB_SIZE = 64 * 1024 * 1024
"""Inflated length of `/hostile/gzip-bomb` (about 64 KB on the wire)."""

_HTML = "text/html"
_PAGE_HEAD = '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes = b""
    content_type: str | None = _HTML
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0


def _page(title: str, body: str) -> bytes:
    """A small well-formed UTF-8 page, for the routes that are not themselves the hazard."""
    text = f"{_PAGE_HEAD}<title>{html.escape(title)}</title>\n</head>\n<body>\n{body}\n"
    return (text + "</body>\n</html>\n").encode("utf-8")


# ---------------------------------------------------------------------------
# Hostile bodies, generated on first use and cached: no large file is committed.


@functools.cache
def _binary_body() -> bytes:
    return random.Random(BINARY_SEED).randbytes(BINARY_SIZE)


_BIG_WORDS = (
    *("catalogue", "entry", "shipment", "warehouse", "invoice", "pallet", "customer"),
    *("order", "region", "quarter", "delivery", "supplier", "returned", "pending"),
    *("approved", "archived", "carrier", "volume", "weight", "route"),
)


@functools.cache
def _big_body() -> bytes:
    """A long report page: realistic markup, varied text, exactly `BIG_SIZE` bytes."""
    rng = random.Random(7)
    sentences = [
        " ".join(rng.choice(_BIG_WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
        for _ in range(400)
    ]
    head = (
        f"{_PAGE_HEAD}<title>Shipment ledger (full export)</title>\n</head>\n<body>\n"
        '<h1>Shipment ledger</h1>\n<div class="ledger">\n'
    ).encode()
    tail = b"</div>\n</body>\n</html>\n"
    parts = [head]
    size = len(head) + len(tail)
    n = 0
    while True:
        chunk = (
            f'<div class="entry"><h2>Entry {n}</h2><p>{sentences[n % 400]} '
            f"{sentences[(n * 7 + 3) % 400]}</p></div>\n"
        ).encode()
        if size + len(chunk) > BIG_SIZE:
            break
        parts.append(chunk)
        size += len(chunk)
        n += 1
    # Pad with a comment so the length is exact whatever the sentences add up to.
    gap = BIG_SIZE - size
    if gap >= 7:
        parts.append(b"<!--" + b" " * (gap - 7) + b"-->")
    else:
        parts.append(b" " * gap)
    parts.append(tail)
    return b"".join(parts)


@functools.cache
def _deep_body() -> bytes:
    head = f"{_PAGE_HEAD}<title>Deep nesting</title>\n</head>\n<body>\n"
    text = head + "<div>" * DEEP_LEVELS + "<p>The bottom of a very deep page.</p>"
    text += "</div>" * DEEP_LEVELS + "\n</body>\n</html>\n"
    return text.encode("ascii")


_MULTILINGUAL = """\
<h1>Grüße aus Zürich — café, naïve, crème brûlée</h1>
<p>Über die Brücke gehen Bäckerinnen mit frischem Brötchen; die Straße ist naß und grün.</p>
<p>À côté de l'hôtel, un garçon déçu mange une pâtisserie très sucrée près de la forêt.</p>
<p>Smörgåsbord på Göteborgs kajen; Dvořák skrivał «Nový svět» v Písku, žluťoučký kůň úpěl.</p>
<p>Ελληνικά: Καλημέρα κόσμε, η γλώσσα μου έδωσαν ελληνική.</p>
<p>Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.</p>
<p>日本語のテキスト：いろはにほへと ちりぬるを。中文：你好，世界。</p>
<p>Symbols: € £ ¥ © ® ™ ° ± × ÷ ½ ¾ “quotes” ‘single’ – — … •</p>
"""


def _wrong_charset_body(with_meta: bool) -> bytes:
    meta = '<meta charset="utf-8">\n' if with_meta else ""
    text = (
        f'<!DOCTYPE html>\n<html lang="de">\n<head>\n{meta}<title>Grüße — café</title>\n'
        f"</head>\n<body>\n{_MULTILINGUAL}</body>\n</html>\n"
    )
    return text.encode("utf-8")


def _no_charset_body() -> bytes:
    text = (
        "<!DOCTYPE html>\n<html>\n<head>\n<title>Price list – “Winter” edition</title>\n"
        "</head>\n<body>\n<h1>Price list – “Winter” edition</h1>\n"
        "<p>Our café’s crème brûlée costs €4.50 – the “best” in town™.</p>\n"
        "<p>Œuvres by Dvořák? No: Šerpa’s naïve sketches… ‘framed’ at €120 each.</p>\n"
        "<p>Délicieux, très sûr, Ærø smørrebrød • ¼ price on Mondays — ask for Zoë.</p>\n"
        "</body>\n</html>\n"
    )
    # cp1252 has no ř: replace it, as an old editor would have done on save.
    return text.replace("ř", "r").encode("cp1252")


@functools.cache
def _pdf_body() -> bytes:
    """A one-page PDF with correct cross-reference offsets."""
    stream = b"BT /F1 18 Tf 72 720 Td (A PDF, not a web page) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@functools.cache
def _png_body() -> bytes:
    """A valid 16x16 RGB PNG (a diagonal gradient)."""
    width = height = 16
    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 16, y * 16, (x + y) * 8)) for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def _notext_body() -> bytes:
    cells = "".join(
        f'<div class="tile"><div></div><img src="/hostile/image?n={n}" alt=""></div>'
        for n in range(6)
    )
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<title></title>\n</head>\n<body>\n"
        f'<div class="wrap"><div class="header"></div><div class="grid">{cells}</div>'
        '<div class="footer"><div></div><div></div></div></div>\n</body>\n</html>\n'
    ).encode("ascii")


_BROKEN = """\
<html><head><title>Broken markup</head>
<body class="x><div id=main>
<p>First paragraph with <b>bold and <i>both</b> italic?</i> text
</div></div></div></div>
<<< not a tag <<<< and a lone > and <div <p>an unclosed attribute "value
<table><tr><td>cell one<td>cell two<tr><td>second row
</span></form></li></td></div></div>
<ul><li>one<li>two<li>three
<p>Text after <a href="/hostile/target">a link</p> that never closes
<div><div><section><article>
<h2>Heading <h3>inside heading</h2></h3>
&nbsp &amp;&lt &#xZZ; &#99999999; &unknown;
</body></html></html>
<p>Content after the end of the document.</p>
<!-- a comment that never ends
"""


@functools.cache
def _gzip_bomb_body() -> bytes:
    inner = b"<!DOCTYPE html><html><head><title>Bomb</title></head><body><p>"
    tail = b"</p></body></html>"
    filler = GZIP_BOMB_SIZE - len(inner) - len(tail)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip container
    out = [compressor.compress(inner)]
    block = b" " * (1 << 20)
    while filler > 0:
        out.append(compressor.compress(block[: min(filler, len(block))]))
        filler -= len(block)
    out.append(compressor.compress(tail))
    out.append(compressor.flush())
    return b"".join(out)


def _slow_page() -> bytes:
    return _page("Slow page", "<h1>Slow page</h1>\n<p>This answer was held back on purpose.</p>")


def _target_page() -> bytes:
    return _page(
        "Redirect target",
        "<h1>Redirect target</h1>\n<p>A normal page, reached through a redirect.</p>\n"
        '<p><a href="/hostile/">All hostile routes</a></p>',
    )


def _error_page() -> bytes:
    return _page("Internal Server Error", "<h1>500 Internal Server Error</h1>")


HOSTILE_ROUTES: dict[str, str] = {
    "empty": "200, text/html, empty body",
    "binary": "200, text/html, 64 KiB of seeded random bytes",
    "big": "200, 10 MB of HTML",
    "deep": "200, 100,000 nested divs",
    "wrong-charset": "UTF-8 body, header says charset=iso-8859-1",
    "wrong-charset-meta": "as wrong-charset, with <meta charset=utf-8> in the body",
    "no-charset": "cp1252 bytes, no charset in header or body",
    "pdf": "application/pdf",
    "image": "image/png",
    "notext": "HTML with only empty divs and images",
    "broken": "unclosed tags, stray end tags, <<<",
    "redirect": "302 to /hostile/target",
    "target": "a normal page",
    "500": "500 Internal Server Error",
    "slow": "a normal page after a delay (slow_seconds)",
    "gzip-bomb": "gzip-encoded regardless of Accept-Encoding, inflates to 64 MiB (not linked)",
}
"""Every `/hostile/<name>` route and what it serves."""

_UNLISTED = frozenset({"gzip-bomb"})


def _hostile_index() -> bytes:
    items = "\n".join(
        f'<li><a href="/hostile/{name}">{name}</a>: {html.escape(doc)}</li>'
        for name, doc in HOSTILE_ROUTES.items()
        if name not in _UNLISTED
    )
    return _page("Hostile inputs", f"<h1>Hostile inputs</h1>\n<ul>\n{items}\n</ul>")


def _hostile_response(name: str, slow_seconds: float) -> _Response | None:
    builders: dict[str, Callable[[], _Response]] = {
        "": lambda: _Response(200, _hostile_index()),
        "index.html": lambda: _Response(200, _hostile_index()),
        "empty": lambda: _Response(200, b""),
        "binary": lambda: _Response(200, _binary_body()),
        "big": lambda: _Response(200, _big_body()),
        "deep": lambda: _Response(200, _deep_body()),
        "wrong-charset": lambda: _Response(
            200, _wrong_charset_body(False), "text/html; charset=iso-8859-1"
        ),
        "wrong-charset-meta": lambda: _Response(
            200, _wrong_charset_body(True), "text/html; charset=iso-8859-1"
        ),
        "no-charset": lambda: _Response(200, _no_charset_body()),
        "pdf": lambda: _Response(200, _pdf_body(), "application/pdf"),
        "image": lambda: _Response(200, _png_body(), "image/png"),
        "notext": lambda: _Response(200, _notext_body()),
        "broken": lambda: _Response(200, _BROKEN.encode("utf-8")),
        "redirect": lambda: _Response(
            302,
            _page("Found", '<p>Moved to <a href="/hostile/target">/hostile/target</a>.</p>'),
            headers=(("Location", "/hostile/target"),),
        ),
        "target": lambda: _Response(200, _target_page()),
        "500": lambda: _Response(500, _error_page()),
        "slow": lambda: _Response(200, _slow_page(), delay=slow_seconds),
        "gzip-bomb": lambda: _Response(
            200, _gzip_bomb_body(), headers=(("Content-Encoding", "gzip"),)
        ),
    }
    builder = builders.get(name)
    return builder() if builder else None


# ---------------------------------------------------------------------------
# Static files


def _request_path(target: str) -> str:
    """The decoded path of a request target, without query, fragment or `;params`."""
    if "://" in target.split("?", 1)[0]:  # absolute-form target, as sent to a proxy
        after_scheme = target.split("://", 1)[1]
        target = "/" + after_scheme.split("/", 1)[1] if "/" in after_scheme else "/"
    path = target.split("#", 1)[0].split("?", 1)[0]
    # Tomcat-style session ids (`;jsessionid=...`) sit on a segment; any segment may have them.
    path = "/".join(segment.split(";", 1)[0] for segment in path.split("/"))
    return unquote(path, errors="replace")


def _accepts_gzip(header: str | None) -> bool:
    for item in (header or "").split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip"):
            continue
        q = params.strip().lower()
        if q.startswith("q="):
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
        return True
    return False


def _content_type(name: str, charset: str | None) -> str:
    kind, _ = mimetypes.guess_type(name, strict=False)
    kind = kind or "application/octet-stream"
    if charset and kind.startswith("text/"):
        kind += f"; charset={charset}"
    return kind


def _not_found() -> _Response:
    return _Response(404, _page("Not Found", "<h1>404 Not Found</h1>"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        root: Path,
        *,
        hostile: bool,
        charset: str | None,
        slow_seconds: float,
        family: socket.AddressFamily,
    ) -> None:
        self.address_family = family
        self.root = root
        moved = read_redirects(root).items()
        self.redirects = {p: _Response(s, b"", None, (("Location", t),)) for p, (s, t) in moved}
        self.redirects["/" + REDIRECTS_FILE] = _not_found()
        self.hostile = hostile
        self.charset = charset
        self.slow_seconds = slow_seconds
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-answer are routine in crawl tests: keep stderr clean.
        logger.debug("error while serving %s", client_address, exc_info=True)

    def drop_connections(self) -> None:
        with self.lock:
            connections = list(self.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "visdup-demo/1"
    timeout = 60

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, *, head: bool) -> None:
        with self.server.lock:
            self.server.log.append(self.path)
        response = self._route()
        if response.delay:
            time.sleep(response.delay)
        self.send_response(response.status)
        if response.content_type:
            self.send_header("Content-Type", response.content_type)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if not head and response.body:
            self.wfile.write(response.body)

    def _route(self) -> _Response:
        path = _request_path(self.path)
        if self.server.hostile and (path == "/hostile" or path.startswith("/hostile/")):
            found = _hostile_response(path[len("/hostile/") :], self.server.slow_seconds)
            return found or _not_found()
        if path in self.server.redirects:  # a moved page, or the table itself (not served)
            return self.server.redirects[path]
        return self._static(path)

    def _inside(self, path: Path) -> bool:
        """Whether ``path``, every symlink on the way followed, is inside the served root."""
        try:
            return path.resolve(strict=True).is_relative_to(self.server.root)
        except (OSError, RuntimeError):  # broken or looping links
            return False

    def _static(self, path: str) -> _Response:
        parts = [part for part in path.split("/") if part not in ("", ".")]
        if any(part == ".." or "\x00" in part for part in parts):
            return _not_found()
        target = self.server.root.joinpath(*parts)
        if target.is_dir():
            if not path.endswith("/"):
                query = self.path.partition("?")[2]
                location = quote(path) + "/" + (f"?{query}" if query else "")
                return _Response(301, b"", headers=(("Location", location),))
            target = target / "index.html"
        if target.is_file() and self._inside(target):
            body = target.read_bytes()
            return _Response(200, body, _content_type(target.name, self.server.charset))
        if target.exists():
            return _not_found()  # a symlink pointing out of the served tree, or no file
        packed = target.with_name(target.name + ".gz")
        if packed.is_file() and self._inside(packed):
            body = packed.read_bytes()
            kind = _content_type(target.name, self.server.charset)
            vary = ("Vary", "Accept-Encoding")
            if _accepts_gzip(self.headers.get("Accept-Encoding")):
                return _Response(200, body, kind, (("Content-Encoding", "gzip"), vary))
            try:
                return _Response(200, gzip.decompress(body), kind, (vary,))
            except (OSError, EOFError, zlib.error):
                logger.warning("cannot inflate %s", packed)
                return _Response(500, _error_page())
        return _not_found()


@dataclass
class ServerHandle:
    """A running server; `close()` (or leaving a `with` block) stops it and its connections."""

    host: str
    port: int
    root: Path
    _server: _Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _closed: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """Base URL without a trailing slash: `handle.url + "/page.html"`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url_for(self, path: str) -> str:
        return self.url + (path if path.startswith("/") else "/" + path)

    @property
    def requests(self) -> list[str]:
        """Request targets received so far, in order, query strings included."""
        with self._server.lock:
            return list(self._server.log)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._server.drop_connections()
        self._thread.join(timeout=5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(
    root: Path | str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    hostile: bool = False,
    charset: str | None = None,
    slow_seconds: float = 2.0,
) -> ServerHandle:
    """Serve `root` from a daemon thread; port 0 picks a free port.

    `charset` is appended to text/* Content-Type headers (none by default, so pages declare
    their own); `hostile` adds the `/hostile/...` routes; `slow_seconds` is how long
    `/hostile/slow` waits.
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"not a directory: {root}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = _Server(
        (host, port),
        root.resolve(),
        hostile=hostile,
        charset=charset,
        slow_seconds=slow_seconds,
        family=family,
    )
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name=f"visdup-demo-server-{server.server_address[1]}",
        daemon=True,
    )
    thread.start()
    handle = ServerHandle(host, server.server_address[1], root, server, thread)
    logger.debug("serving %s at %s", root, handle.url)
    return handle


def main(argv: list[str] | None = None) -> int:
    """``python -m visdup.demo.server [DIR] [--port N] [--hostile]``: same as ``visdup serve``."""
    from visdup.cli import main as cli_main

    return cli_main(["serve", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
