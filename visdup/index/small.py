"""Every stored small term, by weighted size: the candidates a SimHash cannot promise.

On a term of a few dozen nodes, moving one node moves many of its 64 SimHash bits: two small
pages at 0.96 can lie 12 or more bits apart, beyond the radius, or within it but behind the
hundred nearer pages of a site whose small pages all look alike. Their candidates therefore
come from the terms themselves. :class:`SmallTerms` keeps, for each distinct small term, its
label histograms (what :meth:`visdup.structure.bounds.Profile.bound` reads) in numpy rows,
bucketed by weighted size on a log scale. A query reads only the buckets whose sizes can
reach ``at_least`` (a size ratio outside ``[at_least / (2 - at_least), (2 - at_least) /
at_least]`` cannot), takes the histogram bound of every row there in one numpy pass, and
returns the terms at or above ``at_least``, best bound first: every stored term that can be
that similar is among them, since the bound is never below the true similarity.

Cost: the rows of the buckets read, at most ``max_scan`` (nearest sizes first); distinct
terms only, so a site's thousand identical error pages are one row.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Protocol

import numpy as np

from visdup._native import kernel

#: The compiled pass over the rows read (rows of 2 * CODES + 2 int64, as it reads them).
_small_bounds = getattr(kernel("_ted"), "small_bounds", None)

#: Terms with fewer nodes than this are indexed: where a SimHash moves most for one node.
SMALL_TERM_NODES = 200
#: Label codes a row holds (the visual classes are four; a term with more is not indexed).
CODES = 8
#: Most rows one query reads, nearest weighted sizes first.
MAX_SCAN = 50_000
#: Bucket width on the log scale of weighted sizes: 2 % per bucket.
_STEP = math.log1p(0.02)


class Histograms(Protocol):
    """What the bound reads of a term (:class:`visdup.structure.bounds.Profile` has it)."""

    weights: list[int]
    counts: list[int]
    weight: int
    count: int


class _Bucket:
    """Rows of one range of weighted sizes: ``CODES`` weights, ``CODES`` counts, the sums."""

    __slots__ = ("keys", "n", "rows")

    def __init__(self) -> None:
        self.rows = np.zeros((4, 2 * CODES + 2), dtype=np.int64)
        self.keys: list[int] = []
        self.n = 0

    def add(self, key: int, row: np.ndarray) -> None:
        if self.n == len(self.rows):
            grown = np.zeros((2 * len(self.rows), self.rows.shape[1]), dtype=np.int64)
            grown[: self.n] = self.rows
            self.rows = grown
        self.rows[self.n] = row
        self.keys.append(key)
        self.n += 1


def _row(h: Histograms) -> np.ndarray | None:
    if len(h.weights) > CODES or len(h.counts) > CODES:
        return None
    row = np.zeros(2 * CODES + 2, dtype=np.int64)
    row[: len(h.weights)] = h.weights
    row[CODES : CODES + len(h.counts)] = h.counts
    row[2 * CODES] = h.weight
    row[2 * CODES + 1] = h.count
    return row


def _bucket(weight: int) -> int:
    return 0 if weight <= 0 else int(math.log(weight) / _STEP) + 1


class SmallTerms:
    """Distinct small terms (by ``identity``) and the first key stored with each."""

    def __init__(self, at_least: float, *, max_scan: int = MAX_SCAN):
        if not 0.0 < at_least <= 1.0:
            raise ValueError(f"at_least must lie in (0, 1], not {at_least}")
        self.at_least = at_least
        self.max_scan = max_scan
        self._buckets: dict[int, _Bucket] = {}
        self._first: dict[Hashable, int] = {}
        self._keys: set[int] = set()
        #: Queries that reached ``max_scan`` rows before reading every bucket in reach.
        self.truncated = 0

    def __len__(self) -> int:
        return len(self._first)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: int, summary: Histograms, identity: Hashable) -> None:
        """Index ``key``'s term; a term already indexed under another key adds no row."""
        self._keys.add(key)
        if identity in self._first:
            return
        row = _row(summary)
        if row is None:
            return
        self._first[identity] = key
        self._buckets.setdefault(_bucket(summary.weight), _Bucket()).add(key, row)

    def _reach(self, weight: int) -> list[int]:
        """Buckets whose weighted sizes can reach ``at_least`` with ``weight``, nearest first."""
        theta = self.at_least
        low = math.floor(weight * theta / (2.0 - theta))
        high = math.ceil(weight * (2.0 - theta) / theta)
        own = _bucket(weight)
        found = [b for b in range(_bucket(low), _bucket(high) + 1) if b in self._buckets]
        return sorted(found, key=lambda b: (abs(b - own), b))

    def query(self, summary: Histograms, limit: int | None = None) -> list[tuple[int, float]]:
        """``(key, bound)`` of the indexed terms whose histogram bound reaches ``at_least``,
        highest bound first (on a tie, the bucket read first, then the first stored)."""
        mine = _row(summary)
        if mine is None:
            return []
        weight, count = int(mine[2 * CODES]), int(mine[2 * CODES + 1])
        chosen: list[_Bucket] = []
        read = 0
        for number in self._reach(weight):
            bucket = self._buckets[number]
            if read + bucket.n > self.max_scan and read:
                self.truncated += 1
                break
            read += bucket.n
            chosen.append(bucket)
        if not chosen:
            return []
        if _small_bounds is not None:  # the same pass and order in one call, without numpy's glue
            found = _small_bounds(
                mine, [b.rows[: b.n] for b in chosen], self.at_least, -1 if limit is None else limit
            )
            return [(chosen[block].keys[row], bound) for block, row, bound in found]
        # the buckets' rows side by side, bounded in one numpy pass (the same numbers, row by
        # row, as one pass a bucket); a hit's rank is its bucket's place in reading order
        rows = (
            np.concatenate([b.rows[: b.n] for b in chosen])
            if len(chosen) > 1
            else chosen[0].rows[: chosen[0].n]
        )
        sims = _similarities(mine, rows, weight, count)
        hits = np.flatnonzero(sims >= self.at_least)
        if not len(hits):
            return []
        # highest bound first, then reading order (a hit's place in the rows read): ordered in
        # numpy, so a site's thousands of alike small pages cost no Python step but the kept
        order = np.lexsort((hits, -sims[hits]))
        if limit is not None:
            order = order[:limit]
        hits = hits[order]
        starts = np.cumsum([0] + [b.n for b in chosen[:-1]])
        ranks = np.searchsorted(starts, hits, side="right") - 1
        slots = hits - starts[ranks]
        return [
            (chosen[rank].keys[slot], bound)
            for rank, slot, bound in zip(
                ranks.tolist(), slots.tolist(), sims[hits].tolist(), strict=True
            )
        ]


def _similarities(mine: np.ndarray, rows: np.ndarray, weight: int, count: int) -> np.ndarray:
    """``Profile.best_similarity`` of ``mine`` against each row, as the same floats."""
    weights, counts = rows[:, 2 * CODES], rows[:, 2 * CODES + 1]
    spread_w = np.abs(rows[:, :CODES] - mine[:CODES]).sum(axis=1)
    spread_c = np.abs(rows[:, CODES : 2 * CODES] - mine[CODES : 2 * CODES]).sum(axis=1)
    bound = np.maximum(
        (spread_w + np.abs(weights - weight)) // 2, (spread_c + np.abs(counts - count)) // 2
    )
    total = weights + weight
    with np.errstate(divide="ignore", invalid="ignore"):
        sims = 1.0 - bound / total
    return np.where(total == 0, 1.0, sims)
