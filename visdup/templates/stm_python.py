"""Simple Tree Matching in Python: the reference the compiled kernel (``visdup._native._stm``)
is held to, and what serves when the kernel is off or missing (:mod:`visdup.templates.stm`).

Trees arrive as the kernel takes them: label codes and subtree sizes in preorder, and
optional ``details`` (one int per node, 0 = any). The match of two nodes is scored from the
matches of their children, so each matched pair gets a frame on an explicit stack (pages
nest thousands of levels deep, past Python's recursion limit) and is scored once all its
child pairs are.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

#: Whether node ``i`` of one tree may map onto node ``j`` of the other.
Match = Callable[[int, int], bool]


def py_stm(
    al: array,
    asz: array,
    ad: array | None,
    bl: array,
    bsz: array,
    bd: array | None,
    mapping: bool,
) -> Any:
    """The kernel's algorithm in Python: one frame per matched pair, children scored first.

    Returns the score, or ``(score, pairs)`` with ``mapping``: the mapped ``(i, j)`` pairs,
    the roots first.
    """
    _check(al, asz)
    _check(bl, bsz)
    if len(ad or ()) not in (0, len(al)) or len(bd or ()) not in (0, len(bl)):
        raise ValueError("labels, sizes and details must have one entry per node")

    def match(i: int, j: int) -> bool:
        if al[i] != bl[j]:
            return False
        return not (ad is not None and bd is not None and ad[i] and bd[j] and ad[i] != bd[j])

    if not al or not bl or not match(0, 0):
        return (0, []) if mapping else 0
    score, record = _score_roots(asz, bsz, match, mapping)
    if not mapping:
        return score
    return score, _mapped_pairs(record)


def _check(labels: array, sizes: array) -> None:
    """Reject size arrays that are not a preorder tree (the kernel checks the same)."""
    n = len(labels)
    if len(sizes) != n:
        raise ValueError("labels, sizes and details must have one entry per node")
    if n == 0:
        return
    if sizes[0] != n:
        raise ValueError("sizes do not describe a preorder tree")
    ends: list[int] = []
    for i, s in enumerate(sizes):
        while ends and ends[-1] <= i:
            ends.pop()
        if s < 1 or (ends and i + s > ends[-1]) or i + s > n:
            raise ValueError("sizes do not describe a preorder tree")
        ends.append(i + s)


def _children(sizes: array, i: int) -> list[int]:
    out = []
    j, end = i + 1, i + sizes[i]
    while j < end:
        out.append(j)
        j += sizes[j]
    return out


class _Frame:
    """A matched pair being scored: its children on each side, each child pair's score
    (``scores``, row-major) and, when mapping, its matched children (``records``), where the
    scan of the child pairs stands (``p``, ``q``), and the pair's cell in its parent's frame."""

    __slots__ = ("kids_a", "kids_b", "p", "q", "records", "scores", "slot")

    def __init__(self, kids_a: list[int], kids_b: list[int], mapping: bool, slot: int):
        n = len(kids_a) * len(kids_b)
        self.kids_a = kids_a
        self.kids_b = kids_b
        self.scores = [0] * n
        self.records: list[Any] | None = [None] * n if mapping else None
        self.p = 0
        self.q = 0
        self.slot = slot


def _score_roots(asz: array, bsz: array, match: Match, mapping: bool) -> tuple[int, Any]:
    """The two roots' score and, when ``mapping``, the record of the children matched under
    them: ``[(child in a, child in b, its own record), ...]``."""
    stack = [_Frame(_children(asz, 0), _children(bsz, 0), mapping, -1)]
    while True:
        frame = stack[-1]
        inner = _next_inner_pair(frame, asz, bsz, match)
        if inner is not None:
            ci, cj, cell = inner
            stack.append(_Frame(_children(asz, ci), _children(bsz, cj), mapping, cell))
            continue
        score, record = _align_children(frame)
        stack.pop()
        if not stack:
            return score, record
        parent = stack[-1]
        parent.scores[frame.slot] = score
        if parent.records is not None:
            parent.records[frame.slot] = record


def _next_inner_pair(
    frame: _Frame, asz: array, bsz: array, match: Match
) -> tuple[int, int, int] | None:
    """Scores the frame's child pairs from where its scan stands, a matched pair with a leaf
    on either side at once (it is worth 1), and stops at the first matched pair of two inner
    nodes, which needs a frame of its own: ``(child in a, child in b, its cell)``, or None
    once every pair is scored."""
    ki, kj, w = frame.kids_a, frame.kids_b, frame.scores
    ni, nj = len(ki), len(kj)
    while nj and frame.p < ni:
        p, q = frame.p, frame.q
        cell = p * nj + q
        frame.q += 1
        if frame.q == nj:
            frame.q = 0
            frame.p += 1
        ci, cj = ki[p], kj[q]
        if not match(ci, cj):
            continue
        if asz[ci] == 1 or bsz[cj] == 1:
            w[cell] = 1
            continue
        return ci, cj, cell
    return None


def _align_children(frame: _Frame) -> tuple[int, Any]:
    """The frame's pair scored: itself plus the best ordered alignment of its two child
    sequences, each aligned child pair worth its own score (a dynamic programme over the
    two sequences); with its matched children when the frame keeps records."""
    ki, kj, w = frame.kids_a, frame.kids_b, frame.scores
    ni, nj = len(ki), len(kj)
    prev = [0] * (nj + 1)
    rows = [prev] if frame.records is not None else None
    for x in range(ni):
        cur = [0] * (nj + 1)
        base = x * nj
        for y in range(1, nj + 1):
            best = cur[y - 1] if cur[y - 1] > prev[y] else prev[y]
            diag = prev[y - 1] + w[base + y - 1]
            cur[y] = diag if diag > best else best
        if rows is not None:
            rows.append(cur)
        prev = cur
    score = prev[nj] + 1
    if rows is None:
        return score, None
    return score, _aligned(rows, frame)


def _aligned(rows: list[list[int]], frame: _Frame) -> list[tuple[int, int, Any]]:
    """The child pairs the alignment in ``rows`` matched, traced back from its end."""
    ki, kj, rec = frame.kids_a, frame.kids_b, frame.records
    assert rec is not None
    nj = len(kj)
    matched = []
    x, y = len(ki), nj
    while x > 0 and y > 0:
        v = rows[x][y]
        if v == rows[x][y - 1]:
            y -= 1
        elif v == rows[x - 1][y]:
            x -= 1
        else:
            cell = (x - 1) * nj + (y - 1)
            matched.append((ki[x - 1], kj[y - 1], rec[cell]))
            x -= 1
            y -= 1
    return matched


def _mapped_pairs(record: Any) -> list[tuple[int, int]]:
    """Every mapped ``(i, j)`` in a record of matched children, the roots first."""
    pairs = [(0, 0)]
    todo = [record]
    while todo:
        for ci, cj, sub in todo.pop():
            pairs.append((ci, cj))
            if sub:
                todo.append(sub)
    return pairs
