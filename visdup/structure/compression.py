"""Compression of a marked term into its irreducible term (Alpuente & Romero 2009, Defs. 4.2-4.6).

Two rewrites alternate until neither changes anything: hrz packs each run of consecutive
siblings equal modulo marks (≡V) into one node whose marks say how often it repeats (their
join), and vrt folds the links of single-child chains that carry no repetition. The compiled
kernel (``visdup._native._term``) does the same; :func:`compress_python` is the reference it
is held to.
"""

from __future__ import annotations

from visdup._native import kernel
from visdup.structure.classes import CODE, GRP, NAMES, TEXT
from visdup.structure.marked import Term
from visdup.structure.nested import Node, from_nodes, to_nodes

_kernel = kernel("_term")


def _join(a: Node, b: Node) -> Node:
    """join(a, b) of Def. 4.2 with cumulative ancestor marks (the reading Ex. 4.3 confirms)."""
    result: Node | None = None
    stack: list[tuple[Node, Node, int, int, int, Node | None]] = [(a, b, 1, 1, 1, None)]
    while stack:
        x, y, k1, k2, p, parent = stack.pop()
        m = -(-(x.mark * k1 + y.mark * k2) // p)
        node = Node(x.label, m)
        node.shape = x.shape
        if parent is None:
            result = node
        else:
            parent.kids.append(node)
        k1x, k2y, pm = k1 * x.mark, k2 * y.mark, p * m
        for cx, cy in zip(reversed(x.kids), reversed(y.kids), strict=True):
            stack.append((cx, cy, k1x, k2y, pm, node))
    assert result is not None
    return result


def _pack(kids: list[Node]) -> list[Node]:
    """hrz at one level: each maximal run of consecutive ≡V siblings becomes its join."""
    if len(kids) < 2:
        return kids
    packed: list[Node] = []
    for kid in kids:
        if packed and packed[-1].shape == kid.shape:
            packed[-1] = _join(packed[-1], kid)
        else:
            packed.append(kid)
    return packed


def _safe(node: Node) -> bool:
    """Def. 4.6: a chain link whose folding loses no repetition and keeps groups and content."""
    if node.mark != 1 or len(node.kids) != 1:
        return False
    kid = node.kids[0]
    if kid.label == TEXT:
        return False
    return not (node.label == GRP and kid.label != GRP)


def _shr(node: Node) -> Node:
    kid = node.kids[0]
    if kid.mark == 1 and kid.label != GRP:
        return Node(node.label, node.mark, kid.kids)
    return kid


class _Shapes:
    """Structural hashing: equal ids ⇔ ≡V (same labels and arity all the way down)."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[tuple[str, tuple[int, ...]], int] = {}

    def of(self, node: Node) -> int:
        key = (node.label, tuple(k.shape for k in node.kids))
        shape = self.table.get(key)
        if shape is None:
            shape = self.table[key] = len(self.table)
        return shape


def _hrz(root: Node, shapes: _Shapes) -> bool:
    """Def. 4.4: pack a level, then proceed to the next one; True if anything was packed.

    Shapes are hashed bottom-up first, so each ≡V test is an integer comparison.
    """
    _assign_shapes(root, shapes)
    changed = False
    stack = [root]
    while stack:
        node = stack.pop()
        if len(node.kids) > 1:
            packed = _pack(node.kids)
            if len(packed) != len(node.kids):
                node.kids = packed
                changed = True
        stack.extend(node.kids)
    return changed


def _vrt(root: Node) -> tuple[Node, bool]:
    """Fold every safe chain link, parents before children."""
    changed = False
    while _safe(root):
        root = _shr(root)
        changed = True
    stack = [root]
    while stack:
        node = stack.pop()
        kids = node.kids
        for i, kid in enumerate(kids):
            if _safe(kid):
                while _safe(kid):
                    kid = _shr(kid)
                kids[i] = kid
                changed = True
            stack.append(kid)
    return root, changed


def _compress_nodes(root: Node) -> Node:
    """compress = hrz ∘ vrt until nothing changes, each pass linear thanks to structural hashing.

    A single bottom-up pass does not give the same term: folding a chain before its parent
    packs loses shape (grp(grp(grp,grp),grp(grp,grp)) would become [4]grp, not [2]grp([2]grp)),
    and packing children before their parents changes how ceilings round. So vrt and hrz
    alternate as whole-tree passes, each linear; real pages settle in a few rounds.
    """
    shapes = _Shapes()
    while True:
        root, folded = _vrt(root)
        packed = _hrz(root, shapes)
        if not (folded or packed):
            return root


def compress_python(term: Term) -> Term:
    """The reference implementation of :func:`compress`, in Python."""
    return from_nodes(_compress_nodes(to_nodes(term)))


def compress(term: Term) -> Term:
    """The irreducible term: hrz and vrt applied until nothing changes (§1.6)."""
    if _kernel is not None:
        try:
            labels = bytes(map(CODE.__getitem__, term.labels))
            labels, marks, sizes = _kernel.compress(labels, term.marks, term.sizes)
        except (KeyError, OverflowError):  # labels outside the four classes, huge marks
            return compress_python(term)
        return Term([NAMES[c] for c in labels], marks, sizes)
    return compress_python(term)


def join(a: Term, b: Term) -> Term:
    """join of two ≡V terms (Def. 4.2)."""
    x, y = to_nodes(a), to_nodes(b)
    shapes = _Shapes()
    for root in (x, y):
        _assign_shapes(root, shapes)
    if x.shape != y.shape:
        raise ValueError("join needs terms equal modulo marks (≡V)")
    return from_nodes(_join(x, y))


def _assign_shapes(root: Node, shapes: _Shapes) -> None:
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            node.shape = shapes.of(node)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in node.kids)


def equivalent(a: Term, b: Term) -> bool:
    """t ≡V s: the same tree once marks are ignored."""
    return a.labels == b.labels and a.sizes == b.sizes
