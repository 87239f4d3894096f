"""Field drift on SWDE booksamillion pages mutated, an unchanged manual, and comparison speed.

    python bench/bench_drift.py [--pages N] [--manual N] [--templates N]

1. SWDE booksamillion: ``--pages`` book pages stored as snapshot ``base`` (``visdup dups
   --crawl-id`` machinery), then once unchanged (the control) and once per mutation: a label
   renamed, a field dropped, the date reformatted (epoch seconds). Field recall = expected
   field alarms found; false field alarms = alarms on other fields / stable fields compared.
   Goals (issue): recall >= 0.9, false field alarms <= 5 %.
   A second control replaces every page's content by another book's under the same URL (all
   pages change, the layout stays).
2. ``--manual`` pages of the Python 3.11 manual, two snapshots: alarms (goal 0; 0 skips).
3. Comparison time of ``--templates`` templates (the SWDE aggregates copied under new ids),
   per 100 templates (goal <= 1 s).
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import sys
import tempfile
import time
from calendar import timegm
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import SHARED, html_files
from visdup.drift.alarms import drift
from visdup.drift.compare import _stable_fields, compare
from visdup.drift.files import SiteNamedFiles, snapshot_files
from visdup.drift.snapshot import find_snapshot, load_stats
from visdup.storage.store import Store
from visdup.templates.template import slug

SWDE = SHARED / "swde-booksamillion" / "pages"
MONTHS = "January February March April May June July August September October November December"
_DATE = re.compile(r"(<strong>Date</strong>:\s*)([A-Z][a-z]+) (\d{4})")


def rename(label: str, to: str) -> Callable[[str], str]:
    return lambda html: html.replace(f"<strong>{label}</strong>", f"<strong>{to}</strong>")


def drop(label: str) -> Callable[[str], str]:
    pattern = re.compile(rf"<li><strong>{re.escape(label)}</strong>:[^<]*</li>")
    return lambda html: pattern.sub("", html)


def epoch_date(html: str) -> str:
    def to_epoch(m: re.Match[str]) -> str:
        month = MONTHS.split().index(m.group(2)) + 1 if m.group(2) in MONTHS.split() else 1
        return m.group(1) + str(timegm((int(m.group(3)), month, 1, 0, 0, 0)))

    return _DATE.sub(to_epoch, html)


#: (scenario, mutation, expected field alarms)
SCENARIOS: list[tuple[str, Callable[[str], str], dict[str, str]]] = [
    *[
        (f"rename {a} -> {b}", rename(a, b), {slug(a): "emptied"})
        for a, b in [
            ("Publisher", "Imprint"),
            ("Date", "Released"),
            ("Page Count", "Pages"),
            ("ISBN-13", "EAN"),
            ("ISBN-10", "Legacy ISBN"),
        ]
    ],
    *[
        (f"drop {a}", drop(a), {slug(a): "emptied"})
        for a in ["Publisher", "Date", "Page Count", "ISBN-13", "ISBN-10"]
    ],
    ("date as epoch seconds", epoch_date, {"date": "retyped"}),
]


def swde_pages(count: int, offset: int = 0) -> list[tuple[str, str]]:
    """(name, html) of ``count`` book pages spread over the 300 (``offset``: other books)."""
    files = sorted(SWDE.glob("*.htm.gz"))
    step = max(1, len(files) // count)
    picked = files[offset % step :: step][:count]
    return [
        (f.name.replace(".htm.gz", ".html"), gzip.decompress(f.read_bytes()).decode("utf-8"))
        for f in picked
    ]


def write(root: Path, pages: list[tuple[str, str]], mutate: Callable[[str], str]) -> Path:
    root.mkdir(parents=True)
    for name, html in pages:
        (root / name).write_text(mutate(html), encoding="utf-8")
    return root


def field_alarms(db: str, current: str, baseline: str) -> tuple[dict[str, str], int]:
    """(field -> change) alarmed in ``current`` against ``baseline``, and stable fields there."""
    store = Store.from_url(db)
    try:
        result = drift(store, current=current, baseline=baseline)
        base = find_snapshot(store, baseline)
        assert base is not None
        stats = load_stats(store, base.id)
    finally:
        store.close()
    found = {f["name"]: f["change"] for a in result.alarms for f in a.fields}
    stable = sum(len(_stable_fields(cid, s, [s])) for cid, s in stats.items())
    return found, stable


def measure_swde(count: int, work: Path) -> dict[str, float]:
    pages = swde_pages(count)
    base_db = work / "base.sqlite3"
    snapshot_files(
        SiteNamedFiles([str(write(work / "base", pages, lambda h: h))]),
        db=f"sqlite:///{base_db}",
        name="base",
    )
    expected = found = false = others = 0
    print(f"{'scenario':32} {'expected':>24} {'alarmed':>40}")
    # every page's content replaced by another book's under the same URL: a site whose pages
    # all change between crawls while its layout stays (no page comes back byte for byte)
    swapped = [(n, html) for (n, _h), (_o, html) in zip(pages, swde_pages(count, 1), strict=False)]
    runs = [
        ("unchanged", pages, lambda h: h, {}),
        ("other books, same URLs", swapped, lambda h: h, {}),
        *[(name, pages, mutate, want) for name, mutate, want in SCENARIOS],
    ]
    for k, (name, content, mutate, want) in enumerate(runs):
        db = work / f"s{k}.sqlite3"
        shutil.copy(base_db, db)
        folder = write(work / f"s{k}", content, mutate)
        snapshot_files(SiteNamedFiles([str(folder)]), db=f"sqlite:///{db}", name="next")
        alarmed, stable = field_alarms(f"sqlite:///{db}", "next", "base")
        hits = sum(1 for f, c in want.items() if alarmed.get(f) == c)
        wrong = sum(1 for f in alarmed if f not in want)
        expected += len(want)
        found += hits
        false += wrong
        others += stable - len(want)
        shown = ", ".join(f"{f} {c}" for f, c in sorted(alarmed.items())) or "-"
        wanted = ", ".join(f"{f} {c}" for f, c in want.items()) or "-"
        print(f"{name:32} {wanted:>24} {shown:>40}")
    recall = found / expected if expected else 1.0
    false_rate = false / others if others else 0.0
    print(
        f"SWDE booksamillion, {len(pages)} pages: field recall {recall:.3f} ({found}/{expected}),"
        f" false field alarms {false_rate:.3%} ({false}/{others} stable fields compared)"
    )
    return {"recall": recall, "false_rate": false_rate}


def measure_manual(count: int, work: Path) -> int:
    root = REPO_DOCS
    if not root.is_dir():
        print(f"{root} is absent: manual skipped")
        return -1
    files = html_files(root, count)
    copy = work / "manual"
    for f in files:
        target = copy / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
    db = f"sqlite:///{work / 'manual.sqlite3'}"
    for name in ("one", "two"):
        result = snapshot_files(SiteNamedFiles([str(copy)]), db=db, name=name)
    alarms = len(result.drift.alarms)
    print(
        f"Python manual, {len(files)} pages, {result.drift.templates} templates, two snapshots: "
        f"{alarms} alarms"
    )
    for alarm in result.drift.alarms:
        print("   ", alarm.line())
    return alarms


def measure_speed(db: Path, templates: int) -> float:
    store = Store.from_url(f"sqlite:///{db}")
    try:
        base = find_snapshot(store, "base")
        assert base is not None
        stats = load_stats(store, base.id)
    finally:
        store.close()
    sample = list(stats.values())
    many = {k: dict(sample[k % len(sample)]) for k in range(templates)}
    changed = {k: dict(v, shares=[0.7] * 12) for k, v in many.items()}
    t0 = time.perf_counter()
    compare(changed, many, [many, many, many, many])
    per_100 = (time.perf_counter() - t0) * 100 / templates
    print(
        f"comparison: {templates} templates in {per_100 * templates / 100:.3f} s, "
        f"{per_100:.4f} s per 100 templates"
    )
    return per_100


REPO_DOCS = Path(__file__).resolve().parent.parent / "debian-docs/usr/share/doc/python3.11/html"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--manual", type=int, default=150)
    parser.add_argument("--templates", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="visdup-drift-"))
    try:
        if SWDE.is_dir():
            measure_swde(args.pages, work)
            measure_speed(work / "base.sqlite3", args.templates)
        else:
            print(f"{SWDE} is absent: SWDE skipped")
        if args.manual:
            measure_manual(args.manual, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
