"""Two layouts of which one holds the other: the same page captured with more or fewer stories.

Compression packs runs of *equal* siblings, so a listing of ten identical rows and one of a
hundred are one term. A news front page is not like that: its stories differ (with a picture or
without, a list of related links or none), the runs do not pack, and two captures of one front
page taken hours apart can have terms of 132 and 1,087 nodes: their tree edit similarity falls
to 0.3 although every block of the smaller one is in the larger.

Two views see past that, both symmetric in the two pages:

- :func:`skeleton`: the top ``depth`` levels of the term, marks dropped, compressed again.
  Cut there, the stories are childless blocks of one class, so they pack into one node
  whatever their number, and what is left is the site's frame: header, columns, footer.
- :func:`containment`: how much of the smaller term the edit script maps into the larger one,
  ``1 - (delta - |W1 - W2|) / (2 min(W1, W2))``: 1 when the smaller is the larger with nodes
  removed, 0 when nothing of it maps.
"""

from __future__ import annotations

from visdup.structure.compression import compress
from visdup.structure.distance import DEFAULT_MAX_NODES, tree_distance
from visdup.structure.marked import Term

#: Levels a skeleton keeps: the page's frame, not its stories (bench/bench_captures.py).
SKELETON_DEPTH = 4


def _cut(term: Term, depth: int) -> Term:
    """The nodes of ``term`` above ``depth`` (the root at 0), every mark 1."""
    labels: list[str] = []
    sizes: list[int] = []
    open_: list[tuple[int, int]] = []  # (end of the subtree in the old preorder, new index)
    for i, label in enumerate(term.labels):
        while open_ and open_[-1][0] <= i:
            _end, at = open_.pop()
            sizes[at] = len(labels) - at
        if len(open_) >= depth:
            continue
        open_.append((i + term.sizes[i], len(labels)))
        labels.append(label)
        sizes.append(1)
    while open_:
        _end, at = open_.pop()
        sizes[at] = len(labels) - at
    return Term.from_arrays(labels, [1] * len(labels), sizes)


def skeleton(term: Term, depth: int = SKELETON_DEPTH) -> Term:
    """The top ``depth`` levels of ``term``, compressed again, every mark 1."""
    if not term.labels:
        return term
    packed = compress(_cut(term, depth))
    return Term.from_arrays(packed.labels, [1] * len(packed.labels), packed.sizes)


def containment(a: Term, b: Term, *, max_nodes: int = DEFAULT_MAX_NODES) -> float:
    """The share of the smaller term that the edit script maps into the larger (0 to 1)."""
    wa, wb = sum(a.marks), sum(b.marks)
    small = min(wa, wb)
    if small == 0:
        return 1.0 if wa == wb else 0.0
    delta = tree_distance(a, b, max_nodes=max_nodes)
    return max(0.0, 1.0 - (delta - abs(wa - wb)) / (2 * small))
