"""Two processes labelling into one PostgreSQL store give the labels one process would.

Each process caches what it labels with: the visible-text keys of thin pages (a login wall,
the same few words on many URLs) were loaded as it started and extended only by its own
commits, so three crawls sharing a store gave one login wall three originals. Here two
processes warm on the same empty store, then store one login wall each, one after the other:
the second must find the first's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.postgres


def login_wall(url: str) -> bytes:
    """A thin page: the same visible words on every URL, a hidden field that differs."""
    return (
        "<html><head><title>Sign in</title></head><body><header><a href='/'>Home</a></header>"
        "<main><form action='/login' method='post'><h1>Sign in</h1>"
        f"<input type='hidden' name='next' value='{url}'>"
        "<label>User name <input name='user'></label>"
        "<label>Password <input name='password' type='password'></label>"
        "<button>Sign in</button></form></main><footer><p>Example site</p></footer>"
        "</body></html>"
    ).encode()


def peer() -> None:
    """One labelling process: warms on the store (argv[1]), says ``ready``, then labels each
    URL it reads, and settles the labels on ``close``."""
    from visdup.config import resolve
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.jobs import PageJob
    from visdup.dedup.labelling import Labelling
    from visdup.storage.store import Store

    db = sys.argv[1]
    config = resolve({"VISDUP_DATABASE_URL": db})
    store = Store.from_url(db)
    run = store.begin_run("site", crawl="example.test")
    labelling = Labelling(store, config, run_id=run, snapshot=None, count=lambda *_: None)
    options = AnalysisOptions.from_settings(config, template=False)
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, url = line.strip().partition(" ")
        if command == "close":
            labelling.close("finished")
            print("closed", flush=True)
            break
        analysis = analyse(login_wall(url), url=url, options=options)
        outcome = labelling.label(PageJob(url=url, status=200, links=[]), analysis)
        print(json.dumps({"id": outcome.page_id, "verdict": outcome.verdict}), flush=True)
    store.close()


class Peer:
    def __init__(self, db: str):
        code = "from tests.test_shared_labels import peer; peer()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, db],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def said(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the peer ended"
        return line.strip()

    def tell(self, line: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.said()

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _groups(db: str) -> dict[str, Any]:
    engine = sqlalchemy.create_engine(db)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sqlalchemy.text(
                    "SELECT p.url, p.verdict, p.kind, o.url FROM visdup_pages p"
                    " LEFT JOIN visdup_pages o ON o.id = p.duplicate_of ORDER BY p.url"
                )
            ).all()
    finally:
        engine.dispose()
    return {url: (verdict, kind, original) for url, verdict, kind, original in rows}


def _one_group(db: str) -> None:
    """Every page stored names one original, and that original names none."""
    groups = _groups(db)
    originals = {url for url, (verdict, _kind, _of) in groups.items() if verdict != "duplicate"}
    assert len(originals) == 1, groups
    (original,) = originals
    copies = [(kind, of) for url, (_v, kind, of) in groups.items() if url != original]
    assert copies == [("thin", original)] * (len(groups) - 1), groups


def test_a_login_wall_stored_by_two_processes_has_one_original(pg_url):
    """As pages arrive (each later wall a copy of one stored before it, whichever process
    stored that), and after each process's final pass."""
    first, second = Peer(pg_url), Peer(pg_url)
    try:
        assert first.said() == "ready" and second.said() == "ready"  # both warmed: empty store
        first.tell("label http://example.test/login?next=/a")
        second.tell("label http://example.test/login?next=/b")
        first.tell("label http://example.test/login?next=/c")
        second.tell("label http://example.test/login?next=/d")
        _one_group(pg_url)
        assert first.tell("close") == "closed"
        assert second.tell("close") == "closed"
    finally:
        first.end()
        second.end()
    _one_group(pg_url)
