"""The labeller finds what comparing every page with every earlier page finds.

Generated sites: pages of several templates with varied lengths, structural near-duplicates
(a sentence changed, a block added) and content copies (an article re-published under
another layout, quoted in part). Each page goes through the real analysis and the real
labeller; the truth is the same measure run on every earlier page.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl, write_site
from visdup.config import defaults
from visdup.dedup.analysis import AnalysisOptions, analyse
from visdup.dedup.label import build_labeller
from visdup.dedup.offline import label_files
from visdup.demo.server import serve
from visdup.storage.store import Store
from visdup.structure.distance import similarity
from visdup.verdicts import EXACT

WORDS = (
    "river harbour lantern orchard meadow granite willow copper falcon ember quiet silver "
    "garden thunder velvet marble canyon prairie glacier compass beacon anchor voyage summit "
    "island forest timber cobalt amber crimson meadowlark sparrow heron badger otter lynx"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(2, 4)))


def article_page(rng: random.Random, paras: list[str], nav: int, extra: bool = False) -> str:
    links = "".join(f"<li><a href='/n{i}.html'>{rng.choice(WORDS)}</a></li>" for i in range(nav))
    body = "".join(f"<p>{p}</p>" for p in paras)
    aside = "<aside><h3>See also</h3><ul><li>one</li><li>two</li></ul></aside>" if extra else ""
    return (
        "<html><head><title>a</title></head><body><header><h1>Site</h1>"
        f"<ul class=nav>{links}</ul></header><main><article><h2>{rng.choice(WORDS)}</h2>"
        f"{body}</article>{aside}</main><footer><p>Footer</p></footer></body></html>"
    )


def print_page(paras: list[str]) -> str:
    body = "".join(f"<div class=text>{p}</div>" for p in paras)
    return f"<html><body><table><tr><td>{body}</td></tr></table></body></html>"


def listing_page(rng: random.Random, rows: int) -> str:
    cells = "".join(
        f"<tr><td><a href='/p{i}.html'>{rng.choice(WORDS)}</a></td><td>{rng.randint(1, 99)}</td>"
        f"<td><span>{rng.choice(WORDS)}</span></td></tr>"
        for i in range(rows)
    )
    return (
        "<html><body><div id=top><h1>Listing</h1><form><input name=q></form></div>"
        f"<table>{cells}</table><div class=pager><a href='/'>1</a><a href='/2'>2</a></div>"
        "</body></html>"
    )


def docs_page(rng: random.Random, sections: int) -> str:
    out = []
    for _ in range(sections):
        items = "".join(f"<li>{rng.choice(WORDS)}</li>" for _ in range(rng.randint(1, 5)))
        code = "<pre>x = 1</pre>" if rng.random() < 0.5 else ""
        out.append(
            f"<section><h2>{rng.choice(WORDS)}</h2><p>{paragraph(rng)}</p>{code}"
            f"<ul>{items}</ul></section>"
        )
    nav = "".join(f"<li><a href='/d{i}'>{i}</a></li>" for i in range(rng.randint(3, 9)))
    return (
        f"<html><body><nav><ul>{nav}</ul></nav><div class=doc>{''.join(out)}</div>"
        "<div class=footer><p>Generated</p></div></body></html>"
    )


def generated_site(seed: int) -> list[tuple[str, bytes]]:
    """About 140 pages of four templates with near-duplicates, in a shuffled order."""
    rng = random.Random(seed)
    pages: list[tuple[str, str]] = []
    for i in range(40):
        paras = [paragraph(rng) for _ in range(rng.randint(2, 9))]
        nav = rng.randint(3, 12)
        pages.append((f"article{i}", article_page(rng, paras, nav)))
        roll = rng.random()
        if roll < 0.3:  # a structural near-duplicate with one paragraph rewritten
            changed = [*paras]
            changed[rng.randrange(len(changed))] = paragraph(rng)
            pages.append((f"article{i}-edit", article_page(rng, changed, nav)))
        elif roll < 0.5:  # the same article in a print layout
            pages.append((f"article{i}-print", print_page(paras)))
        elif roll < 0.65:  # quoted in part by another article, with a block added
            pages.append((f"article{i}-quote", article_page(rng, paras[:-1], nav, extra=True)))
    for i in range(35):
        pages.append((f"listing{i}", listing_page(rng, rng.randint(3, 30))))
    for i in range(35):
        pages.append((f"docs{i}", docs_page(rng, rng.randint(1, 7))))
    rng.shuffle(pages)
    return [(name, html.encode()) for name, html in pages]


def label(pages: list[tuple[str, bytes]], tmp_path: Path) -> tuple[list[Any], dict[str, list]]:
    """Run the real labeller page by page; per page what it found in each channel."""
    base = defaults()
    get = base.__getitem__
    store = Store.from_url(f"sqlite:///{tmp_path / 'recall.sqlite3'}")
    labeller = build_labeller(store, get, count=lambda _k, _n=1: None)
    run_id = store.begin_run("test")
    theta = base["VISDUP_SIMILARITY_THRESHOLD"]
    analysed = []
    found: dict[str, list[bool]] = {"structure": [], "content": []}
    try:
        for name, body in pages:
            page = analyse(body, url=name, options=AnalysisOptions(template=False))
            record = page.record(keep_body=False)
            prepared = {"structure": labeller.prepare("structure", page.simhash, page.term)}
            prepared["content"] = labeller.prepare(
                "content", page.content and page.content.simhash, page.content
            )
            labeller.commit(record, prepared, run_id)
            match = prepared["structure"].match
            best = 1.0 if record.kind == EXACT else (match.similarity if match else 0.0)
            found["structure"].append(best >= theta)
            found["content"].append(prepared["content"].match is not None)
            analysed.append(page)
        channel = labeller.channels["content"]
    finally:
        store.close()
    return [analysed, channel], found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recall_against_exhaustive_confirmation(tmp_path: Path, seed: int) -> None:
    pages = generated_site(seed)
    (analysed, content_channel), found = label(pages, tmp_path)
    theta = defaults()["VISDUP_SIMILARITY_THRESHOLD"]
    want = {"structure": 0, "content": 0}
    got = {"structure": 0, "content": 0}
    for i, page in enumerate(analysed):
        earlier = analysed[:i]
        structural = page.term is not None and any(
            p.term is not None
            and (
                p.body_hash == page.body_hash
                or similarity(page.term, p.term, at_least=theta) >= theta
            )
            for p in earlier
        )
        content = (
            page.content is not None
            and content_channel.accepts(page.content)
            and any(
                p.content is not None
                and content_channel.accepts(p.content)
                and content_channel.measure(page.content, p.content, None)[1] is not None
                for p in earlier
            )
        )
        for name, qualifies in (("structure", structural), ("content", content)):
            if qualifies:
                want[name] += 1
                got[name] += found[name][i]
            else:  # the labeller never claims more than the exhaustive comparison
                assert not found[name][i], (name, pages[i][0])
    # the site must exercise both channels, or the test proves nothing
    assert want["structure"] >= 8 and want["content"] >= 8, want
    for name in want:
        assert got[name] / want[name] >= 0.99, (name, got[name], want[name])


def comb(h: int, k: int) -> bytes:
    """Issue 11's D2 page: deep wrapper chains with a text beside each link, ~10 KB."""
    return ("<div>x" * h + "<div>" * h + "<p>z</p>" * k + "</div>x" * h + "</div>" * h).encode()


