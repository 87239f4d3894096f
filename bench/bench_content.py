"""Main-content extraction against trafilatura and readability-lxml, in the same run.

    .venv/bin/python bench/bench_content.py [--set all|aeb|readability|python|postgres|forum]
        [--limit N] [--only NAME] [--worst N] [--genres]

Sets: ``aeb``, the article-extraction benchmark (181 news and blog articles, hand-made gold
bodies); ``forum``, generated threads and blog comments (``bench/forum_pages.py``: the known
post bodies); ``readability``, 130 pages of many genres and languages from Mozilla Readability's
test suite, scored against Readability.js's own output (``expected.html``: a strong reference,
not hand-made gold); ``python`` and ``postgres``, the Python 3.11 and PostgreSQL 15 manuals
from the Debian packages (``bench/_data.py`` says where), whose truth is the text of the
container the generator wrote the page into (Sphinx's ``div[role=main]``; DocBook's body
without its ``navheader``/``navfooter``). ``all`` (the default) runs every set that is present
and prints one table. ``--genres`` breaks the readability set down by genre, script and size
(the page lists are below: chosen by reading the pages, not by their scores).

Scores follow AEB's own rules: \\w+ tokens, 4-token shingles, multiset overlap per page,
precision and recall averaged over pages, F1 from the averages; except that a run of Chinese
or Japanese characters (written without spaces) counts one token per character, for every
extractor alike (AEB's \\w+ would make a whole sentence one token there). Prints a table;
asserts nothing. ``--deep N`` times the walks on a tree built through lxml's API N levels deep.
Extras: ``.venv/bin/pip install trafilatura readability-lxml lxml_html_clean``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "aeb"
READABILITY = ROOT.parent / "shared" / "data" / "readability-pages" / "pages"
sys.path.insert(0, str(ROOT))

#: Ideographs and kana, one token each; every other \w run is one token.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+", re.UNICODE)

#: (name, the page as served or as text, its true text)
Page = tuple[str, bytes | str, str]

#: Block elements whose text is a paragraph of its own in a reference's HTML.
_BLOCKS = (
    "p", "div", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "tr", "td", "th", "pre", "blockquote", "br", "section", "article", "figure",
    "figcaption", "header", "footer", "main", "aside", "nav", "hr",
)  # fmt: skip


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    found = tokens(text)
    n = min(n, len(found))
    if n == 0:
        return Counter()
    return Counter(tuple(found[i : i + n]) for i in range(len(found) - n + 1))


def page_scores(expected: str, predicted: str) -> tuple[float, float]:
    """Precision and recall of one page, by multiset shingle overlap."""
    truth, pred = shingles(expected), shingles(predicted)
    if not truth and not pred:
        return 1.0, 1.0
    tp = sum((truth & pred).values())
    fp = sum(pred.values()) - tp
    fn = sum(truth.values()) - tp
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def html_text(root: object) -> str:
    """An element's text with its block elements apart: ``text_content`` glues
    ``<p>a</p><p>b</p>`` into one word ``ab``, which would cost every extractor alike."""
    for el in root.iter(*_BLOCKS):  # type: ignore[attr-defined]
        el.tail = "\n" + (el.tail or "")
        el.text = "\n" + (el.text or "")
    return str(root.text_content())  # type: ignore[attr-defined]


def _container_text(html: bytes, which: str) -> str | None:
    """The text of the container a documentation generator wrote the page's content into."""
    import lxml.etree
    import lxml.html

    root = lxml.html.document_fromstring(html)
    for el in root.xpath("//script|//style|//noscript"):
        el.drop_tree()
    if which == "python":
        found = root.xpath("//div[@role='main']")
        return found[0].text_content() if found else None
    body = root.find("body")
    if body is None:
        return None
    for el in body.xpath("./div[@class='navheader' or @class='navfooter']"):
        el.drop_tree()
    return body.text_content()


def load_manual(which: str, limit: int | None = None) -> list[Page]:
    from bench._data import debian_docs, html_files

    base = debian_docs(which)
    pages: list[Page] = []
    for path in html_files(base):
        html = path.read_bytes()
        truth = _container_text(html, which)
        if truth and len(truth.split()) >= 20:  # index stubs and redirects say nothing
            pages.append((str(path.relative_to(base)), html, truth))
    return pages[:limit] if limit else pages


