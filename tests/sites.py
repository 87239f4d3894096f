"""Small generated sites served from a thread, for crawl tests of natural duplicates."""

from __future__ import annotations

import contextlib
import random
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

#: path + query -> (status, html), or None for "no such route" (a plain 404).
Route = Callable[[str, dict[str, list[str]]], tuple[int, str] | None]


@contextlib.contextmanager
def serve_routes(route: Route) -> Iterator[str]:
    """Serve ``route`` on 127.0.0.1; yields the base URL (no trailing slash)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            answer = (
                None if parts.path == "/robots.txt" else route(parts.path, parse_qs(parts.query))
            )
            status, text = answer if answer is not None else (404, "not found")
            body = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def page(title: str, main: str, *, extra_head: str = "") -> str:
    """A forum page: the same header, menu and footer around ``main``."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{title} - Riverside Cycling Forum</title>{extra_head}</head><body>"
        "<header><a href='/'>Riverside Cycling Forum</a><ul class='nav'>"
        "<li><a href='/'>Forums</a></li><li><a href='/members'>Members</a></li>"
        "<li><a href='/help'>Help</a></li></ul></header>"
        f"<main>{main}</main>"
        "<footer><p>Riverside Cycling Forum is run by volunteers.</p></footer></body></html>"
    )


def request_id() -> str:
    """An id that changes on every response, as servers print them."""
    return uuid.uuid4().hex[:12]


_SUBJECTS = [
    "chain", "saddle", "tyre", "brake pad", "wheel", "handlebar tape", "pedal", "derailleur",
    "light", "mudguard",
]  # fmt: skip
_TROUBLES = [
    "squeaks after rain", "wears out within a month", "slips on steep climbs",
    "rattles over cobbles", "feels loose when cornering",
]  # fmt: skip


def thread_text(i: int) -> tuple[str, str]:
    """A short forum thread: its title and one or two sentences, different for every i."""
    rnd = random.Random(i)
    subject, trouble = _SUBJECTS[i % len(_SUBJECTS)], _TROUBLES[i // len(_SUBJECTS)]
    title = f"My {subject} {trouble}"
    answer = rnd.choice(["Try", "Consider", "Ask a shop about"])
    body = (
        f"Since I moved to the hills my {subject} {trouble}. "
        f"{answer} a {rnd.choice(['new', 'cheaper', 'heavier'])} {subject} from another maker?"
    )
    return title, body
