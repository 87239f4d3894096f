"""The ``visdup`` command: one subcommand per module in :mod:`visdup.cli`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from visdup import __version__
from visdup.cli.output import error
from visdup.errors import BAD_INPUT, VisdupError

COMMANDS = (
    "term",
    "compress",
    "compare",
    "crawl",
    "report",
    "demo",
    "serve",
    "content",
    "dups",
    "cluster",
    "extract",
    "calibrate",
    "drift",
    "migrate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="visdup",
        description="Duplicate pages, templates and datasets from the visual structure of pages.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"visdup.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"visdup.cli.{name}":
                continue
            raise
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


#: Commands that run a Scrapy crawl: Scrapy installs its own log handler on the root logger.
_SCRAPY_LOGGING = frozenset({"crawl", "demo"})


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status: 0 done, 1 the work failed, 2 bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: logging.Handler | None = None
    if args.command not in _SCRAPY_LOGGING:
        # One handler for this call only, removed below: main() may run many times in one
        # process, and under a crawl Scrapy's handler already prints every record.
        handler = logging.StreamHandler()
        handler.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
    try:
        return int(args._run(args) or 0)
    except VisdupError as exc:
        error(exc)
        return BAD_INPUT
    except RecursionError:
        error("input nested too deeply")
        return BAD_INPUT
    except MemoryError:
        error("input too large for memory")
        return BAD_INPUT
    except KeyboardInterrupt:
        print("visdup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