def load(limit: int | None = None) -> list[Page]:
    truth = json.loads((DATA / "ground-truth.json").read_text(encoding="utf-8"))
    pages: list[Page] = []
    for key in sorted(truth)[:limit]:
        path = DATA / "html" / f"{key}.html.gz"
        if path.exists():
            pages.append((key, gzip.decompress(path.read_bytes()), truth[key]["articleBody"]))
    return pages


def load_readability(limit: int | None = None) -> list[Page]:
    """Readability.js's test pages: the source, and the text of what Readability.js kept.

    Both files are UTF-8 whatever their ``<meta charset>`` says (the suite converted them and
    reads them as text): every extractor is given the source as text.
    """
    import lxml.html

    pages: list[Page] = []
    for folder in sorted(READABILITY.iterdir())[:limit]:
        source, expected = folder / "source.html", folder / "expected.html"
        if source.exists() and expected.exists():
            ref = lxml.html.fromstring(expected.read_text(encoding="utf-8"))
            pages.append((folder.name, source.read_text(encoding="utf-8"), html_text(ref)))
    return pages


def load_forum(limit: int | None = None) -> list[Page]:
    """Generated discussion pages (``bench/forum_pages.py``): threads and a blog with comments."""
    from bench.forum_pages import pages

    return [(name, html, truth) for name, html, truth in pages()][:limit]


def evaluate(
    extractor: Callable[[bytes | str], str], pages: list[Page]
) -> tuple[float, float, float, float, list[tuple[str, float, float]]]:
    ps, rs, per_page = [], [], []
    start = time.perf_counter()
    for key, html, expected in pages:
        try:
            predicted = extractor(html) or ""
        except Exception as exc:  # a crashing extractor scores zero on that page
            print(f"  {key}: {type(exc).__name__}: {exc}", file=sys.stderr)
            predicted = ""
        p, r = page_scores(expected, predicted)
        ps.append(p)
        rs.append(r)
        per_page.append((key, p, r))
    ms = (time.perf_counter() - start) * 1000 / max(1, len(pages))
    precision, recall = sum(ps) / len(ps), sum(rs) / len(rs)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f1, precision, recall, ms, per_page


def _text(html: bytes | str) -> str:
    return html if isinstance(html, str) else html.decode("utf-8", "replace")


def _visdup(html: bytes | str) -> str:
    from visdup.content import extract

    return extract(html).text


def _trafilatura(html: bytes | str) -> str:
    import trafilatura

    return trafilatura.extract(_text(html)) or ""


def _readability(html: bytes | str) -> str:
    import lxml.html
    from readability import Document

    summary = Document(_text(html)).summary(html_partial=True)
    return html_text(lxml.html.fromstring(summary)) if summary.strip() else ""


def fingerprint_figures(pages: list[Page]) -> None:
    """Content prints of AEB's true article texts: one edited sentence against other pages."""
    from visdup.content.textprint import compare, text_print

    texts = [expected for _, _, expected in pages if len(expected) > 200]
    start = time.perf_counter()
    prints = [text_print(t) for t in texts]
    ms = (time.perf_counter() - start) * 1000 / max(1, len(texts))
    edited_prints = []
    for text in texts:
        # Change one word in the middle of the text: a typo fix, a corrected figure.
        words = text.split(" ")
        middle = len(words) // 2
        words[middle] = words[middle] + "x"
        edited_prints.append(text_print(" ".join(words)))
    near = [compare(a, b) for a, b in zip(prints, edited_prints, strict=True)]
    far = [compare(a, b) for a, b in zip(prints, prints[1:] + prints[:1], strict=True)]

    def share(items: list, test: Callable) -> str:
        return f"{sum(1 for x in items if test(x)) / max(1, len(items)):.2f}"

    print(f"\ncontent prints of {len(texts)} AEB article texts: {ms:.2f} ms per print")
    print(f"{'pairs':<22}{'partial/mirror':>15}{'median score':>14}"
          f"{'ham<=3':>8}{'ham<=8':>8}{'ham<=12':>9}")  # fmt: skip
    for name, matches in (("one word edited", near), ("different articles", far)):
        scores = sorted(m.score for m in matches)
        print(
            f"{name:<22}{share(matches, lambda m: m.kind is not None):>15}"
            f"{scores[len(scores) // 2]:>14.2f}"
            f"{share(matches, lambda m: m.simhash_distance <= 3):>8}"
            f"{share(matches, lambda m: m.simhash_distance <= 8):>8}"
            f"{share(matches, lambda m: m.simhash_distance <= 12):>9}"
        )


