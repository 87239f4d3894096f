"""What every command shares: one error line, page files read under one rule.

Bad input, wherever it is found, is one line ``visdup: error: ...`` on stderr, with control
characters escaped (a file name or a page title can carry terminal escapes), and the command
exits with status 2 once it has done what the good input allows.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from visdup.engine import ENGINES, Engine, make_engine
from visdup.errors import InputError
from visdup.escape import print_error
from visdup.page.files import PageFiles, open_source

if TYPE_CHECKING:
    from visdup.storage.store import Store


def error(message: object) -> None:
    """Print one ``visdup: error:`` line on stderr, escaped so that a terminal only shows it."""
    print_error(message)


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """--engine local|dask [--scheduler ADDRESS]: where the per-page work runs."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="run the per-page analysis here (local) or on Dask (pip install 'visdup[dask]')",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT); without it, a local cluster on this machine",
    )


def open_engine(args: argparse.Namespace) -> Engine:
    return make_engine(args.engine, args.scheduler)


def read_source(
    args: argparse.Namespace, files: PageFiles
) -> tuple[list[tuple[str, bytes]], Store | None] | None:
    """The pages to work on (PATH... or --db), and their store; None when every file was bad.

    Each bad file has already said why, so the caller only exits with ``files.status``.
    """
    try:
        return open_source(args, iter(files))
    except InputError:
        if files.failed:
            return None
        raise
