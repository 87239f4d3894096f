"""Fingerprints in a SQL table, banded for lookups: the index of crawls that outlive a process or
run several writers (:class:`visdup.index.sql.SqlIndex` gives it its layout by name).

One table serves every channel: ``visdup_fingerprints(channel, key, fp, b0, b1, ...)``, one row
per key, one indexed column per band table. A lookup is a union of equality probes, one per
band, each an index range scan; distances are computed here, not in SQL, so any SQLAlchemy
dialect with 64-bit integers works. The table itself belongs to the store's schema
(:func:`visdup.storage.schema.fingerprint_table`); crawls write it on PostgreSQL only.

Two layouts fill the band columns (``VISDUP_INDEX_LAYOUT``, :data:`visdup.index.base.LAYOUTS`;
this module takes any object with their shape, :class:`Banding`):
``bands`` (:func:`~visdup.index.base.layout_for`: at k <= 3, k + 1 single 16-bit or wider
blocks) and ``pairs`` (:func:`~visdup.index.base.pair_layout_for`: k + 2 blocks, one column per
pair of them). Both find every stored fingerprint within k. A pair key is wider, so each probe
reads fewer rows: the choice for tables of millions of rows, where a 16-bit band key matches
n / 65,536 rows of a uniform spread (measured with bench/bench_index.py --pg-layouts: at 10M
rows and k=3, 2.6 rows and 1.6 ms a lookup against 611 rows and 9.8 ms; README, "The index at
10M pages").
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Table, bindparam, delete, func, or_, select, text, union

from visdup.storage.locks import advisory_lock
from visdup.storage.schema import FINGERPRINTS, fingerprint_table
from visdup.storage.schema import signed as to_signed
from visdup.storage.schema import unsigned as to_unsigned

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine
    from sqlalchemy.sql import CompoundSelect, Select

logger = logging.getLogger(__name__)

TABLE_NAME = FINGERPRINTS
_BATCH = 5000
_IN_CHUNK = 500
#: After a bulk load this large, PostgreSQL gets fresh statistics at once: without them its
#: plan for the 28-way band OR took 62 ms per lookup at 100k rows, 0.5 ms with them.
_ANALYZE_AFTER = 10_000


class Banding(Protocol):
    """How a 64-bit fingerprint is cut into band keys (:class:`visdup.index.base.BandLayout`)."""

    @property
    def k(self) -> int: ...
    @property
    def tables(self) -> int: ...
    @property
    def blocks(self) -> int: ...
    @property
    def per_key(self) -> int: ...
    def keys(self, fp: int) -> list[int]: ...
    def decode(self, key: int) -> tuple[int, int]: ...


def check_fp(fp: int) -> int:
    """``fp`` if it is an unsigned 64-bit fingerprint; ValueError otherwise."""
    if not isinstance(fp, int) or not 0 <= fp <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fp!r}")
    return fp


class FingerprintTable:
    """Banded SimHash index over a SQLAlchemy engine (tested on SQLite and PostgreSQL).

    Reads and writes take an optional ``conn``: pass one to make the lookup and the insert part of
    your own transaction (with :meth:`lock` first, on PostgreSQL, so that concurrent writers
    of near-identical pages see each other). Without it each call runs in its own transaction.
    """

    def __init__(
        self,
        engine: Engine,
        channel: str,
        k: int = 3,
        *,
        layout: Banding,
        max_candidates: int | None = None,
        band_columns: int | None = None,
        schema: str | None = None,
    ) -> None:
        if not channel or len(channel) > 32:
            raise ValueError("channel must be 1-32 characters")
        self.engine = engine
        self.channel = channel
        self.k = k
        self.layout = layout
        if self.layout.k < k:
            raise ValueError(f"layout {self.layout} finds only up to k={self.layout.k}")
        self.max_candidates = max_candidates
        self._postgres = engine.dialect.name == "postgresql"
        self._lock_salt = (
            int.from_bytes(hashlib.blake2b(channel.encode(), digest_size=8).digest(), "big") >> 1
        )
        self.table = self._table(max(self.layout.tables, band_columns or 0), schema)
        self._bands = [self.table.c[f"b{i}"] for i in range(self.layout.tables)]
        self._check_layout()
        self._band_query = self._make_band_query()
        self._upsert_statement = self._make_upsert()
        self._nearest_query = self._make_nearest_query() if self._postgres else None
        t = self.table
        # ORDER BY key + 0 on SQLite, not key: without statistics it walks the primary key to
        # honour ORDER BY key ... LIMIT and reads the whole channel (8x slower at 100k rows).
        # PostgreSQL reads one fingerprint's keys in order from the (channel, fp, key) index
        # and stops at the limit (key + 0 made it read every copy of a large template's).
        self._exact_query = (
            select(t.c.key)
            .where(t.c.channel == bindparam("channel"), t.c.fp == bindparam("fp"))
            .order_by(t.c.key if self._postgres else t.c.key + 0)
            .limit(bindparam("limit"))
        )
        self._keys_query = (
            select(t.c.key, t.c.fp)
            .where(
                t.c.channel == bindparam("channel"), t.c.fp.in_(bindparam("fps", expanding=True))
            )
            .order_by(t.c.key + 0)
            .limit(bindparam("limit"))
        )

    # -- schema ------------------------------------------------------------------------------

    def _table(self, wanted: int, schema: str | None) -> Table:
        """The shared band table, from the store's schema (created there, under its lock)."""
        try:
            return fingerprint_table(self.engine, self.layout.tables, schema, create=wanted)
        except ValueError as exc:
            raise ValueError(f"{exc} (k={self.k} needs {self.layout.tables})") from None

    def _check_layout(self) -> None:
        """Refuse a channel indexed under another layout: its buckets would silently miss."""
        t = self.table
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.c.b0).where(t.c.channel == self.channel, t.c.b0.isnot(None)).limit(1)
            ).first()
        if row is None:
            return
        blocks, per_key = self.layout.decode(row[0])
        if (blocks, per_key) != (self.layout.blocks, self.layout.per_key):
            raise ValueError(
                f"channel {self.channel!r} was indexed with {blocks} blocks / {per_key} per "
                f"key, not {self.layout.blocks} / {self.layout.per_key} (k={self.k}): every "
                "process of a store needs the same VISDUP_HAMMING_K and VISDUP_INDEX_LAYOUT"
            )

    def _make_band_query(self) -> CompoundSelect | Select:
        """Distinct stored fingerprints sharing a band with the query.

        Distinct fingerprints, not rows: on a templated site thousands of keys share a few
        hundred fingerprints, and only the keys of the nearest ones are fetched afterwards.
        """
        t = self.table
        keys = [band == bindparam(f"k{i}") for i, band in enumerate(self._bands)]
        query: CompoundSelect[Any] | Select[Any]
        if self._postgres:
            # One bitmap OR over the band indexes: measured 2.3x faster than a UNION at 28 bands.
            query = select(t.c.fp).distinct().where(t.c.channel == bindparam("channel"), or_(*keys))
        else:
            # SQLite scans the whole table for an OR over different columns; a UNION of index
            # probes is 60x faster there.
            parts = [select(t.c.fp).where(t.c.channel == bindparam("channel"), key) for key in keys]
            query = union(*parts) if len(parts) > 1 else parts[0]
        return query.limit(self.max_candidates) if self.max_candidates else query

    def _make_nearest_query(self) -> Any:
        """PostgreSQL: a lookup with a limit in one round trip (after the probe of the query's
        own fingerprint, when that does not fill the answer). Of the fingerprints sharing a
        band with the query (at most ``max_candidates`` of them, as :attr:`_band_query` reads)
        and the query's own, those within ``k``; of each, its first ``limit`` keys (an index
        range of ``(channel, fp, key)``); of those, the ``limit`` nearest, by key: what the
        exact probe, the band probe and the key probes give together (past the cap, the
        query's own fingerprint is still read, which the band probe may have left out)."""
        t = self.table
        name = f'"{t.schema}"."{t.name}"' if t.schema else f'"{t.name}"'
        bands = " OR ".join(f"b{i} = :k{i}" for i in range(len(self._bands)))
        cap = " LIMIT :cap" if self.max_candidates else ""
        version = self.engine.dialect.server_version_info or (0,)
        if version >= (14,):
            distance = "bit_count(CAST(near.fp # :fp AS BIT(64)))"
        else:  # bit_count came with PostgreSQL 14
            distance = "length(replace(CAST(CAST(near.fp # :fp AS BIT(64)) AS TEXT), '0', ''))"
        return text(
            "SELECT hit.key, near.fp FROM"
            f" (SELECT fp FROM (SELECT DISTINCT fp FROM {name}"
            f" WHERE channel = :channel AND ({bands}){cap}) AS banded"
            " UNION SELECT CAST(:fp AS BIGINT)) AS near"
            f" CROSS JOIN LATERAL (SELECT key FROM {name}"
            " WHERE channel = :channel AND fp = near.fp ORDER BY key LIMIT :limit) AS hit"
            f" WHERE {distance} <= :k"
            f" ORDER BY {distance}, hit.key LIMIT :limit"
        )

    # -- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _conn(self, conn: Connection | None) -> Iterator[Connection]:
        if conn is not None:
            yield conn
        else:
            with self.engine.begin() as own:
                yield own

    def lock(self, conn: Connection, fp: int) -> None:
        """Serialise writers whose fingerprints share a bucket, until ``conn`` commits.

        Takes PostgreSQL transaction-level advisory locks on the sorted band keys: two
        fingerprints within k share at least one key, so the second writer waits for the
        first to commit and then its lookup sees the first row. Sorted order cannot deadlock.
        A no-op on other databases (SQLite has one writer at a time anyway).
        """
        advisory_lock(conn, self.lock_keys(fp))

    def lock_keys(self, fp: int) -> list[int]:
        """The advisory lock keys of ``fp`` in this channel (for one lock over several channels)."""
        salt = self._lock_salt
        return [key ^ salt for key in self.layout.keys(check_fp(fp))]

    # -- writing -----------------------------------------------------------------------------

    def _row(self, key: int, fp: int) -> dict[str, int | str]:
        row: dict[str, int | str] = {"channel": self.channel, "key": key, "fp": to_signed(fp)}
        for i, band in enumerate(self.layout.keys(fp)):
            row[f"b{i}"] = band
        return row

    def _make_upsert(self) -> Any:
        """The insert that replaces a key's row, made once: a statement built for each page
        (its ``excluded`` columns copied anew each time) cost more than its round trip."""
        t = self.table
        columns = ["fp", *(f"b{i}" for i in range(len(self._bands)))]
        name = self.engine.dialect.name
        if name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            pg = pg_insert(t)
            return pg.on_conflict_do_update(
                index_elements=[t.c.channel, t.c.key], set_={c: pg.excluded[c] for c in columns}
            )
        if name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            lite = sqlite_insert(t)
            return lite.on_conflict_do_update(
                index_elements=[t.c.channel, t.c.key], set_={c: lite.excluded[c] for c in columns}
            )
        return None

    def _upsert(self, rows: list[dict[str, int | str]], conn: Connection) -> None:
        if self._upsert_statement is not None:
            conn.execute(self._upsert_statement, rows)
            return
        t = self.table
        conn.execute(
            delete(t).where(t.c.channel == self.channel, t.c.key.in_([r["key"] for r in rows]))
        )
        conn.execute(t.insert(), rows)

    def add(self, key: int, fp: int, conn: Connection | None = None) -> None:
        check_fp(fp)
        with self._conn(conn) as c:
            self._upsert([self._row(key, fp)], c)

    def add_many(
        self,
        items: Iterable[tuple[int, int]],
        conn: Connection | None = None,
        *,
        new_keys: bool = False,
    ) -> int:
        """Add ``(key, fp)`` pairs in batches; returns how many.

        ``new_keys=True`` promises that no key is stored yet: on PostgreSQL the rows then go
        through COPY (1.7x faster than batched upserts; a stored key fails the whole call).
        """
        count = 0
        batch: list[dict[str, int | str]] = []
        with self._conn(conn) as c:
            copy = new_keys and self._postgres and c.dialect.driver == "psycopg"
            for key, fp in items:
                batch.append(self._row(key, check_fp(fp)))
                if len(batch) >= _BATCH:
                    self._copy(batch, c) if copy else self._upsert(batch, c)
                    count += len(batch)
                    batch = []
            if batch:
                self._copy(batch, c) if copy else self._upsert(batch, c)
                count += len(batch)
            if self._postgres and count >= _ANALYZE_AFTER:
                t = self.table
                name = f'"{t.schema}"."{t.name}"' if t.schema else f'"{t.name}"'
                c.execute(text(f"ANALYZE {name}"))
        return count

    def _copy(self, rows: list[dict[str, int | str]], conn: Connection) -> None:
        t = self.table
        columns = list(rows[0])
        name = f'"{t.schema}"."{t.name}"' if t.schema else f'"{t.name}"'
        sql = f"COPY {name} ({', '.join(columns)}) FROM STDIN"
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        cursor: Any = dbapi.cursor()
        try:
            with cursor.copy(sql) as copy:
                for row in rows:
                    copy.write_row([row[column] for column in columns])
        finally:
            cursor.close()

    def remove(self, key: int, conn: Connection | None = None) -> None:
        t = self.table
        with self._conn(conn) as c:
            c.execute(delete(t).where(t.c.channel == self.channel, t.c.key == key))

    def clear(self, conn: Connection | None = None) -> None:
        """Drop every row of this channel."""
        t = self.table
        with self._conn(conn) as c:
            c.execute(delete(t).where(t.c.channel == self.channel))

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        t = self.table
        with self.engine.connect() as c:
            return c.execute(
                select(func.count()).select_from(t).where(t.c.channel == self.channel)
            ).scalar_one()

    def fingerprint(self, key: int, conn: Connection | None = None) -> int | None:
        t = self.table
        with self._conn(conn) as c:
            value = c.execute(
                select(t.c.fp).where(t.c.channel == self.channel, t.c.key == key)
            ).scalar()
        return None if value is None else to_unsigned(value)

    def candidates(self, fp: int, conn: Connection | None = None) -> list[int]:
        """Distinct stored fingerprints sharing a key with ``fp``, at any distance: the rows a
        lookup reads before the exact distance filters them (for measures and tests)."""
        params: dict[str, int | str] = {"channel": self.channel}
        for i, band in enumerate(self.layout.keys(check_fp(fp))):
            params[f"k{i}"] = band
        with self._conn(conn) as c:
            return [to_unsigned(v) for v in c.execute(self._band_query, params).scalars()]

    def query(
        self,
        fp: int,
        k: int | None = None,
        limit: int | None = None,
        conn: Connection | None = None,
    ) -> list[tuple[int, int, int]]:
        check_fp(fp)
        if k is None:
            k = self.k
        elif k > self.layout.k:
            raise ValueError(f"this index finds up to k={self.layout.k}, asked for {k}")
        if limit is not None and limit <= 0:
            return []
        if limit is not None and k > 0 and self._nearest_query is not None:
            return self._nearest(fp, k, limit, conn)
        with self._conn(conn) as c:
            if limit is not None or k == 0:
                params = {"channel": self.channel, "fp": to_signed(fp), "limit": limit or 2**62}
                keys = c.execute(self._exact_query, params).scalars().all()
                if k == 0 or len(keys) == limit:
                    return [(key, fp, 0) for key in keys]
            params = {"channel": self.channel}
            for i, band in enumerate(self.layout.keys(fp)):
                params[f"k{i}"] = band
            values = c.execute(self._band_query, params).scalars().all()
            if self.max_candidates and len(values) >= self.max_candidates:
                logger.debug("candidate cap %d reached for %016x", self.max_candidates, fp)
            groups: dict[int, list[int]] = {}
            for value in values:
                dist = (fp ^ (value & 0xFFFFFFFFFFFFFFFF)).bit_count()
                if dist <= k:
                    groups.setdefault(dist, []).append(value)
            found: list[tuple[int, int, int]] = []
            if limit is None:
                wanted = [value for group in groups.values() for value in group]
                for key, value in self._keys_of(c, wanted, None):
                    other = value & 0xFFFFFFFFFFFFFFFF
                    found.append(((fp ^ other).bit_count(), key, other))
                found.sort()
                return [(key, other, dist) for dist, key, other in found]
            for dist in sorted(groups):
                room = limit - len(found)
                for key, value in self._keys_of(c, groups[dist], room):
                    found.append((key, value & 0xFFFFFFFFFFFFFFFF, dist))
                if len(found) >= limit:
                    break
            return found

    def _nearest(
        self, fp: int, k: int, limit: int, conn: Connection | None
    ) -> list[tuple[int, int, int]]:
        params: dict[str, int | str] = {
            "channel": self.channel,
            "fp": to_signed(fp),
            "k": k,
            "limit": limit,
        }
        if self.max_candidates:
            params["cap"] = self.max_candidates
        for i, band in enumerate(self.layout.keys(fp)):
            params[f"k{i}"] = band
        query = self._nearest_query
        assert query is not None
        with self._conn(conn) as c:
            # a page of a large template: its own fingerprint's first keys fill the answer,
            # read from the index in order, and the band probe (every row of the template's
            # bands) is not needed
            exact = {"channel": self.channel, "fp": params["fp"], "limit": limit}
            keys = c.execute(self._exact_query, exact).scalars().all()
            if len(keys) == limit:
                return [(key, fp, 0) for key in keys]
            rows = c.execute(query, params).all()
        found = []
        for key, value in rows:
            other = value & 0xFFFFFFFFFFFFFFFF
            found.append((key, other, (fp ^ other).bit_count()))
        return found

    def _keys_of(
        self, conn: Connection, values: list[int], limit: int | None
    ) -> list[tuple[int, int]]:
        """``(key, signed fp)`` of the stored fingerprints ``values``, by key, at most ``limit``."""
        out: list[tuple[int, int]] = []
        for start in range(0, len(values), _IN_CHUNK):
            chunk = values[start : start + _IN_CHUNK]
            params = {"channel": self.channel, "fps": chunk, "limit": limit or 2**62}
            out.extend(tuple(row) for row in conn.execute(self._keys_query, params))
        if len(values) > _IN_CHUNK:
            out.sort()
            if limit is not None:
                del out[limit:]
        return out
