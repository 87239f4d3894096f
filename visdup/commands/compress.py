"""visdup compress TERM: the irreducible term of a term given in text form."""

from __future__ import annotations

import argparse

from visdup.term import Term, compress

HELP = "compress a term given in text form, e.g. 'grp(row(text,text),row(text))'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("term", metavar="TERM", help="[r]label(child,...) notation")


def run(args: argparse.Namespace) -> int:
    print(compress(Term.parse(args.term)))
    return 0
