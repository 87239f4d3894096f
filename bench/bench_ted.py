"""Tree edit distance: the compiled kernel against apted 1.0.3 on real page terms.

Run from the repository root:
    bash ../shared/data/get-debian-docs.sh debian-docs      # once
    .venv/bin/python bench/bench_ted.py [DOCS_DIR] [--pairs 50] [--seed 0]
DOCS_DIR (or $VISDUP_DEBIAN_DOCS) is where the script unpacked the manuals; default
./debian-docs. Pages of the Python 3.11 manual become irreducible terms
(visdup.structure.term.page_term); pairs of them are timed with the C kernel and with
apted under the same marked-node costs, distances are compared, and a
synthetic scaling table shows what choosing the path direction per pair buys.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visdup.structure import distance  # noqa: E402
from visdup.structure.term import Term, page_term  # noqa: E402

Flat = tuple[list[int], list[int], list[int]]
BANDS = ((0, 150, 0.30), (150, 300, 0.40), (300, 600, 0.24), (600, 1000, 0.06))


def flat(t: Term) -> Flat:
    return distance._label_ids(t.labels), list(t.marks), list(t.sizes)


class _Node:
    __slots__ = ("children", "mark", "name")

    def __init__(self, name: int, mark: int):
        self.name, self.mark, self.children = name, mark, []


def apted_distance(a: Flat, b: Flat) -> int:
    """apted 1.0.3 with the marked-node costs of ALGORITHMS.md 1.7."""
    from apted import APTED, Config

    class MarkedCost(Config):
        def delete(self, node):
            return node.mark

        def insert(self, node):
            return node.mark

        def rename(self, x, y):
            return abs(x.mark - y.mark) if x.name == y.name else max(x.mark, y.mark)

        def children(self, node):
            return node.children

    def build(t: Flat) -> _Node:
        labels, marks, sizes = t
        nodes = [_Node(x, m) for x, m in zip(labels, marks, strict=True)]
        open_nodes: list[int] = []
        for i in range(len(nodes)):
            while open_nodes and open_nodes[-1] + sizes[open_nodes[-1]] <= i:
                open_nodes.pop()
            if open_nodes:
                nodes[open_nodes[-1]].children.append(nodes[i])
            open_nodes.append(i)
        return nodes[0]

    return APTED(build(a), build(b), MarkedCost()).compute_edit_distance()


def timed(fn: Callable[[], int], budget: float = 0.05, repeat: int = 5) -> tuple[int, float]:
    """Result and best time of a few runs (one run when it is slow)."""
    best = float("inf")
    result = 0
    spent = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        took = time.perf_counter() - start
        best = min(best, took)
        spent += took
        if spent > budget:
            break
    return result, best


def load_terms(docs: Path) -> list[tuple[str, Term]]:
    html = docs / "usr" / "share" / "doc" / "python3.11" / "html"
    terms = []
    for path in sorted(html.rglob("*.html")):
        terms.append((str(path.relative_to(html)), page_term(path.read_bytes())))
    return terms


def choose_pairs(
    terms: list[tuple[str, Term]], count: int, rng: random.Random
) -> list[tuple[tuple[str, Term], tuple[str, Term]]]:
    """Pairs spread over node counts (band of the larger term), so timings cover real sizes."""
    pairs = []
    for low, high, share in BANDS:
        pool = [t for t in terms if t[1].nodes < high]
        big = [t for t in pool if t[1].nodes >= low]
        want = max(1, round(count * share))
        for _ in range(want):
            if not big or len(pool) < 2:
                break
            a = rng.choice(big)
            b = rng.choice(pool)
            while b is a:
                b = rng.choice(pool)
            pairs.append((a, b))
    return pairs


def random_tree(rng: random.Random, n: int, mirrored: bool) -> Flat:
    """A random recursive tree: shallow like a DOM, its earliest (first) children grow biggest.

    Mirrored, the big subtrees come last, as <body> comes after <head>.
    """
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        kids[rng.randrange(i)].append(i)
    if mirrored:
        for k in kids:
            k.reverse()
    order: list[int] = []
    stack = [0]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(reversed(kids[v]))
    size = [1] * n
    for v in reversed(order):
        for c in kids[v]:
            size[v] += size[c]
    labels = [rng.randrange(4) for _ in order]
    marks = [rng.choice((1, 1, 1, 2, 3)) for _ in order]
    return labels, marks, [size[v] for v in order]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f}"


def directions(label: str, a: Flat, b: Flat) -> None:
    """One line: times of auto, leftmost-only and rightmost-only paths on a pair."""
    kernel = distance._KERNELS["c"]
    work = distance._WORK["c"]
    times: dict[int, float] = {}
    results = set()
    for direction in (0, 1, 2):
        d, t = timed(
            lambda direction=direction: kernel(*a, *b, 5000, direction), budget=0.2, repeat=3
        )
        times[direction] = t
        results.add(d)
    (la, ra), (lb, rb) = work(a[2]), work(b[2])
    print(
        f"{label:>10} {len(a[2]):6d} {len(b[2]):6d} {fmt_ms(times[0])} {fmt_ms(times[1])} "
        f"{fmt_ms(times[2])} {times[1] / times[0]:10.1f}   work L {la * lb:.1e} R {ra * rb:.1e}"
        + ("" if len(results) == 1 else "  <-- directions disagree")
    )


DIRECTION_HEAD = " ".join(
    f"{h:>{w}}"
    for h, w in zip(
        ("shape", "nodes", "nodes", "auto", "left", "right", "left/auto"),
        (10, 6, 6, 9, 9, 9, 10),
        strict=True,
    )
)


def real_pages(docs: Path, count: int, seed: int) -> None:
    kernel = distance._KERNELS["c"]
    started = time.perf_counter()
    terms = load_terms(docs)
    print(
        f"{len(terms)} pages of the Python 3.11 manual -> irreducible terms in "
        f"{time.perf_counter() - started:.1f} s; nodes: median "
        f"{statistics.median(t.nodes for _, t in terms):.0f}, max {max(t.nodes for _, t in terms)}"
    )
    pairs = choose_pairs(terms, count, random.Random(seed))
    print(f"\n{len(pairs)} pairs, C kernel (best of a few runs) vs apted 1.0.3 (one run)")
    heads = ("nodes a", "nodes b", "delta", "apted", "C ms", "apted ms", "ratio")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (8, 8, 6, 6, 9, 9, 7), strict=True)))
    rows = []
    for (_, a), (_, b) in pairs:
        fa, fb = flat(a), flat(b)
        d, tc = timed(lambda fa=fa, fb=fb: kernel(*fa, *fb, 5000, 0))
        start = time.perf_counter()
        ref = apted_distance(fa, fb)
        ta = time.perf_counter() - start
        rows.append((a.nodes, b.nodes, d, ref, tc, ta))
        flag = "" if d == ref else "  <-- differs"
        print(
            f"{a.nodes:8d} {b.nodes:8d} {d:6d} {ref:6d} {fmt_ms(tc)} {fmt_ms(ta)} "
            f"{ta / tc:7.0f}{flag}"
        )
    same = sum(1 for r in rows if r[2] == r[3])
    total_c = sum(r[4] for r in rows)
    total_a = sum(r[5] for r in rows)
    print(f"\nidentical distances: {same}/{len(rows)}")
    print(
        f"total: C {total_c * 1000:.1f} ms, apted {total_a:.1f} s -> "
        f"{total_a / total_c:.0f}x faster; per-pair ratio median "
        f"{statistics.median(r[5] / r[4] for r in rows):.0f}x, "
        f"min {min(r[5] / r[4] for r in rows):.0f}x"
    )
    print("\nby size of the larger term (nodes): pairs, median C ms, median apted ms")
    for low, high, _ in BANDS:
        band = [r for r in rows if low <= max(r[0], r[1]) < high]
        if band:
            mid_c = statistics.median(r[4] for r in band)
            mid_a = statistics.median(r[5] for r in band)
            print(f"  {low:4d}-{high:<4d} {len(band):3d} {fmt_ms(mid_c)} {fmt_ms(mid_a)}")

    print("\nlargest pages under 3000 nodes, C kernel: auto direction vs one direction (ms)")
    print(DIRECTION_HEAD)
    largest = sorted((t for _, t in terms if t.nodes <= 3000), key=lambda t: -t.nodes)[:4]
    for a, b in zip(largest[::2], largest[1::2], strict=False):
        directions("page", flat(a), flat(b))

    small = [(a, b) for (_, a), (_, b) in pairs if max(a.nodes, b.nodes) < 200][:6]
    if small:
        py = distance._KERNELS["python"]
        tc_sum = tp_sum = 0.0
        agree = 0
        for a, b in small:
            fa, fb = flat(a), flat(b)
            d, tc = timed(lambda fa=fa, fb=fb: kernel(*fa, *fb, 5000, 0))
            dp, tp = timed(lambda fa=fa, fb=fb: py(*fa, *fb, 5000, 0), budget=0.0)
            tc_sum += tc
            tp_sum += tp
            agree += d == dp
        print(
            f"\npure-Python fallback on {len(small)} pairs under 200 nodes: "
            f"{tp_sum / tc_sum:.0f}x slower than C, identical distances {agree}/{len(small)}"
        )


def scaling(seed: int) -> None:
    print("\nsynthetic random trees, C kernel: auto direction vs one direction (ms)")
    print(DIRECTION_HEAD)
    rng = random.Random(seed)
    for mirrored in (False, True):
        for n in (200, 1000, 3000):
            a = random_tree(rng, n, mirrored)
            b = random_tree(rng, n, mirrored)
            directions("mirrored" if mirrored else "random", a, b)


def work_budget(docs: Path, count: int, seed: int) -> None:
    """What the DP costs per cell, and how many cells real page pairs need (the TED budget)."""
    from visdup.config import VISDUP_TED_MAX_CELLS, VISDUP_TED_PAGE_CELLS

    rng = random.Random(seed)
    terms = [t for _name, t in load_terms(docs) if t.nodes <= distance.DEFAULT_MAX_NODES]
    cells = []
    for _ in range(count):
        a, b = rng.sample(terms, 2)
        cells.append(distance.dp_cells(a, b))
    cells.sort()
    q = [cells[min(len(cells) - 1, int(p * len(cells)))] for p in (0.5, 0.9, 0.99)]
    print(
        f"\nDP cells of {count} random Python-manual pairs: median {q[0]:,}, p90 {q[1]:,}, "
        f"p99 {q[2]:,}, max {cells[-1]:,}"
    )
    over = sum(c > VISDUP_TED_MAX_CELLS for c in cells)
    print(f"  above VISDUP_TED_MAX_CELLS ({VISDUP_TED_MAX_CELLS:,}): {over} of {count}")
    # cells per second of the C kernel, on real pairs (largest ones) and on comb pages
    big = sorted(terms, key=lambda t: t.nodes)[-20:]
    rates = []
    for a, b in itertools.pairwise(big):
        n = distance.dp_cells(a, b)
        _d, seconds = timed(lambda a=a, b=b: distance.tree_distance(a, b), repeat=1)
        rates.append(n / seconds)
    comb = "".join
    for h in (100, 200):
        one = page_term(
            comb(["<div>x" * h, "<div>" * h, "<p>z</p>" * 3, "</div>x" * h, "</div>" * h]).encode()
        )
        two = page_term(
            comb(["<div>x" * h, "<div>" * h, "<p>z</p>" * 5, "</div>x" * h, "</div>" * h]).encode()
        )
        n = distance.dp_cells(one, two)
        _d, seconds = timed(lambda a=one, b=two: distance.tree_distance(a, b), repeat=1)
        rates.append(n / seconds)
        print(f"  comb h={h}: {one.nodes} nodes, {n:,} cells, {fmt_ms(seconds)} ms")
    rate = statistics.median(rates)
    print(
        f"  C kernel: median {rate / 1e6:.0f} million cells per second; "
        f"VISDUP_TED_MAX_CELLS is {VISDUP_TED_MAX_CELLS / rate * 1000:.0f} ms, "
        f"VISDUP_TED_PAGE_CELLS {VISDUP_TED_PAGE_CELLS / rate * 1000:.0f} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=os.environ.get("VISDUP_DEBIAN_DOCS"))
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-scaling", action="store_true")
    args = parser.parse_args(argv)
    if "c" not in distance._KERNELS:
        print("compiled kernel visdup._native._ted is not built: make install")
        return 0
    docs = Path(args.docs) if args.docs else ROOT / "debian-docs"
    if not (docs / "usr" / "share" / "doc" / "python3.11" / "html").is_dir():
        print(
            f"skipped: no Python manual under {docs}; "
            "run bash ../shared/data/get-debian-docs.sh debian-docs"
        )
    else:
        try:
            import apted  # noqa: F401
        except ImportError:
            print("skipped the real-page comparison: apted 1.0.3 is not installed")
        else:
            real_pages(docs, args.pairs, args.seed)
        work_budget(docs, 20 * args.pairs, args.seed)
    if not args.no_scaling:
        scaling(args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
