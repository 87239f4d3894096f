"""Scores of a partition against labels (tests and benchmarks only)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from math import comb


def adjusted_rand_index(truth: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Hubert and Arabie's adjusted Rand index of two labelings of the same items."""
    if len(truth) != len(predicted):
        raise ValueError("labelings differ in length")
    n = len(truth)
    if n < 2:
        return 1.0
    table: dict[tuple[Hashable, Hashable], int] = {}
    rows: dict[Hashable, int] = {}
    cols: dict[Hashable, int] = {}
    for t, p in zip(truth, predicted, strict=True):
        table[(t, p)] = table.get((t, p), 0) + 1
        rows[t] = rows.get(t, 0) + 1
        cols[p] = cols.get(p, 0) + 1
    index = sum(comb(v, 2) for v in table.values())
    sum_rows = sum(comb(v, 2) for v in rows.values())
    sum_cols = sum(comb(v, 2) for v in cols.values())
    expected = sum_rows * sum_cols / comb(n, 2)
    top = (sum_rows + sum_cols) / 2.0
    if top == expected:
        return 1.0
    return (index - expected) / (top - expected)


def purity(truth: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Share of items whose cluster's majority label is their own."""
    if not truth:
        return 1.0
    counts: dict[Hashable, dict[Hashable, int]] = {}
    for t, p in zip(truth, predicted, strict=True):
        inner = counts.setdefault(p, {})
        inner[t] = inner.get(t, 0) + 1
    return sum(max(c.values()) for c in counts.values()) / len(truth)
