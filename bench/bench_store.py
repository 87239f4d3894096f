"""What whole transactions cost a SQLite crawl: visdup's BEGIN (pysqlite recipe) against the
driver's legacy transaction handling, which committed a page apart from its links.

    python bench/bench_store.py [--which python|postgres|demo] [--max-pages 200] [--rounds 1]

Serves the site on 127.0.0.1 and runs ``visdup crawl --max-pages N`` into a new SQLite file per
run, alternating the two modes in one process tree, and prints pages/s of each and their ratio.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import debian_docs
from visdup.demo.server import serve

DEMO = Path(__file__).resolve().parent.parent / "visdup" / "demo" / "site"

#: Runs ``visdup crawl``; with "legacy" first, the engine keeps pysqlite's own transactions.
RUN = """
import sys
mode = sys.argv.pop(1)
if mode == "legacy":
    import visdup.storage.engine as engine
    from sqlalchemy import event

    def pragmas_only(eng):
        def on_connect(dbapi_conn, _record):
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
                dbapi_conn.execute("PRAGMA " + pragma)
        event.listen(eng, "connect", on_connect)

    engine._sqlite_transactions = pragmas_only
from visdup.cli.app import main
sys.exit(main(sys.argv[1:]))
"""


def crawl(mode: str, url: str, pages: int, tmp: Path) -> tuple[int, float]:
    db = tmp / f"{mode}-{time.monotonic_ns()}.sqlite3"
    command = [
        sys.executable, "-c", RUN, mode, "crawl", url, "--db", f"sqlite:///{db}",
        "--max-pages", str(pages), "-s", "LOG_LEVEL=ERROR", "-s", "ROBOTSTXT_OBEY=False",
    ]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(command, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
    return stored, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", default="python", choices=["demo", "python", "postgres"])
    parser.add_argument("--max-pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    root = DEMO if args.which == "demo" else debian_docs(args.which)
    rates: dict[str, list[float]] = {"recipe": [], "legacy": []}
    with tempfile.TemporaryDirectory() as tmp, serve(root) as server:
        for _ in range(args.rounds):
            for mode in ("legacy", "recipe"):
                stored, elapsed = crawl(
                    mode, server.url_for("/index.html"), args.max_pages, Path(tmp)
                )
                rates[mode].append(stored / elapsed)
                rate = stored / elapsed
                print(f"{mode:<7} {stored:5d} pages  {elapsed:6.1f} s  {rate:6.2f} pages/s")
    recipe = sum(rates["recipe"]) / len(rates["recipe"])
    legacy = sum(rates["legacy"]) / len(rates["legacy"])
    print(f"recipe / legacy throughput: {recipe / legacy:.2f}")


if __name__ == "__main__":
    main()
