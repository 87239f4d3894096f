"""Resume without waste, measured: a crawl stopped at N pages, then run again to the end.

    python bench/bench_resume.py [--which demo|python|postgres] [--max-pages 60] [--kills 0]

Serves the site on 127.0.0.1 and runs ``visdup crawl`` twice into one new SQLite store: first
with ``--max-pages N`` (or killed with SIGKILL ``--kills`` times at random points), then to the
end. Prints the pages each run stored, the requests the server answered, and the waste: requests
of the second run for pages the store already held (goal 0), and pages stored twice (goal 0).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import debian_docs
from visdup.demo.server import serve
from visdup.storage.urls import canonical_url

DEMO = Path(__file__).resolve().parent.parent / "visdup" / "demo" / "site"


def stored(db: Path) -> list[str]:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return [row[0] for row in conn.execute("SELECT url FROM visdup_pages")]
    except sqlite3.Error:
        return []


def fetched(server, since: int) -> list[str]:
    return [
        canonical_url(server.url + target)
        for target in server.requests[since:]
        if not target.startswith("/robots.txt")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", default="demo", choices=["demo", "python", "postgres"])
    parser.add_argument("--max-pages", type=int, default=60)
    parser.add_argument("--kills", type=int, default=0, help="SIGKILL the first runs instead")
    args = parser.parse_args()
    root = DEMO if args.which == "demo" else debian_docs(args.which)
    start = "/index.html"
    rnd = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp, serve(root) as server:
        db = Path(tmp) / "resume.sqlite3"
        command = [
            sys.executable,
            "-m",
            "visdup",
            "crawl",
            server.url_for(start),
            "--db",
            f"sqlite:///{db}",
            "-s",
            "LOG_LEVEL=ERROR",
            "-s",
            "ROBOTSTXT_OBEY=False",
        ]
        runs: list[tuple[str, int, int]] = []
        mark = 0
        if args.kills:
            for _ in range(args.kills):
                target = len(stored(db)) + rnd.randint(10, 60)
                proc = subprocess.Popen(command, cwd=tmp, stdout=subprocess.DEVNULL)
                while proc.poll() is None and len(stored(db)) < target:
                    time.sleep(rnd.uniform(0.02, 0.3))
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                runs.append(("killed", len(stored(db)), len(fetched(server, mark))))
                mark = len(server.requests)
        else:
            subprocess.run(
                [*command, "--max-pages", str(args.max_pages)],
                cwd=tmp,
                check=False,
                stdout=subprocess.DEVNULL,
            )
            runs.append(
                (f"--max-pages {args.max_pages}", len(stored(db)), len(fetched(server, mark)))
            )
            mark = len(server.requests)
        before = set(stored(db))
        t0 = time.perf_counter()
        subprocess.run(command, cwd=tmp, check=False, stdout=subprocess.DEVNULL)
        elapsed = time.perf_counter() - t0
        second = fetched(server, mark)
        runs.append(("to the end", len(stored(db)), len(second)))
        urls = stored(db)
        with sqlite3.connect(db) as conn:
            ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
    print(f"site {args.which} ({root})")
    for name, pages, requests in runs:
        print(f"  run {name:<18} stored so far {pages:5d}   requests {requests:5d}")
    print(f"  last run: {elapsed:.1f} s")
    print(
        f"  waste: {len(set(second) & before)} requests for pages already stored; "
        f"{len(urls) - len(set(urls))} pages stored twice; integrity {ok}"
    )


if __name__ == "__main__":
    main()
