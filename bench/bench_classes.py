"""Does each extension of the paper's visual-class table earn its place?

    .venv/bin/python bench/bench_classes.py [--pages N]

Structural similarity as a duplicate classifier on labelled page pairs, once per table:
the paper's Table 1 alone, visdup's table, and visdup's table without each group of its
extensions (an element left out falls back to ``text``, the paper's "everything else").

Pairs: on the demo site, its exact and near copies against pages of one template that are
no copies (EXPECTED.json); on the warpcore documentation site and the Python manual, each
page against a natural-duplicate variant of itself (a cookie notice added, a date changed,
one more item in a list: what session and tracking variants of a page differ by) against
two different pages of one generator (warpcore's labels.csv; the manual's one Sphinx
template). Prints best F1 over the threshold and F1 at VISDUP_SIMILARITY_THRESHOLD (0.95).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visdup.config import VISDUP_SIMILARITY_THRESHOLD  # noqa: E402
from visdup.demo import SITE_ROOT  # noqa: E402
from visdup.page.parse import parse_html  # noqa: E402
from visdup.structure.distance import similarity  # noqa: E402
from visdup.structure.term import (  # noqa: E402
    COL,
    GRP,
    ROW,
    TEXT,
    VISUAL_CLASSES,
    Term,
    document_term,
)

WARPCORE = ROOT.parent / "shared" / "data" / "warpcore"

PAPER = {"table": GRP, "ul": GRP, "html": GRP, "body": GRP, "tbody": GRP, "div": GRP, "p": GRP,
         "tr": ROW, "li": ROW, "h1": ROW, "h2": ROW, "hr": ROW, "td": COL}  # fmt: skip
NEVER = {tag: None for tag, cls in VISUAL_CLASSES.items() if cls is None}

#: visdup's extensions of Table 1, by what they are.
GROUPS = {
    "lists and tables (ol dl menu thead tfoot)": "ol dl menu thead tfoot",
    "HTML5 sections (section article main nav header footer aside hgroup search)":
        "section article main nav header footer aside hgroup search",
    "forms (form fieldset)": "form fieldset",
    "blocks (figure blockquote address details dialog center pre)":
        "figure blockquote address details dialog center pre",
    "frames and column groups (frameset colgroup optgroup)": "frameset colgroup optgroup",
    "headings h3-h6": "h3 h4 h5 h6",
    "list and caption rows (dt dd caption legend figcaption summary)":
        "dt dd caption legend figcaption summary",
    "th as a column": "th",
}  # fmt: skip


def table_without(tags: str) -> dict[str, str | None]:
    """visdup's table with these tags back to the paper's 'everything else' (text)."""
    table: dict[str, str | None] = dict(VISUAL_CLASSES)
    for tag in tags.split():
        table[tag] = TEXT
    return table


def paper_table() -> dict[str, str | None]:
    table: dict[str, str | None] = {tag: TEXT for tag in VISUAL_CLASSES}
    table.update(PAPER)
    table.update(NEVER)  # never-rendered elements produce nothing in every reading
    return table


def variant(html: str, rnd: random.Random) -> str:
    """The same page as a second URL of it may serve it: a notice, a date, one more item."""
    choice = rnd.randrange(3)
    if choice == 0:
        return re.sub(
            r"(<body[^>]*>)",
            r"\1<div class='cookie-notice'><p>We use cookies.</p><a href='#'>OK</a></div>",
            html,
            count=1,
        )
    if choice == 1:
        return re.sub(r"(</p>)", r" Updated 3 March 2025.\1", html, count=1)
    return re.sub(r"(<li[^>]*>)", r"<li><a href='/new'>New item</a></li>\1", html, count=1)


def _term(html: str | bytes, table: Mapping[str, str | None]) -> Term | None:
    doc = parse_html(html)
    if doc.root is None:
        return None
    return document_term(doc, table)[1]


def pairs_demo() -> list[tuple[str, str, bool]]:
    exp = json.loads((SITE_ROOT / "EXPECTED.json").read_text())

    def text(path: str) -> str:
        file = SITE_ROOT / path.lstrip("/").split("?")[0].split(";")[0]
        return (file / "index.html" if file.is_dir() else file).read_text(encoding="utf-8")

    out = [(text(a), text(b), True) for a, b in exp["exact"] + exp["near"]]
    copies = {p for pair in exp["exact"] + exp["near"] + exp["mirrors"] for p in pair}
    for paths in exp["templates"].values():
        own = [p for p in paths if p not in copies and "?" not in p]
        for a, b in itertools.pairwise(own):
            out.append((text(a), text(b), False))
    return out


def pairs_site(files: dict[str, list[Path]], n: int, seed: int) -> list[tuple[str, str, bool]]:
    rnd = random.Random(seed)
    out = []
    for paths in files.values():
        paths = sorted(paths)
        rnd.shuffle(paths)
        for a, b in itertools.pairwise(paths[: n // 2 + 1]):
            ta = a.read_text(encoding="utf-8", errors="replace")
            out.append((ta, variant(ta, rnd), True))
            out.append((ta, b.read_text(encoding="utf-8", errors="replace"), False))
    return out


def warpcore_files() -> dict[str, list[Path]]:
    files: dict[str, list[Path]] = {}
    for line in (WARPCORE / "labels.csv").read_text().splitlines()[1:]:
        path, label = line.rsplit(",", 1)
        full = WARPCORE / "site" / path
        if full.exists():
            files.setdefault(label, []).append(full)
    return files


def score(sims: list[tuple[float, bool]]) -> tuple[float, float, float]:
    """(best F1 over thresholds, its threshold, F1 at the default threshold)."""

    def f1_at(theta: float) -> float:
        tp = sum(1 for s, y in sims if s >= theta and y)
        fp = sum(1 for s, y in sims if s >= theta and not y)
        fn = sum(1 for s, y in sims if s < theta and y)
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    best = max((f1_at(s), s) for s, _ in sims)
    return best[0], best[1], f1_at(VISDUP_SIMILARITY_THRESHOLD)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=60, help="pages per template and site")
    parser.add_argument("--each", help="also leave out these tags one at a time (space-separated)")
    args = parser.parse_args()
    sets = {"demo": pairs_demo()}
    if WARPCORE.is_dir():
        sets["warpcore"] = pairs_site(warpcore_files(), args.pages, 1)
    manual = ROOT / "debian-docs" / "usr" / "share" / "doc" / "python3.11" / "html"
    if manual.is_dir():
        library = sorted((manual / "library").glob("*.html"))
        sets["python"] = pairs_site({"sphinx": library}, args.pages, 2)
    tables = {
        "paper's Table 1 only": paper_table(),
        "visdup (all extensions)": dict(VISUAL_CLASSES),
    }
    for name, tags in GROUPS.items():
        tables[f"without {name}"] = table_without(tags)
    for tag in (args.each or "").split():
        tables[f"without {tag}"] = table_without(tag)
    print("pairs: " + ", ".join(
        f"{k} {sum(y for *_, y in v)}+/{sum(not y for *_, y in v)}-" for k, v in sets.items()
    ))  # fmt: skip
    head = "".join(f"{k + ' best':>16}{'@0.95':>7}" for k in sets)
    print(f"{'table':<66}{head}")
    for name, table in tables.items():
        cells = []
        for pairs in sets.values():
            sims = []
            for a, b, same in pairs:
                ta, tb = _term(a, table), _term(b, table)
                if ta is not None and tb is not None:
                    sims.append((similarity(ta, tb), same))
            best, _theta, at_default = score(sims)
            cells.append(f"{best:>16.3f}{at_default:>7.3f}")
        print(f"{name[:65]:<66}{''.join(cells)}", flush=True)


if __name__ == "__main__":
    main()
