"""visdup migrate --db URL: upgrade a store written by an older visdup to this one's schema.

Commands that only read a store (``report``, ``drift``, ``cluster``, ``extract``,
``calibrate``) never change its schema, so that a mistyped URL or an older visdup's store is
left as it was; they refuse an older store and name this command. A crawl (or ``visdup dups
--db``) upgrades the store it writes to as well. Exit status: 0 upgraded or already current,
2 no visdup store there (nothing is created) or one newer than this visdup.
"""

from __future__ import annotations

import argparse

from visdup import config

HELP = "upgrade an existing store's schema to this visdup's version (reading commands do not)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", help=f"SQLAlchemy URL of the store (default {config.VISDUP_DATABASE_URL})"
    )


def run(args: argparse.Namespace) -> int:
    from visdup.escape import one_line
    from visdup.storage.schema import SCHEMA_VERSION
    from visdup.storage.store import Store

    store = Store.from_url(args.db or config.VISDUP_DATABASE_URL, create=False, migrate=True)
    found = store.schema_found
    store.close()
    if found == SCHEMA_VERSION:
        print(f"{one_line(store.url)}: schema version {SCHEMA_VERSION}, already current")
    else:
        print(f"{one_line(store.url)}: schema version {found} upgraded to {SCHEMA_VERSION}")
    return 0
