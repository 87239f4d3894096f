"""The SimHash index of a store's shared band table: the layout math of :mod:`visdup.index.base`
over the SQL of :mod:`visdup.storage.fingerprints`, for crawls that outlive a process or run
several writers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from visdup.errors import StoreError
from visdup.index.base import BandLayout, index_layout
from visdup.storage.fingerprints import FingerprintTable

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from visdup.storage.store import Store


class SqlIndex(FingerprintTable):
    """A channel's fingerprints in the store's band table, under a layout given by name
    (``bands``, ``pairs``; the bands layout of ``k`` by default) or as a :class:`BandLayout`."""

    def __init__(
        self,
        engine: Engine,
        channel: str,
        k: int = 3,
        *,
        layout: BandLayout | str | None = None,
        max_candidates: int | None = None,
        band_columns: int | None = None,
        schema: str | None = None,
    ) -> None:
        resolved = layout if isinstance(layout, BandLayout) else index_layout(layout or "bands", k)
        super().__init__(
            engine,
            channel,
            k,
            layout=resolved,
            max_candidates=max_candidates,
            band_columns=band_columns,
            schema=schema,
        )


def band_index(
    store: Store, channel: str, k: int, max_candidates: int | None = None
) -> SqlIndex | None:
    """The shared SQL band index of a channel, where another process may read it.

    Only PostgreSQL has several writers; a SQLite store has one process, whose in-memory
    index (warmed from the pages' fingerprints) sees every page, so no band rows are written.
    Its layout is the store's :attr:`~visdup.storage.store.Store.index_layout`
    (VISDUP_INDEX_LAYOUT, set by the crawl).
    """
    if not store.is_postgres:
        return None
    try:
        return SqlIndex(
            store.engine, channel, k=k, layout=store.index_layout, max_candidates=max_candidates
        )
    except ValueError as exc:  # another layout or k wrote this store's band table
        raise StoreError(
            f"the store's band table does not fit VISDUP_HAMMING_K={k} and "
            f"VISDUP_INDEX_LAYOUT={store.index_layout!r}: {exc}"
        ) from None
