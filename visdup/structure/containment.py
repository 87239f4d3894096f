"""Two layouts of which one holds the other: the same page captured with more or fewer stories.

Compression packs runs of *equal* siblings, so a listing of ten identical rows and one of a
hundred are one term. A news front page is not like that: its stories differ (with a picture or
without, a list of related links or none), the runs do not pack, and two captures of one front
page taken hours apart can have terms of 132 and 1,087 nodes: their tree edit similarity falls
to 0.3 although every block of the smaller one is in the larger.

Three views see past that, all symmetric in the two pages:

- :func:`skeleton`: the top ``depth`` levels of the term, marks dropped, compressed again.
  Cut there, the stories are childless blocks of one class, so they pack into one node
  whatever their number, and what is left is the site's frame: header, columns, footer.
- :func:`containment`: how much of the smaller term the edit script maps into the larger one,
  ``1 - (delta - |W1 - W2|) / (2 min(W1, W2))``: 1 when the smaller is the larger with nodes
  removed, 0 when nothing of it maps.
- :func:`repertoire`: every node's children reduced to their distinct kinds, in the order each
  first appears, every mark 1: a story area becomes one story of each kind, however many
  there are and in whatever order they come, while the frame keeps its order.
  :func:`repertoire_similarity` is the similarity of two repertoires; it is the view that
  tells captures of one page from other sites' pages best (bench/bench_captures.py).

Alone each view errs somewhere: the repertoire misses a front page whose two captures mix
their story kinds differently (each mix is a kind of its own, so more stories make more kinds),
the skeleton links other sites whose frames are generic, and containment links a small page
into any large one. :func:`frame_similarity` asks for either of two agreements: the
repertoires agree, or the skeletons agree *and* the smaller term maps into the larger. It is
the one score of the three views that one threshold (:data:`FRAME_THRESHOLD`) serves on
generated and real pages alike (bench/bench_captures.py).

None of them links pages in verdicts: a crawl's pairs are pages of one site, and two pages of
one template have near-equal repertoires too (80 pages of the Python manual: 453 of 3,160
pairs at 0.886, where the tree edit similarity puts 43), so the views can tell whether two
pages are one site's layout, not whether they are one page.
"""

from __future__ import annotations

from visdup.structure.compression import compress
from visdup.structure.distance import DEFAULT_MAX_NODES, similarity, tree_distance
from visdup.structure.marked import Term
from visdup.structure.nested import Node, from_nodes

#: Levels a skeleton keeps: the page's frame, not its stories (bench/bench_captures.py).
SKELETON_DEPTH = 4

#: The frame similarity at and above which two pages are one frame (bench/bench_captures.py).
FRAME_THRESHOLD = 0.9


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


def containment(
    a: Term, b: Term, *, max_nodes: int = DEFAULT_MAX_NODES, distance: int | None = None
) -> float:
    """The share of the smaller term that the edit script maps into the larger (0 to 1);
    ``distance`` is the tree edit distance of ``a`` and ``b`` when the caller has it."""
    wa, wb = sum(a.marks), sum(b.marks)
    small = min(wa, wb)
    if small == 0:
        return 1.0 if wa == wb else 0.0
    delta = tree_distance(a, b, max_nodes=max_nodes) if distance is None else distance
    return max(0.0, 1.0 - (delta - abs(wa - wb)) / (2 * small))


def repertoire(term: Term) -> Term:
    """``term`` with each node's children reduced to their distinct kinds (first one of each,
    in order), bottom up, every mark 1; kinds compare labels only, never marks."""
    n = len(term.labels)
    if n == 0:
        return term
    kinds: dict[tuple[str, tuple[int, ...]], int] = {}
    kind = [0] * n
    nodes: list[Node | None] = [None] * n
    for i in range(n - 1, -1, -1):
        seen: dict[int, Node] = {}
        j, end = i + 1, i + term.sizes[i]
        while j < end:
            node = nodes[j]
            assert node is not None
            seen.setdefault(kind[j], node)
            nodes[j] = None
            j += term.sizes[j]
        kind[i] = kinds.setdefault((term.labels[i], tuple(seen)), len(kinds))
        nodes[i] = Node(term.labels[i], 1, list(seen.values()))
    root = nodes[0]
    assert root is not None
    return from_nodes(root)


def repertoire_similarity(a: Term, b: Term, *, max_nodes: int = DEFAULT_MAX_NODES) -> float:
    """The tree edit similarity of the two terms' repertoires (symmetric, 0 to 1)."""
    return similarity(repertoire(a), repertoire(b), max_nodes=max_nodes)


def frame_similarity(
    a: Term, b: Term, *, max_nodes: int = DEFAULT_MAX_NODES, distance: int | None = None
) -> float:
    """Whether two pages share one frame, whatever their lists' lengths (symmetric, 0 to 1):
    the larger of their repertoire similarity and the lesser of their skeleton similarity and
    containment. ``distance`` is the tree edit distance of ``a`` and ``b`` when the caller has
    it; it is computed only where the skeleton could raise the score above the repertoire's.
    """
    score = repertoire_similarity(a, b, max_nodes=max_nodes)
    frame = similarity(skeleton(a), skeleton(b), max_nodes=max_nodes)
    if frame <= score:
        return score
    return max(score, min(frame, containment(a, b, max_nodes=max_nodes, distance=distance)))
