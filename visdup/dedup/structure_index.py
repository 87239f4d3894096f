"""The final pass's search for a page's structural peers: every stored page the structure
channel takes, found by its term's SimHash, its shape's SimHash or (small terms) its label
histogram, uncapped, in page order.

Built once per pass from the labelling's own caches (its profiles are the ones the sequence
bounds it measured are known by), so that the search and the bounds cost what the crawl
already paid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from visdup.dedup.groups import near as _near
from visdup.index.small import SmallTerms

#: Pages whose terms are held at once while they are read.
CHUNK = 1000


class StructureIndex:
    """Positions (indices into the pass's pages, in URL order) by structural fingerprint."""

    def __init__(self, pages: Sequence[Any], channel: Any):
        self.pages = pages
        self.channel = channel
        positions = [i for i, p in enumerate(pages) if p.term_key is not None]
        self._positions = positions
        self._fps = np.array([pages[i].simhash or 0 for i in positions], dtype=np.uint64)
        self._shapes_of: dict[int, int] = {}
        #: Position -> the channel's profile of the page's term.
        self.profiles: dict[int, Any] = {}
        self._smalls = SmallTerms(channel.good_enough)
        shapes = [0] * len(positions)
        for start in range(0, len(positions), CHUNK):
            chunk = positions[start : start + CHUNK]
            terms = channel.cache.get_many([pages[i].id for i in chunk])
            taken = {pid: term for pid, term in terms.items() if channel.accepts(term)}
            profiles = channel.summaries(taken) if channel.summarise is not None else {}
            for slot, i in enumerate(chunk, start):
                term = taken.get(pages[i].id)
                if term is None:
                    continue
                if channel.summarise is not None:
                    self.profiles[i] = profiles[pages[i].id]
                if channel.shape is not None:
                    shapes[slot] = self._shapes_of[i] = channel.shape(term)
                small = channel.small(term) if channel.small is not None else None
                if small is not None and i in self.profiles:
                    self._smalls.add(i, self.profiles[i], small)
        self._shapes = np.array(shapes, dtype=np.uint64)

    def candidates(self, i: int) -> list[int]:
        """Every page within the channel's radius of page ``i``, by its SimHash or its
        shape's, and for a small term every small term its histogram bound leaves in reach,
        in page order (the channel's candidates, uncapped)."""
        radius = self.channel.radius
        near = set(_near(self._fps, self.pages[i].simhash or 0, radius).tolist())
        shape = self._shapes_of.get(i)
        if shape is not None and len(self._shapes):
            near.update(_near(self._shapes, shape, radius).tolist())
        positions = self._positions
        found = {positions[s] for s in near}
        profile = self.profiles.get(i)
        if i in self._smalls and profile is not None:  # small terms: wherever their SimHash lies
            found.update(j for j, _bound in self._smalls.query(profile))
        found.discard(i)
        return sorted(found)
