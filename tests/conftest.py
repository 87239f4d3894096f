from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _fast_engine_heartbeat():
    """The engine polls its slot every 5 s by default; tests crawl tiny sites, and each crawl
    would wait that long to see it is done. No setting sets it: the private attribute is
    changed only where it exists, so a Scrapy without it makes the tests slower, not wrong."""
    from scrapy.core.engine import ExecutionEngine

    old = getattr(ExecutionEngine, "_SLOT_HEARTBEAT_INTERVAL", None)
    if old is not None:
        ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = 0.05
    yield
    if old is not None:
        ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = old


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"development data {path} is absent")
    return path


POSTGRES_URL = os.environ.get(
    "VISDUP_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    import uuid

    sqlalchemy = pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    admin_url = POSTGRES_URL.rsplit("/", 1)[0] + "/postgres"
    try:
        admin = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            name = f"visdup_test_{uuid.uuid4().hex[:10]}"
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except Exception as exc:
        pytest.skip(f"PostgreSQL is not reachable at {admin_url}: {exc.__class__.__name__}")
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()
