"""Where benchmarks find their real data (never shipped with the project)."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"


def debian_docs(which: str = "python") -> Path:
    """The Python 3.11 or PostgreSQL 15 manual unpacked by ../shared/data/get-debian-docs.sh."""
    base = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs"))
    sub = {
        "python": "usr/share/doc/python3.11/html",
        "postgres": "usr/share/doc/postgresql-doc-15/html",
    }[which]
    path = base / sub
    if not path.is_dir():
        sys.exit(
            f"{path} is absent: run `bash {SHARED / 'get-debian-docs.sh'} {base}` first "
            "(or set VISDUP_DEBIAN_DOCS)"
        )
    return path


def html_files(root: Path, limit: int | None = None) -> list[Path]:
    files = sorted(p for p in root.rglob("*.html") if p.is_file())
    return files[:limit] if limit else files


@contextmanager
def new_store_url(server: str | None) -> Iterator[str]:
    """The URL of an empty store: a SQLite file, or a database of its own on the PostgreSQL
    ``server`` (its URL names the database to connect to for that), dropped afterwards."""
    if server is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{Path(tmp) / 'store.sqlite3'}"
        return
    from sqlalchemy import create_engine

    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"visdup_bench_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
