"""Tree edit distance and visual similarity of marked terms (ALGORITHMS.md 1.7).

The distance is the exact ordered tree edit distance with the metric costs of
marked nodes: delete ``[r]`` costs r, insert ``[r]`` costs r, relabel
``[r1]f -> [r2]g`` costs ``|r1 - r2|`` when f == g, else ``max(r1, r2)``.
Similarity normalises it by the weighted sizes (sums of marks), never by node
counts, which is what keeps it inside [0, 1].

The dynamic programme runs in the compiled ``visdup._native._ted`` kernel when it is
built (without the GIL, so a crawl can run it in a thread); otherwise, or
with ``VISDUP_PURE_PYTHON=1`` in the environment, a pure-Python version of the
same algorithm serves. ``KERNEL`` says which one is active.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Sequence
from itertools import zip_longest
from operator import sub
from typing import TYPE_CHECKING, Protocol

from visdup._native import kernel

if TYPE_CHECKING:
    from visdup.structure.term import Term

__all__ = [
    "DEFAULT_MAX_NODES",
    "KERNEL",
    "OverBudget",
    "Profile",
    "WorkBudget",
    "distance_lower_bound",
    "dp_cells",
    "sequence_lower_bound",
    "similarity",
    "tree_distance",
]

logger = logging.getLogger(__name__)

#: Node cap per tree: the DP holds two int64 tables of n1 x n2 cells
#: (5000 x 5000 nodes is about 400 MB), so larger trees are refused.
DEFAULT_MAX_NODES = 5000

#: Directions of the Zhang-Shasha decomposition (same codes as the C kernel).
AUTO, LEFT, RIGHT = 0, 1, 2


class FlatTree(Protocol):
    """What the distance needs of a tree: ``Term`` satisfies it."""

    @property
    def labels(self) -> Sequence[str]: ...
    @property
    def marks(self) -> Sequence[int]: ...
    @property
    def sizes(self) -> Sequence[int]: ...


KernelFn = Callable[
    [
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        int,
        int,
    ],
    int,
]


# --------------------------------------------------------------------------- pure Python


def _check_tree(
    labels: Sequence[int], marks: Sequence[int], sizes: Sequence[int], name: str
) -> None:
    """Same checks as the C kernel: a bad size would index outside the tables."""
    n = len(sizes)
    if len(labels) != n or len(marks) != n:
        raise ValueError(
            f"{name}: labels, marks and sizes differ in length ({len(labels)}, {len(marks)}, {n})"
        )
    if n == 0:
        return
    if sizes[0] != n:
        raise ValueError(f"{name}: root size {sizes[0]}, expected {n} nodes")
    ends: list[int] = []
    for i in range(n):
        s = sizes[i]
        if marks[i] < 0:
            raise ValueError(f"{name}: negative mark at node {i}")
        while ends and ends[-1] <= i:
            ends.pop()
        if s < 1 or s > n - i or (ends and i + s > ends[-1]):
            raise ValueError(f"{name}: inconsistent subtree size {s} at node {i}")
        if i > 0 and not ends:
            raise ValueError(f"{name}: more than one root")
        ends.append(i + s)


def _work_python(sizes: Sequence[int]) -> tuple[int, int]:
    """Zhang-Shasha work factors (sum of keyroot sizes) along leftmost and rightmost paths."""
    left = right = 0
    stack: list[int] = []
    for i, s in enumerate(sizes):
        while stack and stack[-1] + sizes[stack[-1]] <= i:
            stack.pop()
        if not stack:
            left += s
            right += s
        else:
            p = stack[-1]
            if i != p + 1:
                left += s
            if i + s != p + sizes[p]:
                right += s
        stack.append(i)
    return left, right


def _postorder(
    labels: Sequence[int], marks: Sequence[int], sizes: Sequence[int], right: bool
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Postorder layout (label, cost, leftmost leaf, keyroots) of a tree or of its mirror.

    The mirror's postorder is the reversed preorder, so rightmost paths need no
    tree rebuilding.
    """
    n = len(sizes)
    lab = [0] * n
    cost = [0] * n
    lml = [0] * n
    key = [False] * n
    stack: list[int] = []
    for i in range(n):
        while stack and stack[-1] + sizes[stack[-1]] <= i:
            stack.pop()
        depth = len(stack)
        s = sizes[i]
        if not right:
            post = i - depth + s - 1
            lml[post] = i - depth
            key[post] = not stack or i != stack[-1] + 1
        else:
            post = n - 1 - i
            lml[post] = n - i - s
            key[post] = not stack or i + s != stack[-1] + sizes[stack[-1]]
        lab[post] = labels[i]
        cost[post] = marks[i]
        stack.append(i)
    keyroots = [k for k in range(n) if key[k]]
    return lab, cost, lml, keyroots


