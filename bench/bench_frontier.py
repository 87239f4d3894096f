"""What the shared Redis frontier costs, and what several processes gain.

    python bench/bench_frontier.py [--pages 600] [--processes 2] [--redis redis://127.0.0.1:6379/14]
        [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/postgres]

Crawls one generated site (the test site of tests/test_shared_frontier.py: four templates,
ten links down and two across per page) on 127.0.0.1 into a fresh PostgreSQL database, three
ways: one ``visdup crawl`` process with Scrapy's own scheduler, one with the Redis frontier,
and ``--processes`` with the frontier. Prints wall time, pages/s and CPU seconds per page of
the crawl processes (their rusage), and the ratios within this run. The Redis db given is
flushed before and after; the databases are dropped.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_shared_frontier import site  # noqa: E402

SETTINGS = ["-s", "LOG_LEVEL=WARNING", "-s", "VISDUP_FRONTIER_LEASE=30"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(base: str, db: str, frontier: str | None, processes: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the crawl processes)."""
    command = [sys.executable, "-m", "visdup", "crawl", base + "/", "--db", db, *SETTINGS]
    if frontier:
        command += ["--frontier", frontier]
    cpu = children_cpu()
    start = time.perf_counter()
    workers = [
        subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL) for _ in range(processes)
    ]
    codes = [w.wait() for w in workers]
    wall = time.perf_counter() - start
    if any(codes):
        sys.exit(f"a crawl process failed: exit codes {codes}")
    return wall, children_cpu() - cpu


def main() -> None:
    import redis
    import sqlalchemy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument(
        "--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    args = parser.parse_args()
    admin = sqlalchemy.create_engine(args.postgres, isolation_level="AUTOCOMMIT")
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    rows = []
    try:
        for label, frontier, processes in (
            ("1 process, Scrapy's scheduler", None, 1),
            ("1 process, Redis frontier", args.redis, 1),
            (f"{args.processes} processes, Redis frontier", args.redis, args.processes),
        ):
            name = f"visdup_bench_{uuid.uuid4().hex[:8]}"
            with admin.connect() as conn:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
            db = args.postgres.rsplit("/", 1)[0] + "/" + name
            try:
                with site(args.pages) as base:  # a new port: a new crawl name
                    wall, cpu = run(base, db, frontier, processes)
                engine = sqlalchemy.create_engine(db)
                with engine.connect() as conn:
                    stored = conn.exec_driver_sql("SELECT count(*) FROM visdup_pages").scalar()
                engine.dispose()
            finally:
                with admin.connect() as conn:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            rows.append((label, stored, wall, cpu))
            print(
                f"{label:36} {stored:5d} pages  {wall:7.1f} s  {stored / wall:6.1f} pages/s  "
                f"{1000 * cpu / stored:6.1f} ms CPU per page",
                flush=True,
            )
    finally:
        client.flushdb()
        client.close()
        admin.dispose()
    (_, n0, _w0, c0), (_, n1, w1, c1), (_, n2, w2, _c2) = rows
    print(
        f"frontier / Scrapy's scheduler, CPU per page: {(c1 / n1) / (c0 / n0):.2f}; "
        f"{args.processes} processes / 1 (frontier), pages/s: {(n2 / w2) / (n1 / w1):.2f}"
    )


if __name__ == "__main__":
    main()
