"""visdup serve [DIR]: serve the demo site (or any directory) so a crawl has something to find."""

from __future__ import annotations

import argparse
import contextlib
import signal
import time
from pathlib import Path

from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.errors import InputError
from visdup.escape import one_line

HELP = "serve the demo site (or a directory) on localhost until interrupted"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", nargs="?", type=Path, default=SITE_ROOT, metavar="DIR")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--hostile", action="store_true", help="add the /hostile/ routes")


def run(args: argparse.Namespace) -> int:
    try:
        handle = serve(args.root, args.host, args.port, hostile=args.hostile)
    except OSError as exc:
        reason = exc.strerror or exc
        raise InputError(f"cannot listen on {args.host}:{args.port}: {reason}") from exc
    print(f"Serving {one_line(args.root)} at {handle.url}/ (Ctrl-C to stop)", flush=True)
    # "until interrupted": a process started with SIGINT ignored (a background job of a
    # non-interactive shell, a child of a parent that ignores it) still stops on Ctrl-C.
    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
    return 0
