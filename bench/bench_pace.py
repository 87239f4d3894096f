"""visdup's CPU per page against lxml's parse of the same page.

    .venv/bin/python bench/bench_pace.py [--set python|postgres|DIR] [--pages 300] [--rounds 3]
    .venv/bin/python bench/bench_pace.py --instructions [--set ...] [--pages 300]

The ratio is machine-independent: (CPU seconds of ``visdup dups --db URL PATH...`` and its
children over N pages, minus the same over 1 page) / (N - 1), divided by
``lxml.html.fromstring``'s CPU per page on the same pages in one process (mean of the rounds).
visdup's own parse counts on its side. The pages are the first N of the set in sorted path
order. Modes: every channel (the defaults), and structure alone (content and clusters off).
``--instructions`` counts instructions instead of CPU seconds (valgrind's callgrind, the
command's children included, ``PYTHONHASHSEED=0``; lxml's parse counted the same way, as a
program over the pages less one over the first): what one change saves then shows on a shared
machine whose timings move more than the change. Prints figures only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import debian_docs, html_files  # noqa: E402

VISDUP = [sys.executable, "-m", "visdup"]
MODES = {
    "all": [],
    "structure": ["-s", "VISDUP_CONTENT_ENABLED=false", "-s", "VISDUP_CLUSTER_ENABLED=false"],
}


def page_files(which: str, limit: int) -> list[Path]:
    root = debian_docs(which) if which in ("python", "postgres") else Path(which)
    return html_files(root, limit)


def lxml_parse_cpu(files: list[Path], rounds: int) -> float:
    """Mean CPU seconds a page of ``lxml.html.fromstring``, the bytes read beforehand."""
    import lxml.etree
    import lxml.html

    bodies = [f.read_bytes() for f in files]
    spent = []
    for _ in range(rounds):
        t0 = time.process_time()
        for body in bodies:
            with contextlib.suppress(lxml.etree.ParserError, ValueError):  # an empty page
                lxml.html.fromstring(body)
        spent.append((time.process_time() - t0) / len(bodies))
    return sum(spent) / len(spent)


#: lxml's parse of the pages named on its command line, as lxml_parse_cpu times it.
PARSE = """
import contextlib, sys
import lxml.etree, lxml.html
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        body = f.read()
    with contextlib.suppress(lxml.etree.ParserError, ValueError):
        lxml.html.fromstring(body)
"""


def instructions(command: list[str]) -> int:
    """Instructions ``command`` and its children execute (callgrind's totals)."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--trace-children=yes",
                f"--callgrind-out-file={tmp}/callgrind.%p",
                *[arg.replace("{tmp}", tmp) for arg in command],
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        if done.returncode not in (0, 2):
            raise SystemExit(done.stderr.decode(errors="replace")[-2000:])
        total = 0
        for out in Path(tmp).glob("callgrind.*"):
            for line in out.read_text(errors="replace").splitlines():
                if line.startswith("summary:"):
                    total += int(line.split()[1])
        return total


def per_page_instructions(files: list[Path], command: list[str]) -> tuple[float, int, int]:
    """(instructions a page, over all the files, over the first) of ``command`` + the files."""
    many = instructions([*command, *map(str, files)])
    one = instructions([*command, str(files[0])])
    return (many - one) / (len(files) - 1), many, one


def count_instructions(files: list[Path], modes: list[str], name: str) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian's valgrind package)")
    n = len(files)
    parse, _, _ = per_page_instructions(files, [sys.executable, "-c", PARSE])
    print(f"{name}: {n} pages, lxml.html.fromstring {parse / 1e6:.2f} million instructions a page")
    for mode in modes:
        command = [*VISDUP, "dups", "--db", "sqlite:///{tmp}/pace.sqlite3", *MODES[mode]]
        per_page, many, one = per_page_instructions(files, command)
        print(
            f"  {mode:10} {per_page / 1e6:6.2f} million a page ({many / 1e9:.2f} billion for {n}, "
            f"{one / 1e9:.2f} for 1): {per_page / parse:5.2f}x the parse"
        )


def dups_cpu(files: list[Path], extra: list[str]) -> float:
    """CPU seconds (user + system) of one ``visdup dups`` run and its children."""
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/pace.sqlite3"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [*VISDUP, "dups", "--db", db, *extra, *map(str, files)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        if done.returncode not in (0, 2):  # 2: a bad file (an empty page), the rest done
            raise SystemExit(done.stderr.decode(errors="replace")[-2000:])
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="python", help="python, postgres or a directory of pages")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="all,structure")
    ap.add_argument("--instructions", action="store_true", help="count instructions (callgrind)")
    args = ap.parse_args()
    files = page_files(args.set, args.pages)
    n = len(files)
    if args.instructions:
        count_instructions(files, args.modes.split(","), args.set)
        return
    parse = lxml_parse_cpu(files, args.rounds)
    print(f"{args.set}: {n} pages, lxml.html.fromstring {parse * 1e3:.3f} ms of CPU a page")
    for mode in args.modes.split(","):
        ratios = []
        for _ in range(args.rounds):
            one = dups_cpu(files[:1], MODES[mode])
            many = dups_cpu(files, MODES[mode])
            per_page = (many - one) / (n - 1)
            ratios.append(per_page / parse)
            print(
                f"  {mode:10} {per_page * 1e3:6.2f} ms a page ({many:.2f} s for {n}, "
                f"{one:.2f} s for 1): {per_page / parse:5.2f}x the parse"
            )
        ratios.sort()
        print(f"  {mode:10} median {ratios[len(ratios) // 2]:.2f}x the parse")


if __name__ == "__main__":
    main()
