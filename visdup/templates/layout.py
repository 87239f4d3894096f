"""One page's layout signature as a value, and how two of them compare.

A :class:`Layout` is a flat preorder tree (``labels``, ``sizes``) that the STM kernel
compares in microseconds, the template names its page's ``<body>`` carries (``marks``,
:mod:`visdup.templates.marks`), the heading levels of its content region's frame
(``outline``), and ``key``: a 64-bit digest of all of it, stable across processes, so that
pages with the very same skeleton meet in a dictionary without any comparison.

Two signatures may share a template only when their marks and outlines agree
(:func:`may_link`); then :func:`similarity` says how alike they are, their frames' likeness
(``frame``: the blocks around the content, :mod:`visdup.templates.region`) counted once more,
and :func:`similarity_bound` bounds it for free. :mod:`visdup.templates.signature` reads a
page's signature; :mod:`visdup.templates.layouts` clusters them.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup.templates.marks import marks_agree
from visdup.templates.region import frame_similarity, is_frame, is_shape, shapes_agree
from visdup.templates.stm import label_paths, stm, stm_upper_bound, stm_upper_bounds

#: Bumped when the signature of a page changes meaning, or which signatures may share a
#: template: keys differ, so signatures stored by another version are told apart (their labels
#: alone may look the same) and their pages are reclustered, not left in a partition this
#: version would not make.
SIGNATURE_VERSION = 12
#: Starts the outline's token in a stored root label: ``^134``. Marks never hold a digit
#: (:func:`visdup.templates.marks.body_marks`), so the token cannot be read as one.
OUTLINE_MARK = "^"


@dataclass(eq=False)
class Layout:
    """A layout signature: flat preorder ``labels``/``sizes``, the page's ``marks`` (the
    template names its ``<body>`` carries, :func:`visdup.templates.marks.body_marks`) and its
    64-bit ``key``."""

    labels: tuple[str, ...]
    sizes: tuple[int, ...]
    _paths: dict[int, int] | None = field(default=None, repr=False)
    marks: frozenset[str] = frozenset()
    #: Heading levels in the order they first appear in the content region's frame
    #: (:func:`visdup.templates.signature.layout_signature`): ``(1, 3, 4)`` for a title, a
    #: sub-heading, a signature line.
    outline: tuple[int, ...] = ()
    #: The shape of the content region's container (:mod:`visdup.templates.region`), as its
    #: stored token; empty: none (no region apart from the page).
    shape: str = ""
    #: The blocks around the content region's container, as its stored token
    #: (:func:`visdup.templates.region.region_frame`); empty: none.
    frame: str = ""
    #: The label codes and sizes STM's kernel reads (:mod:`visdup.templates.stm`), kept once
    #: made: a signature is compared with many others. The codes are the process's own.
    _arrays: tuple[Any, Any] | None = field(default=None, repr=False)
    #: :attr:`key`, once asked for.
    _key: int | None = field(default=None, repr=False)

    @property
    def key(self) -> int:
        """64-bit digest of the stored labels and sizes (:func:`layout_key`), made when first
        read: a page's signature is made in steps (its skeleton, then its shape and frame,
        then its ``<body>`` marks), and only the last one is ever keyed."""
        if self._key is None:
            self._key = layout_key(self.stored_labels, self.sizes)
        return self._key

    @property
    def nodes(self) -> int:
        return len(self.labels)

    @property
    def paths(self) -> dict[int, int]:
        """Label-path histogram (cached): STM's free upper bound."""
        if self._paths is None:
            self._paths = label_paths(self, len(self.labels))
        return self._paths

    def __getstate__(self) -> dict[str, Any]:
        # The path histogram's keys are hash() values, salted per process: never ship them.
        # The STM codes are numbered per process too.
        # The key is made here, where the page was analysed, not where it is placed.
        return {**self.__dict__, "_paths": None, "_arrays": None, "_key": self.key}

    @property
    def stored_labels(self) -> list[str]:
        """The labels as stored: the root's label carries the marks, the outline, the shape
        and the frame (:func:`make_layout` reads them back), so a store keeps its two
        columns."""
        labels = list(self.labels)
        if labels and (self.marks or self.outline or self.shape or self.frame):
            extra = [OUTLINE_MARK + "".join(map(str, self.outline))] if self.outline else []
            if self.shape:
                extra.append(self.shape)
            if self.frame:
                extra.append(self.frame)
            labels[0] = " ".join([labels[0], *sorted(self.marks), *extra])
        return labels

    def to_dict(self) -> dict[str, Any]:
        return {"labels": self.stored_labels, "sizes": list(self.sizes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Layout:
        return make_layout(data["labels"], data["sizes"])


def layout_key(labels: Sequence[str], sizes: Sequence[int]) -> int:
    """64-bit digest of a flat tree, the same in every process (``hash`` is salted)."""
    h = hashlib.blake2b(digest_size=8, person=b"visdup-layout-%d" % SIGNATURE_VERSION)
    for label, size in zip(labels, sizes, strict=True):
        h.update(label.encode("utf-8", "replace"))
        h.update(struct.pack("<I", size))
    return int.from_bytes(h.digest(), "little")


def make_layout(
    labels: Sequence[str],
    sizes: Sequence[int],
    marks: Iterable[str] | None = None,
    outline: Sequence[int] = (),
    shape: str = "",
    frame: str = "",
) -> Layout:
    """A signature from its labels and sizes; ``marks`` None: the marks, the outline, the
    shape and the frame are read from the root's label, as :attr:`Layout.stored_labels`
    writes them."""
    labels, sizes = list(labels), tuple(sizes)
    levels = tuple(outline)
    if marks is None:
        found: frozenset[str] = frozenset()
        if labels and " " in labels[0]:
            root, *names = labels[0].split(" ")
            labels[0] = root
            kept = set()
            for name in names:
                if name.startswith(OUTLINE_MARK) and name[1:].isdigit():
                    levels = tuple(int(c) for c in name[1:])
                elif is_shape(name):
                    shape = name
                elif is_frame(name):
                    frame = name
                elif name:
                    kept.add(name)
            found = frozenset(kept)
    else:
        found = frozenset(marks)
    return Layout(tuple(labels), sizes, marks=found, outline=levels, shape=shape, frame=frame)


def outlines_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two pages' frame outlines allow them one template: the heading levels both
    use first appear in the same order.

    A level one page has and the other lacks says nothing (an optional sub-heading, a
    comment thread's title); the same levels met in another order is another frame. Scaladoc
    heads an entity page with its name, a sub-heading and a signature line (h1, h3, h4) and a
    package page with its name and signature line (h1, h4), then lists members under h3: the
    skeletons differ in one node of ~40, the order of their headings does not lie.
    """
    if a == b or not a or not b:
        return True
    shared = set(a) & set(b)
    return [x for x in a if x in shared] == [x for x in b if x in shared]


def may_link(a: Layout, b: Layout) -> bool:
    """Whether two signatures may share a template at all, before any measure: their
    ``<body>`` marks (:func:`visdup.templates.marks.marks_agree`), their frame outlines
    (:func:`outlines_agree`) and their content shapes
    (:func:`visdup.templates.region.shapes_agree`) agree."""
    return (
        marks_agree(a.marks, b.marks)
        and outlines_agree(a.outline, b.outline)
        and shapes_agree(a.shape, b.shape)
    )


def similarity(a: Layout, b: Layout) -> float:
    """``2·STM/(n1+n2)``: seed 003's page similarity, on the two signatures, times the
    similarity of their frames (:func:`visdup.templates.region.frame_similarity`).

    Most of a signature is the article's own furniture (its header, figures, related links,
    comments) and the header's and footer's insides; the blocks around the content, a top
    bar, a sidebar, the wrappers, are a few nodes among many. Two designs of one site that
    share their article markup differ there and little else, and link at any threshold that
    keeps one design's varied articles together. Counting the frame's difference once more,
    in proportion to the frame's size rather than the signature's, parts them, while pages
    of one design, whose frames are one, keep their similarity.
    """
    total = a.nodes + b.nodes
    if total == 0:
        return 1.0
    if a.key == b.key:
        return 1.0
    framed = frame_similarity(a.frame, b.frame)
    return framed * 2.0 * stm(a, b, max_nodes=max(a.nodes, b.nodes)) / total


def similarity_bound(a: Layout, b: Layout) -> float:
    """An upper bound on :func:`similarity` from the label-path histograms (no STM)."""
    return _bound(a, b, stm_upper_bound(a.paths, b.paths))


def similarity_bounds(a: Layout, others: Sequence[Layout]) -> list[float]:
    """:func:`similarity_bound` of ``a`` against each of ``others``, the histograms' shared
    counts summed in one kernel call."""
    shared = stm_upper_bounds(a.paths, [b.paths for b in others])
    return [_bound(a, b, common) for b, common in zip(others, shared, strict=True)]


def _bound(a: Layout, b: Layout, common: int) -> float:
    """The similarity two signatures would have if ``common`` of their nodes matched."""
    total = a.nodes + b.nodes
    if total == 0 or a.key == b.key:
        return 1.0
    return frame_similarity(a.frame, b.frame) * 2.0 * common / total
