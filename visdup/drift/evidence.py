"""How strong the evidence of a change is, from the small samples a snapshot measures.

A field filled in 5 of 5 baseline pages and 2 of 5 current ones is weak evidence that it
emptied (7 of 10 pages had it, and 5 drawn at random from those 10 hold 2 or fewer of them one
time in 12); in 30 of 30 then 2 of 30 it is overwhelming. The test is Fisher's exact test,
one-sided: given the pages of both samples together and how many of them have the field, the
chance that the current sample holds as few as it does (the hypergeometric lower tail, exact in
integers). A template has many fields, and the smallest of many chance p-values is small:
p-values are multiplied by the number of fields that could have shown a change at all (a field
filled in 3 of 5 baseline pages cannot: even 0 of 5 then is p = 0.08; Tarone's refinement of
Bonferroni's correction, which counts only testable fields).

Fields go together (a comment block's five fields come and go at once), which makes that
correction too strict: where the snapshots keep which sample page has which field, the
correction is made by permutation instead (Westfall and Young's single-step min-p): the pages of
both samples pooled, the current sample drawn from them again and again, the share of draws in
which some field looks at least as emptied as the observed one. Exact (every split) on small
samples, drawn (seeded, so the same every time) on large ones. Two fields that emptied on the
same five pages then count once, and a field only a handful of splits could empty counts little.

Levels, on the corrected p-value: below :data:`ERROR_P` an error, below :data:`WARNING_P` a
warning, below :data:`NOTE_P` a note (shown, never an alarm).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import combinations
from math import comb

#: Corrected p-value below which a change is an error, a warning, a note.
ERROR_P = 0.001
WARNING_P = 0.01
NOTE_P = 0.05

LEVELS = ("note", "warning", "error")

#: Splits of the pooled pages enumerated when there are at most this many; else drawn.
EXACT_SPLITS = 5_000
#: Random splits drawn: a first round, and all of them when it leaves a level in reach.
FIRST_DRAWS = 999
DRAWS = 9_999


def fell(before: int, n_before: int, now: int, n_now: int) -> float:
    """One-sided p-value that a share fell: ``before`` of ``n_before`` pages, then ``now`` of
    ``n_now`` (Fisher's exact test: the chance of ``now`` or fewer, all pages pooled)."""
    if n_before <= 0 or n_now <= 0:
        return 1.0
    total = n_before + n_now
    hits = before + now
    lowest = max(0, n_now - (total - hits))
    if now < lowest:
        return 0.0
    ways = sum(comb(hits, k) * comb(total - hits, n_now - k) for k in range(lowest, now + 1))
    return min(1.0, ways / comb(total, n_now))


def least(before: int, n_before: int, n_now: int) -> float:
    """The smallest p-value :func:`fell` can give for these samples (the current one empty)."""
    return fell(before, n_before, 0, n_now)


def corrected(p: float, tests: int) -> float:
    """Bonferroni's correction for ``tests`` tests."""
    return min(1.0, p * max(1, tests))


def permuted(
    tests: Sequence[tuple[int, Sequence[float]]],
    n_before: int,
    n_now: int,
    observed: Sequence[float],
    seed: str,
) -> list[float]:
    """Each ``observed`` p-value corrected by permutation (single-step min-p): the share of
    splits of the pooled ``n_before + n_now`` pages in which the smallest p-value of any test
    is at most it. ``tests``: per test, the pooled mask (bit i: pooled page i has it, the
    baseline's pages first) and its p-value for each count of the current sample's pages that
    have it (index 0 to ``n_now``)."""
    if not observed:
        return []
    total = n_before + n_now
    reach = max(observed) * (1 + 1e-9)
    useful = [(mask, table) for mask, table in tests if min(table) <= reach]
    limits = [p * (1 + 1e-9) for p in observed]
    counts = [0] * len(observed)

    def tally(chosen: int) -> None:
        smallest = min((t[(m & chosen).bit_count()] for m, t in useful), default=1.0)
        for j, limit in enumerate(limits):
            if smallest <= limit:
                counts[j] += 1

    splits = comb(total, n_now)
    if splits <= EXACT_SPLITS:
        for combo in combinations(range(total), n_now):
            tally(sum(1 << i for i in combo))
        return [c / splits for c in counts]
    rng = random.Random(seed)
    draws = 0
    adjusted = [1.0] * len(observed)
    for limit in (FIRST_DRAWS, DRAWS):
        while draws < limit:
            tally(sum(1 << i for i in rng.sample(range(total), n_now)))
            draws += 1
        adjusted = [(1 + c) / (1 + draws) for c in counts]
        if min(adjusted) > 2 * NOTE_P:
            break  # far from any level: more draws would not change the answer
    return adjusted


def level(p: float) -> str | None:
    """``error``, ``warning``, ``note`` or None (no evidence) for a corrected p-value."""
    if p < ERROR_P:
        return "error"
    if p < WARNING_P:
        return "warning"
    if p < NOTE_P:
        return "note"
    return None


def p_text(p: float) -> str:
    """``p < 0.001``, ``p = 0.004``, ``p = 0.03``."""
    if p < 0.001:
        return "p < 0.001"
    if p < 0.01:
        return f"p = {p:.3f}"
    return f"p = {p:.2f}"


def worst(levels: list[str | None]) -> str | None:
    found = [LEVELS.index(x) for x in levels if x is not None]
    return LEVELS[max(found)] if found else None
