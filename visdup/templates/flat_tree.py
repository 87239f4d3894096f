"""Trees flat in preorder, the form every template step reads and keeps a page's DOM in.

A tree is its node ``labels`` and subtree ``sizes`` in preorder (the root's size is the node
count), so a subtree is a slice and a tree crosses processes as a few tuples. A
:class:`FlatTree` adds what templates need to name and read fields (each text leaf's text,
each element's ``tag#id.class`` hint); a :class:`PackedTree` is one kept as bytes until it is
read. :mod:`visdup.templates.stm` matches them.
"""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Sequence
from typing import Any, Protocol

from visdup._native import kernel
from visdup.storage import compressed as _kept

#: Parents and text codes of a tree in one call each (template builds, extraction and drift
#: ask them of every tree they read).
_kernel = kernel("_stm")


class Tree(Protocol):
    """Read-only members: a tuple-holding tree (FlatTree, Term, Layout) satisfies it."""

    @property
    def labels(self) -> Sequence[Any]: ...

    @property
    def sizes(self) -> Sequence[int]: ...


def text_code(text: str) -> int:
    """A nonzero int32 standing for a text, for ``details`` arrays: FNV-1a over its code
    points, the same in every process (a mapping found in an analysis worker is kept, under
    its codes, by the process that asked for the build)."""
    if _kernel is not None:
        return int(array("i", _kernel.text_codes((text,)))[0])
    return _text_code_python(text)


