"""What a template's fields are called: after what a reader would call them.

A field is named, in this order of preference, after a label just before its value
("Author:", ``<th>Price</th>``, ``<strong>ISBN-13</strong>``, a fixed heading:
:func:`label_of`), after the nearest class or id on the way up that the template's pages
share (:func:`stable_names`), else after the node's position path. The field that reads as
the page's ``<title>`` is ``title`` (:func:`own_title_field`), else the page's main heading, the
highest one, when nothing up to it names it (:func:`title_field`). Names are unique within a
template and depend only on it (:func:`field_names`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from visdup.templates.dom_walk import HEADING_LEVELS
from visdup.templates.flat_tree import FlatTree, hint_parts
from visdup.templates.main_text import words
from visdup.templates.template_model import Anchor, Mapped, onto

#: Columns every record has (:func:`visdup.templates.extract.extract_record`, the file key):
#: no field may take these names, or a field labelled "Fits:" would overwrite the verdict.
RECORD_COLUMNS = ("url", "path", "cluster", "fits", "main_text")
#: Names a field never takes: the record's own columns and the key of a page.
RESERVED_NAMES = frozenset((*RECORD_COLUMNS, "key"))
#: A label is short: longer fixed texts are content, not captions.
MAX_LABEL_CHARS = 40

_SLUG = re.compile(r"[^0-9a-z]+")
_LEADING_SEPARATOR = re.compile(r"^[:\uff1a]\s*")
#: A heading that reads the same on every page names what follows it ("Next topic", "Related
#: posts"), as a caption does; inside the main text it is a section's, and what follows it is
#: that text (:func:`visdup.templates.main_text.in_main_text`).
HEADING_LABELS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_LABEL_TAGS = frozenset({"th", "dt", "label", "strong", "b", "em", "span", "td", "legend"})
_LABEL_TAGS |= HEADING_LABELS

#: Whether an id or class name of a base element is the template's (:func:`stable_names`).
Stable = Callable[[int, str], bool]


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def slug(text: str) -> str:
    out = _SLUG.sub("_", text.lower()).strip("_")
    return out[:48].strip("_")


def clean_value(text: str | None) -> str | None:
    """Drop the separator a label leaves in front of a value (``: 9780316125581``)."""
    if text is None:
        return None
    return _LEADING_SEPARATOR.sub("", text).strip()


def caption(text: str) -> str:
    return text.rstrip().rstrip(":\uff1a").strip()


def label_of(tree: FlatTree, fixed: list[bool], node: int) -> str | None:
    """The caption of a sibling element or text, if ``node`` is preceded by one."""
    texts = tree.texts
    sizes = tree.sizes
    end = node + sizes[node]
    inner = [k for k in range(node, end) if texts[k] is not None]
    if any(not fixed[k] for k in inner) and texts[node] is None:
        return None
    t = texts[node]
    if t is not None:
        if fixed[node] and len(t) <= MAX_LABEL_CHARS and t.rstrip().endswith((":", "\uff1a")):
            return caption(t)
        return None
    tag = tree.labels[node].split(".", 1)[0]
    if len(inner) == 1 and fixed[inner[0]] and len(texts[inner[0]] or "") <= MAX_LABEL_CHARS:
        t = texts[inner[0]] or ""
        if tag in _LABEL_TAGS or t.rstrip().endswith((":", "\uff1a")):
            return caption(t)
    return None


def anchor_of(tree: FlatTree, prev: int, node: int, value: int, parents: list[int]) -> Anchor:
    """The way from label ``prev`` (a text, or an element around one text) to ``value``
    inside ``node``, its next sibling."""
    label, up = prev, 0
    if tree.texts[prev] is None:  # the element's one text: the caption (label_of)
        label = next(k for k in range(prev, prev + tree.sizes[prev]) if tree.texts[k] is not None)
        k = label
        while k != prev:
            k = parents[k]
            up += 1
    path: list[int] = []
    k = value
    while k != node:
        p = parents[k]
        path.append(tree.children(p).index(k))
        k = p
    return Anchor(label, up, tuple(reversed(path)))


def by_heading(tree: FlatTree, anchor: Anchor, parents: list[int]) -> bool:
    """Whether a field's label is a heading (its element: ``up`` levels above the text)."""
    node = anchor.label
    for _ in range(anchor.up):
        node = parents[node]
    return tree.labels[node].split(".", 1)[0] in HEADING_LABELS


