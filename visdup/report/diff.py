"""What differs between two near-duplicates: the subtree of the term where they part.

Both irreducible terms are walked from the root while they agree; where exactly one child
(after the children both share at the start and at the end) differs, the walk goes down
into it. It stops at the smallest subtree that holds every difference, and reports its path
and the two subterms, with their differing tokens marked. Linear in the terms' sizes (one
structural hash per node), so a report can afford it for every group.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from visdup.structure.term import Term

_TOKEN = re.compile(r"\[\d+\]|[A-Za-z_][\w-]*|[(),∅…]")


@dataclass
class Difference:
    """Where two terms part: a path from the root and the two differing regions as text."""

    path: list[str]
    left: str
    right: str

    @property
    def identical(self) -> bool:
        return self.left == self.right


def _same_range(a: Term, i0: int, i1: int, b: Term, j0: int, j1: int) -> bool:
    """Preorder ranges a[i0:i1] and b[j0:j1] hold the same subtrees: slices compared in C."""
    return (
        i1 - i0 == j1 - j0
        and a.sizes[i0:i1] == b.sizes[j0:j1]
        and a.labels[i0:i1] == b.labels[j0:j1]
        and a.marks[i0:i1] == b.marks[j0:j1]
    )


def _shared_ends(a: Term, i: int, ka: list[int], b: Term, j: int, kb: list[int]) -> tuple[int, int]:
    """How many children nodes i and j share at the start, and then at the end.

    Children are contiguous in preorder: the first s children of both sides are the same
    exactly when the flat ranges they span are, so a binary search finds the shared prefix
    (and suffix) with a few slice comparisons, whatever the fan-out.
    """
    end_a, end_b = i + a.sizes[i], j + b.sizes[j]
    most = min(len(ka), len(kb))

    def prefix(s: int) -> bool:
        last_a, last_b = ka[s - 1], kb[s - 1]
        return _same_range(a, i + 1, last_a + a.sizes[last_a], b, j + 1, last_b + b.sizes[last_b])

    def suffix(e: int) -> bool:
        return _same_range(a, ka[len(ka) - e], end_a, b, kb[len(kb) - e], end_b)

    start = _longest(most, prefix)
    return start, _longest(most - start, suffix)


def _longest(n: int, same: Callable[[int], bool]) -> int:
    """The largest s in [0, n] with same(s), for a same() that holds up to some s and no further."""
    lo, hi = 0, n  # same(0) holds: nothing shared is always the same
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _name(term: Term, i: int) -> str:
    mark = term.marks[i]
    return f"[{mark}]{term.labels[i]}" if mark != 1 else term.labels[i]


#: Longest text of a differing region kept for display (a region can be a whole page).
MAX_TEXT = 2000


def _text(term: Term, i: int) -> str:
    """Subterm i as text, cut at MAX_TEXT characters (printing stops early, not after)."""
    end = i + term.sizes[i]
    if term.sizes[i] > MAX_TEXT // 4:
        end = i + MAX_TEXT // 4  # a node prints as at least four characters
    return str(
        Term(
            term.labels[i:end],
            term.marks[i:end],
            [min(s, end - k) for k, s in enumerate(term.sizes[i:end], i)],
        )
    )[:MAX_TEXT]


def _head(term: Term, i: int) -> str:
    """A node whose children are the same on both sides: its mark and label, children elided."""
    return _name(term, i) + ("(…)" if term.sizes[i] > 1 else "")


def _region(term: Term, kids: list[int]) -> str:
    out: list[str] = []
    used = 0
    for k in kids:
        if used > MAX_TEXT:
            out.append("…")
            break
        out.append(_text(term, k))
        used += len(out[-1])
    return ",".join(out)


def differing_subtree(a: Term, b: Term) -> Difference:
    """The smallest subtree holding every difference between ``a`` and ``b``."""
    if a.nodes == 0 or b.nodes == 0:
        return Difference([], str(a), str(b))
    i = j = 0
    path = [_name(a, 0) if a.labels[0] == b.labels[0] else f"{_name(a, 0)}|{_name(b, 0)}"]
    if a == b:
        return Difference(path, "", "")
    while True:
        if a.labels[i] != b.labels[j]:
            return Difference(path, _text(a, i), _text(b, j))
        ka, kb = list(a.children(i)), list(b.children(j))
        start, end = _shared_ends(a, i, ka, b, j, kb)
        da, db = ka[start : len(ka) - end], kb[start : len(kb) - end]
        if len(da) == 1 and len(db) == 1 and a.labels[da[0]] == b.labels[db[0]]:
            i, j = da[0], db[0]
            path.append(f"{_name(a, i)}#{start + 1}")
            continue
        if not da and not db:  # equal children, so the node itself differs in its mark
            return Difference(path, _head(a, i), _head(b, j))
        last = start + max(len(da), len(db))
        path.append(f"children #{start + 1}" + (f"–{last}" if last > start + 1 else ""))
        return Difference(path, _region(a, da) or "∅", _region(b, db) or "∅")


def marked_tokens(
    left: str, right: str, limit: int = 400, lead: int | None = None
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both texts as (token run, differs) pairs, cut to about ``limit`` characters each.

    With ``lead``, what comes before the first difference is cut to its last ``lead``
    characters (after a "…"), so a short snippet still shows where the two texts part.
    """
    ta, tb = _TOKEN.findall(left[: limit * 3]), _TOKEN.findall(right[: limit * 3])
    out_a: list[tuple[str, bool]] = []
    out_b: list[tuple[str, bool]] = []
    matcher = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        same = op == "equal"
        if a1 > a0:
            out_a.append(("".join(ta[a0:a1]), not same))
        if b1 > b0:
            out_b.append(("".join(tb[b0:b1]), not same))
    if lead is not None:
        out_a, out_b = _lead(out_a, lead), _lead(out_b, lead)
    return _cut(out_a, limit), _cut(out_b, limit)


def _lead(runs: list[tuple[str, bool]], lead: int) -> list[tuple[str, bool]]:
    """The runs from ``lead`` characters before the first differing one."""
    if not runs or runs[0][1]:
        return runs
    text, _same = runs[0]
    if len(text) <= lead:
        return runs
    return [("…" + text[len(text) - lead :], False), *runs[1:]]


def _cut(runs: list[tuple[str, bool]], limit: int) -> list[tuple[str, bool]]:
    out, used = [], 0
    for text, differs in runs:
        if used + len(text) > limit:
            room = max(0, limit - used)
            if room:
                out.append((text[:room], differs))
            out.append(("…", False))
            break
        out.append((text, differs))
        used += len(text)
    return out
