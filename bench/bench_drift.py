"""Drift alarms: how many real changes they catch, beside how often they cry wolf.

    python bench/bench_drift.py [--pages N] [--manual N] [--templates N] [--only PART,...]

1. ``swde``: ``--pages`` SWDE booksamillion book pages stored as snapshot ``base`` (``visdup
   dups --crawl-id`` machinery), then once per mutation: a label renamed, a field dropped, the
   date reformatted (epoch seconds); and as controls, unchanged re-crawls: the same pages byte
   for byte, other books under the same URLs, other books under their own URLs (other samples
   of the same site; :data:`CONTROLS` of each). Field recall = expected field alarms found;
   false field alarms = alarms on other fields / watched fields compared; beside them, the
   mutations alarmed and the controls alarmed (any warning or error), errors apart.
   Goals (issue): recall >= 0.9, false field alarms <= 5 %, no control alarmed.
2. ``eras``: the news-site test, generated (``bench/drift_sites.py``): nine sites in four eras,
   five pages of an era against five of the next (27 era changes, should alarm) and against the
   other five of the same era (36 quiet halves, should not). Tuned on sites 0-8, checked on
   sites 100-108 (other layouts drawn, other content): both printed. Goal (issue, held out on
   real news sites): >= 26 of 27 era changes alarmed with <= 1 of 36 quiet halves alarmed (or
   errors >= 25/27 with 0/36).
   ``time`` (not run by default): the same sites' quiet halves split by time instead, an era's
   first five articles against its last five (72 of them, harsher: see ``era_pairs``).
3. ``manual``: ``--manual`` pages of the Python 3.11 manual, two snapshots: alarms (goal 0).
4. ``speed``: comparison time of ``--templates`` templates (the SWDE aggregates copied under
   new ids), per 100 templates (goal <= 1 s).

:data:`BEFORE` holds the figures of the alarms as they were before their severities took the
sample sizes into account (measured with this script on the code of that time), printed
beside today's.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import re
import shutil
import sys
import tempfile
import time
from calendar import timegm
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import SHARED, html_files
from bench.drift_sites import era_pairs, era_site
from visdup.drift.alarms import Drift, drift
from visdup.drift.compare import compare
from visdup.drift.fields import watched_fields
from visdup.drift.files import SiteNamedFiles, snapshot_files
from visdup.drift.snapshot import find_snapshot, load_stats
from visdup.storage.store import Store
from visdup.templates.template import slug

SWDE = SHARED / "swde-booksamillion" / "pages"
#: Unchanged re-crawls of each kind (other books under the same URLs; under their own URLs).
CONTROLS = 4
#: Sites of the generated news-site test: tuned on the first, checked on the second.
TUNE_SITES = range(0, 9)
CHECK_SITES = range(100, 109)
#: The figures before severities took sample sizes into account: this script on the code of
#: commit b27479c (its stable fields, at least 80 % filled, counted as the watched ones).
BEFORE = {
    "swde": "field recall 1.000 (11/11), false field alarms 4/249 watched fields compared; "
    "mutations alarmed 11/11, errors 0/11; unchanged re-crawls alarmed 4/9, errors 0/9",
    "tuned": "era changes alarmed: 26/27, errors 14/27; quiet halves alarmed: 20/36, errors 1/36",
    "checked": "era changes alarmed: 25/27, errors 11/27; quiet halves alarmed: 22/36, errors 3/36",
    "by time": "quiet halves alarmed: 41/72, errors 3/72",
}
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
    root.mkdir(parents=True, exist_ok=True)
    for name, html in pages:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(mutate(html), encoding="utf-8")
    return root


def field_alarms(db: str, current: str, baseline: str) -> tuple[dict[str, str], int]:
    """(field -> change) alarmed in ``current`` against ``baseline`` (warnings and errors),
    and the fields watched there."""
    store = Store.from_url(db)
    try:
        result = drift(store, current=current, baseline=baseline)
        base = find_snapshot(store, baseline)
        cur = find_snapshot(store, current)
        assert base is not None and cur is not None
        stats = load_stats(store, base.id)
        now = load_stats(store, cur.id)
    finally:
        store.close()
    found = {
        f["name"]: f["change"]
        for a in result.alarms
        for f in a.fields
        if f.get("level", a.severity) != "note"
    }
    watched = sum(
        len(watched_fields(s, int(now[cid].get("n") or 0)))
        for cid, s in stats.items()
        if cid in now
    )
    return found, watched


def _tally(result: Drift) -> tuple[bool, bool]:
    """(alarmed, an error among the alarms)."""
    return bool(result.alarms), any(a.severity == "error" for a in result.alarms)


def measure_swde(count: int, work: Path) -> dict[str, float]:
    pages = swde_pages(count)
    base_db = work / "base.sqlite3"
    snapshot_files(
        SiteNamedFiles([str(write(work / "base", pages, lambda h: h))]),
        db=f"sqlite:///{base_db}",
        name="base",
    )
    expected = found = false = others = 0
    tallies: dict[str, list[int]] = {"mutation": [0, 0, 0], "control": [0, 0, 0]}
    print(f"{'scenario':32} {'expected':>24} {'alarmed':>40}")
    # every page's content replaced by another book's under the same URL: a site whose pages
    # all change between crawls while its layout stays (no page comes back byte for byte);
    # other books under their own URLs: another sample of the same unchanged site
    controls: list[tuple[str, list[tuple[str, str]]]] = [("unchanged", pages)]
    for k in range(1, CONTROLS + 1):
        other = swde_pages(count, k)
        swapped = [(n, html) for (n, _h), (_o, html) in zip(pages, other, strict=False)]
        controls += [(f"other books, same URLs ({k})", swapped), (f"other books ({k})", other)]
    runs = [
        *[(name, content, lambda h: h, {}, "control") for name, content in controls],
        *[(name, pages, mutate, want, "mutation") for name, mutate, want in SCENARIOS],
    ]
    for k, (name, content, mutate, want, kind) in enumerate(runs):
        db = work / f"s{k}.sqlite3"
        shutil.copy(base_db, db)
        folder = write(work / f"s{k}", content, mutate)
        made = snapshot_files(SiteNamedFiles([str(folder)]), db=f"sqlite:///{db}", name="next")
        alarmed, watched = field_alarms(f"sqlite:///{db}", "next", "base")
        hits = sum(1 for f, c in want.items() if alarmed.get(f) == c)
        wrong = sum(1 for f in alarmed if f not in want)
        expected += len(want)
        found += hits
        false += wrong
        others += watched - len(want)
        tally = tallies[kind]
        alarm, error = _tally(made.drift)
        tally[0] += 1
        tally[1] += alarm
        tally[2] += error
        shown = ", ".join(f"{f} {c}" for f, c in sorted(alarmed.items())) or "-"
        if kind == "control" and made.drift.alarms:
            shown = "; ".join(a.line() for a in made.drift.alarms)
        wanted = ", ".join(f"{f} {c}" for f, c in want.items()) or "-"
        print(f"{name:32} {wanted:>24} {shown:>40}")
    recall = found / expected if expected else 1.0
    false_rate = false / others if others else 0.0
    mutations, control = tallies["mutation"], tallies["control"]
    print(
        f"SWDE booksamillion, {len(pages)} pages: field recall {recall:.3f} ({found}/{expected}),"
        f" false field alarms {false_rate:.3%} ({false}/{others} watched fields compared); "
        f"mutations alarmed {mutations[1]}/{mutations[0]}, errors {mutations[2]}/{mutations[0]};"
        f" unchanged re-crawls alarmed {control[1]}/{control[0]}, errors {control[2]}/{control[0]}"
    )
    print(f"  before: {BEFORE['swde']}")
    return {"recall": recall, "false_rate": false_rate}


def era_pair(
    base: Sequence[tuple[str, str]], current: Sequence[tuple[str, str]], work: Path
) -> Drift:
    """Drift of ``current`` against ``base`` stored as two snapshots of a new store."""
    db = f"sqlite:///{work / 'eras.sqlite3'}"
    snapshot_files(
        SiteNamedFiles([str(write(work / "a", list(base), lambda h: h))]), db=db, name="a"
    )
    folder = write(work / "b", list(current), lambda h: h)
    return snapshot_files(SiteNamedFiles([str(folder)]), db=db, name="b").drift


def measure_eras(
    sites: Sequence[int], label: str, work: Path, *, by_time: bool = False
) -> dict[str, int]:
    """The generated news-site test on ``sites``: era changes and quiet halves alarmed
    (``by_time``: only quiet halves, an era's first five articles against its last five)."""
    counts = dict.fromkeys(("changes", "alarmed", "errors", "quiet", "false", "false_errors"), 0)
    logging.getLogger("visdup.drift").setLevel(logging.ERROR)  # one WARNING per alarm
    for seed in sites:
        changes, quiet = era_pairs(era_site(seed), by_time=by_time)
        for kind, pairs in (("change", changes), ("quiet", quiet)):
            for name, base, current in pairs:
                folder = Path(tempfile.mkdtemp(dir=work))
                result = era_pair(base, current, folder)
                shutil.rmtree(folder, ignore_errors=True)
                alarm, error = _tally(result)
                if kind == "change":
                    counts["changes"] += 1
                    counts["alarmed"] += alarm
                    counts["errors"] += error
                else:
                    counts["quiet"] += 1
                    counts["false"] += alarm
                    counts["false_errors"] += error
                if (kind == "change") != alarm:
                    what = "missed" if kind == "change" else "alarmed"
                    lines = [a.line() for a in result.alarms + result.notes] or ["nothing"]
                    print(f"  {what}: {name}: " + " | ".join(lines))
    c = counts
    changed = (
        f"era changes alarmed: {c['alarmed']}/{c['changes']}, errors {c['errors']}/{c['changes']}; "
        if c["changes"]
        else ""
    )
    print(
        f"{label} (sites {', '.join(_spans(sites))}): {changed}quiet halves alarmed: "
        f"{c['false']}/{c['quiet']}, errors {c['false_errors']}/{c['quiet']}"
    )
    print(f"  before: {BEFORE[label]}")
    return counts


def _spans(sites: Sequence[int]) -> list[str]:
    """``0-8``, ``100-108`` for runs of consecutive seeds."""
    out: list[str] = []
    start = prev = sites[0]
    for seed in [*sites[1:], None]:
        if seed is not None and seed == prev + 1:
            prev = seed
            continue
        out.append(f"{start}-{prev}" if prev != start else str(start))
        if seed is not None:
            start = prev = seed
    return out


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
    parser.add_argument(
        "--only",
        default="swde,eras,manual,speed",
        help="parts, comma-separated: swde, eras, time (quiet halves split by time), manual, speed",
    )
    args = parser.parse_args()
    parts = set(args.only.split(","))
    work = Path(tempfile.mkdtemp(prefix="visdup-drift-"))
    try:
        if parts & {"swde", "speed"} and not SWDE.is_dir():
            print(f"{SWDE} is absent: SWDE skipped")
        elif parts & {"swde", "speed"}:
            measure_swde(args.pages, work)
            if "speed" in parts:
                measure_speed(work / "base.sqlite3", args.templates)
        if "eras" in parts:
            measure_eras(TUNE_SITES, "tuned", work)
            measure_eras(CHECK_SITES, "checked", work)
        if "time" in parts:
            measure_eras([*TUNE_SITES, *CHECK_SITES], "by time", work, by_time=True)
        if "manual" in parts and args.manual:
            measure_manual(args.manual, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