def title_field(
    tree: FlatTree, field_nodes: list[int], parents: list[int]
) -> tuple[int, int] | None:
    """(field, heading element) of the page's main heading: the text of the highest heading
    element (then the first), itself or through up to two inline elements (``<h1><a>``,
    ``<h2><span>``).

    A book's name in an unnamed ``<h2>`` came out as ``module``, the class of the section
    around it: a reader calls it the title. A label, or a class or id on the way up to the
    heading (``h1.headline``), still names it (:func:`field_names`).
    """
    best: tuple[int, int, int] | None = None
    for f in field_nodes:
        node = parents[f]
        for _ in range(3):
            if node < 0:
                break
            level = HEADING_LEVELS.get(tree.labels[node].split(".", 1)[0])
            if level is not None:
                if best is None or (level, f) < best[:2]:
                    best = (level, f, node)
                break
            node = parents[node]
    return (best[1], best[2]) if best is not None else None


def own_title_field(
    sample: Sequence[Mapped], nodes: Sequence[int], titles: Sequence[str | None]
) -> int | None:
    """The field among ``nodes`` that reads as its page's own title (the same words) on more
    pages than any other, and on at least half of those that have a title; None if none does.

    A manual's page names itself in its navigation bar on every page (DocBook's header row)
    and in a heading only on some: the title is the one a reader finds on all of them.
    """
    named: Counter[int] = Counter()
    counted = 0
    for (tree, mapping), title in zip(sample, titles, strict=True):
        said = words(title) if title else "  "
        if said == "  ":
            continue  # no title, or none in words
        counted += 1
        for i in nodes:
            j = onto(mapping, i)
            value = tree.texts[j] if j is not None else None
            if value and words(value) == said:
                named[i] += 1
    if not named:
        return None
    best = min(named, key=lambda i: (-named[i], i))
    return best if 2 * named[best] >= counted else None


def hint_words(hint: str) -> list[str]:
    """The id, then the class names, of a ``tag#id.class`` hint."""
    ident, classes = hint_parts(hint)
    return [ident, *classes] if ident else classes


def stable_names(others: Sequence[Mapped]) -> Stable:
    """Whether an id or class name of a base element is the template's: the element it is
    mapped onto in ``others`` carries it too on at least half of the pages it is mapped in.

    Ids made from the page itself (``sql-abort`` on the ``ABORT`` page, ``s-troubleshooting``
    on a section titled Troubleshooting, a Scaladoc entity's package) name one page's value,
    not the field.
    """
    known: dict[tuple[int, str], bool] = {}

    def stable(node: int, word: str) -> bool:
        got = known.get((node, word))
        if got is None:
            met = carried = 0
            for other, mapping in others:
                j = onto(mapping, node)
                if j is not None:
                    met += 1
                    carried += word in hint_words(other.hints[j])
            got = known[(node, word)] = met > 0 and 2 * carried >= met
        return got

    return stable


def field_names(
    tree: FlatTree,
    fixed: list[bool],
    field_nodes: list[int],
    labelled: dict[int, tuple[str, Anchor]] | None = None,
    parents: list[int] | None = None,
    stable: Stable | None = None,
    own_title: int | None = None,
) -> list[str]:
    """Names of the fields at ``field_nodes``; those named from a label text go in
    ``labelled``, with the label's caption and where the value stands from it. ``stable``:
    whether an element's id or class name is the template's (:func:`stable_names`);
    ``own_title``: the field that reads as the page's own title (:func:`own_title_field`), which is
    then the ``title`` in place of the main heading."""
    if parents is None:
        parents = tree.parents()
    namer = _Namer(tree, fixed, parents, stable)
    title = title_field(tree, field_nodes, parents) if own_title is None else None
    names = []
    for f in field_nodes:
        name = namer.by_label(f, labelled)
        by_label = bool(name)
        if not name:
            name = namer.by_hint(f, title)
        if title is not None and f == title[0] and not by_label and (not name or "title" in name):
            name = "title"  # unnamed, or entry-title, product_title, btAsinTitle: the title
        if f == own_title and not by_label:
            name = "title"
        if not name:
            name = slug(namer.position(f)) or "field"
        names.append(name)
    return _unique(names)


