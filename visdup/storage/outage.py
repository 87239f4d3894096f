"""Which store errors mean the store is away (unreachable, full) rather than a bad page.

A page whose transaction fails because the database stopped answering or its disk is full is
no bad page: the same transaction succeeds once the store is back, so the crawl waits and tries
it again instead of dropping the page. The errors come as the driver raised them, or as text
when the label process raised them (its reply names the error's type and message).
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa_exc

#: What drivers say when the store is away: the server is gone or refuses connections, the
#: connection broke, the disk or file system is full or failing.
_AWAY = (
    "database or disk is full",
    "disk i/o error",
    "unable to open database file",
    "no space left on device",
    "connection refused",
    "could not connect",
    "connection failed",
    "connection timeout expired",
    "server closed the connection",
    "terminating connection",
    "connection is closed",
    "connection already closed",
    "consuming input failed",
    "ssl syscall error",
    "the database system is shutting down",
    "the database system is starting up",
)
#: The error types whose messages are read (a page's own error never is).
_TYPES = ("OperationalError", "InterfaceError", "DisconnectionError")


def _says_away(text: str) -> bool:
    lowered = text.lower()
    return any(phrase in lowered for phrase in _AWAY)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) says the store is away."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, sa_exc.DisconnectionError):
            return True
        if isinstance(
            current, sa_exc.OperationalError | sa_exc.InterfaceError | sqlite3.OperationalError
        ):
            if _says_away(str(current)):
                return True
        elif type(current).__name__ in _TYPES and _says_away(str(current)):
            return True
        elif any(name in str(current)[:200] for name in _TYPES) and _says_away(str(current)):
            return True  # the label process's reply: "OperationalError: (...) ..."
        current = current.__cause__ or current.__context__
    return False
