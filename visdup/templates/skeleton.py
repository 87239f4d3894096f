"""The layout walk in Python: a page's element skeleton, compressed, around its content region.

:func:`visdup.templates.signature.layout_signature` takes the skeleton from the compiled walk
(``visdup._native._dom``) when it can, and from :class:`SkeletonWalk` otherwise (and for the
labels by id or class that only ``bench/bench_cluster.py`` measures): this is the walk the
compiled one is held to. Either way :func:`made` turns the walk's nodes into the
:class:`visdup.templates.layout.Layout`.

The walk goes down at most ``depth`` levels below ``<body>``; inside the content region,
elements on its text spine keep the page's depth, the spine's end is a stub of a few levels,
and what stands beside the spine keeps ``off_spine`` levels. Runs of equal siblings collapse
to one (the visual term's horizontal compression, without the count): a table of 3 rows and
one of 30 rows, a menu of 5 or 7 entries, look alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from visdup.templates.dom_walk import HEADING_LEVELS, SKIP, tag_name
from visdup.templates.layout import Layout, make_layout

#: Levels below <body> kept in the skeleton.
DEFAULT_DEPTH = 8
#: Levels of the content region kept in its stub at least (0: one node).
DEFAULT_STUB_DEPTH = 2
#: Levels kept of an element inside the content region but off its text spine (a sidebar, a
#: header, a comment thread beside the article), itself included.
OFF_SPINE_DEPTH = 2
#: The signature is cut to this many nodes (a preorder prefix).
DEFAULT_MAX_NODES = 400
#: Label of the node standing for the main content.
MAIN = "#main"

#: The same as a set, as the compiled walk takes it.
SKIP_SET = set(SKIP)

#: A node of the skeleton, its subtree compressed: (structural hash, labels, sizes, whether
#: each node is in the region's frame).
Compressed = tuple[int, list[str], list[int], list[bool]]


def label_of(el: Any, tag: str, mode: str) -> str:
    """A node's label in the signature: see :func:`visdup.templates.signature.layout_signature`'s
    ``mode``."""
    if mode == "tag":
        return tag
    ident = (el.get("id") or "").strip()
    if mode == "id":
        return f"{tag}#{ident}" if ident and not any(c.isdigit() for c in ident) else tag
    cls = ".".join(sorted((el.get("class") or "").split()))
    return f"{tag}.{cls}" if cls else tag


class _Open:
    """An element the walk is inside: its label, the levels it may still go down, the stub
    levels left (-1: in no stub), its children still to visit and those already compressed,
    whether it is inside the content region (on its spine or below), and whether it is in the
    region's frame (on the spine or beside it, not in the spine's end)."""

    __slots__ = ("children", "framed", "got", "inside", "label", "left", "stub")

    def __init__(self, el: Any, label: str, left: int, stub: int, inside: bool, framed: bool):
        self.label = label
        self.left = left
        self.stub = stub
        self.children = iter(el)
        self.got: list[Compressed] = []
        self.inside = inside
        self.framed = framed


class SkeletonWalk:
    """The walk's view of the content region: ``main`` (None: no region apart from the page),
    its ``spine`` (``main`` first; empty: the region is one stub of ``stub_depth`` levels),
    the stub of the spine's end (``end_stub``), the levels kept beside the spine, and the
    labels' ``mode`` (``stub_mode``: inside stubs, when not None)."""

    def __init__(
        self,
        main: Any,
        spine: Sequence[Any],
        *,
        stub_depth: int,
        end_stub: int,
        off_spine: int,
        mode: str,
        stub_mode: str | None,
    ):
        self.main = main
        self.spine_at = {id(el): i for i, el in enumerate(spine)}
        self.spine_end = len(spine) - 1
        self.stub_depth = stub_depth
        self.end_stub = end_stub
        self.off_spine = off_spine
        self.mode = mode
        self.stub_mode = stub_mode

    def run(
        self, start: Any, root_label: str, depth: int, budget: int
    ) -> tuple[list[str], list[int], list[bool]]:
        """The compressed skeleton under ``start`` (labels, sizes, in the frame), visiting
        ``budget`` elements at most: post-order over an explicit stack."""
        stack = [_Open(start, root_label, depth, -1, False, False)]
        result: list[Compressed] = []
        while stack:
            top = stack[-1]
            child = None
            if top.left > 0 and top.stub != 0 and budget > 0:
                child = _next_child(top)
            if child is not None:
                budget -= 1
                stack.append(self._opened(top, child))
                continue
            stack.pop()
            node = self._compressed(top)
            if stack:
                stack[-1].got.append(node)
            else:
                result.append(node)
        _, labels, sizes, frames = result[0]
        return labels, sizes, frames

    def _opened(self, parent: _Open, child: Any) -> _Open:
        """``child`` of ``parent`` entered: on the spine (its end a stub), beside it inside
        the region, the region itself as a stub, or a level further in whatever ``parent``
        is in."""
        mode = self.stub_mode if self.stub_mode is not None and parent.stub > 0 else self.mode
        tag = label_of(child, tag_name(child) or "", mode)
        left, stub = parent.left - 1, parent.stub
        if self.spine_at and id(child) in self.spine_at:
            at_end = self.spine_at[id(child)] == self.spine_end
            label = MAIN if child is self.main else tag
            return _Open(child, label, left, self.end_stub if at_end else -1, True, not at_end)
        if parent.inside and stub < 0:  # inside the region, beside its spine
            return _Open(child, tag, left, max(1, self.off_spine) - 1, True, True)
        if stub < 0 and self.main is not None and child is self.main:
            return _Open(child, MAIN, left, self.stub_depth, True, False)
        return _Open(child, tag, left, stub - 1 if stub > 0 else stub, parent.inside, parent.framed)

    def _compressed(self, node: _Open) -> Compressed:
        """A closed element with its children's subtrees, runs of equal ones collapsed.

        Inside a stub of the spine's signature, a child equal to any earlier one is left out:
        the stub says what kinds of element the content holds, in the order they first
        appear, not how many. (Sorting the kinds instead split the test site's event pages:
        STM maps children in order, and an extra kind sorted to the front shifted the rest.)
        """
        labels = [node.label]
        sizes = [1]
        frames = [node.framed]
        parts: list[Any] = [node.label]
        last = None
        seen: set[int] | None = set() if self.spine_at and node.stub >= 0 else None
        for h, sub_labels, sub_sizes, sub_frames in node.got:
            if h == last:
                continue
            if seen is not None:
                if h in seen:
                    continue
                seen.add(h)
            last = h
            labels.extend(sub_labels)
            sizes.extend(sub_sizes)
            frames.extend(sub_frames)
            parts.append(h)
        sizes[0] = len(labels)
        return hash(tuple(parts)), labels, sizes, frames