def _distance_python(
    labels1: Sequence[int],
    marks1: Sequence[int],
    sizes1: Sequence[int],
    labels2: Sequence[int],
    marks2: Sequence[int],
    sizes2: Sequence[int],
    max_nodes: int,
    direction: int = AUTO,
) -> int:
    """Zhang-Shasha in Python, the same algorithm and checks as the C kernel."""
    if direction not in (AUTO, LEFT, RIGHT):
        raise ValueError("direction must be 0 (auto), 1 (left) or 2 (right)")
    n1, n2 = len(sizes1), len(sizes2)
    if n1 > max_nodes or n2 > max_nodes:
        raise ValueError(f"tree too large: {n1} and {n2} nodes, cap is {max_nodes}")
    _check_tree(labels1, marks1, sizes1, "first tree")
    _check_tree(labels2, marks2, sizes2, "second tree")
    if n1 == 0 or n2 == 0:
        return sum(marks1) + sum(marks2)
    if direction == AUTO:
        l1, r1 = _work_python(sizes1)
        l2, r2 = _work_python(sizes2)
        right = r1 * r2 < l1 * l2
    else:
        right = direction == RIGHT
    lab1, c1, lml1, kr1 = _postorder(labels1, marks1, sizes1, right)
    lab2, c2, lml2, kr2 = _postorder(labels2, marks2, sizes2, right)
    td = [[0] * n2 for _ in range(n1)]
    for k1 in kr1:
        a0 = lml1[k1]
        rows = k1 - a0 + 2
        for k2 in kr2:
            b0 = lml2[k2]
            w = k2 - b0 + 2
            fd = [[0] * w for _ in range(rows)]
            first = fd[0]
            for y in range(1, w):
                first[y] = first[y - 1] + c2[b0 + y - 1]
            for x in range(1, rows):
                i = a0 + x - 1
                li = lml1[i]
                ci = c1[i]
                labi = lab1[i]
                row = fd[x]
                prev = fd[x - 1]
                sub = fd[li - a0]
                tdrow = td[i]
                row[0] = prev[0] + ci
                whole_i = li == a0
                for y in range(1, w):
                    j = b0 + y - 1
                    cj = c2[j]
                    lj = lml2[j]
                    best = prev[y] + ci
                    alt = row[y - 1] + cj
                    if alt < best:
                        best = alt
                    if whole_i and lj == b0:
                        if lab2[j] == labi:
                            ren = ci - cj if ci > cj else cj - ci
                        else:
                            ren = ci if ci > cj else cj
                        alt = prev[y - 1] + ren
                        if alt < best:
                            best = alt
                        tdrow[j] = best
                    else:
                        alt = sub[lj - b0] + tdrow[j]
                        if alt < best:
                            best = alt
                    row[y] = best
    return td[n1 - 1][n2 - 1]


def _sequence_python(
    labels1: Sequence[int],
    marks1: Sequence[int],
    labels2: Sequence[int],
    marks2: Sequence[int],
    limit: int = -1,
) -> int:
    """Edit distance of two node sequences under the tree costs; see ``sequence_lower_bound``.

    The C kernel's ``sequence_distance`` answers the same: the distance, or with ``limit`` >= 0
    min(distance, limit + 1). It fills only a band of cells; this reference fills every cell
    and stops at the first row whose cells all exceed ``limit`` (no path can come back under).
    """
    if len(labels1) != len(marks1) or len(labels2) != len(marks2):
        raise ValueError("labels and marks differ in length")
    if any(m < 0 for m in marks1) or any(m < 0 for m in marks2):
        raise ValueError("negative mark")
    row = [0]
    for mark in marks2:
        row.append(row[-1] + mark)
    pairs = list(zip(labels2, marks2, strict=True))
    for li, ri in zip(labels1, marks1, strict=True):
        diag = row[0]
        low = row[0] = diag + ri
        left = low
        for j, (lj, rj) in enumerate(pairs, 1):
            up = row[j]
            if li == lj:
                v = diag + (ri - rj if ri > rj else rj - ri)
            else:
                v = diag + (ri if ri > rj else rj)
            if up + ri < v:
                v = up + ri
            if left + rj < v:
                v = left + rj
            diag = up
            row[j] = left = v
            if v < low:
                low = v
        if limit >= 0 and low > limit:
            return limit + 1
    return row[-1] if limit < 0 or row[-1] <= limit else limit + 1


# --------------------------------------------------------------------------- kernel choice

