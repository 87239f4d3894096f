"""Two captures of one page that differ in how much repeats, against other sites' pages.

Page-compare's question on sets made here: every pair of pages scored, a pair positive when
both are captures of one page; printed per measure, the best-threshold F1, its precision and
recall. Sets:

- ``generated``: sites of random frames (header, navigation, columns, footer), each with a
  front page captured at two times (other stories, of several kinds, two to eight times as
  many) and a listing captured at two lengths;
- ``readability`` / ``aeb`` (from ../shared/data, one page per site): each real page and a
  second capture of it, where every run of three or more sibling elements is redrawn from its
  own members, 0.3 to 3 times as long (the stories of another hour).

Measures: ``ted`` (the structure channel's similarity), ``skeleton`` (the similarity of the
top levels, :mod:`visdup.structure.containment`) and ``containment``. None of them enters
verdicts: on these sets neither view beats the tree edit similarity yet.

    .venv/bin/python bench/bench_captures.py [--sets generated,readability,aeb] [--sites 40]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import SHARED  # noqa: E402
from visdup.dedup.analysis import AnalysisOptions, analyse  # noqa: E402
from visdup.structure import containment as views  # noqa: E402
from visdup.structure.distance import similarity  # noqa: E402
from visdup.structure.marked import Term  # noqa: E402

WORDS = "harbour lantern orchard meadow granite willow copper falcon ember quiet silver".split()
MAX_NODES = 5000


def _w(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _story(rng: random.Random, kind: int) -> str:
    head = f"<h3><a href='#'>{_w(rng, 5)}</a></h3>"
    if kind == 0:
        return f"<article>{head}</article>"
    if kind == 1:
        return f"<article><img src=x.jpg>{head}<p>{_w(rng, 20)}</p></article>"
    if kind == 2:
        rel = "".join(f"<li><a href='#'>{_w(rng, 3)}</a></li>" for _ in range(rng.randint(2, 4)))
        return f"<article>{head}<span>{_w(rng, 2)}</span><ul>{rel}</ul></article>"
    if kind == 3:
        return f"<div class=video><iframe src=v></iframe>{head}</div>"
    return f"<article><div><img src=y.jpg></div><div>{head}<p>{_w(rng, 12)}</p></div></article>"


def _frame(rng: random.Random) -> tuple[str, str, list[str]]:
    """A site's header, footer and the wrappers of its main column (outermost first)."""
    nav = "".join(f"<li><a href='#'>{_w(rng, 1)}</a></li>" for _ in range(rng.randint(3, 9)))
    top = rng.choice(
        [
            f"<header><div class=logo><img src=l.png></div><nav><ul>{nav}</ul></nav></header>",
            f"<div id=top><table><tr><td><b>{_w(rng, 2)}</b></td><td><ul>{nav}</ul></td></tr>"
            "</table></div>",
            f"<header><h1>{_w(rng, 2)}</h1><form><input name=q><button>go</button></form>"
            f"</header><nav><ul>{nav}</ul></nav>",
        ]
    )
    cols = rng.randint(1, 4)
    foot = "".join(f"<div><h4>{_w(rng, 1)}</h4><p>{_w(rng, 5)}</p></div>" for _ in range(cols))
    wrappers = rng.choice([["main"], ["div", "section"], ["div", "div", "main"], ["table"]])
    return top, f"<footer>{foot}</footer>", wrappers


def _page(top: str, foot: str, wrappers: list[str], main: str, side: str) -> bytes:
    inner = main
    for tag in reversed(wrappers):
        inner = (
            f"<{tag}><tr><td>{inner}</td></tr></{tag}>"
            if tag == "table"
            else f"<{tag}>{inner}</{tag}>"
        )
    return f"<html><body>{top}<div class=body>{inner}{side}</div>{foot}</body></html>".encode()


def generated(sites: int, seed: int) -> list[tuple[str, str, bytes]]:
    """(site, page, body): a front page and a listing per site, each captured twice."""
    out = []
    for site in range(sites):
        rng = random.Random(seed * 1000 + site)
        top, foot, wrappers = _frame(rng)
        kinds = rng.sample(range(5), rng.randint(2, 4))
        side = rng.choice(
            ["", f"<aside><h4>{_w(rng, 1)}</h4><ol><li>a</li><li>b</li></ol></aside>"]
        )
        base = rng.randint(3, 12)
        for n in (base, base * rng.randint(2, 8)):
            main = "".join(_story(rng, rng.choice(kinds)) for _ in range(n))
            out.append((f"g{site}", "front", _page(top, foot, wrappers, main, side)))
        row = rng.randrange(5)
        for length in (rng.randint(2, 8), rng.randint(15, 60)):
            items = "".join(_story(rng, rng.choice((row, (row + 1) % 5))) for _ in range(length))
            out.append((f"g{site}", "list", _page(top, foot, wrappers, f"<ul>{items}</ul>", "")))
    return out


