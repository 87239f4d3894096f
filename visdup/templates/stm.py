"""Simple Tree Matching (Yang 1991) on flat preorder trees, and DOM trees in that layout.

STM is the top-down restricted tree mapping of seed 003: two nodes can only be mapped when
their parents are. It is too fragile for near-duplicate confirmation (a change near the root
unmaps a whole subtree) but cheap and good at telling pages of one template apart from others,
which is what clustering and extraction need.

A tree is any object with ``labels`` and ``sizes`` in preorder (a :class:`FlatTree`, a
:class:`visdup.structure.term.Term`). This module is the face of the compiled kernels
``visdup._native._stm`` (matching and the label-path bound, with the GIL released) and
``visdup._native._dom`` (the DOM walk), and ``VISDUP_PURE_PYTHON=1`` or a missing compiler
selects the Python code
(:mod:`visdup.templates.stm_python`, :mod:`visdup.templates.dom_walk`). Both walk the trees
with explicit stacks: pages can nest thousands of levels deep. The trees themselves are
:mod:`visdup.templates.flat_tree`'s; they are imported from here.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Sequence
from typing import Any

from visdup._native import kernel
from visdup.page.dom import subtree_sizes
from visdup.templates import kept_mappings
from visdup.templates.dom_walk import HEADING_LEVELS, TEXT, normalize_text
from visdup.templates.dom_walk import SKIP_TAGS as _SKIP_TAGS
from visdup.templates.dom_walk import dom_walk as _dom_walk
from visdup.templates.flat_tree import (
    FlatTree,
    PackedTree,
    Tree,
    packed,
    text_code,
    truncate_sizes,
    unpacked,
)
from visdup.templates.inline_labels import inline_label, split_inline_labels
from visdup.templates.stm_python import py_stm

__all__ = [
    "DEFAULT_MAX_NODES",
    "HEADING_LEVELS",
    "TEXT",
    "FlatTree",
    "PackedTree",
    "Tree",
    "dom_tree",
    "inline_label",
    "label_paths",
    "normalize_text",
    "packed",
    "page_tree",
    "stm",
    "stm_mapping",
    "stm_upper_bound",
    "stm_upper_bounds",
    "text_code",
    "tree_distance_stm",
    "truncate_sizes",
    "unpacked",
    "use_compiled",
]

logger = logging.getLogger(__name__)

_kernel = kernel("_stm")
_walks = kernel("_dom")

#: DOM trees are cut to this many nodes (a preorder prefix) before matching, to bound time and
#: memory. Not the TED cap of ``visdup.structure.distance`` (5000 term nodes, quadratic memory):
#: STM keeps one row per pair of sibling lists, so DOM trees, larger than terms, fit.
DEFAULT_MAX_NODES = 6000
_SKIP_SET = set(_SKIP_TAGS)  # the compiled walk takes a plain set


def use_compiled() -> bool:
    """Whether the compiled kernel serves calls (checked per call so tests can flip it)."""
    return _kernel is not None


#: A code for each label met, the same for the process's life: STM's kernel compares ints.
#: Codes are this process's own, so neither they nor arrays made of them leave it.
_CODES: dict[Any, int] = {}


def _codes(labels: Sequence[Any]) -> array:
    """The labels' codes, new labels given the next ones in the order they come."""
    found = list(map(_CODES.get, labels))  # one dictionary lookup a label, in C
    if None in found:
        for i, label in enumerate(labels):
            if found[i] is None:
                found[i] = _CODES.setdefault(label, len(_CODES) + 1)
    return array("i", found)


def _arrays(tree: Tree, max_nodes: int) -> tuple[array, array]:
    """The label codes and sizes STM's kernel reads, kept on the tree (a :class:`FlatTree`
    or a layout signature, which are compared again and again) once made whole."""
    cached = getattr(tree, "_arrays", None)
    if cached is not None and len(cached[0]) <= max_nodes:
        return cached
    labels, sizes = tree.labels, tree.sizes
    if len(labels) > max_nodes:
        labels = labels[:max_nodes]
        sizes = truncate_sizes(sizes, max_nodes)
    out = (_codes(labels), array("i", sizes))
    if len(tree.labels) <= max_nodes and hasattr(tree, "_arrays"):
        tree._arrays = out  # type: ignore[union-attr]
    return out


def _details(details: Sequence[int] | None, n: int) -> array | None:
    if details is None:
        return None
    d = details if isinstance(details, array) and details.typecode == "i" else array("i", details)
    return d[:n] if len(d) > n else d


def _run(
    a: Tree,
    b: Tree,
    details_a: Sequence[int] | None,
    details_b: Sequence[int] | None,
    mapping: bool,
    max_nodes: int,
) -> Any:
    al, asz = _arrays(a, max_nodes)
    bl, bsz = _arrays(b, max_nodes)
    ad = _details(details_a, len(al))
    bd = _details(details_b, len(bl))
    if _kernel is not None:
        return _kernel.stm(al, asz, ad, bl, bsz, bd, mapping)
    return py_stm(al, asz, ad, bl, bsz, bd, mapping)


