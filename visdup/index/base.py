"""The candidate-index interface and the band layouts both backends share.

A 64-bit fingerprint is cut into ``blocks`` contiguous blocks. Two fingerprints within Hamming
distance k differ in at most k blocks, so when ``blocks - per_key >= k`` they agree exactly on at
least one combination of ``per_key`` blocks (Manku, Jain and Das Sarma, WWW 2007). Each
combination is one table; its key is the concatenation of the chosen blocks. Looking a query up
in every table therefore finds every stored fingerprint within k, and only those sharing a key
are ever compared.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol, runtime_checkable

FP_BITS = 64
FP_MASK = (1 << FP_BITS) - 1

# Bucket keys are laid out so that they fit a signed BIGINT and never collide across tables or
# layouts: bits 0-47 the chosen blocks, 48-54 the table number, 55-62 the layout code.
_VALUE_BITS = 48
_TABLE_SHIFT = 48
_LAYOUT_SHIFT = 55
_MAX_TABLES = 1 << (_LAYOUT_SHIFT - _TABLE_SHIFT)
#: Beyond this, pairs of blocks are narrower than 11 bits and 66+ tables: scan instead.
MAX_K = 10


@runtime_checkable
class FingerprintIndex(Protocol):
    """Near-neighbour lookup of 64-bit fingerprints by Hamming distance."""

    k: int

    def add(self, key: int, fp: int) -> None:
        """Store ``fp`` under ``key``, replacing what ``key`` held before."""

    def query(
        self, fp: int, k: int | None = None, limit: int | None = None
    ) -> list[tuple[int, int, int]]:
        """Return ``(key, fp, distance)`` of stored fingerprints within ``k``, nearest first."""
        ...

    def remove(self, key: int) -> None:
        """Forget ``key``; a key that is not stored is ignored."""

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class BandLayout:
    """``blocks`` contiguous blocks; one table per combination of ``per_key`` of them."""

    blocks: int
    per_key: int = 1
    _tables: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = field(
        init=False, repr=False, compare=False
    )
    _blockspec: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _keys: Callable[[int], list[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.per_key <= 8 or not self.per_key <= self.blocks <= 32:
            raise ValueError(f"unsupported band layout {self.blocks} blocks / {self.per_key}")
        widths = [FP_BITS // self.blocks + (i < FP_BITS % self.blocks) for i in range(self.blocks)]
        if self.per_key * max(widths) > _VALUE_BITS:
            raise ValueError(
                f"{self.per_key} of {self.blocks} blocks make keys wider than {_VALUE_BITS} bits"
            )
        combos = list(itertools.combinations(range(self.blocks), self.per_key))
        if len(combos) > _MAX_TABLES:
            raise ValueError(f"{len(combos)} tables is more than {_MAX_TABLES}")
        shifts = [sum(widths[:i]) for i in range(self.blocks)]
        blockspec = tuple((shifts[i], (1 << widths[i]) - 1) for i in range(self.blocks))
        code = (self.blocks - 1) << 3 | (self.per_key - 1)
        tables = []
        for number, combo in enumerate(combos):
            header = code << _LAYOUT_SHIFT | number << _TABLE_SHIFT
            parts = []
            out = 0
            for i in combo:
                parts.append((i, out))
                out += widths[i]
            tables.append((header, tuple(parts)))
        object.__setattr__(self, "_tables", tuple(tables))
        object.__setattr__(self, "_blockspec", blockspec)
        object.__setattr__(self, "_keys", self._compile())

    @property
    def k(self) -> int:
        """The largest distance this layout is guaranteed to find."""
        return self.blocks - self.per_key

    @property
    def tables(self) -> int:
        return len(self._tables)

    @property
    def code(self) -> int:
        return (self.blocks - 1) << 3 | (self.per_key - 1)

    @property
    def key_bits(self) -> int:
        """Bits of the narrowest key: about log2 of how many fingerprints a bucket spreads over."""
        return self.per_key * (FP_BITS // self.blocks)

    def keys(self, fp: int) -> list[int]:
        """The bucket key of ``fp`` in every table, in table order."""
        return self._keys(fp)

    def _compile(self) -> Callable[[int], list[int]]:
        """One straight-line function per layout: every insert and lookup starts here, and it
        runs 1.4x (28 tables) to 2.2x (4 tables) faster than a loop over the tables."""
        lines = ["def keys(fp):"]
        for i, (shift, mask) in enumerate(self._blockspec):
            lines.append(f"    v{i} = (fp >> {shift}) & {mask}")
        terms = []
        for header, parts in self._tables:
            bits = " | ".join(f"v{i} << {shift}" if shift else f"v{i}" for i, shift in parts)
            terms.append(f"{header} | {bits}")
        lines.append("    return [" + ", ".join(terms) + "]")
        namespace: dict[str, Callable[[int], list[int]]] = {}
        exec("\n".join(lines), namespace)  # the source holds only integers computed above
        return namespace["keys"]

    @staticmethod
    def decode(key: int) -> tuple[int, int]:
        """``(blocks, per_key)`` of the layout that made ``key``."""
        code = key >> _LAYOUT_SHIFT
        return (code >> 3) + 1, (code & 7) + 1


@lru_cache(maxsize=64)
def layout_for(k: int) -> BandLayout:
    """The default layout guaranteed to find every fingerprint within ``k`` (0 <= k <= 10).

    Single blocks (k + 1 tables) while a block keeps 16 bits (k <= 3), pairs of blocks beyond,
    which keep keys at 11-21 bits. Measured with bench/bench_index.py at k=6 on 100k spread
    fingerprints in memory: 7 single 9-bit blocks 373 us per lookup, pairs of 8 blocks 31 us.
    """
    if not 0 <= k <= MAX_K:
        raise ValueError(
            f"banded lookup supports 0 <= k <= {MAX_K}, not {k}: beyond, use "
            "MemoryIndex(method='scan')"
        )
    k = max(k, 1)
    if FP_BITS // (k + 1) >= 16:
        return BandLayout(k + 1, 1)
    return BandLayout(k + 2, 2)


#: Names of the layouts an index may be told to use (VISDUP_INDEX_LAYOUT).
LAYOUTS = ("bands", "pairs")


@lru_cache(maxsize=64)
def pair_layout_for(k: int) -> BandLayout:
    """The pair-key layout for ``k``: ``k + 2`` blocks, every key a pair of them.

    Recall, the same guarantee as :func:`layout_for`: a fingerprint within k bits of the query
    differs from it in at most k bits, and each bit lies in exactly one block, so at most k of
    the ``k + 2`` blocks differ and at least two agree bit for bit. The pair of two agreeing
    blocks is one of the ``C(k + 2, 2)`` tables, and there both fingerprints have the same key
    (the same table header, the same bits). Probing every table with the query's keys therefore
    returns every stored fingerprint within k; the exact distance then drops the others.

    Selectivity: keys are ``2 * 64 / (k + 2)`` bits wide instead of ``64 / (k + 1)``, so a
    uniform spread of n fingerprints puts ``n / 2**25.6`` rows under a key at k=3 instead of
    ``n / 2**16``: at 10M rows, about 2 candidates a lookup over 10 tables instead of about
    610 over 4, for 6 more indexes. From k=4 on, :func:`layout_for` already keys on pairs of
    ``k + 2`` blocks: both names give the same layout there.
    """
    if not 0 <= k <= MAX_K:
        raise ValueError(f"banded lookup supports 0 <= k <= {MAX_K}, not {k}")
    return BandLayout(max(k, 1) + 2, 2)


def index_layout(name: str, k: int) -> BandLayout:
    """The layout ``name`` (of :data:`LAYOUTS`) guaranteed to find every fingerprint within k."""
    if name == "bands":
        return layout_for(k)
    if name == "pairs":
        return pair_layout_for(k)
    raise ValueError(f"unknown index layout {name!r}: use one of {', '.join(LAYOUTS)}")


def bands(fp: int, k: int) -> list[int]:
    """Bucket keys of ``fp`` under the default layout for ``k`` (integers below 2**63)."""
    return layout_for(k).keys(fp)


def expected_candidates(layout: BandLayout, n: int) -> float:
    """Mean stored fingerprints per query a uniform spread of ``n`` gives (for reports)."""
    return layout.tables * n / math.pow(2, layout.key_bits)
