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


def _same(a: Term, i: int, b: Term, j: int) -> bool:
    """Subtree i of a equals subtree j of b: three tuple slices compared in C."""
    n = a.sizes[i]
    return (
        n == b.sizes[j]
        and a.labels[i : i + n] == b.labels[j : j + n]
        and a.marks[i : i + n] == b.marks[j : j + n]
        and a.sizes[i : i + n] == b.sizes[j : j + n]
    )


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
        start = 0
        while start < min(len(ka), len(kb)) and _same(a, ka[start], b, kb[start]):
            start += 1
        end = 0
        while end < min(len(ka), len(kb)) - start and _same(
            a, ka[len(ka) - 1 - end], b, kb[len(kb) - 1 - end]
        ):
            end += 1
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
    left: str, right: str, limit: int = 400
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both texts as (token run, differs) pairs, cut to about ``limit`` characters each."""
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
    return _cut(out_a, limit), _cut(out_b, limit)


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
