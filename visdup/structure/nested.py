"""A term as nested, mutable nodes: the form translation and compression build it in.

Packing repeated siblings and folding chains rewrite a tree in place, which a flat term
(:class:`~visdup.structure.marked.Term`) cannot do; a finished tree is flattened back.
"""

from __future__ import annotations

from visdup.structure.marked import Term


class Node:
    """Mutable node used while translating and compressing; flattened into a Term at the end."""

    __slots__ = ("kids", "label", "mark", "shape")

    def __init__(self, label: str, mark: int = 1, kids: list[Node] | None = None):
        self.label = label
        self.mark = mark
        self.kids: list[Node] = kids if kids is not None else []
        self.shape = -1


def to_nodes(term: Term) -> Node:
    nodes = [Node(label, mark) for label, mark in zip(term.labels, term.marks, strict=True)]
    open_nodes: list[tuple[int, Node]] = []  # (end index, node)
    for i, node in enumerate(nodes):
        while open_nodes and open_nodes[-1][0] <= i:
            open_nodes.pop()
        if open_nodes:
            open_nodes[-1][1].kids.append(node)
        open_nodes.append((i + term.sizes[i], node))
    return nodes[0]


def from_nodes(root: Node) -> Term:
    labels: list[str] = []
    marks: list[int] = []
    parents: list[int] = []
    stack: list[tuple[Node, int]] = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        index = len(labels)
        labels.append(node.label)
        marks.append(node.mark)
        parents.append(parent)
        for kid in reversed(node.kids):
            stack.append((kid, index))
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return Term(labels, marks, sizes)