def test_comb_pages_are_labelled_within_the_work_budget() -> None:
    pages = [(f"comb{k}.html", comb(400, k)) for k in range(1, 7)]
    t0 = time.perf_counter()
    store, path = label_files(pages, overrides={"VISDUP_CONTENT_ENABLED": False})
    elapsed = time.perf_counter() - t0
    try:
        runs = store.rows("id")
        assert len(runs) == 6
        from sqlalchemy import text

        with store.engine.connect() as conn:
            stats = conn.execute(text("SELECT stats FROM visdup_runs")).scalars().all()
    finally:
        store.close()
        if path:
            path.unlink(missing_ok=True)
    # six pages whose pairs need ~10^10 DP cells each: the budget skips them, and says so
    assert elapsed < 30, elapsed
    assert any('"visdup/ted_skipped"' in str(s) for s in stats), stats


@deferred_f_from_coro_f
async def test_crawl_of_comb_pages_counts_the_skipped_comparisons(tmp_path: Path) -> None:
    pages = {f"comb{k}.html": comb(400, k).decode() for k in range(1, 7)}
    links = "".join(f"<p><a href='/comb{k}.html'>comb {k}</a></p>" for k in range(1, 7))
    pages["index.html"] = f"<html><body><h1>Combs</h1>{links}</body></html>"
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        t0 = time.perf_counter()
        db = f"sqlite:///{tmp_path / 'comb.sqlite3'}"
        crawler = await crawl(db, server.url_for("/index.html"))
        elapsed = time.perf_counter() - t0
    stats = crawler.stats.get_stats()
    assert stats["visdup/pages"] == 7
    assert stats.get("visdup/ted_skipped", 0) >= 1, stats
    assert elapsed < 60, elapsed  # 154 s before the budget, in the measurement


