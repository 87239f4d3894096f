"""The ``visdup`` command: one subcommand per module in :mod:`visdup.cli`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from visdup.errors import VisdupError

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
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="visdup",
        description="Duplicate pages, templates and datasets from the visual structure of pages.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler()
    handler.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    try:
        return int(args._run(args) or 0)
    except VisdupError as exc:
        print(f"visdup: error: {exc}", file=sys.stderr)
        return 2
    except RecursionError:
        print("visdup: error: input nested too deeply", file=sys.stderr)
        return 2
    except MemoryError:
        print("visdup: error: input too large for memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("visdup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
