"""In-process fingerprint index: integer-keyed buckets of distinct fingerprints."""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterable

from visdup._native import kernel
from visdup.index.base import BandLayout, layout_for
from visdup.storage.fingerprints import check_fp

logger = logging.getLogger(__name__)

_kernel = kernel("_text")


class MemoryIndex:
    """Banded SimHash index held in dicts.

    Buckets hold distinct fingerprints, not keys: on a templated site hundreds of pages share
    one fingerprint, and comparing it once is what keeps a lookup cheap there. ``max_candidates``
    caps the distinct fingerprints compared per query; past it the answer is the nearest of those
    compared, no longer guaranteed complete (logged at debug level).

    ``method="scan"`` compares the query with every stored fingerprint instead (in the text
    kernel, else through numpy's ``bitwise_count``): exact for any k, no buckets, linear in
    the size.
    """

    def __init__(
        self,
        k: int = 3,
        *,
        max_candidates: int | None = None,
        layout: BandLayout | None = None,
        method: str = "bands",
    ) -> None:
        if method not in ("bands", "scan"):
            raise ValueError(f"unknown method {method!r}: use 'bands' or 'scan'")
        self.k = k
        self.layout = layout or (layout_for(k) if method == "bands" else layout_for(0))
        if method == "bands" and self.layout.k < k:
            raise ValueError(f"layout {self.layout} finds only up to k={self.layout.k}")
        self.max_candidates = max_candidates
        self.method = method
        self._fp_of: dict[int, int] = {}
        self._keys_of: dict[int, dict[int, None]] = {}
        # A bucket holding one fingerprint stores the int itself (most do), more an array of
        # uint64: sets cost four to ten times the memory, and lists, which the garbage collector
        # walks, made inserts about 2x slower at 100k. A fingerprint enters a bucket only once.
        self._buckets: dict[int, int | array[int]] = {}
        self._scan: _Scan | None = _Scan() if method == "scan" else None

    def __len__(self) -> int:
        return len(self._fp_of)

    def __contains__(self, key: object) -> bool:
        return key in self._fp_of

    def add(self, key: int, fp: int) -> None:
        check_fp(fp)
        old = self._fp_of.get(key)
        if old == fp:
            return
        if old is not None:
            self.remove(key)
        self._fp_of[key] = fp
        keys = self._keys_of.get(fp)
        if keys is not None:
            keys[key] = None
            return
        self._keys_of[fp] = {key: None}
        if self._scan is not None:
            self._scan.add(fp)
            return
        buckets = self._buckets
        for band in self.layout.keys(fp):
            bucket = buckets.get(band)
            if bucket is None:
                buckets[band] = fp
            elif isinstance(bucket, int):
                buckets[band] = array("Q", (bucket, fp))
            else:
                bucket.append(fp)

    def add_many(self, items: Iterable[tuple[int, int]]) -> None:
        """Add ``(key, fp)`` pairs."""
        for key, fp in items:
            self.add(key, fp)

    def remove(self, key: int) -> None:
        fp = self._fp_of.pop(key, None)
        if fp is None:
            return
        keys = self._keys_of[fp]
        del keys[key]
        if keys:
            return
        del self._keys_of[fp]
        if self._scan is not None:
            self._scan.remove(fp)
            return
        buckets = self._buckets
        for band in self.layout.keys(fp):
            bucket = buckets[band]
            if isinstance(bucket, int):
                del buckets[band]
                continue
            bucket.remove(fp)
            if len(bucket) == 1:
                buckets[band] = bucket[0]

    def fingerprint(self, key: int) -> int | None:
        return self._fp_of.get(key)

    def query(
        self, fp: int, k: int | None = None, limit: int | None = None
    ) -> list[tuple[int, int, int]]:
        check_fp(fp)
        if k is None:
            k = self.k
        elif k > self.layout.k and self._scan is None:
            raise ValueError(f"this index finds up to k={self.layout.k}, asked for {k}")
        return self._query(fp, k, limit)

    def near(self, fp: int, radius: int, limit: int | None = None) -> list[tuple[int, int, int]]:
        """Like ``query``, out to ``radius``: complete up to the layout's k, best effort beyond.

        A fingerprint further than the layout's k is found when it still shares a band key
        with ``fp`` (two fingerprints 10 bits apart often agree on two of the ten blocks of
        the k=8 layout). Measured with bench/bench_recall.py on a documentation manual: the
        nearest same-template page lay within 6 bits for 0.91 of the pages, and shared a band
        of the k=8 layout within 16 bits for 0.99. Costs no memory beyond the bands. With
        ``method="scan"`` the answer is complete to any radius.
        """
        check_fp(fp)
        return self._query(fp, max(radius, 0), limit)

    def _query(self, fp: int, k: int, limit: int | None) -> list[tuple[int, int, int]]:
        if limit is not None and limit <= 0:
            return []
        keys_of = self._keys_of
        exact = keys_of.get(fp)
        if exact is not None and limit is not None and len(exact) >= limit:
            return [(key, fp, 0) for key in sorted(exact)[:limit]]
        if k == 0:
            return [(key, fp, 0) for key in sorted(exact or ())][:limit]

        if self._scan is not None:
            answered = self._scan.near_keys(fp, k, limit, keys_of)
            if answered is not None:
                return answered
        near = self._scan.within(fp, k, limit) if self._scan is not None else self._near(fp, k)
        found: list[tuple[int, int, int]] = []
        append = found.append
        for dist, other in near:
            if limit is not None and len(found) >= limit and dist > found[-1][0]:
                break
            keys = keys_of[other]
            if len(keys) == 1:  # most fingerprints belong to one page
                for key in keys:
                    append((dist, key, other))
            else:
                found.extend((dist, key, other) for key in keys)
        found.sort()
        if limit is not None:
            del found[limit:]
        return [(key, other, dist) for dist, key, other in found]

    def _near(self, fp: int, k: int) -> list[tuple[int, int]]:
        """``(distance, fp)`` of candidate fingerprints within k, nearest first."""
        buckets = self._buckets
        cap = self.max_candidates
        seen: set[int] = set()
        for band in self.layout.keys(fp):
            bucket = buckets.get(band)
            if bucket is None:
                continue
            if isinstance(bucket, int):
                if cap is not None and len(seen) >= cap and bucket not in seen:
                    logger.debug("candidate cap %d reached for %016x", cap, fp)
                    break
                seen.add(bucket)
                continue
            if cap is not None and len(seen) + len(bucket) > cap:
                room = cap - len(seen)
                for other in bucket:
                    if room <= 0:
                        break
                    if other not in seen:
                        seen.add(other)
                        room -= 1
                logger.debug("candidate cap %d reached for %016x", cap, fp)
                break
            seen.update(bucket)
        near = []
        for other in seen:
            dist = (fp ^ other).bit_count()
            if dist <= k:
                near.append((dist, other))
        near.sort()
        return near


