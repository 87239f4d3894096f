"""64-bit SimHash fingerprints shared by the structural and the content channels.

The structural fingerprint of a page is the SimHash of features of its irreducible term:
label paths (a node under its last three ancestors) and shingles (a node with the labels and
bucketed marks of its children), each weighted by the node's mark. Measured on real sites
(bench/bench_simhash_k.py), a page's nearest same-template page lies within 6 bits for 96 % of
the pages of a documentation site and within 2 bits for all of a shop's product pages, while no
page of another template came within 8 bits.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from visdup._native import kernel

if TYPE_CHECKING:
    from visdup.structure.term import Term

_MASK = (1 << 64) - 1

#: Ancestors kept in a label-path feature: deeper paths tell templates apart better but split
#: pages of one template whose content nests differently (measured: 3 is the balance).
PATH_DEPTH = 3
#: A node's weight is its mark, capped so one huge list cannot decide the whole fingerprint.
MAX_WEIGHT = 32

# Counters for the 64 bits live in one big int, 32 bits per counter: adding a feature is one
# multiply-add on that int instead of 64 Python additions.
_FIELD = 32
_SPREAD_BYTE = tuple(
    sum(1 << (_FIELD * j) for j in range(8) if byte >> j & 1) for byte in range(256)
)
_COUNTERS = struct.Struct("<64I")


def python_hash64(text: str) -> int:
    """BLAKE2b's 8-byte digest of the text's UTF-8, big-endian: stable across processes and
    runs, unlike hash(); 8 bytes is all SimHash needs."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


_text_kernel = kernel("_text")
#: The 64-bit hash of every feature and text-print layer: ``python_hash64``, in C when the
#: text-print kernel is built.
hash64 = _text_kernel.blake64 if _text_kernel is not None else python_hash64


@lru_cache(maxsize=1 << 16)
def _spread(feature: str) -> int:
    """The feature's hash with bit i moved to bit 32*i (feature strings repeat across pages)."""
    h = hash64(feature)
    value = 0
    for k in range(8):
        value |= _SPREAD_BYTE[h >> (8 * k) & 0xFF] << (8 * _FIELD * k)
    return value


def _simhash64_slow(pairs: list[tuple[str, int]]) -> int:
    counts = [0] * 64
    for text, weight in pairs:
        h = hash64(text)
        for bit in range(64):
            if h >> bit & 1:
                counts[bit] += weight
            else:
                counts[bit] -= weight
    value = 0
    for bit in range(64):
        if counts[bit] > 0:
            value |= 1 << bit
    return value


def simhash64(features: Iterable[str | tuple[str, int]]) -> int:
    """Charikar's SimHash over weighted features, as an unsigned 64-bit int.

    Features are hashed here rather than by the simhash package (not a dependency): its
    tokenizer drops the brackets that give a term its structure, and under numpy 2 it raises
    OverflowError once a feature weight reaches 256 (../shared/design/NOTES.md).
    """
    pairs = [f if isinstance(f, tuple) else (f, 1) for f in features]
    total = 0
    for _, weight in pairs:
        if type(weight) is not int or weight < 0:
            return _simhash64_slow(pairs)
        total += weight
    if total >= 1 << (_FIELD - 1):
        return _simhash64_slow(pairs)
    acc = 0
    for text, weight in pairs:
        acc += _spread(text) * weight
    counts = _COUNTERS.unpack(acc.to_bytes(8 * _FIELD, "little"))
    # bit i: (set weight) - (unset weight) > 0, i.e. 2 * set > total
    value = 0
    for bit, count in enumerate(counts):
        if 2 * count > total:
            value |= 1 << bit
    return value & _MASK


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def mark_bucket(mark: int) -> int:
    """0 for 1, 1 for 2, 2 for 3-4, 3 for 5-8, ...: lists of similar length fall together."""
    return (mark - 1).bit_length()


def term_features(t: Term) -> list[tuple[str, int]]:
    """Weighted structural features of a term, one entry per distinct feature.

    ``p:a/b/c/x``: node x under its last three ancestors a, b, c (labels only);
    ``s:x*b(y,z*b)``: node x with its children in order, marks as buckets (``*b`` for b > 0).
    Weights add up the (capped) marks of the nodes showing the feature.
    """
    labels, marks, sizes = t.labels, t.marks, t.sizes
    n = len(labels)
    tokens = [
        label if marks[i] == 1 else f"{label}*{mark_bucket(marks[i])}"
        for i, label in enumerate(labels)
    ]
    weights: dict[str, int] = {}
    ends: list[int] = []  # subtree end of every open ancestor
    path: list[str] = []  # labels of the open ancestors
    for i in range(n):
        while ends and ends[-1] <= i:
            ends.pop()
            path.pop()
        weight = min(marks[i], MAX_WEIGHT)
        feature = "p:" + "/".join([*path[-PATH_DEPTH:], labels[i]])
        weights[feature] = weights.get(feature, 0) + weight
        end = i + sizes[i]
        if end > i + 1:
            kids = []
            j = i + 1
            while j < end:
                kids.append(tokens[j])
                j += sizes[j]
            feature = "s:" + tokens[i] + "(" + ",".join(kids) + ")"
            weights[feature] = weights.get(feature, 0) + weight
        ends.append(end)
        path.append(labels[i])
    return list(weights.items())


def term_simhash(t: Term) -> int:
    """Structural SimHash of a term (unsigned 64-bit); stable across processes and runs."""
    if _text_kernel is not None:
        value = _text_kernel.term_simhash(t.labels, t.marks, t.sizes, PATH_DEPTH, MAX_WEIGHT)
        if value is not None:  # None: a mark past what the kernel counts
            return int(value)
    return simhash64(term_features(t))


def shape_features(t: Term) -> list[str]:
    """Distinct mark-free features: label paths of two ancestors, and each node with the runs
    of its children's labels (``row,row,text`` → ``row,text``).

    A second view of a page for the candidate search: small terms have few features, and a
    list that grows from 5 to 9 rows changes enough of them (mark buckets) to move the
    structural SimHash by 11 to 18 bits, while TED still calls the pages 0.95 alike. Without
    marks and repeats those pages share this fingerprint exactly (tests/test_recall.py).
    """
    labels, sizes = t.labels, t.sizes
    features: set[str] = set()
    ends: list[int] = []
    path: list[str] = []
    for i in range(len(labels)):
        while ends and ends[-1] <= i:
            ends.pop()
            path.pop()
        features.add("p:" + "/".join([*path[-2:], labels[i]]))
        end = i + sizes[i]
        kids: list[str] = []
        j = i + 1
        while j < end:
            if not kids or kids[-1] != labels[j]:
                kids.append(labels[j])
            j += sizes[j]
        if kids:
            features.add("s:" + labels[i] + "(" + ",".join(kids) + ")")
        ends.append(end)
        path.append(labels[i])
    return sorted(features)


def shape_simhash(t: Term) -> int:
    """SimHash of ``shape_features``: a mark-free structural fingerprint (unsigned 64-bit).

    Kept on the term: an analysis worker computes it, and the labelling, one process for
    the whole crawl, reads it from the term that crossed over.
    """
    shape = t._shape
    if shape is None:
        if _text_kernel is not None:
            shape = _text_kernel.shape_simhash(t.labels, t.marks, t.sizes)
        if shape is None:  # no kernel, or a mark past what it counts
            shape = simhash64(shape_features(t))
        t._shape = shape
    return shape
