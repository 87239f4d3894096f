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


def _hashes(term: Term) -> list[int]:
    out = [0] * term.nodes
    for i in range(term.nodes - 1, -1, -1):
        out[i] = hash((term.labels[i], term.marks[i], *(out[j] for j in term.children(i))))
    return out


def _name(term: Term, i: int) -> str:
    mark = term.marks[i]
    return f"[{mark}]{term.labels[i]}" if mark != 1 else term.labels[i]


def _region(term: Term, kids: list[int]) -> str:
    return ",".join(str(term.subterm(k)) for k in kids)


def differing_subtree(a: Term, b: Term) -> Difference:
    """The smallest subtree holding every difference between ``a`` and ``b``."""
    if a.nodes == 0 or b.nodes == 0:
        return Difference([], str(a), str(b))
    ha, hb = _hashes(a), _hashes(b)
    i = j = 0
    path = [_name(a, 0) if a.labels[0] == b.labels[0] else f"{_name(a, 0)}|{_name(b, 0)}"]
    if ha[0] == hb[0] and a == b:
        return Difference(path, "", "")
    while True:
        if a.labels[i] != b.labels[j] or a.marks[i] != b.marks[j]:
            return Difference(path, str(a.subterm(i)), str(b.subterm(j)))
        ka, kb = list(a.children(i)), list(b.children(j))
        start = 0
        while start < min(len(ka), len(kb)) and ha[ka[start]] == hb[kb[start]]:
            start += 1
        end = 0
        while (
            end < min(len(ka), len(kb)) - start
            and ha[ka[len(ka) - 1 - end]] == hb[kb[len(kb) - 1 - end]]
        ):
            end += 1
        da, db = ka[start : len(ka) - end], kb[start : len(kb) - end]
        if len(da) == 1 and len(db) == 1 and a.labels[da[0]] == b.labels[db[0]]:
            i, j = da[0], db[0]
            path.append(f"{_name(a, i)}#{start + 1}")
            continue
        if not da and not db:  # equal children, so the node itself differs in its mark
            return Difference(path, str(a.subterm(i)), str(b.subterm(j)))
        last = start + max(len(da), len(db))
        path.append(f"children #{start + 1}" + (f"–{last}" if last > start + 1 else ""))
        return Difference(path, _region(a, da) or "∅", _region(b, db) or "∅")


def marked_tokens(
    left: str, right: str, limit: int = 400
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both texts as (token run, differs) pairs, cut to about ``limit`` characters each."""
    ta, tb = _TOKEN.findall(left), _TOKEN.findall(right)
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
