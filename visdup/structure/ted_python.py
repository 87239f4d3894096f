"""The tree edit distance of marked terms in pure Python: the reference the kernel is held to.

Zhang-Shasha's dynamic programme under the marked-node costs (:mod:`visdup.structure.distance`),
along leftmost or rightmost paths, whichever fills fewer cells; and the edit distance of two
preorder sequences under the same costs (the sequence bound of :mod:`visdup.structure.bounds`).
The compiled ``visdup._native._ted`` answers the same, with the same checks; these serve when it
is not built, or with ``VISDUP_PURE_PYTHON=1``.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Directions of the Zhang-Shasha decomposition (same codes as the C kernel).
AUTO, LEFT, RIGHT = 0, 1, 2


def check_tree(
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


def work_python(sizes: Sequence[int]) -> tuple[int, int]:
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


def distance_python(
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
    check_tree(labels1, marks1, sizes1, "first tree")
    check_tree(labels2, marks2, sizes2, "second tree")
    if n1 == 0 or n2 == 0:
        return sum(marks1) + sum(marks2)
    if direction == AUTO:
        l1, r1 = work_python(sizes1)
        l2, r2 = work_python(sizes2)
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


def sequence_python(
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