def deep_tree(levels: int) -> None:
    """Seconds per step on one chain of styled <div>s built through lxml's API (D15)."""
    import lxml.etree
    import lxml.html

    from visdup.content import main_content, remove_invisible
    from visdup.content.blocks import walk

    def build() -> object:
        root = lxml.html.fromstring("<html><body><p>top</p></body></html>")
        chain = [root.find("body")]
        for i in range(levels):
            el = lxml.etree.SubElement(chain[-1], "div", {"style": "color:red"} if i % 7 else {})
            el.text = f"level {i}."
            chain.append(el)
        chain.clear()  # deepest first: see visdup.content.visibility.release
        return root

    steps: dict[str, Callable[[object], object]] = {
        "remove_invisible": remove_invisible,
        "paragraph walk": lambda root: walk(root.find("body")),  # type: ignore[attr-defined]
        "main_content (all steps)": main_content,
    }
    for name, step in steps.items():
        root = build()
        start = time.perf_counter()
        step(root)
        print(f"{levels} levels  {name:<26}{time.perf_counter() - start:>8.2f} s")


EXTRACTORS: dict[str, Callable[[bytes | str], str]] = {
    "visdup": _visdup,
    "trafilatura": _trafilatura,
    "readability-lxml": _readability,
}


SETS: dict[str, Callable[[int | None], list[Page]]] = {
    "aeb": load,
    "readability": load_readability,
    "python": lambda limit: load_manual("python", limit),
    "postgres": lambda limit: load_manual("postgres", limit),
    "forum": lambda limit: load_forum(limit),
}


def present(name: str) -> bool:
    if name == "forum":
        return True
    if name == "aeb":
        return DATA.exists()
    if name == "readability":
        return READABILITY.exists()
    import os

    from bench._data import REPO

    base = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs"))
    return base.is_dir()


Result = tuple[float, float, float, float, list[tuple[str, float, float]]]


def run_set(name: str, pages: list[Page], only: list[str] | None) -> dict[str, Result]:
    results: dict[str, Result] = {}
    for extractor in only or list(EXTRACTORS):
        try:
            results[extractor] = evaluate(EXTRACTORS[extractor], pages)
        except ImportError as exc:
            print(f"{extractor}: not installed ({exc})")
    return results