def recapture(body: bytes, rng: random.Random) -> bytes:
    """The page with each run of 3+ element siblings redrawn from its own members."""
    root = lxml.html.fromstring(body)
    for parent in list(root.iter()):
        kids = [k for k in parent if isinstance(k.tag, str)]
        if len(kids) < 3 or parent.tag in ("html", "head", "tr", "table"):
            continue
        n = max(1, round(len(kids) * rng.uniform(0.3, 3.0)))
        picks = [rng.choice(kids) for _ in range(n)]
        copies = [lxml.html.fromstring(lxml.html.tostring(k)) for k in picks]
        for k in kids:
            parent.remove(k)
        for c in copies:
            parent.append(c)
    out: bytes = lxml.html.tostring(root, encoding="utf-8")
    return out


def real(name: str, sites: int, seed: int) -> list[tuple[str, str, bytes]]:
    """One page per site of a shared set, and a second capture of each."""
    pages: list[tuple[str, bytes]] = []
    if name == "readability":
        base = SHARED / "readability-pages" / "pages"
        for folder in sorted(base.glob("*")) if base.is_dir() else []:
            source = folder / "source.html"
            if source.is_file():
                pages.append((folder.name, source.read_bytes()))
    elif name == "aeb":
        truth = SHARED / "aeb" / "ground-truth.json"
        urls = json.loads(truth.read_text()) if truth.is_file() else {}
        seen = set()
        for key in sorted(urls):
            host = urlsplit(urls[key].get("url") or "").netloc
            path = SHARED / "aeb" / "html" / f"{key}.html.gz"
            if host and host not in seen and path.is_file():
                seen.add(host)
                pages.append((host, gzip.decompress(path.read_bytes())))
    rng = random.Random(seed)
    pages = sorted(rng.sample(pages, min(sites, len(pages))))
    out = []
    for site, body in pages:
        out.append((site, "page", body))
        out.append((site, "page", recapture(body, rng)))
    return out


def terms(pages: list[tuple[str, str, bytes]]) -> list[tuple[str, Term]]:
    options = AnalysisOptions(content=False, template=False)
    out = []
    for site, page, body in pages:
        term = analyse(body, url=f"https://{site}/{page}", options=options).term
        if term is not None and term.nodes <= MAX_NODES:
            out.append((f"{site}/{page}", term))
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


MEASURES: dict[str, Callable[[Term, Term], float]] = {
    "ted": lambda a, b: similarity(a, b, max_nodes=MAX_NODES),
    "skeleton": lambda a, b: similarity(views.skeleton(a), views.skeleton(b)),
    "containment": lambda a, b: views.containment(a, b, max_nodes=MAX_NODES),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="generated,readability,aeb")
    ap.add_argument("--sites", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for name in args.sets.split(","):
        raw = (
            generated(args.sites, args.seed)
            if name == "generated"
            else real(name, args.sites, args.seed)
        )
        if not raw:
            print(f"{name}: absent, skipped")
            continue
        t0 = time.perf_counter()
        pages = terms(raw)
        scores: dict[str, list[tuple[float, bool]]] = {m: [] for m in MEASURES}
        for i in range(len(pages)):
            for j in range(i + 1, len(pages)):
                positive = pages[i][0] == pages[j][0]
                for m, measure in MEASURES.items():
                    scores[m].append((measure(pages[i][1], pages[j][1]), positive))
        t1 = time.perf_counter()
        n_pos = sum(p for _s, p in scores["ted"])
        print(
            f"\n{name}: {len(pages)} pages, {len(scores['ted'])} pairs, {n_pos} positive "
            f"({t1 - t0:.1f} s)"
        )
        for m, scored in scores.items():
            f1, p, r, at = best_f1(scored)
            print(f"  {m:12s} F1 {f1:.3f}  P {p:.3f}  R {r:.3f}  (threshold {at:.3f})")


if __name__ == "__main__":
    main()
