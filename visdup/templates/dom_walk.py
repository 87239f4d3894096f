"""The walk from an lxml tree to a flat tree's columns, in Python, and what template code
knows of elements.

:func:`visdup.templates.stm.dom_tree` takes its columns from the compiled walk
(``visdup._native._dom``) when there is one, and from :func:`dom_walk` otherwise: this is
the walk the compiled one is held to. The facts about elements (those that never render, the
heading levels, an element's tag name) are shared with the layout signature's walks.
"""

from __future__ import annotations

import re
from typing import Any

#: Label given to text leaves by :func:`visdup.templates.stm.dom_tree`.
TEXT = "#text"

#: Elements that never render: they carry no structure a reader sees.
SKIP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "head", "link", "meta", "base", "iframe"}
)
#: ...and those that carry no layout either (a layout signature's skeleton leaves them out).
SKIP = SKIP_TAGS | {"br", "wbr", "svg"}
#: Heading elements and their levels.
HEADING_LEVELS = {f"h{level}": level for level in range(1, 7)}

_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def tag_name(el: Any) -> str | None:
    """An element's tag, lower case and without its namespace; None for what is no element
    (comments, processing instructions, entities)."""
    tag = el.tag
    try:
        return _NAMES[tag]
    except KeyError:
        pass
    name = None
    if isinstance(tag, str):
        name = (tag.rsplit("}", 1)[1] if tag[0] == "{" else tag).lower()
    if len(_NAMES) < _NAMES_KEPT:  # a page of endless made-up tags grows it no further
        _NAMES[tag] = name
    return name


#: The names of the tags met so far, by tag as parsed (a site's tags are few, and the layout
#: walks ask for them on every element).
_NAMES: dict[Any, str | None] = {}
_NAMES_KEPT = 4096


def dom_walk(
    root: Any, *, classes: bool, text: bool, max_nodes: int
) -> tuple[list[str], list[str | None], list[str], list[int], bool]:
    """dom_tree's walk in Python: (labels, texts, hints, parent indices, truncated)."""
    labels: list[str] = []
    texts: list[str | None] = []
    hints: list[str] = []
    parent: list[int] = []
    truncated = False
    skip = SKIP_TAGS
    # Explicit stack of elements and pending tail texts, each with its parent's index; a
    # tail is pushed under its element so that it comes out after the element's subtree.
    stack: list[tuple[Any, int]] = [(root, -1)]
    pop, push = stack.pop, stack.append
    while stack:
        el, up = pop()
        if isinstance(el, str):  # a pending tail text (never empty)
            if text and not el.isspace():
                if len(labels) >= max_nodes:
                    truncated = True
                    break
                labels.append(TEXT)
                texts.append(" ".join(el.split()))  # = normalize_text, without the regex
                hints.append("")
                parent.append(up)
            continue
        tag = el.tag
        if not isinstance(tag, str):
            continue
        tag = tag.lower()
        if tag in skip:
            continue
        if len(labels) >= max_nodes:
            truncated = True
            break
        get = el.get
        ident = (get("id") or "").strip()
        cls_attr = get("class") or ""
        label = tag
        if classes:
            cls = ".".join(sorted(cls_attr.split()))
            if cls:
                label = f"{tag}.{cls}"
        cls = ".".join(cls_attr.split())
        labels.append(label)
        texts.append(None)
        hints.append(tag + (f"#{ident}" if ident else "") + (f".{cls}" if cls else ""))
        parent.append(up)
        me = len(labels) - 1
        raw = el.text
        if text and raw and not raw.isspace():
            if len(labels) >= max_nodes:
                truncated = True
                break
            labels.append(TEXT)
            texts.append(" ".join(raw.split()))
            hints.append("")
            parent.append(me)
        for child in reversed(el):
            tail = child.tail
            if tail:
                push((tail, me))
            push((child, me))
    return labels, texts, hints, parent, truncated