def print_table(table: dict[str, tuple[int, dict[str, Result]]]) -> None:
    print(f"{'set':<13}{'pages':>6} {'extractor':<18}{'F1':>7}{'P':>7}{'R':>7}"
          f"{'ms/page':>9}{'speed vs traf.':>16}")  # fmt: skip
    for name, (count, results) in table.items():
        base = results.get("trafilatura")
        for extractor, (f1, p, r, ms, _) in results.items():
            ratio = f"{base[3] / ms:.2f}x" if base and ms else "-"
            print(f"{name:<13}{count:>6} {extractor:<18}{f1:>7.3f}{p:>7.3f}{r:>7.3f}"
                  f"{ms:>9.1f}{ratio:>16}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="first N pages of each set")
    parser.add_argument("--only", choices=sorted(EXTRACTORS), action="append")
    parser.add_argument("--worst", type=int, default=0, help="list the N worst visdup pages")
    parser.add_argument("--set", choices=["all", *SETS], default="all")
    parser.add_argument("--genres", action="store_true", help="readability set by genre")
    parser.add_argument("--deep", type=int, default=0, help="time walks on a tree N deep")
    args = parser.parse_args()
    if args.deep:
        deep_tree(args.deep)
        return
    warnings.filterwarnings("ignore")
    names = list(SETS) if args.set == "all" else [args.set]
    table: dict[str, tuple[int, dict[str, Result]]] = {}
    loaded: dict[str, list[Page]] = {}
    for name in names:
        if not present(name):
            print(f"{name}: data absent, skipped")
            continue
        pages = loaded[name] = SETS[name](args.limit)
        table[name] = (len(pages), run_set(name, pages, args.only))
    print_table(table)
    if "readability" in table and (args.genres or args.set == "all"):
        genre_table(loaded["readability"], table["readability"][1])
    if not args.only and args.set == "aeb":
        fingerprint_figures(loaded["aeb"])
    for name, (_, results) in table.items():
        if args.worst and "visdup" in results:
            print(f"\n{name}: the {args.worst} worst visdup pages")
            worst = sorted(results["visdup"][4], key=lambda x: _f1(x[1], x[2]))
            others = {k: {key: _f1(p, r) for key, p, r in v[4]} for k, v in results.items()}
            for key, p, r in worst[: args.worst]:
                rest = "  ".join(
                    f"{k[:5]}={v[key]:.2f}" for k, v in others.items() if k != "visdup"
                )
                print(f"  {key[:40]:<40} P={p:.2f} R={r:.2f}  {rest}")


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


#: Readability pages by genre, from reading them (the rest are news and blog articles; the
#: suite's hand-made test cases are told apart by size, the script by the reference's text).
GENRES = {
    "forum, fiction, comments": (
        "archive-of-our-own", "royal-road", "lifehacker-post-comment-load", "firefox-nightly-blog",
        "ebb-org",
    ),
    "reference, docs, wiki": (
        "wikipedia", "wikipedia-2", "wikipedia-3", "wikipedia-4", "wikia", "mercurial",
        "google-sre-book-1", "ietf-1", "mozilla-1", "mozilla-2", "mathjax", "toc-missing",
        "keep-tabular-data", "links-in-tables", "hukumusume",
    ),
    "front page, gallery, video": (
        "nytimes-5", "bug-1255978", "videos-1", "videos-2", "yahoo-3", "tumblr",
    ),
}  # fmt: skip
#: A source under this many bytes is one of the suite's hand-made test cases (short pages).
TEST_CASE_BYTES = 5000
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_LETTER = re.compile(r"[^\W\d_]")


def page_groups(key: str, html: bytes | str, expected: str) -> list[str]:
    """The genre, script and size groups of one readability page."""
    genre = next((g for g, names in GENRES.items() if key in names), "news, blog article")
    if len(html) < TEST_CASE_BYTES:
        genre = "short test case"
    letters = len(_LETTER.findall(expected))
    latin = len(_LATIN.findall(expected))
    script = "script: latin" if latin >= 0.7 * max(1, letters) else "script: non-latin"
    n = len(tokens(expected))
    size = "size: <150 tokens" if n < 150 else "size: 150-600" if n <= 600 else "size: >600"
    return [genre, script, size]


def genre_table(pages: list[Page], results: dict[str, Result]) -> None:
    """F1 per group of the readability set, and the visdup pages under 0.8 in each."""
    groups: dict[str, list[str]] = {}
    for key, html, expected in pages:
        for group in page_groups(key, html, expected):
            groups.setdefault(group, []).append(key)
    scores = {name: {k: (p, r) for k, p, r in res[4]} for name, res in results.items()}
    print("\nreadability pages by group: F1 (precision and recall averaged over the group)")
    print(f"{'group':<28}{'pages':>6}" + "".join(f"{n[:12]:>13}" for n in scores)
          + "  visdup < 0.8")  # fmt: skip
    for group in sorted(groups):
        keys = groups[group]
        row = f"{group:<28}{len(keys):>6}"
        for per_page in scores.values():
            p = sum(per_page[k][0] for k in keys) / len(keys)
            r = sum(per_page[k][1] for k in keys) / len(keys)
            row += f"{_f1(p, r):>13.3f}"
        low = [k for k in keys if "visdup" in scores and _f1(*scores["visdup"][k]) < 0.8]
        print(row + "  " + " ".join(low))


if __name__ == "__main__":
    main()