class _Scan:
    """Distinct fingerprints in a growable numpy array, compared all at once."""

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self._arr = np.zeros(1024, dtype=np.uint64)
        self._n = 0
        self._slot: dict[int, int] = {}

    def add(self, fp: int) -> None:
        np = self._np
        if self._n == len(self._arr):
            grown = np.zeros(2 * len(self._arr), dtype=np.uint64)
            grown[: self._n] = self._arr
            self._arr = grown
        self._arr[self._n] = fp
        self._slot[fp] = self._n
        self._n += 1

    def remove(self, fp: int) -> None:
        slot = self._slot.pop(fp)
        last = self._n - 1
        if slot != last:
            moved = int(self._arr[last])
            self._arr[slot] = moved
            self._slot[moved] = slot
        self._n = last

    def near_keys(
        self, fp: int, k: int, limit: int | None, keys_of: dict[int, dict[int, None]]
    ) -> list[tuple[int, int, int]] | None:
        """:meth:`MemoryIndex._query`'s answer in one call into the text kernel: the scan,
        the keys of the fingerprints found and their order (None: Python answers, with no
        kernel or a key past 64 bits)."""
        if _kernel is None:
            return None
        found: list[tuple[int, int, int]] | None = _kernel.near_keys(
            self._arr[: self._n], fp, k, -1 if limit is None else limit, keys_of
        )
        return found

    def within(self, fp: int, k: int, limit: int | None = None) -> list[tuple[int, int]]:
        """``(distance, fp)`` within k, nearest first; with ``limit``, the ``limit`` nearest.

        Ties at the last distance kept are all kept, so a caller that ranks keys by (distance,
        key) gets the answer it would get from the whole list; only those are sorted in Python.
        """
        np = self._np
        arr = self._arr[: self._n]
        dist = np.bitwise_count(arr ^ np.uint64(fp))
        hits = np.flatnonzero(dist <= k)
        if limit is not None and 0 < limit < len(hits):
            near_dist = dist[hits]
            cut = np.partition(near_dist, limit - 1)[limit - 1]
            hits = hits[near_dist <= cut]
        # nearest first, then by fingerprint (as sorting the pairs would): ordered in numpy,
        # and turned into Python ints in one call each rather than one per hit
        found, dists = arr[hits], dist[hits]
        order = np.lexsort((found, dists))
        return list(zip(dists[order].tolist(), found[order].tolist(), strict=True))
