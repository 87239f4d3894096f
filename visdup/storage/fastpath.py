"""The store's per-page statements run on SQLite's own driver, compiled once by SQLAlchemy.

SQLAlchemy's execution (its context, events and result objects) costs 15-20 µs a statement,
ten times SQLite's own work on a lookup by key, and a page's transaction runs half a dozen, one
of them a row per link. So on SQLite each statement given to :class:`StatementRunner` is
compiled once and its SQL run on the sqlite3 connection under SQLAlchemy's. The SQL and each
parameter's conversion (a datetime's text, a boolean's integer) are SQLAlchemy's, read from the
compiled statement, so what is stored does not change; a statement SQLAlchemy would add work of
its own to at execution (a column default, a list expanded into the SQL, a column it converts as
it reads) is run by SQLAlchemy instead.

This is the one module that reads SQLAlchemy's compiler internals (``positiontup``, ``binds``,
``insert_prefetch``, ...): they may change in any minor release, so ``pyproject.toml`` pins
SQLAlchemy below its next minor, and ``tests/test_storage_fastpath.py`` checks that every
statement declared with :func:`runs_on_driver` gives the same rows and the same stored values
with and without this path.
"""

from __future__ import annotations

import operator
from collections import namedtuple
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from keyword import iskeyword
from typing import Any, TypeVar

from sqlalchemy import Column, Connection, CursorResult, Engine
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, StatementError

from visdup.storage.transactions import Database

__all__ = ["DRIVER_STATEMENTS", "StatementRunner", "new_id", "runs_on_driver"]

S = TypeVar("S")

#: Every statement of the store's hot path (declared with :func:`runs_on_driver`): the ones
#: the fast path's test runs both ways.
DRIVER_STATEMENTS: list[Any] = []


def runs_on_driver(statement: S) -> S:
    """Declare ``statement`` one that :class:`StatementRunner` runs on SQLite's driver (built
    once, at import, or once per process: the cache is keyed by the object)."""
    DRIVER_STATEMENTS.append(statement)
    return statement


