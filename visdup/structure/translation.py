"""An HTML tree as a raw marked term, every mark 1 (ALGORITHMS.md §1.1).

Each element becomes a node of its visual class (:mod:`visdup.structure.classes`); what is
never rendered or is hidden produces nothing, and each run of inline content becomes one text
leaf. The compiled kernel (``visdup._native._term``) does the same walk; :func:`translate_python`
is the reference it is held to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import lxml.etree

from visdup._native import kernel
from visdup.structure.classes import (
    DEFAULT_CODES,
    GRP,
    NAMES,
    REPLACED,
    TEXT,
    VISUAL_CLASSES,
    class_codes,
    class_table,
)
from visdup.structure.marked import Term
from visdup.structure.nested import Node, from_nodes

if TYPE_CHECKING:
    from lxml.etree import _Element

_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)

_kernel = kernel("_term")


def _hidden(el: _Element) -> bool:
    attrib = el.attrib
    if "hidden" in attrib:
        return True
    if el.tag == "input" and attrib.get("type", "").lower() == "hidden":
        return True
    style = attrib.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


class Translation:
    """Raw marked term of a tree, plus what the walk saw (depth) for truncation checks."""

    __slots__ = ("depth", "term")

    def __init__(self, term: Term, depth: int):
        self.term = term
        self.depth = depth


def translate(
    root: lxml.etree._Element, classes: Mapping[str, str | None] | None = None
) -> Translation:
    """HTML tree → marked term with every mark 1 (§1.1), one text leaf per run of inline content."""
    if _kernel is not None:
        table = class_table(classes)
        codes = DEFAULT_CODES if table is VISUAL_CLASSES else class_codes(table)
        labels, sizes, depth = _kernel.translate(root, codes, REPLACED)
        return Translation(Term([NAMES[c] for c in labels], [1] * len(labels), sizes), depth)
    return translate_python(root, classes)


def translate_python(
    root: lxml.etree._Element, classes: Mapping[str, str | None] | None = None
) -> Translation:
    """The reference implementation of :func:`translate`, in Python."""
    table = class_table(classes)
    root_cls = table.get(root.tag, TEXT) if isinstance(root.tag, str) else GRP
    top = Node(root_cls if root_cls not in (None, TEXT) else GRP)
    containers: list[Node] = [top]
    in_run: list[bool] = [False]
    # For every open element: True if it opened a container (so its end pops one).
    opened: list[bool] = []
    depth = best = 0

    def add_text() -> None:
        if not in_run[-1]:
            containers[-1].kids.append(Node(TEXT))
            in_run[-1] = True

    walker = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        if event == "start":
            depth += 1
            if depth > best:
                best = depth
            tag = el.tag
            if not isinstance(tag, str):  # comment or processing instruction
                opened.append(False)
                walker.skip_subtree()
                continue
            if el is root:
                opened.append(False)
                if el.text and el.text.strip():
                    add_text()
                continue
            tag = tag.lower()
            cls = table.get(tag, TEXT)
            if cls is None or _hidden(el):
                opened.append(False)
                walker.skip_subtree()
                continue
            if cls == TEXT:
                opened.append(False)
                if tag in REPLACED:
                    add_text()
                    walker.skip_subtree()
                elif el.text and el.text.strip():
                    add_text()
                continue
            node = Node(cls)
            containers[-1].kids.append(node)
            in_run[-1] = False
            containers.append(node)
            in_run.append(False)
            opened.append(True)
            if el.text and el.text.strip():
                add_text()
        else:
            depth -= 1
            if opened.pop():
                containers.pop()
                in_run.pop()
                in_run[-1] = False
            if el is not root:
                tail = el.tail
                if tail and tail.strip():
                    add_text()
    return Translation(from_nodes(top), best)