def _text_code_python(text: str) -> int:
    """:func:`text_code` in Python (the kernel's reference)."""
    h = 0xCBF29CE484222325
    for char in text:
        h = ((h ^ ord(char)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 32
    return (h & 0x7FFFFFFF) or 1


def match_codes(texts: Sequence[str | None], fixed: Sequence[bool]) -> list[int]:
    """A template's match codes: each fixed text's code (met only by the same text), 0 for
    every other node (met by structure alone)."""
    return [code if fix else 0 for code, fix in zip(text_codes(texts), fixed, strict=True)]


def text_codes(texts: Sequence[str | None]) -> array:
    """:func:`text_code` of each text, 0 for None, as the int32 array matching reads."""
    if _kernel is not None:
        return array("i", _kernel.text_codes(texts))
    return array("i", (_text_code_python(t) if t is not None else 0 for t in texts))


class FlatTree:
    """A DOM-like tree flat in preorder, with what templates need to name and read fields.

    ``texts[i]`` is the whitespace-normalised text of a text leaf, None for elements;
    ``hints[i]`` is ``tag#id.class`` of an element ('' for text leaves).
    """

    __slots__ = ("_arrays", "hints", "labels", "sizes", "texts", "truncated")

    def __init__(
        self,
        labels: Sequence[str],
        sizes: Sequence[int],
        texts: Sequence[str | None] | None = None,
        hints: Sequence[str] | None = None,
        *,
        truncated: bool = False,
    ):
        self.labels = tuple(labels)
        self.sizes = tuple(sizes)
        n = len(self.labels)
        if len(self.sizes) != n:
            raise ValueError("labels and sizes differ in length")
        if n and self.sizes[0] != n:
            raise ValueError("the root's subtree size must be the node count")
        self.texts = tuple(texts) if texts is not None else (None,) * n
        self.hints = tuple(hints) if hints is not None else ("",) * n
        if len(self.texts) != n or len(self.hints) != n:
            raise ValueError("texts and hints need one entry per node")
        self.truncated = truncated
        #: The label codes and sizes STM's kernel reads, kept once made (visdup.templates.stm).
        self._arrays: tuple[array, array] | None = None

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        # STM's label codes are numbered per process (visdup.templates.stm): a tree sent to
        # another process (a template built in a worker) must not bring this one's
        slots = {name: getattr(self, name) for name in self.__slots__ if name != "_arrays"}
        return None, {**slots, "_arrays": None}

    @property
    def nodes(self) -> int:
        return len(self.labels)

    def children(self, i: int = 0) -> list[int]:
        out = []
        j, end = i + 1, i + self.sizes[i]
        while j < end:
            out.append(j)
            j += self.sizes[j]
        return out

    def parents(self) -> list[int]:
        """Parent index of each node (-1 for the root).

        Each node hands its index to its children, found by jumping over their subtrees: one
        step per node, where keeping a stack of the open nodes costs three times as long
        (template builds and extraction ask it of every tree they read). Sizes no tree here
        has (below 1, past the end) move on by one node or stop at the end.
        """
        if _kernel is not None and (found := _kernel.parents(self.sizes)) is not None:
            return found  # type: ignore[no-any-return]
        return self._parents_python()

    def _parents_python(self) -> list[int]:
        """:meth:`parents` in Python: the reference the kernel is held to."""
        sizes = self.sizes
        n = len(sizes)
        parent = [-1] * n
        for i, size in enumerate(sizes):
            if size > 1:
                j, end = i + 1, min(i + size, n)
                while j < end:
                    parent[j] = i
                    step = sizes[j]
                    j += step if step > 0 else 1
        return parent

    def text_details(self) -> array:
        """Per node the code of its text (0 for elements): makes texts part of matching."""
        return text_codes(self.texts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "sizes": list(self.sizes),
            "texts": list(self.texts),
            "hints": list(self.hints),
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FlatTree:
        return cls(
            data["labels"],
            data["sizes"],
            data.get("texts"),
            data.get("hints"),
            truncated=bool(data.get("truncated", False)),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlatTree):
            return NotImplemented
        return (self.labels, self.sizes, self.texts) == (other.labels, other.sizes, other.texts)

    def __hash__(self) -> int:
        return hash((self.labels, self.sizes))

    def __repr__(self) -> str:
        return f"FlatTree(nodes={len(self.labels)})"


class PackedTree:
    """A :class:`FlatTree` kept as bytes until a template build or an extraction reads it.

    A page's tree is about 150 KiB of Python objects, 36 KiB pickled and 9 KiB compressed.
    The crawl keeps up to VISDUP_TEMPLATE_MAX_PAGES trees per cluster for its template (and
    drift keeps samples too), and with analysis in worker processes the tree crosses to the
    labelling on every page, which keeps few of them: a worker sends it pickled alone
    (``compress=False``), and only a tree that stays is compressed (:meth:`compact`), so no
    page pays for compressing a tree nothing keeps, and no process builds the objects of a
    tree it only passes on or keeps.
    """

    __slots__ = ("_compact", "compressed", "data", "nodes")

    def __init__(self, data: bytes, nodes: int, compressed: bool = True):
        self.data = data
        self.nodes = nodes
        self.compressed = compressed
        #: Its compressed form, once made: a page's tree kept by its template's sample and by
        #: the snapshot's is compressed once.
        self._compact: PackedTree | None = None

    @classmethod
    def of(cls, tree: FlatTree, *, compress: bool = True) -> PackedTree:
        fields = (tree.labels, tree.sizes, tree.texts, tree.hints, tree.truncated)
        data = pickle.dumps(fields, protocol=5)
        return cls(_kept.compress(data) if compress else data, tree.nodes, compress)

    def compact(self) -> PackedTree:
        """This tree compressed, to be kept (the same object when it already is)."""
        if self.compressed:
            return self
        if self._compact is None:
            self._compact = PackedTree(_kept.compress(self.data), self.nodes)
        return self._compact

    def unpack(self) -> FlatTree:
        data = _kept.decompress(self.data) if self.compressed else self.data
        labels, sizes, texts, hints, truncated = pickle.loads(data)
        return FlatTree(labels, sizes, texts, hints, truncated=truncated)

    def __reduce__(self) -> tuple[Any, ...]:
        return PackedTree, (self.data, self.nodes, self.compressed)

    def __repr__(self) -> str:
        return f"PackedTree(nodes={self.nodes}, bytes={len(self.data)})"


def unpacked(tree: FlatTree | PackedTree | None) -> FlatTree | None:
    """The tree itself, unpacked when it is kept packed."""
    return tree.unpack() if isinstance(tree, PackedTree) else tree


def packed(tree: FlatTree | PackedTree) -> PackedTree:
    """The tree packed and compressed, to be kept (the same object when it already is)."""
    return PackedTree.of(tree) if isinstance(tree, FlatTree) else tree.compact()


def truncate_sizes(sizes: Sequence[int], n: int) -> list[int]:
    """Sizes of the first ``n`` preorder nodes as a tree of their own (a prefix is a tree)."""
    return [min(s, n - i) for i, s in enumerate(sizes[:n])]


def hint_parts(hint: str) -> tuple[str, list[str]]:
    """The id ('' if none) and the class names of a ``tag#id.class`` hint."""
    ident = hint.split("#", 1)[1].split(".", 1)[0] if "#" in hint else ""
    return ident, [c for c in hint.split(".")[1:] if c]