_KERNELS: dict[str, KernelFn] = {"python": _distance_python}
_WORK: dict[str, Callable[[Sequence[int]], tuple[int, int]]] = {"python": _work_python}

_ted = kernel("_ted")
if _ted is not None:
    _KERNELS["c"] = _ted.distance
    _WORK["c"] = _ted.work
KERNEL = "c" if _ted is not None else "python"
SequenceFn = Callable[[Sequence[int], Sequence[int], Sequence[int], Sequence[int], int], int]
_SEQUENCES: dict[str, SequenceFn] = {"python": _sequence_python}
if _ted is not None and hasattr(_ted, "sequence_distance"):  # an older build lacks it
    _SEQUENCES["c"] = _ted.sequence_distance
#: The sequence distance behind ``sequence_lower_bound``.
_sequence: SequenceFn = _SEQUENCES.get(KERNEL, _sequence_python)
if KERNEL == "python":
    logger.debug("tree edit distance runs in pure Python (compiled kernel off or missing)")

_kernel: KernelFn = _KERNELS[KERNEL]

# Visual classes to small ints for the kernel. Shared by all terms so that one
# conversion per term suffices; the table only grows with distinct labels.
_LABEL_IDS: dict[str, int] = {}


def _label_ids(labels: Sequence[str]) -> list[int]:
    ids = _LABEL_IDS
    try:  # every label met before (all but a site's first pages): one pass in C
        return list(map(ids.__getitem__, labels))
    except KeyError:
        pass
    out = []
    for label in labels:
        code = ids.get(label)
        if code is None:
            code = ids.setdefault(label, len(ids))
        out.append(code)
    return out


# --------------------------------------------------------------------------- public API


def tree_distance(
    a: Term | FlatTree, b: Term | FlatTree, *, max_nodes: int = DEFAULT_MAX_NODES
) -> int:
    """Exact tree edit distance delta(a, b) under the marked-node costs.

    Raises ValueError when a term has more than ``max_nodes`` nodes, because
    the DP needs memory quadratic in the node counts.
    """
    n1, n2 = len(a.sizes), len(b.sizes)
    if n1 > max_nodes or n2 > max_nodes:
        raise ValueError(f"tree too large: {n1} and {n2} nodes, cap is {max_nodes}")
    if _same(a, b):
        return 0
    return _kernel(
        _label_ids(a.labels),
        a.marks,
        a.sizes,
        _label_ids(b.labels),
        b.marks,
        b.sizes,
        max_nodes,
        AUTO,
    )


def dp_cells(a: Term | FlatTree, b: Term | FlatTree) -> int:
    """Cells the exact DP will fill for this pair, in O(n): a time budget, not just a node cap.

    It is the smaller of the two directions' products of keyroot-size sums. Node
    counts alone do not bound the time: deep, bushy trees of 1000 nodes can cost
    a hundred times more than a shallow page of the same size.
    """
    work = _WORK[KERNEL]
    la, ra = work(a.sizes)
    lb, rb = work(b.sizes)
    return min(la * lb, ra * rb)


class OverBudget(Exception):
    """The exact DP was needed, and its cells would exceed the comparison's or page's budget."""

    def __init__(self, cells: int, allowed: int):
        super().__init__(f"{cells} DP cells needed, {allowed} allowed")
        self.cells = cells
        self.allowed = allowed


class WorkBudget:
    """DP cells one page may spend on exact confirmations, and one comparison at most.

    Node caps do not bound the time of the DP: a 9.7 KB "comb" page (deep chains of wrappers
    with a text beside each) fills ~10^10 cells against its twin, minutes of CPU, while a
    1,000-node documentation page fills ~10^5. ``dp_cells`` counts a pair's cells in O(n)
    before anything runs, so the cost of a page's confirmation is bounded ahead of time.
    Not thread-safe by design: one budget belongs to one page being labelled.
    """

    __slots__ = ("left", "per_comparison", "skipped", "spent")

    def __init__(self, per_comparison: int | None = None, per_page: int | None = None):
        self.per_comparison = per_comparison or None
        self.left = per_page or None
        self.spent = 0
        self.skipped = 0

    def take(self, cells: int) -> bool:
        """Spend ``cells`` if both limits allow it; False (and one more skip) otherwise."""
        cap = self.per_comparison
        if (cap is not None and cells > cap) or (self.left is not None and cells > self.left):
            self.skipped += 1
            return False
        if self.left is not None:
            self.left -= cells
        self.spent += cells
        return True

    def allowed(self) -> int:
        caps = [c for c in (self.per_comparison, self.left) if c is not None]
        return min(caps) if caps else -1