def _content_pair(shared: int, own: int, seed: int = 5) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    common = [sentence(rng) + " " + sentence(rng) for _ in range(shared)]
    a = common + [sentence(rng) + " " + sentence(rng) for _ in range(own)]
    b = common + [sentence(rng) + " " + sentence(rng) for _ in range(own)]
    return [("a.html", article_page(rng, a, 4).encode()), ("b.html", print_page(b).encode())]


@pytest.mark.parametrize(("threshold", "linked"), [(0.5, True), (0.8, False)])
def test_content_threshold_below_the_module_default(threshold: float, linked: bool) -> None:
    # 6 of 10 paragraphs shared: a 0.6 overlap, copied content at 0.5, not at 0.8
    store, path = label_files(
        _content_pair(6, 4), overrides={"VISDUP_CONTENT_THRESHOLD": threshold}
    )
    try:
        rows = store.rows("url", "content_duplicate_of")
    finally:
        store.close()
        if path:
            path.unlink(missing_ok=True)
    second = next(r for r in rows if r.url == "b.html")
    assert (second.content_duplicate_of is not None) is linked


def test_confirmation_is_exact_over_its_candidates(tmp_path: Path) -> None:
    """Bounds order and prune the exact measures; they never change what is found.

    Every stored page is a candidate here, so the answer must be the exhaustive one: nothing
    when no page reaches the template floor, else a page at least at the near-duplicate
    threshold when one is, else a same-template page no better than the best (the search
    stops once nothing left can change the verdict).
    """
    base = defaults()
    counts: dict[str, int] = {}

    def count(key: str, n: int = 1) -> None:
        counts[key] = counts.get(key, 0) + n

    store = Store.from_url(f"sqlite:///{tmp_path / 'exact.sqlite3'}")
    try:
        channel = build_labeller(store, base.__getitem__, count=count).channels["structure"]
        theta = base["VISDUP_SIMILARITY_THRESHOLD"]
        floor = min(theta, base["VISDUP_TEMPLATE_THRESHOLD"])
        options = AnalysisOptions(content=False, template=False)
        terms = [analyse(body, url=name, options=options).term for name, body in generated_site(4)]
        stored: list[int] = []
        found = {"structure": 0, "template": 0, "none": 0}
        for page_id, term in enumerate(terms, 1):
            if stored:
                best = max(similarity(term, terms[i - 1]) for i in stored)
                match = channel.confirm(term, list(stored), channel.budget())
                if best < floor:
                    assert match is None
                    found["none"] += 1
                else:
                    assert match is not None
                    if best >= theta:
                        assert match.similarity >= theta
                        found["structure"] += 1
                    else:
                        assert floor <= match.similarity <= best + 1e-12
                        assert match.similarity == pytest.approx(
                            similarity(term, terms[match.page_id - 1]), abs=1e-12
                        )
                        found["template"] += 1
            channel.added(page_id, page_id, term)
            stored.append(page_id)
    finally:
        store.close()
    assert min(found.values()) >= 5, found  # every outcome exercised
    pairs = len(terms) * (len(terms) - 1) // 2
    # the bounds spare most exact measures, the sequence bound included
    assert counts["visdup/ted_calls"] < pairs / 4, (counts, pairs)
    assert counts["visdup/ted_bounds"] > 0, counts


