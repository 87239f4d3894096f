"""Tree edit distance and visual similarity of marked terms (ALGORITHMS.md 1.7).

The distance is the exact ordered tree edit distance with the metric costs of
marked nodes: delete ``[r]`` costs r, insert ``[r]`` costs r, relabel
``[r1]f -> [r2]g`` costs ``|r1 - r2|`` when f == g, else ``max(r1, r2)``.
Similarity normalises it by the weighted sizes (sums of marks), never by node
counts, which is what keeps it inside [0, 1].

The dynamic programme runs in the compiled kernel or in Python
(:mod:`visdup.structure.ted_kernel` chooses; ``KERNEL`` says which); the cheap lower bounds
that let :func:`similarity` skip it are in :mod:`visdup.structure.bounds`, and what it may
spend in :mod:`visdup.structure.budget`. Their public names are importable from here.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Any

from visdup.structure import ted_kernel
from visdup.structure.bounds import (
    Profile,
    best_similarities,
    cmp,
    distance_limit,
    distance_lower_bound,
    sequence_lower_bound,
    sequence_similarities,
)
from visdup.structure.budget import OverBudget, WorkBudget, dp_cells
from visdup.structure.ted_kernel import KERNEL, FlatTree, distance_kernel, label_ids
from visdup.structure.ted_python import AUTO

if TYPE_CHECKING:
    from visdup.structure.marked import Term

__all__ = [
    "DEFAULT_MAX_NODES",
    "KERNEL",
    "OverBudget",
    "Profile",
    "Similarities",
    "WorkBudget",
    "best_similarities",
    "distance_lower_bound",
    "dp_cells",
    "sequence_lower_bound",
    "sequence_similarities",
    "similarity",
    "tree_distance",
]

#: Node cap per tree: the DP holds two int64 tables of n1 x n2 cells
#: (5000 x 5000 nodes is about 400 MB), so larger trees are refused.
DEFAULT_MAX_NODES = 5000

# The implementations by name and the compiled module, as the parity tests and
# bench/bench_ted.py read them.
_KERNELS = ted_kernel.KERNELS
_WORK = ted_kernel.WORK
_SEQUENCES = ted_kernel.SEQUENCES
_ted = ted_kernel.ted
_label_ids = label_ids


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
    return distance_kernel(
        label_ids(a.labels),
        a.marks,
        a.sizes,
        label_ids(b.labels),
        b.marks,
        b.sizes,
        max_nodes,
        AUTO,
    )


class Similarities:
    """Similarities measured (a pair of terms, either way round -> cmp), the most recent
    ``capacity``: one pair is measured again where a page is confirmed twice against one
    stored page or against pages of one term, and in the final pass. The distance is
    symmetric and exact, so a pair remembered gives the number its measure would. Terms are
    known by their digest (:meth:`visdup.structure.marked.Term.digest`): none is kept alive
    here; a tree without one is not remembered.
    """

    __slots__ = ("_known", "capacity")

    def __init__(self, capacity: int = 1 << 16):
        self.capacity = capacity
        self._known: dict[bytes, float] = {}

    def get(self, a: Any, b: Any) -> float | None:
        pair = _pair(a, b)
        return None if pair is None else self._known.get(pair)

    def put(self, a: Any, b: Any, value: float) -> None:
        pair = _pair(a, b)
        if pair is None:
            return
        known = self._known
        if len(known) >= self.capacity:
            with suppress(StopIteration, RuntimeError, KeyError):  # emptied meanwhile
                del known[next(iter(known))]  # the oldest
        known[pair] = value


def _pair(a: Any, b: Any) -> bytes | None:
    da, db = getattr(a, "digest", None), getattr(b, "digest", None)
    if da is None or db is None:
        return None
    x, y = da(), db()
    return x + y if x <= y else y + x


def similarity(
    a: Term | FlatTree,
    b: Term | FlatTree,
    *,
    at_least: float | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    budget: WorkBudget | None = None,
    known: Similarities | None = None,
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

    ``known``: the similarities measured before; a pair found there is not measured again,
    but its cells are taken from the budget all the same, so what the budget allows later
    does not depend on it.
    """
    wa = sum(a.marks)
    wb = sum(b.marks)
    total = wa + wb
    if total == 0:
        return 1.0
    if at_least is not None:
        bound = cmp(abs(wa - wb), total)
        if bound < at_least:
            return bound
        bound = cmp(distance_lower_bound(a, b), total)
        if bound < at_least:
            return bound
        if len(a.sizes) <= max_nodes and len(b.sizes) <= max_nodes:  # else no DP will run
            bound = cmp(sequence_lower_bound(a, b, distance_limit(at_least, total)), total)
            if bound < at_least:
                return bound
    if budget is not None and not _same(a, b):
        cells = dp_cells(a, b)
        if not budget.take(cells):
            raise OverBudget(cells, budget.allowed())
    if known is None:
        return cmp(tree_distance(a, b, max_nodes=max_nodes), total)
    found = known.get(a, b)
    if found is None:
        found = cmp(tree_distance(a, b, max_nodes=max_nodes), total)
        known.put(a, b, found)
    return found


def _same(a: Term | FlatTree, b: Term | FlatTree) -> bool:
    return a is b or (a.labels == b.labels and a.marks == b.marks and a.sizes == b.sizes)