def _next_child(node: _Open) -> Any:
    """The next of ``node``'s children that is an element with a layout, or None."""
    for candidate in node.children:
        tag = tag_name(candidate)
        if tag is None or tag in SKIP:
            continue
        return candidate
    return None


def made(labels: list[str], sizes: list[int], frames: list[bool], max_nodes: int) -> Layout:
    """The signature of a walk's compressed nodes, its first ``max_nodes`` kept."""
    if len(labels) > max_nodes:
        labels, frames = labels[:max_nodes], frames[:max_nodes]
        sizes = [min(s, max_nodes - i) for i, s in enumerate(sizes[:max_nodes])]
    return make_layout(labels, sizes, (), _outline(labels, frames))


def _outline(labels: Sequence[str], frames: Sequence[bool]) -> tuple[int, ...]:
    """Heading levels in the order they first appear among the nodes of the region's frame.

    Only the frame counts: an article's own headings (in the spine's end) follow its text,
    h3 before h2 on one post and after it on the next, and headings outside the region
    (a sidebar's) come and go with optional blocks (a Sphinx page's local contents: its
    sidebar's h3 before or after the h4s).
    """
    seen: list[int] = []
    for label, framed in zip(labels, frames, strict=True):
        if framed:
            level = HEADING_LEVELS.get(label.partition(".")[0].partition("#")[0])
            if level is not None and level not in seen:
                seen.append(level)
    return tuple(seen)