def new_id(result: CursorResult[Any]) -> int:
    """The primary key an INSERT gave its row."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


#: A parameter the caller must give (no value of its own in the statement).
_REQUIRED = object()


@dataclass(frozen=True, slots=True)
class DriverStatement:
    """A statement compiled once for SQLite, run on the driver's own connection."""

    #: The statement compiled (kept: the runner's cache is keyed by its id).
    statement: Any
    sql: str
    #: (name, value when not given or _REQUIRED, conversion) per positional parameter.
    params: tuple[tuple[str, Any, Callable[[Any], Any] | None], ...]
    #: A row of the columns it selects (None: it selects none).
    row: Any
    #: The parameters read in one call, where every one is given (a row of many).
    take: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None = None
    #: (position, conversion) of the parameters ``take`` reads that are converted.
    converted: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def values(self, given: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.take is not None:
            taken = self.take(given)
            if not self.converted:
                return taken
            out = list(taken)
            for position, conversion in self.converted:
                out[position] = conversion(out[position])
            return tuple(out)
        values = []
        for name, default, convert in self.params:
            value = given[name] if default is _REQUIRED else given.get(name, default)
            values.append(value if convert is None else convert(value))
        return tuple(values)


def compile_for_driver(
    statement: Any, keys: tuple[str, ...] | None, dialect: Dialect
) -> DriverStatement | None:
    """``statement`` compiled for the driver; None where SQLAlchemy would add work of its
    own at execution (a column default, a list expanded into the SQL): it runs it then."""
    compiled = statement.compile(dialect=dialect, column_keys=list(keys) if keys else None)
    if (
        compiled.positiontup is None
        or getattr(compiled, "insert_prefetch", None)
        or getattr(compiled, "update_prefetch", None)
        or compiled.literal_execute_params
        or compiled.post_compile_params
    ):
        return None
    params = []
    for name in compiled.positiontup:
        bind = compiled.binds[name]
        default = _REQUIRED if bind.required or (keys and name in keys) else bind.effective_value
        params.append((name, default, bind.type.dialect_impl(dialect).bind_processor(dialect)))
    selected = getattr(statement, "selected_columns", None)
    row: Any = None
    if selected is not None:
        # rows come back as the driver gives them: only a table's own columns (an expression
        # or a label is named by SQLAlchemy's compiler), each named once, that SQLAlchemy
        # would hand over unconverted (no result processor: not a datetime, not a boolean)
        names = [getattr(c, "name", None) for c in selected]
        if (
            not names
            or not all(isinstance(c, Column) for c in selected)
            or len(set(names)) != len(names)
            or not all(isinstance(n, str) and n.isidentifier() and not iskeyword(n) for n in names)
            or any(c.type.dialect_impl(dialect).result_processor(dialect, None) for c in selected)
        ):
            return None
        row = _row_type(tuple(str(n) for n in names))
    take = None
    if len(params) > 1 and all(default is _REQUIRED for _n, default, _c in params):
        take = operator.itemgetter(*(name for name, _d, _c in params))
    converted = tuple((i, convert) for i, (_n, _d, convert) in enumerate(params) if convert)
    return DriverStatement(statement, compiled.string, tuple(params), row, take, converted)


def _row_type(names: tuple[str, ...]) -> Any:
    """The type of a row read on the driver: its columns by name (plain values, as read)."""
    return namedtuple("StoredRow", names)


def _values(driver: DriverStatement, params: Any, many: bool = False) -> Any:
    """The driver's parameters of ``params``; a value a parameter's conversion refuses
    raises StatementError, as SQLAlchemy's own execution does."""
    try:
        if many:
            return [driver.values(row) for row in params]
        return driver.values(params)
    except (TypeError, ValueError) as exc:
        raise StatementError(str(exc), driver.sql, params, exc) from exc


class StatementRunner(Database):
    """Runs the store's statements: on SQLite's driver where compiled once, else (PostgreSQL,
    whose own round trips outweigh SQLAlchemy's work, or a statement the driver cannot run
    as SQLAlchemy would) through SQLAlchemy. Errors reach the caller as SQLAlchemy raises
    them either way.
    """

    def __init__(self, engine: Engine):
        super().__init__(engine)
        #: SQLite runs the statements on its driver (tests turn it off to compare).
        self._on_driver = engine.dialect.name == "sqlite"
        self._driver_statements: dict[tuple[int, tuple[str, ...] | None], Any] = {}

    def _driver_statement(
        self, statement: Any, keys: tuple[str, ...] | None = None
    ) -> DriverStatement | None:
        """``statement`` for the driver itself (``keys``: the columns an INSERT or UPDATE is
        given); None where SQLAlchemy runs it."""
        if not self._on_driver:
            return None
        key = (id(statement), keys)
        if key not in self._driver_statements:  # None is kept too: SQLAlchemy runs it
            self._driver_statements[key] = compile_for_driver(statement, keys, self.engine.dialect)
        return self._driver_statements[key]

    def _on(
        self, conn: Connection, driver: DriverStatement, params: Any, many: bool = False
    ) -> Any:
        """Run ``driver`` with ``params`` (a mapping, or a list of them with ``many``) on the
        SQLite connection under ``conn``, in its transaction (begun here as SQLAlchemy begins
        one, where none is yet: the driver alone would commit each statement)."""
        values = _values(driver, params, many)
        if not conn.in_transaction():
            conn.begin()
        return self._execute(conn.connection.driver_connection, driver, values, many)

    def _execute(self, raw: Any, driver: DriverStatement, values: Any, many: bool = False) -> Any:
        """``driver`` on the sqlite3 connection ``raw``: its cursor; the driver's error raised
        as SQLAlchemy raises it (its DBAPIError: IntegrityError, OperationalError, ...)."""
        assert raw is not None
        error: type[Exception] = self.engine.dialect.loaded_dbapi.Error
        try:
            if many:
                return raw.executemany(driver.sql, values)
            return raw.execute(driver.sql, values)
        except error as exc:
            raise DBAPIError.instance(
                driver.sql, values, exc, error, dialect=self.engine.dialect
            ) from exc

    def _scalar(self, conn: Connection, statement: Any, params: Mapping[str, Any]) -> Any:
        """The first column of the first row, or None."""
        driver = self._driver_statement(statement)
        if driver is None:
            return conn.execute(statement, params).scalar()
        row = self._on(conn, driver, params).fetchone()
        return None if row is None else row[0]

    def _run(self, conn: Connection, statement: Any, params: Mapping[str, Any]) -> int:
        """Run an INSERT or UPDATE with ``params``: the rows it changed."""
        driver = self._driver_statement(statement, tuple(params))
        if driver is None:
            return int(conn.execute(statement, params).rowcount)
        return int(self._on(conn, driver, params).rowcount)

    def _insert(self, conn: Connection, statement: Any, row: Mapping[str, Any]) -> int:
        """Insert one row: the primary key it was given."""
        driver = self._driver_statement(statement, tuple(row))
        if driver is None:
            return new_id(conn.execute(statement, row))
        return int(self._on(conn, driver, row).lastrowid)

    def _run_many(self, conn: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
        """Run an INSERT for each of ``rows`` (given the same columns), in one call."""
        driver = self._driver_statement(statement, tuple(rows[0]))
        if driver is None:
            conn.execute(statement, rows)
            return
        self._on(conn, driver, rows, many=True)

    def read_first(self, statement: Any, params: Mapping[str, Any]) -> Any:
        """The first row of a read outside any transaction (its columns by name), or None.

        On SQLite one statement on a pooled connection, in SQLite's own autocommit: what a
        deferred BEGIN and its end around it would give, for a fifth of the work; on
        PostgreSQL one statement in autocommit.
        """
        driver = self._driver_statement(statement)
        if driver is None:
            with self._single.connect() as conn:
                return conn.execute(statement, params).first()
        values = _values(driver, params)
        raw = self.engine.raw_connection()
        try:
            row = self._execute(raw.driver_connection, driver, values).fetchone()
        finally:
            raw.close()
        return None if row is None else driver.row._make(row)
