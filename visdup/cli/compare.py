"""visdup compare A B: similarity and edit distance of two pages (or two terms).

Beside the tree edit similarity (what a crawl's structure channel confirms with) it prints the
repertoire similarity (:func:`visdup.structure.containment.repertoire_similarity`): each node's
children reduced to their distinct kinds, so two captures of one front page with other numbers
of stories agree where the edit similarity falls. It tells whether two pages share a site's
layout, not whether they are one page (pages of one template agree too), so no verdict uses it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from visdup.cli.compress import term_text
from visdup.errors import InputError
from visdup.page.files import load_page
from visdup.structure.containment import repertoire_similarity
from visdup.structure.distance import tree_distance
from visdup.structure.term import Term, compress, page_term

HELP = "similarity and tree edit distance of two page files, or two terms with --terms"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A")
    parser.add_argument("b", metavar="B")
    parser.add_argument(
        "--terms", action="store_true", help="A and B are terms in text form (or @FILE, -)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='{"similarity","distance","size_a","size_b","repertoire_similarity"}',
    )


def _load(value: str, as_term: bool) -> Term:
    if as_term:
        return compress(Term.parse(term_text(value)))
    return page_term(load_page(Path(value)))


def run(args: argparse.Namespace) -> int:
    a, b = _load(args.a, args.terms), _load(args.b, args.terms)
    try:
        distance = tree_distance(a, b)
    except ValueError as exc:  # over the node cap
        raise InputError(str(exc)) from exc
    total = a.size + b.size
    sim = 1.0 - distance / total if total else 1.0
    try:
        repertoire: float | None = repertoire_similarity(a, b)
    except ValueError:  # over the node cap
        repertoire = None
    if args.json:
        print(
            json.dumps(
                {
                    "similarity": round(sim, 6),
                    "distance": distance,
                    "size_a": a.size,
                    "size_b": b.size,
                    "repertoire_similarity": None if repertoire is None else round(repertoire, 6),
                }
            )
        )
    else:
        print(f"similarity {sim:.4f}")
        print(f"distance   {distance}")
        print(f"size A     {a.size} ({a.nodes} nodes)")
        print(f"size B     {b.size} ({b.nodes} nodes)")
        if repertoire is not None:
            print(f"repertoire {repertoire:.4f} (one layout whatever its lists' lengths)")
    return 0