def _histogram_bound(a: Term | FlatTree, b: Term | FlatTree) -> int:
    """Label-histogram lower bound on delta(a, b); see ``distance_lower_bound``."""
    weight: dict[str, int] = {}
    count: dict[str, int] = {}
    for label, mark in zip(a.labels, a.marks, strict=True):
        weight[label] = weight.get(label, 0) + mark
        if mark > 0:
            count[label] = count.get(label, 0) + 1
    for label, mark in zip(b.labels, b.marks, strict=True):
        weight[label] = weight.get(label, 0) - mark
        if mark > 0:
            count[label] = count.get(label, 0) - 1
    best = 0
    for table in (weight, count):
        pos = neg = 0
        for v in table.values():
            if v > 0:
                pos += v
            else:
                neg -= v
        best = max(best, pos, neg)
    return best


class Profile:
    """A tree's weighted size, label histograms and preorder: what the cheap bounds read.

    Computed once per tree, it makes the histogram bound O(labels) per pair (four visual
    classes), so a page can rank a hundred candidates by their best possible similarity before
    any DP; the preorder (label codes and marks) feeds the sequence bound.
    """

    __slots__ = ("codes", "count", "counts", "marks", "weight", "weights")

    def __init__(self, tree: Term | FlatTree):
        codes = _label_ids(tree.labels)
        size = max(codes, default=-1) + 1
        weights = [0] * size  # by label code: summed marks, then nodes of mark >= 1
        counts = [0] * size
        for code, mark in zip(codes, tree.marks, strict=True):
            weights[code] += mark
            if mark > 0:
                counts[code] += 1
        self.weights = weights
        self.counts = counts
        self.weight = sum(weights)
        self.count = sum(counts)
        self.codes = array("i", codes)
        self.marks = tree.marks

    def bound(self, other: Profile) -> int:
        """``distance_lower_bound`` of the two trees, from their profiles alone.

        Per histogram, max(P, N) = (sum_f |A_f - B_f| + |W1 - W2|) / 2 (P - N = W1 - W2), an
        exact integer: the sum and the difference have the same parity. Summed over label
        codes in C (``map``), a candidate costs a few microseconds, not a loop in Python.
        """
        weights = (_spread(self.weights, other.weights) + abs(self.weight - other.weight)) // 2
        counts = (_spread(self.counts, other.counts) + abs(self.count - other.count)) // 2
        return max(weights, counts)

    def best_similarity(self, other: Profile) -> float:
        """An upper bound on cmp of the two trees: no DP can find them closer."""
        total = self.weight + other.weight
        return 1.0 if total == 0 else _cmp(self.bound(other), total)

    def sequence_similarity(self, other: Profile, at_least: float = 0.0) -> float:
        """A tighter upper bound on cmp, from ``sequence_lower_bound`` (O(n1 n2), in the kernel).

        It may stop as soon as cmp is sure to be below ``at_least``: the value returned is then
        still an upper bound on cmp, and below ``at_least``.
        """
        total = self.weight + other.weight
        if total == 0:
            return 1.0
        limit = _limit(at_least, total) if at_least > 0 else -1
        return _cmp(_sequence(self.codes, self.marks, other.codes, other.marks, limit), total)


_best_similarities = getattr(_ted, "best_similarities", None)


def best_similarities(mine: Profile, others: Sequence[Profile]) -> list[float]:
    """``mine.best_similarity(o)`` for each of ``others``: a page's candidates ranked in one
    call into the kernel, not one Python call each."""
    if _best_similarities is not None:
        found = _best_similarities(mine, others)
        if found is not None:  # None: a sum past what the kernel counts exactly
            return found
    return [mine.best_similarity(o) for o in others]


def _spread(a: list[int], b: list[int]) -> int:
    """sum_f |A_f - B_f| of two histograms by label code (the shorter one padded with 0s)."""
    if len(a) == len(b):
        return sum(map(abs, map(sub, a, b)))
    return sum(abs(x - y) for x, y in zip_longest(a, b, fillvalue=0))


