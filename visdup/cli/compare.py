"""visdup compare A B: similarity and edit distance of two pages (or two terms).

Beside the tree edit similarity (what a crawl's structure channel confirms with) it prints two
views of :mod:`visdup.structure.containment` that look past how much repeats: the repertoire
similarity (each node's children reduced to their distinct kinds) and the frame similarity
(the repertoires agree, or the frames agree and the smaller page maps into the larger), with a
verdict line at :data:`~visdup.structure.containment.FRAME_THRESHOLD`. Two captures of one
front page with other stories, or a listing at two lengths, are one frame where the edit
similarity falls. They tell whether two pages share a site's frame, not whether they are one page
(pages of one template agree too), so no duplicate verdict uses them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from visdup.cli.compress import term_text
from visdup.errors import InputError
from visdup.page.files import load_page
from visdup.structure.containment import (
    FRAME_THRESHOLD,
    frame_similarity,
    repertoire_similarity,
)
from visdup.structure.distance import tree_distance
from visdup.structure.term import Term, compress, page_term

HELP = "similarity and tree edit distance of two page files, or two terms with --terms"

ONE_FRAME = "one frame: two captures of one page, or two pages that share a site's frame"
OTHER_FRAMES = "different frames"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A")
    parser.add_argument("b", metavar="B")
    parser.add_argument(
        "--terms", action="store_true", help="A and B are terms in text form (or @FILE, -)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='{"similarity","distance","size_a","size_b","repertoire_similarity",'
        '"frame_similarity","one_frame"}: frame_similarity is 0 to 1 whatever the lists\' '
        f"lengths, one_frame is whether it reaches {FRAME_THRESHOLD} (null over the node cap)",
    )


def _load(value: str, as_term: bool) -> Term:
    if as_term:
        return compress(Term.parse(term_text(value)))
    return page_term(load_page(Path(value)))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


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
        frame: float | None = frame_similarity(a, b, distance=distance)
    except ValueError:  # over the node cap
        repertoire = frame = None
    one_frame = None if frame is None else frame >= FRAME_THRESHOLD
    if args.json:
        print(
            json.dumps(
                {
                    "similarity": round(sim, 6),
                    "distance": distance,
                    "size_a": a.size,
                    "size_b": b.size,
                    "repertoire_similarity": _round(repertoire),
                    "frame_similarity": _round(frame),
                    "one_frame": one_frame,
                }
            )
        )
    else:
        print(f"similarity {sim:.4f}")
        print(f"distance   {distance}")
        print(f"size A     {a.size} ({a.nodes} nodes)")
        print(f"size B     {b.size} ({b.nodes} nodes)")
        if repertoire is not None:
            print(f"repertoire {repertoire:.4f} (each node's children, one of each kind)")
        if frame is not None:
            print(f"frame      {frame:.4f} (at {FRAME_THRESHOLD} or more: one frame)")
            print(f"verdict    {ONE_FRAME if one_frame else OTHER_FRAMES}")
    return 0
