"""The visual class of each HTML element: what a term's labels are (ALGORITHMS.md §1.1).

A page's term knows four classes: a group of other elements (grp), one row of a container
(row), one column or cell (col) and inline content (text). Elements that are never rendered
produce nothing. The compiled kernel reads the classes as small codes, given here too.
"""

from __future__ import annotations

from collections.abc import Mapping

GRP, ROW, COL, TEXT = "grp", "row", "col", "text"

#: Visual class of each HTML element. ``None``: never rendered, produces nothing.
#: ``<pre>`` stays text, as in the paper: as a group it cost structural-duplicate F1 on
#: labelled pairs (warpcore 0.947 → 0.935, ``bench/bench_classes.py``); no other extension
#: changed F1 by more than 0.01 on any set (README, "The methods").
#: Elements absent from the table are inline content (class text), like the paper's "everything
#: else". Override entries with ``VISDUP_VISUAL_CLASSES`` or the ``classes`` argument.
VISUAL_CLASSES: dict[str, str | None] = {
    # groups of other elements
    **dict.fromkeys(
        (
            "html body div p table tbody thead tfoot ul ol dl menu section article main nav "
            "header footer aside form fieldset figure blockquote address details dialog hgroup "
            "search center frameset colgroup optgroup"
        ).split(),
        GRP,
    ),
    # one row of a container
    **dict.fromkeys(
        "tr li h1 h2 h3 h4 h5 h6 hr dt dd caption legend figcaption summary".split(), ROW
    ),
    # one column / cell
    "td": COL,
    "th": COL,
    # never rendered
    **dict.fromkeys(
        (
            "head script style template noscript title meta link base param source track "
            "datalist area col frame"
        ).split(),
        None,
    ),
}

#: Inline elements that are content by themselves (an image has no text but is seen).
REPLACED = frozenset(
    "img input select textarea button video audio iframe canvas svg math object embed "
    "picture meter progress".split()
)

#: The classes by their kernel code, and each class's code (-1: never rendered).
NAMES = (GRP, ROW, COL, TEXT)
CODE: dict[str | None, int] = {GRP: 0, ROW: 1, COL: 2, TEXT: 3, None: -1}


def class_codes(table: Mapping[str, str | None]) -> dict[str, int]:
    """A tag → class table as the kernel reads it: tag → class code."""
    return {tag: CODE[cls] for tag, cls in table.items()}


#: :data:`VISUAL_CLASSES` as the kernel reads it, built once.
DEFAULT_CODES = class_codes(VISUAL_CLASSES)


def class_table(overrides: Mapping[str, str | None] | None) -> Mapping[str, str | None]:
    """:data:`VISUAL_CLASSES` with ``overrides`` applied (the table itself when there are none,
    so that its kernel codes are reused)."""
    if not overrides:
        return VISUAL_CLASSES
    merged = dict(VISUAL_CLASSES)
    for tag, cls in overrides.items():
        if cls not in (GRP, ROW, COL, TEXT, None):
            raise ValueError(f"visual class of {tag!r} must be grp, row, col, text or None")
        merged[tag.lower()] = cls
    return merged