def random_term(rng: random.Random, nodes: int) -> str:
    """A random visual term of about ``nodes`` nodes, in its text form."""
    if nodes <= 1:
        mark = rng.choice(("", "", "", "[2]", "[3]"))
        return f"{mark}text"
    parts: list[str] = []
    left = nodes - 1
    while left > 0:
        size = min(left, rng.randint(1, max(1, left // 2 + 1)))
        parts.append(random_term(rng, size))
        left -= size
    return f"{rng.choice(('grp', 'row', 'col'))}({','.join(parts)})"


def edited_term(rng: random.Random, text: str, edits: int) -> str:
    """``text`` with ``edits`` random edits: a leaf's mark changed, dropped or doubled."""
    for _ in range(edits):
        leaves = [m.start() for m in re.finditer(r"(\[\d\])?text", text)]
        at = rng.choice(leaves)
        match = re.match(r"(\[\d\])?text", text[at:])
        assert match is not None
        leaf, end = match.group(0), at + len(match.group(0))
        roll = rng.random()
        if roll < 0.4:
            text = text[:at] + rng.choice(("text", "[2]text", "[3]text")) + text[end:]
        elif roll < 0.7 and len(leaves) > 2 and text[end : end + 1] == ",":
            text = text[:at] + text[end + 1 :]
        else:
            text = text[:at] + f"{leaf},{leaf}" + text[end:]
    return text


def templated_terms(seed: int) -> list[Any]:
    """Pages of a few layouts, each a base term with a few random edits: many candidates
    pass the cheap bound, and the exact measures fall on both sides of the template floor."""
    from visdup.structure.term import Term

    rng = random.Random(seed)
    bases = [random_term(rng, rng.randint(30, 60)) for _ in range(3)]
    return [Term.parse(edited_term(rng, rng.choice(bases), rng.randint(0, 9))) for _ in range(120)]


@pytest.mark.parametrize("seed", [4, 5, 6, 7])
def test_refinements_that_stop_early_measure_in_the_exact_order(tmp_path: Path, seed: int) -> None:
    """A refinement may stop once its candidate cannot reach what the search needs; the
    measures, and so the match and every similarity stored, are those of a search that
    refines every candidate exactly (pages of a generated site, then random terms of a few
    layouts)."""
    base = defaults()
    options = AnalysisOptions(content=False, template=False)
    if seed < 6:
        pages = generated_site(seed)
        terms = [analyse(body, url=n, options=options).term for n, body in pages]
    else:
        terms = templated_terms(seed)
    runs: dict[str, tuple[list[Any], list[list[int]], dict[str, int]]] = {}
    for mode in ("early", "exact"):
        counts: dict[str, int] = {}

        def count(key: str, n: int = 1, counts: dict[str, int] = counts) -> None:
            counts[key] = counts.get(key, 0) + n

        store = Store.from_url(f"sqlite:///{tmp_path / f'{mode}.sqlite3'}")
        try:
            channel = build_labeller(store, base.__getitem__, count=count).channels["structure"]
            assert channel.refine is not None and channel.measure is not None
            if mode == "exact":
                refine = channel.refine
                channel.refine = lambda a, b, _at_least, refine=refine: refine(a, b, 0.0)
            measure = channel.measure
            order: list[int] = []

            def measured(
                a: Any, b: Any, budget: Any, measure: Any = measure, order: list[int] = order
            ) -> Any:
                order.append(terms.index(b))
                return measure(a, b, budget)

            channel.measure = measured
            matches: list[Any] = []
            orders: list[list[int]] = []
            for page_id, term in enumerate(terms, 1):
                sink: dict[int, float] = {}
                found = channel.confirm(term, list(range(1, page_id)), channel.budget(), sink)
                matches.append((found, sorted(sink.items())))
                orders.append([*order])
                order.clear()
                channel.added(page_id, page_id, term)
        finally:
            store.close()
        runs[mode] = (matches, orders, counts)
    (early, early_order, early_counts), (exact, exact_order, _) = runs["early"], runs["exact"]
    assert early_order == exact_order
    assert early == exact
    assert sum(1 for found, _sink in early if found is not None) > 20  # matches were made
    assert early_counts["visdup/ted_bounds"] > 0


def test_candidate_search_is_complete_to_its_radius(tmp_path: Path) -> None:
    """The nearest stored pages within the search radius, all of them, as a full scan says."""
    from visdup.dedup.channel import LOOKUP_PAGES, SEARCH_RADIUS

    rng = random.Random(9)
    centres = [rng.getrandbits(64) for _ in range(5)]
    fps = []
    for _ in range(600):
        fp = rng.choice(centres)
        for _ in range(rng.randint(0, 14)):  # many pairs 11-16 bits apart: beyond k=8 bands
            fp ^= 1 << rng.randrange(64)
        fps.append(fp)
    store = Store.from_url(f"sqlite:///{tmp_path / 'near.sqlite3'}")
    try:
        channel = build_labeller(store, defaults().__getitem__, count=lambda _k, _n=1: None)
        structure = channel.channels["structure"]
        for page_id, fp in enumerate(fps, 1):
            structure.memory.add(page_id, fp)
        for query in [rng.choice(centres) ^ (1 << rng.randrange(64)) for _ in range(30)]:
            dist = {i: bin(query ^ fp).count("1") for i, fp in enumerate(fps, 1)}
            want = sorted((d, i) for i, d in dist.items() if d <= SEARCH_RADIUS)[:LOOKUP_PAGES]
            got = structure.memory.near(query, SEARCH_RADIUS, LOOKUP_PAGES)
            assert [(d, i) for i, _fp, d in got] == want
    finally:
        store.close()


def test_content_confirmation_is_exhaustive_over_its_candidates(tmp_path: Path) -> None:
    """The content bound spares the measures, never an answer or a stored score.

    Every stored page is a candidate: the match must be the one that measuring every
    candidate in turn finds (the best score among matches, the first stored page on a tie), and
    the scores passed on for storing must be every candidate's measured score.
    """
    store = Store.from_url(f"sqlite:///{tmp_path / 'content.sqlite3'}")
    try:
        channel = build_labeller(store, defaults().__getitem__, lambda _k, _n=1: None).channels[
            "content"
        ]
        exact = channel.measure
        measures = 0

        def counted(a: Any, b: Any, budget: Any) -> tuple[float, str | None]:
            nonlocal measures
            measures += 1
            return exact(a, b, budget)

        channel.measure = counted
        options = AnalysisOptions(template=False)
        prints = [
            cp
            for name, body in generated_site(4) + generated_site(5)
            if (cp := analyse(body, url=name, options=options).content) is not None
            and channel.accepts(cp)
        ]
        stored: list[int] = []
        pairs = matched = shared = 0
        for page_id, cp in enumerate(prints, 1):
            scores = {i: exact(cp, prints[i - 1], None) for i in stored}
            want = None
            for i in stored:  # measuring every candidate in turn
                score, kind = scores[i]
                if kind is not None and (want is None or score > want[1]):
                    want = (i, score)
            sink: dict[int, float] = {}
            match = channel.confirm(cp, list(stored), None, sink)
            assert sink == {i: score for i, (score, _kind) in scores.items()}
            assert (match and (match.page_id, match.similarity)) == (want or None)
            pairs += len(stored)
            matched += want is not None
            shared += sum(score > 0 for score, _kind in scores.values())
            channel.added(page_id, cp.simhash, cp)
            stored.append(page_id)
    finally:
        store.close()
    assert matched >= 10 and shared >= 50, (matched, shared)  # matches and rejections alike
    # a measure per page with a match, about: not one per candidate
    assert matched <= measures <= 2 * matched < pairs / 10, (measures, matched, pairs)
