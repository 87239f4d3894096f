"""Lower bounds on the tree edit distance, far cheaper than the distance itself.

A candidate page is ranked, and most are rejected, before any dynamic programme runs: the label
histograms bound the distance in O(n) (:func:`distance_lower_bound`, or per pair in O(labels)
from each tree's :class:`Profile`), and the edit distance of the two preorder sequences bounds it
tighter in O(n1 n2) time and O(n2) memory (:func:`sequence_lower_bound`). A bound on the
distance is a bound on the similarity: :func:`cmp` turns one into the other.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import count as _count
from itertools import islice, zip_longest
from operator import sub
from typing import TYPE_CHECKING

from visdup.structure.ted_kernel import FlatTree, label_ids, sequence_kernel, ted

if TYPE_CHECKING:
    from visdup.structure.marked import Term


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

    __slots__ = ("codes", "count", "counts", "marks", "serial", "weight", "weights")

    def __init__(self, tree: Term | FlatTree):
        codes = label_ids(tree.labels)
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
        self.marks = _int_array(tree.marks)
        #: This profile's number, unique in the process: what the sequence distances already
        #: known are keyed by.
        self.serial = next(_serials)

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
        return 1.0 if total == 0 else cmp(self.bound(other), total)

    def sequence_similarity(self, other: Profile, at_least: float = 0.0) -> float:
        """A tighter upper bound on cmp, from ``sequence_lower_bound`` (O(n1 n2), in the kernel).

        It may stop as soon as cmp is sure to be below ``at_least``: the value returned is then
        still an upper bound on cmp, and below ``at_least``.
        """
        if _sequence_similarities is not None:
            found = _sequence_similarities(self, (other,), at_least, _KNOWN)
            if found is not None:
                _trim()
                return found[0]  # type: ignore[no-any-return]
        return self._sequence_similarity(other, at_least)

    def _sequence_similarity(self, other: Profile, at_least: float) -> float:
        """:meth:`sequence_similarity` in Python: what the compiled batch
        (:func:`sequence_similarities`) is held to, and what answers without it."""
        total = self.weight + other.weight
        if total == 0:
            return 1.0
        limit = distance_limit(at_least, total) if at_least > 0 else -1
        a, b = self.serial, other.serial
        pair = (a << 64 | b) if a < b else (b << 64 | a)
        known = _KNOWN.get(pair)
        if known is not None:
            if known >= 0:  # the distance itself
                return cmp(known if limit < 0 or known <= limit else limit + 1, total)
            if 0 <= limit < -known:  # more than the limit: the kernel would say limit + 1
                return cmp(limit + 1, total)
        found = sequence_kernel(self.codes, self.marks, other.codes, other.marks, limit)
        _remember(pair, found if limit < 0 or found <= limit else -found)
        return cmp(found, total)


def sequence_similarities(
    mine: Profile, others: Sequence[Profile], at_least: float = 0.0
) -> list[float]:
    """``mine.sequence_similarity(o, at_least)`` for each of ``others``, in one call into the
    kernel: a page's search for a template peer bounds dozens of candidates in a row, most of
    them answered by the pairs already measured."""
    if _sequence_similarities is not None:
        found = _sequence_similarities(mine, others, at_least, _KNOWN)
        if found is not None:  # None: a number past what the kernel counts exactly
            _trim()
            return found  # type: ignore[no-any-return]
    return [mine._sequence_similarity(o, at_least) for o in others]


def _int_array(values: Sequence[int]) -> array[int]:
    """The values as the kernels read them fastest: a buffer of C ints (8-byte ones past
    their range), which they widen in one pass instead of reading an object per value."""
    try:
        return array("i", values)
    except OverflowError:
        return array("q", values)


_serials = _count()
#: Sequence distances measured (profile pair -> the distance, or minus a number it reaches),
#: the most recent :data:`KNOWN_PAIRS`. The distance is symmetric, and with a limit the kernel
#: answers min(distance, limit + 1): what one measure learnt answers the same pair later, from
#: either side (a candidate's bound again, the final pass's search for template peers).
_KNOWN: dict[int, int] = {}
#: Pairs remembered at most.
KNOWN_PAIRS = 1 << 17


def _remember(pair: int, value: int) -> None:
    _trim(KNOWN_PAIRS - 1)
    _KNOWN[pair] = value


def _trim(most: int = KNOWN_PAIRS) -> None:
    """Forget the oldest quarter of the pairs once more than ``most`` are known."""
    known = _KNOWN
    if len(known) > most:
        try:
            for old in list(islice(known, KNOWN_PAIRS // 4)):  # the oldest quarter
                known.pop(old, None)
        except RuntimeError:  # another thread changed it meanwhile: start afresh
            known.clear()


_sequence_similarities = getattr(ted, "sequence_similarities", None)


_best_similarities = getattr(ted, "best_similarities", None)


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
    return sequence_kernel(label_ids(a.labels), a.marks, label_ids(b.labels), b.marks, limit)


def cmp(delta: int, total: int) -> float:
    """cmp = 1 - delta / (|a| + |b|): a distance (or a bound on one) as a similarity."""
    return 1.0 - delta / total


def distance_limit(at_least: float, total: int) -> int:
    """The largest distance whose cmp, as ``cmp`` rounds it, still reaches ``at_least``.

    One more is then sure to fall below it: (1 - at_least) * total alone can round a hair
    under an integer and let the first distance over the limit pass as reaching it.
    """
    limit = max(0, int((1.0 - at_least) * total))
    while cmp(limit + 1, total) >= at_least:
        limit += 1
    while limit > 0 and cmp(limit, total) < at_least:
        limit -= 1
    return limit
