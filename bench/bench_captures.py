"""Two captures of one page that differ in how much repeats, against other sites' pages.

Page-compare's question on sets made here: every pair of pages scored, a pair positive when
both are captures of one page, negative when they are pages of two sites (two pages of one
site are neither: they share a frame by design); printed per measure, the best-threshold F1,
its precision and recall, the same at the threshold that was best on the tuning set, how many
pairs of one site's two pages score at or above the best threshold (the pairs a crawl's
verdicts judge: a measure that links them cannot link duplicates within a site), and the
milliseconds a pair costs. Sets:

- ``tune`` and ``check``: generated sites (bench/_variants.py; seeds 0 to N-1 tune, N to 2N-1
  check): a frame drawn from many nested pieces, story kinds of the site's own, a front page
  captured at two times (other stories, two to eight times as many) and a listing at two
  lengths;
- ``readability`` / ``aeb`` (from ../shared/data, one page per folder or host): each real page
  and a second capture of it, whose largest repeated run (the story area) is redrawn from its
  own members, a quarter to four times as long. A readability page's site is its metadata's
  site name.

Pages whose term has fewer than ``--min-nodes`` nodes are left out of every set: they carry
no frame to tell one site from another.

Measures: ``ted`` (the structure channel's similarity), ``skeleton`` (the similarity of the
top levels), ``containment``, ``repertoire`` and ``frame`` (:mod:`visdup.structure.containment`;
``frame`` is what ``visdup compare`` prints, and its line adds the figures at the module's
fixed threshold, the one its verdict uses). None of them enters verdicts (the module says why).

    .venv/bin/python bench/bench_captures.py [--sets tune,check,readability,aeb] [--sites 20]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import SHARED  # noqa: E402
from bench._variants import captured_site, recapture  # noqa: E402
from visdup.dedup.analysis import AnalysisOptions, analyse  # noqa: E402
from visdup.structure import containment as views  # noqa: E402
from visdup.structure.distance import similarity  # noqa: E402
from visdup.structure.marked import Term  # noqa: E402

MAX_NODES = 5000


def generated(seeds: range) -> list[tuple[str, str, bytes]]:
    """(site, page, body) of the generated sites with these seeds."""
    return [(f"g{s}", page, body) for s in seeds for page, body in captured_site(s)]


def _site_name(folder: Path) -> str:
    meta = folder / "expected-metadata.json"
    name = json.loads(meta.read_text()).get("siteName") if meta.is_file() else None
    return str(name).lower() if name else re.sub(r"-\d+$", "", folder.name)


def real(name: str, sites: int, seed: int) -> list[tuple[str, str, bytes]]:
    """One page per folder or host of a shared set, and a second capture of each."""
    pages: list[tuple[str, str, bytes]] = []
    if name == "readability":
        base = SHARED / "readability-pages" / "pages"
        for folder in sorted(base.glob("*")) if base.is_dir() else []:
            source = folder / "source.html"
            if source.is_file():
                pages.append((_site_name(folder), folder.name, source.read_bytes()))
    elif name == "aeb":
        truth = SHARED / "aeb" / "ground-truth.json"
        urls = json.loads(truth.read_text()) if truth.is_file() else {}
        seen = set()
        for key in sorted(urls):
            host = urlsplit(urls[key].get("url") or "").netloc
            path = SHARED / "aeb" / "html" / f"{key}.html.gz"
            if host and host not in seen and path.is_file():
                seen.add(host)
                pages.append((host, host, gzip.decompress(path.read_bytes())))
    rng = random.Random(seed)
    pages = sorted(rng.sample(pages, min(sites, len(pages))))
    out = []
    for site, page, body in pages:
        out.append((site, page, body))
        out.append((site, page, recapture(body, rng)))
    return out


def terms(pages: list[tuple[str, str, bytes]], min_nodes: int) -> list[tuple[str, str, Term]]:
    """(site, page, term) of every page whose term has ``min_nodes`` to MAX_NODES nodes."""
    options = AnalysisOptions(content=False, template=False)
    out = []
    for site, page, body in pages:
        term = analyse(body, url=f"https://{site}/{page}", options=options).term
        if term is not None and min_nodes <= term.nodes <= MAX_NODES:
            out.append((site, page, term))
    return out


def best_f1(scored: list[tuple[float, bool]]) -> tuple[float, float, float, float]:
    """(F1, precision, recall, threshold) at the threshold that gives the best F1."""
    positives = sum(p for _s, p in scored)
    best = (0.0, 0.0, 0.0, 1.0)
    tp = fp = 0
    ranked = sorted(scored, key=lambda sp: -sp[0])
    for k, (score, positive) in enumerate(ranked):
        tp += positive
        fp += not positive
        if k + 1 < len(ranked) and ranked[k + 1][0] == score:
            continue
        p, r = tp / (tp + fp), tp / positives if positives else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        if f1 > best[0]:
            best = (f1, p, r, score)
    return best


def at_threshold(scored: list[tuple[float, bool]], at: float) -> tuple[float, float, float]:
    """(F1, precision, recall) when a pair scoring ``at`` or more is called positive."""
    tp = sum(1 for score, positive in scored if positive and score >= at)
    fp = sum(1 for score, positive in scored if not positive and score >= at)
    positives = sum(p for _s, p in scored)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / positives if positives else 0.0
    return (2 * p * r / (p + r) if p + r else 0.0), p, r


MEASURES: dict[str, Callable[[Term, Term], float]] = {
    "ted": lambda a, b: similarity(a, b, max_nodes=MAX_NODES),
    "skeleton": lambda a, b: similarity(views.skeleton(a), views.skeleton(b)),
    "containment": lambda a, b: views.containment(a, b, max_nodes=MAX_NODES),
    "repertoire": lambda a, b: views.repertoire_similarity(a, b, max_nodes=MAX_NODES),
    "frame": lambda a, b: views.frame_similarity(a, b, max_nodes=MAX_NODES),
}

#: Measures with a threshold of their own: their figures there are printed on every set.
FIXED = {"frame": views.FRAME_THRESHOLD}


Scored = dict[str, list[tuple[float, bool]]]


def score(pages: list[tuple[str, str, Term]]) -> tuple[Scored, Scored, dict[str, float]]:
    """Each measure's (score, positive) over every pair of pages of two sites or of one page,
    its scores of pairs of one site's two pages, and its seconds in all."""
    scores: Scored = {m: [] for m in MEASURES}
    same_site: Scored = {m: [] for m in MEASURES}
    seconds = dict.fromkeys(MEASURES, 0.0)
    for i, (site_a, page_a, a) in enumerate(pages):
        for site_b, page_b, b in pages[i + 1 :]:
            into = same_site if site_a == site_b and page_a != page_b else scores
            for m, measure in MEASURES.items():
                t0 = time.perf_counter()
                value = measure(a, b)
                seconds[m] += time.perf_counter() - t0
                into[m].append((value, site_a == site_b))
    return scores, same_site, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="tune,check,readability,aeb")
    ap.add_argument("--sites", type=int, default=20, help="generated sites per set")
    ap.add_argument("--pages", type=int, default=60, help="real pages per set")
    ap.add_argument("--min-nodes", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tuned: dict[str, float] = {}
    for name in args.sets.split(","):
        if name in ("tune", "check"):
            first = 0 if name == "tune" else args.sites
            raw = generated(range(first, first + args.sites))
        else:
            raw = real(name, args.pages, args.seed)
        if not raw:
            print(f"{name}: absent, skipped")
            continue
        pages = terms(raw, args.min_nodes)
        scores, same_site, seconds = score(pages)
        n_pos = sum(p for _s, p in scores["ted"])
        print(f"\n{name}: {len(pages)} pages, {len(scores['ted'])} pairs, {n_pos} positive")
        for m, scored in scores.items():
            f1, p, r, at = best_f1(scored)
            if name == "tune":
                tuned[m] = at
            line = f"  {m:12s} F1 {f1:.3f}  P {p:.3f}  R {r:.3f}  (threshold {at:.3f})"
            if m in tuned and name != "tune":
                tf1, tp, tr = at_threshold(scored, tuned[m])
                line += f"  at tune's {tuned[m]:.3f}: F1 {tf1:.3f} P {tp:.3f} R {tr:.3f}"
            if m in FIXED:
                ff1, fp, fr = at_threshold(scored, FIXED[m])
                line += f"  at {FIXED[m]:.3f}: F1 {ff1:.3f} P {fp:.3f} R {fr:.3f}"
            ms = 1000 * seconds[m] / max(1, len(scored) + len(same_site[m]))
            linked = sum(value >= at for value, _p in same_site[m])
            print(f"{line}  one site's pages: {linked}/{len(same_site[m])}  {ms:.2f} ms/pair")


if __name__ == "__main__":
    main()
