"""Trees written as nestings for tests: ``(label, mark, (child, ...))``."""

from __future__ import annotations

from typing import Any


def preorder(node: tuple) -> tuple[list[Any], list[int], list[int]]:
    """A nesting flat in preorder: labels, marks and subtree sizes."""
    labels: list[Any] = []
    marks: list[int] = []
    sizes: list[int] = []

    def walk(current: tuple) -> None:
        at = len(labels)
        labels.append(current[0])
        marks.append(current[1])
        sizes.append(1)
        for kid in current[2]:
            walk(kid)
        sizes[at] = len(labels) - at

    walk(node)
    return labels, marks, sizes
