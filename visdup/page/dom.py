"""Walks over lxml trees that stay linear however deep the tree.

``lxml.etree.iterwalk`` slows down on deep trees (60,000 levels: 1.2 s against 0.1 s for
``iter()``), and a recursive walk overflows the stack. These walks keep an explicit stack of
(element, child iterator) pairs: every ancestor of the current element keeps its Python
proxy, so lxml never walks up the tree when a proxy is freed. Only elements are visited
(comments and processing instructions are skipped, with their tails), as ``iterwalk`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from visdup._native import kernel

_kernel = kernel("_dom")
_SIZES = getattr(_kernel, "subtree_sizes", None)  # an older build lacks it


def subtree_sizes(parents: Sequence[int]) -> list[int]:
    """Every node's subtree size from its preorder parent links (the root's is -1).

    Pages have thousands of elements and two steps want this for each: compiled when it can.
    """
    if _SIZES is not None and isinstance(parents, list):
        try:
            return _SIZES(parents)
        except ValueError:  # not a preorder: the Python loop gives whatever it gives
            pass
    n = len(parents)
    sizes = [1] * n
    for i in range(n - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return sizes


def at_paths(root: Any, paths: list[tuple[int, ...]]) -> Iterator[Any]:
    """The elements at these child-position paths (in document order, sharing prefixes):
    what the compiled walks name elements by."""
    chain = [root]
    prev: tuple[int, ...] = ()
    for path in paths:
        common = 0
        limit = min(len(prev), len(path))
        while common < limit and prev[common] == path[common]:
            common += 1
        del chain[common + 1 :]
        for pos in path[common:]:
            chain.append(chain[-1][pos])
        prev = path
        yield chain[-1]


def events(root: Any) -> Iterator[tuple[bool, Any]]:
    """(True, element) when an element opens, (False, element) when it closes; preorder."""
    yield True, root
    stack = [(root, iter(root))]
    while stack:
        el, children = stack[-1]
        for child in children:
            if child.tag.__class__ is str:
                yield True, child
                stack.append((child, iter(child)))
                break
        else:
            stack.pop()
            yield False, el


def outermost(root: Any, wanted: Callable[[Any], bool]) -> list[Any]:
    """The elements below ``root`` that are wanted and have no wanted ancestor, in order."""
    found: list[Any] = []
    stack = [(root, iter(root))]
    while stack:
        for child in stack[-1][1]:
            if child.tag.__class__ is not str:
                continue
            if wanted(child):
                found.append(child)
            else:
                stack.append((child, iter(child)))
                break
        else:
            stack.pop()
    return found
