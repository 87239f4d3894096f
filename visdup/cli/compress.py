"""visdup compress TERM: the irreducible term of a term given in text form."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visdup.errors import InputError
from visdup.page.files import MAX_FILE_BYTES, read_bounded
from visdup.structure.term import Term, compress


def term_text(value: str) -> str:
    """A term argument: the text itself, ``-`` for stdin, ``@FILE`` for a file's content.

    Files and stdin are read up to MAX_FILE_BYTES, like page files.
    """
    if value == "-":
        text = sys.stdin.read(MAX_FILE_BYTES + 1)
        if len(text) > MAX_FILE_BYTES:
            raise InputError(f"stdin: more than {MAX_FILE_BYTES} characters, too large for a term")
        return text
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            return read_bounded(path).decode("utf-8")
        except InputError:
            raise
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise InputError(f"{path}: cannot read: {reason}") from exc
    return value


HELP = "compress a term given in text form, e.g. 'grp(row(text,text),row(text))'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "term", metavar="TERM", help="[r]label(child,...) notation; - reads it from stdin"
    )


def run(args: argparse.Namespace) -> int:
    print(compress(Term.parse(term_text(args.term))))
    return 0
