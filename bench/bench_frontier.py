"""What the shared Redis frontier costs, and what several processes gain.

    python bench/bench_frontier.py [--pages 600] [--processes 2] [--redis redis://127.0.0.1:6379/14]
        [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/postgres]

Crawls one generated site (the test site of tests/test_shared_frontier.py: four templates,
ten links down and two across per page) on 127.0.0.1 into a fresh PostgreSQL database, three
ways: one ``visdup crawl`` process with Scrapy's own scheduler, one with the Redis frontier,
and ``--processes`` with the frontier. Prints wall time, pages/s and CPU seconds per page of
the crawl processes (their rusage), and the ratios within this run. The Redis db given is
flushed before and after; the databases are dropped.

``--kill`` runs the scenario of the 3,000-page test instead: ``--processes`` crawl processes
(3 here) on ``--pages`` pages, one killed with SIGKILL when a third of the pages are stored
and started again; prints the wall time and the frontier stats of all processes together
(``reclaimed``: requests leased again after the killed process's leases ran out;
``late_acks``: acknowledgements of requests handed out again meanwhile; ``held_max``: the
most leases one process held). ``--set NAME=VALUE`` passes a setting to every process:

    python bench/bench_frontier.py --kill --pages 3000 --processes 3
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_shared_frontier import count_stored, site  # noqa: E402

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


def kill_run(args: argparse.Namespace, admin: Any) -> None:
    """Kill one of ``args.processes`` workers when a third of the pages are stored, restart it."""
    import re
    import signal
    import tempfile

    name = f"visdup_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    db = args.postgres.rsplit("/", 1)[0] + "/" + name
    settings = [
        "-s",
        "LOG_LEVEL=INFO",
        "-s",
        f"VISDUP_FRONTIER_LEASE={args.lease}",
        # as the test: the frontier is measured, the structure channel gives each page a verdict
        "-s",
        "VISDUP_CLUSTER_ENABLED=False",
        "-s",
        "VISDUP_CONTENT_ENABLED=False",
        "-s",
        "VISDUP_STORE_BODY=False",
        "-s",
        "VISDUP_CANDIDATES=4",
    ]
    for pair in args.set:
        settings += ["-s", pair]
    totals: dict[str, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp, site(args.pages) as base:
            command = [sys.executable, "-m", "visdup", "crawl", base + "/", "--db", db]
            command += ["--frontier", args.redis, "--crawl-id", name, *settings]
            logs = [Path(tmp) / f"worker{i}.log" for i in range(args.processes + 1)]

            def start(log: Path) -> subprocess.Popen[bytes]:
                return subprocess.Popen(
                    command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("wb")
                )

            t0 = time.perf_counter()
            workers = [start(log) for log in logs[:-1]]
            while count_stored(db) < args.pages // 3:
                if any(w.poll() is not None for w in workers):
                    sys.exit("a crawl process ended early")
                time.sleep(0.2)
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait()
            workers.append(start(logs[-1]))
            codes = [w.wait() for w in workers[1:]]
            wall = time.perf_counter() - t0
            if any(codes):
                sys.exit(f"a crawl process failed: exit codes {codes}")
            for log in logs:  # the killed process logged no stats
                for key, value in re.findall(
                    r"'visdup/frontier/(\w+)': (\d+)", log.read_text(errors="replace")
                ):
                    if key == "held_max":
                        totals[key] = max(totals.get(key, 0), int(value))
                    else:
                        totals[key] = totals.get(key, 0) + int(value)
        stored = count_stored(db)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"{args.processes} processes, one killed and restarted: {stored} pages in {wall:.1f} s")
    for key in ("leased", "acked", "reclaimed", "late_acks", "stored_skipped", "held_max"):
        print(f"  visdup/frontier/{key}: {totals.get(key, 0)}")


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
    parser.add_argument("--kill", action="store_true", help="the kill scenario (see above)")
    parser.add_argument("--lease", type=float, default=6.0, help="--kill: the lease, seconds")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="--kill: a setting"
    )
    args = parser.parse_args()
    admin = sqlalchemy.create_engine(args.postgres, isolation_level="AUTOCOMMIT")
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    if args.kill:
        try:
            kill_run(args, admin)
        finally:
            client.flushdb()
            client.close()
            admin.dispose()
        return
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
