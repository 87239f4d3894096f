"""Hamming distances between structural fingerprints of real pages, to choose k.

Pages of one template should lie within k of each other (or at least of their nearest
same-template page, which is what a crawl needs to find a cluster), pages of other templates
beyond it. Data: ../shared/data/warpcore (documentation site, labelled by generator: hugo,
reveal, scaladoc-class/object/trait/package) and ../shared/data/swde-booksamillion (300 product
pages of one shop template); ../shared/data/aeb (news articles of 181 different sites) shows how
close unrelated sites come.

    .venv/bin/python bench/bench_simhash_k.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visdup.errors import InputError  # noqa: E402
from visdup.structure.fingerprint import shape_simhash, term_simhash  # noqa: E402
from visdup.structure.term import page_term  # noqa: E402

KS = (0, 2, 3, 4, 5, 6, 8, 10, 12, 16)


def family(template: str) -> str:
    return "scaladoc" if template.startswith("scaladoc") else template


def load(pages: list[tuple[str, bytes]], shapes: list | None = None) -> list[tuple[str, int]]:
    """(group, structural SimHash) per page; the mark-free shape SimHash goes to ``shapes``."""
    out = []
    for group, data in pages:
        try:
            term = page_term(data)
        except InputError:
            continue
        out.append((group, term_simhash(term)))
        if shapes is not None:
            shapes.append((group, shape_simhash(term)))
    return out


def warpcore(data: pathlib.Path) -> list[tuple[str, bytes]]:
    root = data / "warpcore"
    if not (root / "labels.csv").exists():
        return []
    with open(root / "labels.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [
        (r["template"], (root / "site" / r["path"]).read_bytes())
        for r in rows
        if r["template"] not in ("other", "template")
    ]


def gz_pages(folder: pathlib.Path, group: str) -> list[tuple[str, bytes]]:
    return [(group, gzip.decompress(p.read_bytes())) for p in sorted(folder.glob("*.gz"))]


def share_within(values: list[int]) -> str:
    if not values:
        return "(none)"
    return " ".join(f"{sum(v <= k for v in values) / len(values):5.2f}" for k in KS)


def quantiles(values: list[int]) -> str:
    if not values:
        return ""
    v = sorted(values)
    pick = [v[min(len(v) - 1, int(q * len(v)))] for q in (0.05, 0.5, 0.95)]
    return f"p5/p50/p95 = {pick[0]}/{pick[1]}/{pick[2]}"


def nearest(fps: list[tuple[str, int]], same: bool) -> list[int]:
    """Per page, the distance to its nearest page of the same (or of another) family/template."""
    out = []
    for i, (g, x) in enumerate(fps):
        best = None
        for j, (h, y) in enumerate(fps):
            if i == j:
                continue
            if (same and h != g) or (not same and family(h) == family(g)):
                continue
            d = (x ^ y).bit_count()
            best = d if best is None or d < best else best
        if best is not None:
            out.append(best)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()

    t0 = time.perf_counter()
    warp_shapes: list[tuple[str, int]] = []
    warp = load(warpcore(args.data), warp_shapes)
    swde_dir = args.data / "swde-booksamillion" / "pages"
    swde = load(gz_pages(swde_dir, "swde")) if swde_dir.exists() else []
    aeb_dir = args.data / "aeb" / "html"
    aeb = load(gz_pages(aeb_dir, "aeb")) if aeb_dir.exists() else []
    if not warp and not swde:
        print("no data under", args.data)
        return
    n = len(warp) + len(swde) + len(aeb)
    print(f"{n} pages fingerprinted in {time.perf_counter() - t0:.1f} s")

    same, sibling, other = [], [], []
    for (a, x), (b, y) in itertools.combinations(warp, 2):
        d = (x ^ y).bit_count()
        if a == b:
            same.append(d)
        elif family(a) == family(b):
            sibling.append(d)
        else:
            other.append(d)
    swde_pairs = [(x ^ y).bit_count() for (_, x), (_, y) in itertools.combinations(swde, 2)]
    aeb_pairs = [(x ^ y).bit_count() for (_, x), (_, y) in itertools.combinations(aeb, 2)]

    print("\nshare of pairs within k".ljust(44) + " ".join(f"{k:>5d}" for k in KS))
    rows = [
        ("warpcore same template", same),
        ("warpcore scaladoc kinds (class/trait/..)", sibling),
        ("warpcore different generator", other),
        ("swde one shop template", swde_pairs),
        ("aeb different sites", aeb_pairs),
    ]
    for name, values in rows:
        print(f"  {name:42s}{share_within(values)}   {quantiles(values)}")

    print("\nshare of pages whose nearest page is within k".ljust(44))
    rows = [
        ("warpcore nearest same template", nearest(warp, same=True)),
        ("warpcore nearest other generator", nearest(warp, same=False)),
        ("swde nearest (same template)", nearest(swde, same=True)),
        ("shape: warpcore nearest same template", nearest(warp_shapes, same=True)),
        ("shape: warpcore nearest other generator", nearest(warp_shapes, same=False)),
    ]
    for name, values in rows:
        print(f"  {name:42s}{share_within(values)}   {quantiles(values)}")
    distinct = len({fp for _, fp in warp})
    print(
        f"\nwarpcore: {len(warp)} pages, {distinct} distinct fingerprints; "
        f"swde: {len(swde)} pages, {len({fp for _, fp in swde})} distinct"
    )


if __name__ == "__main__":
    main()
