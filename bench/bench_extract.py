"""Data extraction on SWDE booksamillion: accuracy of the best column per attribute.

    .venv/bin/python bench/bench_extract.py
    .venv/bin/python bench/bench_extract.py --columns DIR [DIR ...]

``--columns``: for sites without ground truth (a manual unpacked from a Debian package, the
Debian manuals of ``../shared/data/get-debian-docs.sh``), each template's columns and how
many records fill each, beside ``main_text``: what a reader of the dataset gets.

For each ground-truth attribute the extracted column that agrees with it on most pages is
taken (values compared with whitespace, case and a leading ':' normalised away). Baseline in
the same run: the same templates matched by structure alone, without fixed label texts taking
part in the mapping and without reading a value from its own label. Prints figures only.
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visdup.templates.extract import extract_pages, extract_record  # noqa: E402
from visdup.templates.stm import page_tree  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "swde-booksamillion"
ATTRIBUTES = ("title", "author", "isbn_13", "publisher", "publication_date")
_SPACE = re.compile(r"\s+")


def norm(value: str | None) -> str:
    return _SPACE.sub(" ", value or "").strip().lstrip(":").strip().lower()


def truth(attr: str) -> dict[str, set[str]]:
    lines = (DATA / f"groundtruth-{attr}.txt").read_text(encoding="utf-8").splitlines()[2:]
    out = {}
    for line in lines:
        parts = line.split("\t")
        out[parts[0]] = {norm(v) for v in parts[2:]}
    return out


def accuracy(records, attr_truth) -> tuple[str, float, int]:
    hits: Counter[str] = Counter()
    total = 0
    for record in records:
        pid = Path(record["url"]).name.split(".")[0]
        expected = attr_truth.get(pid)
        if expected is None:
            continue
        total += 1
        for key, value in record.items():
            if key not in {"url", "cluster", "fits"} and value and norm(value) in expected:
                hits[key] += 1
    if not hits:
        return "-", 0.0, total
    column, count = hits.most_common(1)[0]
    return column, count / total, total


def columns(dirs: list[str]) -> None:
    from visdup.errors import InputError
    from visdup.page.files import page_paths, read_page

    for where in dirs:
        pages = []
        for path in page_paths([where]):
            try:
                pages.append((str(path), read_page(path)))
            except InputError as exc:  # an empty or unreadable file: as `visdup extract` does
                print(f"  skipped {exc}")
        dataset = extract_pages(pages)
        fits = sum(1 for r in dataset.records if r["fits"])
        print(f"{where}: {len(pages)} pages, {len(dataset.templates)} template(s), {fits} fit")
        for t in dataset.templates:
            mine = [r for r in dataset.records if r["cluster"] == t.cluster]
            filled = ", ".join(
                f"{name} {sum(1 for r in mine if r.get(name))}" for name in t.field_names
            )
            print(f"  template {t.cluster}: {len(mine)} records, {len(t.fields)} columns: {filled}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--columns":
        columns(sys.argv[2:])
        return
    if not (DATA / "pages").is_dir():
        print(f"skipped: {DATA} not found")
        return
    files = sorted((DATA / "pages").glob("*.htm.gz"))
    pages = [(str(p), gzip.decompress(p.read_bytes())) for p in files]
    t0 = time.perf_counter()
    dataset = extract_pages(pages)
    elapsed = time.perf_counter() - t0
    fits = sum(1 for r in dataset.records if r["fits"])
    print(f"booksamillion: {len(pages)} pages, {len(dataset.templates)} template(s), {fits} fit")
    per_page = elapsed / len(pages) * 1e3
    print(f"cluster + templates + extraction: {elapsed:.2f} s ({per_page:.1f} ms/page)")
    for t in dataset.templates:
        print(f"  template {t.cluster}: {t.pages} pages generalised, {len(t.fields)} fields")

    # Baseline: the same templates, fixed label texts no longer part of the matching.
    trees = {key: page_tree(data, url=key) for key, data in pages}
    by_cluster = {t.cluster: t for t in dataset.templates}
    baseline = []
    t0 = time.perf_counter()
    for record in dataset.records:
        template = by_cluster.get(record["cluster"])
        if template is not None:
            template = dataclasses.replace(
                template,
                fixed=[False] * len(template.fixed),
                fields=[dataclasses.replace(f, anchor=None) for f in template.fields],
            )
        baseline.append(extract_record(template, record["url"], trees[record["url"]]))
    base_elapsed = time.perf_counter() - t0
    print(f"\n{'attribute':18} {'column':14} {'accuracy':>8}   {'structure only':>14}")
    for attr in ATTRIBUTES:
        gt = truth(attr)
        column, acc, total = accuracy(dataset.records, gt)
        bcol, bacc, _ = accuracy(baseline, gt)
        print(f"{attr:18} {column:14} {acc:8.3f}   {bacc:8.3f} ({bcol})   n={total}")
    print(f"\nre-extraction with fixed templates: {base_elapsed / len(pages) * 1e3:.2f} ms/page")


if __name__ == "__main__":
    main()