def stm(
    a: Tree,
    b: Tree,
    *,
    details_a: Sequence[int] | None = None,
    details_b: Sequence[int] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> int:
    """Number of node pairs in the maximum top-down mapping of ``a`` onto ``b``.

    ``details`` (one int per node, 0 = any) narrow matching: nodes with equal labels match only
    when their nonzero details agree.
    """
    return int(_run(a, b, details_a, details_b, False, max_nodes))


def stm_mapping(
    a: Tree,
    b: Tree,
    *,
    details_a: Sequence[int] | None = None,
    details_b: Sequence[int] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    keep: bool = False,
) -> list[tuple[int, int]]:
    """The mapped node pairs ``(i in a, j in b)`` behind :func:`stm`, sorted by ``i``.

    ``keep``: keep the mapping for the same call again (:mod:`visdup.templates.kept_mappings`),
    as a template build keeps its final mappings, which the reads of its sample that follow
    repeat; any call is answered from those kept.
    """
    found = None
    if keep or kept_mappings.holding():
        # as int32 arrays once: the programme below reads these, cut to its node cap
        details_a = _details(details_a, len(a.labels))
        details_b = _details(details_b, len(b.labels))
        found = kept_mappings.key(
            a.labels, a.sizes, details_a, b.labels, b.sizes, details_b, max_nodes
        )
        known = kept_mappings.recall(found)
        if known is not None:
            return known
    _, pairs = _run(a, b, details_a, details_b, True, max_nodes)
    pairs = sorted(pairs)
    if keep:
        assert found is not None
        kept_mappings.keep(found, pairs)
    return pairs


def tree_distance_stm(a: Tree, b: Tree, *, max_nodes: int = DEFAULT_MAX_NODES) -> float:
    """``1 - 2·STM/(n1+n2)`` in [0, 1]: seed 003's page distance (node counts after capping)."""
    n1 = min(len(a.labels), max_nodes)
    n2 = min(len(b.labels), max_nodes)
    if n1 + n2 == 0:
        return 0.0
    return 1.0 - 2.0 * stm(a, b, max_nodes=max_nodes) / (n1 + n2)


def dom_tree(
    root: Any,
    *,
    classes: bool = False,
    text: bool = True,
    denoise: bool = False,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> FlatTree:
    """An lxml element as a :class:`FlatTree`: one node per rendered element, one per text run.

    Labels are tag names (``tag.class1.class2`` with ``classes``); text leaves are labelled
    ``#text`` and keep their normalised text. Comments, scripts, styles and the head are
    skipped; ``denoise`` first removes invisible nodes (it edits ``root`` in place). More than
    ``max_nodes`` nodes: the preorder prefix is kept and ``truncated`` is set.
    """
    if root is None:
        return FlatTree((), ())
    if denoise:
        try:
            from visdup.content.visibility import remove_invisible
        except ImportError:  # pragma: no cover - optional module
            pass
        else:
            remove_invisible(root)
    walked = None
    if _walks is not None and _walks.DOM_WALK and use_compiled():
        walked = _walks.dom_walk(root, _SKIP_SET, TEXT, classes, text, max_nodes)
    if walked is None:
        walked = _dom_walk(root, classes=classes, text=text, max_nodes=max_nodes)
    labels, texts, hints, parent, truncated = walked
    if text:
        labels, texts, hints, parent = split_inline_labels(labels, texts, hints, parent, max_nodes)
    # Subtree sizes from parent links: children always follow their parent in preorder.
    return FlatTree(labels, subtree_sizes(parent), texts, hints, truncated=truncated)


def page_tree(
    html: bytes | str,
    *,
    url: str | None = None,
    classes: bool = False,
    text: bool = True,
    denoise: bool = True,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> FlatTree:
    """Parse a page and convert it; unusable input (empty, binary) gives an empty tree."""
    from visdup.page.parse import parse_html

    doc = parse_html(html, url=url)
    if not doc.ok:
        logger.debug("No tree for %s: %s", url or "page", doc.problem)
        return FlatTree((), (), truncated=doc.truncated)
    tree = dom_tree(doc.root, classes=classes, text=text, denoise=denoise, max_nodes=max_nodes)
    if doc.truncated:
        tree.truncated = True
    return tree


def label_paths(tree: Tree, max_nodes: int = DEFAULT_MAX_NODES) -> dict[int, int]:
    """Counts of root-to-node label paths (hashed).

    STM maps a node only together with its parent, so mapped nodes share their whole label
    path: ``sum(min(count_a[p], count_b[p]))`` bounds STM from above. A free, exact prefilter.
    """
    labels, sizes = tree.labels, tree.sizes
    n = min(len(labels), max_nodes)
    if _kernel is not None and (found := _kernel.path_counts(labels, sizes, n)) is not None:
        return found  # type: ignore[no-any-return]
    out: dict[int, int] = {}
    stack: list[tuple[int, int]] = []  # (end, path hash)
    for i in range(n):
        while stack and stack[-1][0] <= i:
            stack.pop()
        h = hash((stack[-1][1] if stack else 0, labels[i]))
        out[h] = out.get(h, 0) + 1
        stack.append((i + sizes[i], h))
    return out


def stm_upper_bound(paths_a: dict[int, int], paths_b: dict[int, int]) -> int:
    # the shared paths by a set intersection, their smaller counts summed: all in C
    common = paths_a.keys() & paths_b.keys()
    return sum(map(min, map(paths_a.__getitem__, common), map(paths_b.__getitem__, common)))


def stm_upper_bounds(paths: dict[int, int], others: Sequence[dict[int, int]]) -> list[int]:
    """:func:`stm_upper_bound` of one histogram against each of ``others``, in one call: a
    new layout meets every signature of a cluster whose common one it does not match."""
    if _kernel is not None and (found := _kernel.path_bounds(paths, others)) is not None:
        return list(found)
    return [stm_upper_bound(paths, b) for b in others]
