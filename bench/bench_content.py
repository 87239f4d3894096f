"""Main-content extraction against trafilatura and readability-lxml, in the same run.

    .venv/bin/python bench/bench_content.py [--set aeb|python|postgres] [--limit N] [--only NAME]

Sets: ``aeb``, the article-extraction benchmark (news articles, where visdup's weights were
tuned); ``python`` and ``postgres``, the Python 3.11 and PostgreSQL 15 manuals from the
Debian packages (``bench/_data.py`` says where), a genre nothing was tuned on: their truth is
the text of the container the generator wrote the page into (Sphinx's ``div[role=main]``;
DocBook's body without its ``navheader``/``navfooter``).
Scores follow AEB's own rules: \\w+ tokens, 4-token shingles, multiset overlap per page,
precision and recall averaged over pages, F1 from the averages. Prints a table; asserts nothing.
``--deep N`` times the walks on a tree built through lxml's API N levels deep instead.
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
sys.path.insert(0, str(ROOT))

_TOKEN = re.compile(r"\w+", re.UNICODE)


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    n = min(n, len(tokens))
    if n == 0:
        return Counter()
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


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


def load_manual(which: str, limit: int | None = None) -> list[tuple[str, bytes, str]]:
    from bench._data import debian_docs, html_files

    base = debian_docs(which)
    pages = []
    for path in html_files(base):
        html = path.read_bytes()
        truth = _container_text(html, which)
        if truth and len(truth.split()) >= 20:  # index stubs and redirects say nothing
            pages.append((str(path.relative_to(base)), html, truth))
    return pages[:limit] if limit else pages


def load(limit: int | None = None) -> list[tuple[str, bytes, str]]:
    truth = json.loads((DATA / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key in sorted(truth)[:limit]:
        path = DATA / "html" / f"{key}.html.gz"
        if path.exists():
            pages.append((key, gzip.decompress(path.read_bytes()), truth[key]["articleBody"]))
    return pages


def evaluate(
    extractor: Callable[[bytes], str], pages: list[tuple[str, bytes, str]]
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


def _visdup(html: bytes) -> str:
    from visdup.content import extract

    return extract(html).text


def _trafilatura(html: bytes) -> str:
    import trafilatura

    return trafilatura.extract(html.decode("utf-8", "replace")) or ""


def _readability(html: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(html.decode("utf-8", "replace")).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content() if summary.strip() else ""


def fingerprint_figures(pages: list[tuple[str, bytes, str]]) -> None:
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


EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    "visdup": _visdup,
    "trafilatura": _trafilatura,
    "readability-lxml": _readability,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    parser.add_argument("--only", choices=sorted(EXTRACTORS), action="append")
    parser.add_argument("--worst", type=int, default=0, help="list the N worst visdup pages")
    parser.add_argument("--set", choices=["aeb", "python", "postgres"], default="aeb")
    parser.add_argument("--deep", type=int, default=0, help="time walks on a tree N deep")
    args = parser.parse_args()
    if args.deep:
        deep_tree(args.deep)
        return
    warnings.filterwarnings("ignore")
    if args.set == "aeb":
        if not DATA.exists():
            print(f"no AEB data at {DATA}")
            return
        pages = load(args.limit)
    else:
        pages = load_manual(args.set, args.limit)
    print(f"{args.set}: {len(pages)} pages")
    results = {}
    for name in args.only or list(EXTRACTORS):
        try:
            results[name] = evaluate(EXTRACTORS[name], pages)
        except ImportError as exc:
            print(f"{name}: not installed ({exc})")
    base = results.get("trafilatura")
    print(f"{'extractor':<18}{'F1':>7}{'P':>7}{'R':>7}{'ms/page':>10}{'speed vs traf.':>16}")
    for name, (f1, p, r, ms, _) in results.items():
        ratio = f"{base[3] / ms:.2f}x" if base and ms else "-"
        print(f"{name:<18}{f1:>7.3f}{p:>7.3f}{r:>7.3f}{ms:>10.1f}{ratio:>16}")
    if not args.only and args.set == "aeb":
        fingerprint_figures(pages)
    if args.worst and "visdup" in results:
        worst = sorted(results["visdup"][4], key=lambda x: 2 * x[1] * x[2] / (x[1] + x[2] or 1))
        for key, p, r in worst[: args.worst]:
            print(f"  {key[:16]}  P={p:.2f} R={r:.2f}")


if __name__ == "__main__":
    main()
