"""visdup compress TERM: the irreducible term of a term given in text form."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visdup.errors import InputError
from visdup.structure.term import Term, compress


def term_text(value: str) -> str:
    """A term argument: the text itself, ``-`` for stdin, ``@FILE`` for a file's content."""
    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{value[1:]}: cannot read: {exc}") from exc
    return value


HELP = "compress a term given in text form, e.g. 'grp(row(text,text),row(text))'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "term", metavar="TERM", help="[r]label(child,...) notation; - reads it from stdin"
    )


def run(args: argparse.Namespace) -> int:
    print(compress(Term.parse(term_text(args.term))))
    return 0
