"""Union-find over page positions and the Hamming scan the final pass builds its groups with."""

from __future__ import annotations

import numpy as np


class Find:
    """Union-find over page positions; a component's root is its smallest position."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra


def near(fps: np.ndarray, fp: int, radius: int) -> np.ndarray:
    """Positions whose fingerprint lies within ``radius`` bits of ``fp``."""
    distances = np.bitwise_count(np.bitwise_xor(fps, np.uint64(fp)))
    return np.flatnonzero(distances <= radius)