def distance_lower_bound(a: Term | FlatTree, b: Term | FlatTree) -> int:
    """A lower bound on delta(a, b) in O(n), to reject pairs before any DP.

    Let A_f, B_f be the summed marks of the nodes labelled f in a and b, and
    P = sum_f max(0, A_f - B_f), N = sum_f max(0, B_f - A_f). Any edit script
    is a one-to-one mapping plus deleted and inserted nodes; split A_f - B_f
    over its parts and look at each part's positive share:
      - a mapped pair with equal labels f adds r1 - r2 to label f only: its
        positive share is at most |r1 - r2|, its cost;
      - a mapped pair f != g adds r1 to f and -r2 to g: positive share r1,
        at most max(r1, r2), its cost;
      - a deleted node adds r, its cost; an inserted node adds nothing positive.
    The positive part is subadditive, so P <= sum of costs = delta; by symmetry
    N <= delta. Hence delta >= max(P, N) = (|W1 - W2| + sum_f |A_f - B_f|) / 2,
    which is never below the weighted-size bound |W1 - W2|.
    The same argument run on counts instead of summed marks (count, per label,
    the nodes whose mark is >= 1) gives a second bound, because marks are
    integers: a part whose positive count share is 1 has a node of mark >= 1
    on the a side that is deleted, relabelled (cost >= its mark), or mapped
    to a mark-0 node of the same label (cost = its mark). It is the sharper
    one when counts differ while summed marks do not, e.g. ``[5]text`` against five
    ``text`` leaves. The larger of the two bounds is returned.
    """
    return _histogram_bound(a, b)


def sequence_lower_bound(a: Term | FlatTree, b: Term | FlatTree, limit: int = -1) -> int:
    """A lower bound on delta(a, b) in O(n1 n2) time and O(n2) memory: far below the DP's cost.

    It is the edit distance of the two preorder sequences of (label, mark) under the same costs
    (delete or insert [r]: r; relabel: |r1 - r2| on equal labels, else max(r1, r2)). The
    mapping of any tree edit script is one-to-one and keeps ancestors and left-to-right order,
    hence the preorder: read along the two preorders it is an alignment of the sequences,
    with the same cost for each mapped, deleted and inserted node. So the sequence distance
    is at most delta. It sees what the label histograms cannot (where the nodes are), and on
    pages of one site it comes within a few percent of delta where the histogram bound is off
    by a third (bench/bench_recall.py). With ``limit`` >= 0 the answer is min(bound, limit + 1),
    and the kernel fills only the cells a script of cost <= ``limit`` can reach.
    """
    return _sequence(_label_ids(a.labels), a.marks, _label_ids(b.labels), b.marks, limit)


def _cmp(delta: int, total: int) -> float:
    return 1.0 - delta / total


def _limit(at_least: float, total: int) -> int:
    """The largest distance whose cmp, as ``_cmp`` rounds it, still reaches ``at_least``.

    One more is then sure to fall below it: (1 - at_least) * total alone can round a hair
    under an integer and let the first distance over the limit pass as reaching it.
    """
    limit = max(0, int((1.0 - at_least) * total))
    while _cmp(limit + 1, total) >= at_least:
        limit += 1
    while limit > 0 and _cmp(limit, total) < at_least:
        limit -= 1
    return limit


def similarity(
    a: Term | FlatTree,
    b: Term | FlatTree,
    *,
    at_least: float | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    budget: WorkBudget | None = None,
) -> float:
    """cmp(a, b) = 1 - delta / (|a| + |b|) with |t| the sum of marks; 1.0 for two empty terms.

    With ``at_least=theta`` the answer to "is cmp >= theta?" stays exact but
    the DP is skipped when cheap lower bounds on delta already put cmp below
    theta. Then the value returned is ``1 - bound / (|a| + |b|)``: an upper
    bound on the true cmp that is itself < theta. So a result >= theta is
    always the exact cmp, and a result < theta is the exact cmp or an upper
    bound on it (true cmp <= result < theta). ValueError (node cap) is raised
    only when the DP is actually needed.

    With a ``budget``, the DP's cells (``dp_cells``) are counted before it runs and taken from
    the budget; when they do not fit, :class:`OverBudget` is raised and nothing runs.
    """
    wa = sum(a.marks)
    wb = sum(b.marks)
    total = wa + wb
    if total == 0:
        return 1.0
    if at_least is not None:
        bound = _cmp(abs(wa - wb), total)
        if bound < at_least:
            return bound
        bound = _cmp(distance_lower_bound(a, b), total)
        if bound < at_least:
            return bound
        if len(a.sizes) <= max_nodes and len(b.sizes) <= max_nodes:  # else no DP will run
            bound = _cmp(sequence_lower_bound(a, b, _limit(at_least, total)), total)
            if bound < at_least:
                return bound
    if budget is not None and not _same(a, b):
        cells = dp_cells(a, b)
        if not budget.take(cells):
            raise OverBudget(cells, budget.allowed())
    return _cmp(tree_distance(a, b, max_nodes=max_nodes), total)


def _same(a: Term | FlatTree, b: Term | FlatTree) -> bool:
    return a is b or (a.labels == b.labels and a.marks == b.marks and a.sizes == b.sizes)
