"""Texts that carry their own caption ("ISBN-13: 978-0316125581"), split in two.

Shops and references often put a row's label and value in one text: the whole text then
differs on every page, so nothing marked it as a label, no field was named after it, and
rows that shift (a book without an ISBN-10) were matched by position. Split, the caption
reads the same wherever its row is, takes part in matching and names the value.
:func:`visdup.templates.stm.dom_tree` splits every tree it makes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import accumulate

from visdup._native import kernel
from visdup.templates.dom_walk import HEADING_LEVELS, TEXT

#: The compiled text kernel (``visdup._native._text``): which texts hold a colon.
_kernel = kernel("_text")
#: A caption's colon, ASCII or full-width.
_COLONS = ":\uff1a"

#: A text that opens with its own caption: "ISBN-13: 978-0316125581", "Publisher: Little,
#: Brown". The caption starts with a letter, holds at most four words and no colon; the value
#: follows after the colon and at least one space (so "10:30", "http://x" stay whole).
_INLINE_LABEL = re.compile(r"([^\W\d_][^:\uff1a]{0,39}?)\s*([:\uff1a])\s+(\S.*)", re.S)
#: Longer texts, and values longer than this or holding a sentence's end, are prose whatever
#: they open with ("Start slightly cold: after ten minutes you will be warm. A thin...").
_INLINE_MAX = 200
_VALUE_MAX = 80
_SENTENCE_END = re.compile(r"[.!?]\s+\S")
#: Elements whose text is a name, not a row: a heading's or a link's colon is a title's
#: ("Bike lights decoded: lumens, beams and batteries"), never a caption's.
_NAMES = frozenset({"a", "button", "option", "label", "legend", "summary", *HEADING_LEVELS})


def inline_label(text: str) -> tuple[str, str] | None:
    """``(caption with its colon, value)`` of a text that opens with its caption, else None."""
    if len(text) > _INLINE_MAX:
        return None
    m = _INLINE_LABEL.fullmatch(text)
    if m is None or len(m.group(1).split()) > 4:
        return None
    value = m.group(3)
    if len(value) > _VALUE_MAX or _SENTENCE_END.search(value):
        return None
    return m.group(1) + m.group(2), value


def split_inline_labels(
    labels: list[str],
    texts: list[str | None],
    hints: list[str],
    parent: list[int],
    max_nodes: int,
) -> tuple[list[str], list[str | None], list[str], list[int]]:
    """The walk's columns with each text that opens with its own caption made two text
    leaves, the caption and the value, as if the page had written ``<b>ISBN-13:</b> 978...``
    (at most as many as keep the tree within ``max_nodes``)."""
    splits = _captioned_texts(labels, texts, parent, max_nodes - len(labels))
    if not splits:
        return labels, texts, hints, parent
    return _with_captions(labels, texts, hints, parent, splits)


def _captioned_texts(
    labels: Sequence[str], texts: Sequence[str | None], parent: Sequence[int], room: int
) -> dict[int, tuple[str, str]]:
    """A text's index -> its (caption, value), for at most ``room`` texts outside names."""
    splits: dict[int, tuple[str, str]] = {}
    # the texts with a colon, in one pass over them all: most texts have none
    if _kernel is not None and isinstance(texts, list):
        colons = _kernel.holding(texts, _COLONS)
    else:
        colons = [i for i, t in enumerate(texts) if t and (":" in t or "\uff1a" in t)]
    for i in colons:
        if len(splits) >= room:
            break
        t = texts[i]
        assert t is not None
        if len(t) <= _INLINE_MAX and not _named(labels, parent, parent[i]):
            split = inline_label(t)
            if split is not None:
                splits[i] = split
    return splits


def _with_captions(
    labels: list[str],
    texts: list[str | None],
    hints: list[str],
    parent: list[int],
    splits: dict[int, tuple[str, str]],
) -> tuple[list[str], list[str | None], list[str], list[int]]:
    """The columns with each caption in ``splits`` a text leaf of its own, just before its
    text (which keeps the value), and the parent indices moved to match."""
    # old index -> new: each caption goes in just before its text
    marks = [0] * len(labels)
    for i in splits:
        marks[i] = 1
    shift = list(accumulate(marks))
    moved = [p + shift[p] if p >= 0 else -1 for p in parent]
    texts = list(texts)
    out_labels: list[str] = []
    out_texts: list[str | None] = []
    out_hints: list[str] = []
    out_parent: list[int] = []
    at = 0
    for i, (caption, value) in sorted(splits.items()):
        out_labels += labels[at:i]
        out_texts += texts[at:i]
        out_hints += hints[at:i]
        out_parent += moved[at:i]
        out_labels.append(TEXT)
        out_texts.append(caption)
        out_hints.append("")
        out_parent.append(moved[i])
        texts[i] = value
        at = i
    out_labels += labels[at:]
    out_texts += texts[at:]
    out_hints += hints[at:]
    out_parent += moved[at:]
    return out_labels, out_texts, out_hints, out_parent


def _named(labels: Sequence[str], parent: Sequence[int], node: int) -> bool:
    """Whether element ``node``, or the element around it, is one whose text is a name."""
    for _ in range(2):
        if node < 0:
            return False
        if labels[node].partition(".")[0] in _NAMES:
            return True
        node = parent[node]
    return False
