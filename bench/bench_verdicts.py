"""Precision and recall of duplicate verdicts on the demo site, whose duplicates are known.

    python bench/bench_verdicts.py

Crawls the embedded demo site (visdup/demo/site, ground truth in EXPECTED.json) once per
configuration and scores page pairs: two pages are predicted duplicates when they fall in one
group of the report (exact, content or structural), true duplicates when EXPECTED.json links
them (exact copies, URL variants, mirrors, the one-sentence edit). Configurations: the default
(both channels), structure alone, and the visual term computed on the de-noised tree.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.report.summary import build_report
from visdup.storage.store import Store

CONFIGS = {
    "both channels (default)": [],
    "both, term on de-noised tree": ["VISDUP_DENOISE_TERM=1"],
    "structure alone": ["VISDUP_CONTENT_ENABLED=0"],
    "structure alone, de-noised": ["VISDUP_CONTENT_ENABLED=0", "VISDUP_DENOISE_TERM=1"],
}


def _path(url: str) -> str:
    """Path and query in w3lib's canonical form (the store keeps URLs that way)."""
    parts = urlsplit(canonicalize_url(url if "://" in url else "http://demo" + url))
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _pairs(groups: list[list[str]]) -> set[frozenset[str]]:
    out = set()
    for g in groups:
        for a, b in itertools.combinations(sorted(set(g)), 2):
            out.add(frozenset((a, b)))
    return out


def truth() -> list[list[str]]:
    exp = json.loads((SITE_ROOT / "EXPECTED.json").read_text())
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for pair in exp["exact"] + exp["mirrors"] + exp.get("near", []):
        union(pair[0], pair[1])
    for clean, variants in exp.get("url_variants", {}).items():
        for v in variants:
            union(clean, v)
    groups: dict[str, list[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(_path(x))
    return list(groups.values())


def predicted(db: str) -> list[list[str]]:
    report = build_report(Store.from_url(db))
    return [
        [_path(g["original"])] + [_path(m["url"]) for m in g["members"]] for g in report["groups"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--show", type=int, default=0, help="list N false and missed pairs")
    parser.add_argument("--config", choices=sorted(CONFIGS), action="append")
    args = parser.parse_args()
    show = args.show
    true_pairs = _pairs(truth())
    print(f"{len(true_pairs)} true duplicate pairs on the demo site")
    print(f"{'configuration':<32} {'precision':>9} {'recall':>7} {'F1':>6}  false+  missed")
    with serve(SITE_ROOT) as server, tempfile.TemporaryDirectory() as tmp:
        for name, settings in CONFIGS.items():
            if args.config and name not in args.config:
                continue
            db = f"sqlite:///{tmp}/{len(settings)}-{abs(hash(name))}.sqlite3"
            cmd = [sys.executable, "-m", "visdup", "crawl", server.url_for("/"), "--db", db]
            for s in ["LOG_LEVEL=WARNING", *settings]:
                cmd += ["-s", s]
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
            pred = _pairs(predicted(db))
            crawled = {_path(r.url) for r in Store.from_url(db).rows("url")}
            truth_here = {p for p in true_pairs if p <= crawled}
            tp = len(pred & truth_here)
            precision = tp / len(pred) if pred else 1.0
            recall = tp / len(truth_here) if truth_here else 1.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            print(
                f"{name:<32} {precision:>9.3f} {recall:>7.3f} {f1:>6.3f}  "
                f"{len(pred - truth_here):>6}  {len(truth_here - pred):>6}"
            )
            if show:
                for label, pairs in (("false+", pred - truth_here), ("missed", truth_here - pred)):
                    for pair in sorted(sorted(p) for p in pairs)[:show]:
                        print(f"    {label}  {pair[0]}  {pair[1]}")


if __name__ == "__main__":
    main()
