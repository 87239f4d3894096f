"""Translate + compress time against lxml's parse time, and node counts, on a real manual.

    python bench/bench_term.py [--limit N]

Goal (issue): median (translate + compress) / parse <= 1.0 per page.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import debian_docs, html_files
from visdup.page.parse import parse_html
from visdup.structure.term import KERNEL, compress, compress_python, translate, translate_python


def best_of(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    files = html_files(debian_docs("python"), args.limit or None)
    ratios, t_parse, t_trans, t_comp, py_ratios = [], [], [], [], []
    before, after = [], []
    for path in files:
        data = path.read_bytes()
        doc = parse_html(data)
        if doc.root is None:
            continue
        parse = best_of(lambda data=data: parse_html(data))
        raw = translate(doc.root).term
        trans = best_of(lambda doc=doc: translate(doc.root))
        comp = best_of(lambda raw=raw: compress(raw))
        ratios.append((trans + comp) / parse)
        py = best_of(lambda doc=doc: translate_python(doc.root), 1) + best_of(
            lambda raw=raw: compress_python(raw), 1
        )
        py_ratios.append(py / parse)
        t_parse.append(parse)
        t_trans.append(trans)
        t_comp.append(comp)
        before.append(raw.nodes)
        after.append(compress(raw).nodes)
    n = len(ratios)
    q = statistics.quantiles(ratios, n=10)
    print(f"pages: {n} (Python 3.11 manual), kernel: {KERNEL}")
    print(
        f"median ms/page: parse {statistics.median(t_parse) * 1e3:.2f}  "
        f"translate {statistics.median(t_trans) * 1e3:.2f}  "
        f"compress {statistics.median(t_comp) * 1e3:.2f}"
    )
    print(
        f"(translate + compress) / parse: median {statistics.median(ratios):.2f}  "
        f"p10 {q[0]:.2f}  p90 {q[-1]:.2f}  (goal: median <= 1.0)"
    )
    print(
        f"pure-Python reference:         median {statistics.median(py_ratios):.2f}  "
        f"(speed-up of the kernel: {statistics.median(py_ratios) / statistics.median(ratios):.0f}x)"
    )
    print(
        f"nodes before compression: median {statistics.median(before):.0f}  "
        f"max {max(before)}  total {sum(before)}"
    )
    print(
        f"nodes after compression:  median {statistics.median(after):.0f}  "
        f"max {max(after)}  total {sum(after)}  "
        f"(kept {sum(after) / sum(before):.1%})"
    )


if __name__ == "__main__":
    main()