class _Namer:
    """The ways to name a field of ``tree``, each reading the tree around the field's node."""

    def __init__(
        self, tree: FlatTree, fixed: list[bool], parents: list[int], stable: Stable | None
    ):
        self.tree = tree
        self.fixed = fixed
        self.parents = parents
        self.stable = stable
        self._kids: dict[int, list[int]] = {}

    def kids(self, p: int) -> list[int]:
        got = self._kids.get(p)
        if got is None:
            got = self._kids[p] = self.tree.children(p)
        return got

    def previous_sibling(self, i: int) -> int | None:
        p = self.parents[i]
        if p < 0:
            return None
        siblings = self.kids(p)
        at = siblings.index(i)
        return siblings[at - 1] if at > 0 else None

    def by_label(self, f: int, labelled: dict[int, tuple[str, Anchor]] | None) -> str | None:
        """The slug of a label text just before the value, or before one of up to two
        elements around it (None: no label there); a named one goes in ``labelled``."""
        node = f
        for _ in range(3):
            prev = self.previous_sibling(node)
            if prev is not None:
                label = label_of(self.tree, self.fixed, prev)
                if not label:
                    return None
                name = slug(label)
                if name and labelled is not None:
                    labelled[f] = (label, anchor_of(self.tree, prev, node, f, self.parents))
                return name
            node = self.parents[node]
            if node <= 0:
                break
        return None

    def by_hint(self, f: int, title: tuple[int, int] | None) -> str | None:
        """The slug of the first id or class name without digits, and the template's, of up
        to three elements above the value ('' or None: none); the main heading's field
        (``title``) looks no higher than the heading's parent."""
        name = None
        node = self.parents[f]
        for _ in range(3):
            if node < 0:
                break
            if title is not None and f == title[0] and node == self.parents[title[1]]:
                break  # above the heading: the section's names, not the title's
            hint = self.tree.hints[node]
            if "#" in hint or "." in hint:
                # Words with digits are generated from the page (``s-django-1-9-3``,
                # ``post-4182``): they name one page's value, not the field.
                usable = [
                    w
                    for w in hint_words(hint)
                    if not _has_digit(w) and (self.stable is None or self.stable(node, w))
                ]
                name = slug(usable[0]) if usable else ""
                if name:
                    break
            node = self.parents[node]
        return name

    def position(self, i: int) -> str:
        """The node's position path: up to three labels above it, each numbered among its
        siblings of the same label when it has some."""
        tree, parents = self.tree, self.parents
        parts: list[str] = []
        node = i
        while node > 0 and len(parts) < 3:
            p = parents[node]
            label = tree.labels[node].split(".", 1)[0].lstrip("#")
            same = [k for k in self.kids(p) if tree.labels[k] == tree.labels[node]]
            parts.append(f"{label}{same.index(node) + 1}" if len(same) > 1 else label)
            node = p
        return "_".join(reversed(parts))


def _unique(names: list[str]) -> list[str]:
    """The names made unique, first come first served in document order: reserved ones get
    ``_field``, repeats a number."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in RESERVED_NAMES:
            name = f"{name}_field"
        count = seen.get(name, 0) + 1
        seen[name] = count
        out.append(name if count == 1 else f"{name}_{count}")
    # A suffixed name could collide with a real one; resolve by extending further.
    final: list[str] = []
    used: set[str] = set()
    for name in out:
        candidate = name
        k = 2
        while candidate in used:
            candidate = f"{name}_{k}"
            k += 1
        used.add(candidate)
        final.append(candidate)
    return final
