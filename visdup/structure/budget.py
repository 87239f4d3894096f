"""What the exact tree edit distance may spend: its cells, counted before it runs.

Node caps do not bound the time of the dynamic programme: its cells do, and
:func:`dp_cells` counts them in O(n). A page's :class:`WorkBudget` then decides, before any
cell is filled, whether a confirmation may run at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from visdup.structure.ted_kernel import KERNEL, WORK, FlatTree

if TYPE_CHECKING:
    from visdup.structure.marked import Term


def dp_cells(a: Term | FlatTree, b: Term | FlatTree) -> int:
    """Cells the exact DP will fill for this pair, in O(n): a time budget, not just a node cap.

    It is the smaller of the two directions' products of keyroot-size sums. Node
    counts alone do not bound the time: deep, bushy trees of 1000 nodes can cost
    a hundred times more than a shallow page of the same size.
    """
    work = WORK[KERNEL]
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
