"""The fast paths of per-page analysis give exactly what the plain ones give.

Compiled DOM walk vs the Python walk, the online clusterer's path index vs a full scan of
the representatives, the vectorised content SimHash vs the general one, and the reuse of
the first paragraph walk in main_content vs a second walk.
"""

from __future__ import annotations

import copy
import gzip
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.etree
import lxml.html
import pytest
from kernels import python_kernels

from visdup.content import main_content
from visdup.content import weights as weights_module
from visdup.content.blocks import BLOCK_TAGS, HEADINGS
from visdup.content.blocks import join_blocks as _join_blocks
from visdup.content.blocks import paragraphs as _blocks
from visdup.content.blocks import walk as _walk
from visdup.content.textprint import _SLICE, _common, _shingle_simhash
from visdup.page.parse import parse_html
from visdup.structure.fingerprint import simhash64
from visdup.templates import cluster as cluster_module
from visdup.templates import stm as stm_module
from visdup.templates.cluster import OnlineClusterer
from visdup.templates.stm import FlatTree, _dom_walk, dom_tree

FIXTURES = Path(__file__).parent / "fixtures"
AEB = Path(__file__).resolve().parents[2] / "shared" / "data" / "aeb" / "html"

HOSTILE = [
    "<html><body><p>a<!-- c -->b<?pi x?>c<b>d</b> e</p></body></html>",
    "<div id=' x ' class='B a  b'>t\xa0\u3000u<span>\x1cv\x1f</span>\u2028</div>",
    "<DIV CLASS='Up'><P>Upper</P><SCRIPT>x</SCRIPT>tail</DIV>",
    # more element names than the invisible-node scan keeps apart, then the ones it must
    # still tell (a style sheet, a closed dialog, a template) and names met before
    "<body>"
    + "".join(f"<x-{i}{' hidden' if i % 9 == 0 else ''}>n{i}</x-{i}>" for i in range(80))
    + "<style>.gone{display:none}</style><dialog>closed</dialog><dialog open>shown</dialog>"
    + "<template>t</template><p class=gone>g</p><x-3>again</x-3><x-9>hidden?</x-9></body>",
    # every whitespace str.split() knows, runs of them, and the zero-width space it does not
    "<p>\x0b\x0ca\x85b\u1680c\u2000\u2005\u200ad\u2029\u202fe\u205f\u3000f\u200bg</p>"
    "<p>\u00a0\u2028</p><b> \u3000 x \u00a0</b>",
    "<body><fb:like data-x='1'>n</fb:like><svg><g>i</g></svg>after<my-tag>z</my-tag></body>",
    "<body><p>&amp; &nbsp; &#160; \u00e9t\u00e9</p><template>t</template><noscript>n"
    "</noscript>x</body>",
    "<body>" + "<div>" * 300 + "deep" + "</div>" * 300 + "</body>",
    "<body><p class=''>empty class</p><p id=''>empty id</p><p id='\u00e9' class='\u00c9'>"
    "</p></body>",
    "<html><head><title>t</title></head><body>\n  \n<p>\n</p>\n</body></html>",
    # more (tag, id, class) triples than the compiled walks keep labels and keys for,
    # repeated; role and itemprop empty, absent and set
    "<body>"
    + "".join(
        f"<div class='c{i}  x' id=' i{i % 7} '><span class='c{i % 3}'>t</span>"
        f"<SPAN CLASS='c{i % 3}'>u</SPAN></div>"
        for i in range(2500)
    )
    + "<p class='&amp; a'>q</p><p id='\u00e9 ' class=''>r</p><p id=''>s</p>"
    + "<p role=''>t</p><p role='main' itemprop=''>u</p><p itemprop='articleBody'>v</p>"
    + "<p role='main' itemprop='articleBody'>w</p><p>x</p></body>",
]


def _pages() -> list[bytes]:
    pages = [h.encode() for h in HOSTILE]
    for path in sorted(FIXTURES.rglob("*.htm*"))[:60]:
        pages.append(path.read_bytes())
    if AEB.is_dir():
        pages.extend(gzip.decompress(p.read_bytes()) for p in sorted(AEB.glob("*.gz"))[:25])
    return pages


PAGES = _pages()


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled DOM walk not built",
)
@pytest.mark.parametrize("classes", [False, True])
@pytest.mark.parametrize("text", [True, False])
@pytest.mark.parametrize("max_nodes", [6000, 7])
def test_compiled_dom_walk_equals_python(classes: bool, text: bool, max_nodes: int) -> None:
    skip = set(stm_module._SKIP_TAGS)
    compared = 0
    for body in PAGES:
        root = parse_html(body).root
        if root is None:
            continue
        walked = stm_module._walks.dom_walk(root, skip, "#text", classes, text, max_nodes)
        assert walked is not None  # HTML pages never need the fallback
        expected = _dom_walk(root, classes=classes, text=text, max_nodes=max_nodes)
        assert walked == expected
        compared += 1
    assert compared >= len(HOSTILE)


def test_compiled_dom_walk_falls_back_on_namespaced_trees(monkeypatch) -> None:
    root = lxml.etree.fromstring(b'<r xmlns="urn:x"><a class="c">t</a>u</r>')
    expected = dom_tree(root)
    python_kernels(monkeypatch)
    assert dom_tree(root) == expected
    assert expected.labels == ("{urn:x}r", "{urn:x}a", "#text", "#text")
    assert expected.hints[1] == "{urn:x}a.c"


def test_dom_tree_same_with_and_without_kernel(monkeypatch) -> None:
    trees = [dom_tree(lxml.html.fromstring(h)) for h in HOSTILE]
    python_kernels(monkeypatch)
    plain = [dom_tree(lxml.html.fromstring(h)) for h in HOSTILE]
    assert [t.to_dict() for t in trees] == [t.to_dict() for t in plain]
    assert "t u" in trees[1].texts  # no-break and ideographic spaces are whitespace


def _site_tree(rng: random.Random, template: int) -> FlatTree:
    """A page of one of many templates: a shared header, a template body, random rows."""
    body = random.Random(template)
    tags = ["div", "p", "span", "ul", "li", "a", "td", "tr", "h2"]
    parents = [-1, 0, 1, 1, 1]
    labels = ["html", "body", "div", "ul", "div"]
    for _ in range(body.randint(10, 60)):
        parents.append(body.randrange(2, len(labels)))
        labels.append(body.choice(tags))
    for _ in range(rng.randint(0, 12)):
        parents.append(rng.randrange(2, len(labels)))
        labels.append(rng.choice(tags))
    kids: list[list[int]] = [[] for _ in labels]
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    order, stack = [], [0]
    while stack:
        x = stack.pop()
        order.append(x)
        stack.extend(reversed(kids[x]))
    pos = {x: k for k, x in enumerate(order)}
    sizes = [1] * len(order)
    for x in reversed(order):
        if parents[x] >= 0:
            sizes[pos[parents[x]]] += sizes[pos[x]]
    return FlatTree([labels[x] for x in order], sizes)


@pytest.mark.parametrize("threshold", [0.1, 0.4, 0.7])
def test_path_index_finds_what_a_full_scan_finds(monkeypatch, threshold: float) -> None:
    rng = random.Random(7)
    pages = [_site_tree(rng, rng.randrange(150)) for _ in range(500)]
    pages.append(FlatTree((), ()))
    indexed = OnlineClusterer(threshold=threshold, representatives=3)
    scanned = OnlineClusterer(threshold=threshold, representatives=3)
    got, want = [], []
    for n, page in enumerate(pages):
        monkeypatch.setattr(cluster_module, "_SCAN_BELOW", 0)
        got.append((indexed.nearest(page), indexed.assign(f"p{n}", page)))
        monkeypatch.setattr(cluster_module, "_SCAN_BELOW", 10**9)
        want.append((scanned.nearest(page), scanned.assign(f"p{n}", page)))
    assert got == want
    assert len(indexed.clusters) > 30  # enough clusters for the index to matter
    # Reloaded clusters replace their index entries.
    monkeypatch.setattr(cluster_module, "_SCAN_BELOW", 0)
    restored = OnlineClusterer(threshold=threshold, representatives=3)
    for cid in indexed.clusters:
        restored.load_cluster(indexed.cluster_state(cid))
    for cid in list(indexed.clusters)[:10]:
        restored.load_cluster(indexed.cluster_state(cid))
    assert [restored.nearest(p) for p in pages[:80]] == [indexed.nearest(p) for p in pages[:80]]
    slots = len(restored._index.owner)
    assert slots == sum(restored.representative_count(c) for c in restored.clusters)


def test_vectorised_simhash_equals_simhash64() -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "δέλτα", "数据", "x", "yy", "zzz"]
    # 20,000 draws: more distinct shingles than one slice of the bit sums (_SLICE)
    for size in (1, 5, 16, 17, 200, 2000, 20_000):
        shingles: Counter[str] = Counter()
        for _ in range(size):
            shingles[" ".join(rng.choice(words) for _ in range(3)) + str(rng.randrange(5000))] += (
                rng.choice([1, 1, 1, 2, 300])
            )
        expected = simhash64((s, min(c, 255)) for s, c in shingles.items())
        assert _shingle_simhash(shingles) == expected
    assert len(shingles) > _SLICE


def test_first_walk_spans_equal_a_walk_of_the_element() -> None:
    checked = 0
    for body in PAGES:
        root = parse_html(body).root
        if root is None:
            continue
        bodies = root.xpath("//body")
        top = bodies[0] if bodies else root
        spans: dict = {}
        blocks = _blocks(top, [], spans)
        for el, (start, end, free) in spans.items():
            assert el.tag in BLOCK_TAGS
            if not free:
                assert any(a.tag in HEADINGS for a in el.iterancestors())
                continue
            assert _join_blocks(blocks[start:end]) == _join_blocks(_blocks(el))
            checked += 1
    assert checked > 100


def test_main_content_unchanged_when_nothing_is_pruned() -> None:
    html = (
        "<html><body><div id='nav'><a href='/'>Home</a></div><article><h1>T</h1>"
        "<p>" + "A sentence of prose that goes on. " * 6 + "</p><p>Second paragraph here, "
        "long enough to count as prose for sure.</p></article></body></html>"
    )
    got = main_content(lxml.html.fromstring(html))
    assert got.node.tag == "article"
    assert [k for k, _, _ in got.blocks] == ["paragraph", "paragraph"]
    assert got.text.startswith("A sentence of prose")


def test_common_counts_the_multiset_intersection() -> None:
    rng = random.Random(5)
    for _ in range(300):
        a = [rng.randrange(12) for _ in range(rng.randrange(0, 10))]
        b = [rng.randrange(12) for _ in range(rng.randrange(0, 10))]
        if rng.random() < 0.5:
            a, b = list(set(a)), list(set(b))
        assert _common(a, b) == sum((Counter(a) & Counter(b)).values())


def test_dom_tree_on_a_tree_thousands_deep(monkeypatch) -> None:
    root = lxml.html.fromstring("<html><body><div>top</div></body></html>")
    el = root.find("body")
    for i in range(5000):
        el = lxml.etree.SubElement(el, "div", {"class": f"c{i % 3}"})
        el.text = f"t{i}" if i % 2 else " "
        el.tail = "x" if i % 5 == 0 else None
    fast = dom_tree(root, classes=True)
    python_kernels(monkeypatch)
    assert fast == dom_tree(root, classes=True)
    assert fast.hints == dom_tree(root, classes=True).hints
    assert fast.nodes == 6000 and fast.truncated


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled walks not built",
)
def test_compiled_paragraph_walk_equals_python() -> None:
    compared = 0
    for body in [
        *PAGES,
        b"<body><p>a<a href='x'>link <b>text</b></a> tail</p><h2>H<div>in"
        b"</div></h2>\xc2\xa0</body>",
        # Unicode whitespace runs (no-break, ideographic, line separator, tabs) in and around
        "<body><p> \u3000one\xa0\xa0two\t\n<b>\u2028three</b> </p><div>\x1ffour\x7f \u00e9"
        "\u200b five\u3000</div></body>".encode(),
    ]:
        root = parse_html(body).root
        if root is None:
            continue
        top = (root.xpath("//body") or [root])[0]
        raw, parents, spans, keys, positions = stm_module._walks.blocks_walk(
            top, set(BLOCK_TAGS), dict(HEADINGS)
        )
        elements = list(top.iter(lxml.etree.Element))
        slow_order: list = []
        slow_spans: dict = {}
        slow = _blocks(top, slow_order, slow_spans)
        fast = [  # the text as Block.text reads it: whitespace squeezed in the kernel
            (elements[o], "heading" if h else "paragraph", lv, t, lc, n)
            for o, h, lv, t, lc, n in raw
        ]
        assert fast == [(b.owner, b.kind, b.level, b.text, b.link_chars, b.chars) for b in slow]
        assert [
            (el, elements[p] if p >= 0 else None) for el, p in zip(elements, parents, strict=True)
        ] == (slow_order)
        assert {elements[i]: [f, e, int(free)] for i, (f, e, free) in spans.items()} == slow_spans
        assert keys == [
            (el.tag, el.get("class"), el.get("id"), el.get("role"), el.get("itemprop"))
            for el in elements
        ]
        assert all(
            el.getparent()[pos] is el for el, pos in zip(elements[1:], positions[1:], strict=True)
        )
        compared += 1
    assert compared > len(HOSTILE)


def test_main_content_same_with_and_without_kernel(monkeypatch) -> None:
    def run() -> list:
        out = []
        for body in PAGES:
            doc = parse_html(body)
            if doc.root is None:
                continue
            got = main_content(doc.root)
            where = got.node.getroottree().getpath(got.node) if got.node is not None else None
            out.append((got.title, where, got.text, got.blocks))
        return out

    fast = run()
    python_kernels(monkeypatch)
    assert run() == fast
    assert sum(1 for _, _, text, _ in fast if text) > 20


HIDING = [
    "<html><head><style media='print'>.a{display:none}</style><style>.b{display:none}"
    "</style></head><body><div class='a'>print only</div><div class='b'>hidden</div>"
    "<p hidden>h</p>t1<dialog>d</dialog>t2<dialog open>shown</dialog><!-- c -->t3"
    "<div style='display:none'>x<span style='color:red'>inner</span></div>t4"
    "<span style='visibility: hidden'>v</span><noscript><p style='x'>n</p></noscript>"
    "<div aria-hidden='true' style='opacity:0'>sr</div><p style=''>empty</p></body></html>",
    "<body><template><style>.q{display:none}</style></template><p class='q'>q</p>"
    "<iframe></iframe>tail<svg><g style='display:none'></g></svg>after</body>",
]


def test_remove_invisible_same_with_and_without_kernel(monkeypatch) -> None:
    from visdup.content.visibility import remove_invisible

    def run() -> list:
        out = []
        for body in [*(h.encode() for h in HIDING), *PAGES]:
            root = parse_html(body).root
            if root is None:
                continue
            if stm_module._walks is not None and stm_module._walks.DOM_WALK:
                assert stm_module._walks.invisible_scan(root, set()) is not None
            count = remove_invisible(root)
            out.append((count, lxml.etree.tostring(root)))
        return out

    fast = run()
    python_kernels(monkeypatch)
    assert run() == fast
    assert fast[0][0] >= 6
    assert b"print only" in fast[0][1] and b"hidden<" not in fast[0][1]


TITLED = [
    '<html><head><meta name="og:title"><meta property="og:title" content="OG"><title>T | S'
    "</title></head><body><h1><a href='/'>S</a></h1><div hidden><h1>Hid</h1><title>x</title>"
    "</div><h1>T</h1><p>text</p></body></html>",
    "<html><body><h1>Only</h1><script><h1>no</h1></script><h1><!-- c -->Two</h1></body></html>",
    "<html><head><title>Plain</title></head><body><p>x</p></body></html>",
]


def test_the_title_read_in_the_invisible_scan_is_read_before_anything_goes(monkeypatch) -> None:
    """The scan's walk hands the title its elements (those ``root.iter`` yields), before it
    removes anything: the same title and the same page as a title read first."""
    from visdup.content.titles import page_title
    from visdup.content.visibility import remove_invisible, titled_and_cleaned

    def run() -> list:
        out = []
        for body in [*(t.encode() for t in TITLED), *(h.encode() for h in HIDING), *PAGES]:
            root = parse_html(body).root
            if root is None:
                continue
            first = parse_html(body).root
            title = page_title(first)
            remove_invisible(first)
            got = titled_and_cleaned(root)
            assert got == title
            assert lxml.etree.tostring(root) == lxml.etree.tostring(first)
            out.append(got)
        return out

    fast = run()
    assert fast[:3] == ["T", "Only", "Plain"]
    assert sum(1 for t in fast if t) > 20
    python_kernels(monkeypatch)
    assert run() == fast


def test_remove_invisible_on_a_tree_thousands_deep(monkeypatch) -> None:
    from visdup.content.titles import page_title
    from visdup.content.visibility import remove_invisible, titled_and_cleaned

    def build() -> lxml.etree._Element:
        root = lxml.html.fromstring("<html><body><div>top</div></body></html>")
        el = root.find("body")
        for i in range(4000):
            tag = "script" if i % 997 == 5 else "div"
            el = lxml.etree.SubElement(el, tag, {"style": "color:red"} if i % 7 else {})
            el.text = f"t{i}"
            el.tail = "x"
        return root

    fast_root = build()
    fast = remove_invisible(fast_root)
    # headings all the way down: their paths, thousands of steps each, pass the scan's budget
    # and lxml finds them instead, with the same title and page
    headed_root = build()
    for i, el in enumerate(headed_root.iter("div")):
        if i % 3 == 0:
            el.tag = "h1"
    expected_root = copy.deepcopy(headed_root)
    expected = page_title(expected_root)
    remove_invisible(expected_root)
    assert titled_and_cleaned(headed_root) == expected == "top"
    assert lxml.etree.tostring(headed_root) == lxml.etree.tostring(expected_root)
    python_kernels(monkeypatch)
    slow_root = build()
    assert remove_invisible(slow_root) == fast == 1
    assert lxml.etree.tostring(fast_root) == lxml.etree.tostring(slow_root)


def test_compiled_subtree_sizes_equal_the_python_loop() -> None:
    from visdup.page import dom

    if dom._SIZES is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(7)
    for n in [0, 1, 2, 5, 50, 2000]:
        parents = [-1][:n] + [rng.randrange(i) for i in range(1, n)]  # parents come first
        python = [1] * n
        for i in range(n - 1, 0, -1):
            python[parents[i]] += python[i]
        assert dom.subtree_sizes(parents) == python
    deep = [-1, *range(9999)]  # a chain 10,000 deep
    assert dom.subtree_sizes(deep) == list(range(10000, 0, -1))
    # not a preorder (a parent after its child): the Python loop answers, as it did before
    assert dom.subtree_sizes([-1, 2, 0]) == [2, 1, 2]


@pytest.mark.skipif(weights_module._kernel is None, reason="compiled weights not built")
def test_compiled_weights_equal_python(monkeypatch) -> None:
    """Every sum, ancestor factor, depth and choice of the compiled loops is Python's, bit
    for bit (the build turns floating-point contraction off)."""
    fields = ("net", "good", "chars", "links", "teasers", "teaser_count", "linked", "factors")

    def weights_of(root) -> tuple:
        walked = _walk(root)
        w = weights_module.weigh(walked)
        path, depth = w.ancestry()
        chosen = [weights_module.choose(w, s) for s in (None, w.teasers, w.linked, w.good)]
        return (*(list(getattr(w, f)) for f in fields), list(path), list(depth), chosen)

    roots = []
    for body in PAGES:
        doc = parse_html(body)
        if doc.root is not None:
            roots.append(doc.root)
    fast = [weights_of(r) for r in roots]
    monkeypatch.setattr(weights_module, "_kernel", None)
    slow = [weights_of(r) for r in roots]
    assert fast == slow
    assert any(f[0] and max(f[4]) > 0 for f in fast)  # pages with teasers were weighed


@pytest.mark.skipif(weights_module._kernel is None, reason="compiled weights not built")
def test_compiled_key_factor_equals_python() -> None:
    """An element key's weight factor read in C is the Python words' factor, to the bit, on
    the keys of real pages, the rules' own words in every case and random keys; a key with
    an attribute that is no ASCII is left to Python."""
    from visdup.content import weights

    kernel = weights._kernel
    if kernel is None:
        pytest.skip("weights kernel not built")
    keys: set[tuple] = set()
    for body in PAGES:
        root = parse_html(body).root
        for el in root.iter() if root is not None else ():
            if isinstance(el.tag, str):
                keys.add(tuple([el.tag.lower(), *(el.get(a) for a in _KEY_ATTRS)]))
    words = [*weights.NOISE_WORDS, *weights._COMPOUND_WORDS, *weights.CONTENT_WORDS]
    for word in [*words, "more", "readMore", "load-more", "relatedx", "xrelated", "xrelatedx"]:
        keys.add(("div", word, None, None, None))
        keys.add(("span", "x " + word.upper(), word + "Box", "", None))
        keys.add(("nav", None, None, "more", word))
    rng = random.Random(3)
    letters = "aAbBmMoOrReEdDlLsShHvVwW09 -_.:"
    for _ in range(20000):
        attrs = [
            None if rng.random() < 0.3 else "".join(rng.choices(letters, k=rng.randint(0, 12)))
            for _ in range(3)
        ]
        prop = rng.choice([None, "", "articleBody", "articlebody", "name", "more"])
        keys.add((rng.choice(["div", "nav", "main", "article", "a", "aside"]), *attrs, prop))
    compared = 0
    for key in keys:
        found = kernel.key_factor(key, weights._FACTOR_TABLES)
        expected = weights._factor_of(key[0], weights._words(key), key[4])
        if found is None:
            assert not all(a is None or a.isascii() for a in key[1:]), key
            continue
        assert found == expected, key
        compared += 1
    assert compared > 20000
    assert kernel.key_factor(("div", "caf\u00e9", None, None, None), weights._FACTOR_TABLES) is None


_KEY_ATTRS = ("class", "id", "role", "itemprop")


@pytest.mark.skipif(weights_module._kernel is None, reason="compiled weights not built")
def test_compiled_weights_refuse_what_is_no_walk() -> None:
    kernel = weights_module._kernel
    with pytest.raises(ValueError):  # a parent after its child
        kernel.weigh([-1, 2, 0], [0], [1.0], [1], [0], b"\0", [1.0, 1.0, 1.0])
    with pytest.raises(ValueError):  # a paragraph owned by no element
        kernel.weigh([-1, 0], [5], [1.0], [1], [0], b"\0", [1.0, 1.0])
    with pytest.raises(ValueError):  # factors of another length
        kernel.weigh([-1, 0], [0], [1.0], [1], [0], b"\0", [1.0])
    assert kernel.weigh([], [], [], [], [], b"", []) == (b"",) * 7


def test_paragraphs_alone_equal_the_walks_paragraphs(monkeypatch) -> None:
    """The second walk of main content asks for paragraphs only: the same ones."""
    from visdup.content.blocks import walk_paragraphs

    def both(root) -> tuple:
        return (
            [(b.kind, b.level, b.text, b.chars, b.link_chars) for b in walk_paragraphs(root)],
            [(b.kind, b.level, b.text, b.chars, b.link_chars) for b in _walk(root).blocks],
        )

    roots = [doc.root for doc in map(parse_html, PAGES) if doc.root is not None]
    fast = [both(r) for r in roots]
    assert all(alone == walked for alone, walked in fast)
    python_kernels(monkeypatch)
    assert [both(r) for r in roots] == fast
    assert sum(len(alone) for alone, _ in fast) > 1000


@pytest.mark.skipif(
    stm_module._walks is None or not hasattr(stm_module._walks, "text_length"),
    reason="compiled text length not built",
)
def test_compiled_text_length_equals_xpath() -> None:
    """One element at a time, and every element of a tree from one walk (the table)."""
    from visdup.templates.signature import _TEXT_LENGTH

    kernel = stm_module._walks
    count = kernel.text_length

    def xpath(el) -> int:
        return int(_TEXT_LENGTH(el))

    def tabled(root) -> list[int]:
        table = kernel.text_lengths(root)
        return [kernel.text_length_of(table, el) for el in root.iter() if isinstance(el.tag, str)]

    def one_by_one(root) -> list[int]:
        return [count(el) for el in root.iter() if isinstance(el.tag, str)]

    checked = 0
    for body in PAGES:
        doc = parse_html(body)
        if doc.root is None:
            continue
        for el in doc.root.iter():
            if isinstance(el.tag, str):
                assert count(el) == xpath(el), lxml.etree.tostring(el)[:200]
                checked += 1
        assert tabled(doc.root) == one_by_one(doc.root)
        inner = doc.root[-1]  # a table of a subtree holds it alone
        assert tabled(inner) == one_by_one(inner)
        assert kernel.text_length_of(kernel.text_lengths(inner), doc.root) == -2
    assert checked > 5000
    # XML's four blanks collapse; NBSP and an em space are text to XPath; comments, PIs and
    # CDATA as XPath reads them; a tree 10,000 deep (built, as no parser nests so deep)
    xml = lxml.etree.XMLParser(strip_cdata=False, huge_tree=True)
    for text in (
        "<a> x \t\n\r y <b>\xa0z\u2003</b><!-- c --><?p i?><![CDATA[ q  r ]]> \u00e9\u4e00 </a>",
        "<a>" + "<b> t </b>" * 50 + "</a>",
        "<a/>",
        "<a>   </a>",
    ):
        root = lxml.etree.fromstring(text, xml)
        for el in root.iter():
            if isinstance(el.tag, str):
                assert count(el) == xpath(el), text[:60]
        assert tabled(root) == one_by_one(root), text[:60]
    deep = node = lxml.etree.Element("a")
    for _ in range(10_000):
        node = lxml.etree.SubElement(node, "b")
        node.tail = " t "
    node.text = " deep  text "
    assert count(deep) == xpath(deep) == len("deep text") + 10_000 * len(" t")
    assert tabled(deep) == one_by_one(deep)
    # an entity reference whose text the tree does not hold: XPath answers (-1)
    doc = lxml.etree.fromstring(
        '<!DOCTYPE a [<!ENTITY e "ent">]><a>x &e; y</a>',
        lxml.etree.XMLParser(resolve_entities=False),
    )
    assert count(doc) == -1
    assert count("not an element") == -1
    table = kernel.text_lengths(doc)
    assert kernel.text_length_of(table, doc) == -1
    assert kernel.text_length_of(table, "not an element") == -2
    assert kernel.text_lengths("not an element") is None


def test_layout_signature_same_with_and_without_kernel(monkeypatch) -> None:
    """The compiled layout walk gives every signature the Python walk gives: by the page's
    spine and without it, at other depths and stubs, under a small node cap, and on pages
    whose subtrees differ only in which element holds which (a(b) beside b(a))."""
    from visdup.content.visibility import remove_invisible
    from visdup.templates import signature

    if signature._kernel is None or not signature._kernel.DOM_WALK:
        pytest.skip("compiled DOM walk not built")
    mirrored = (
        "<html><body><nav><a>x</a></nav><main><article>"
        + "<p><code><em>a</em></code><em><code>b</code></em><span>c</span></p>" * 3
        + "<p><em><code>b</code></em><code><em>a</em></code></p></article></main>"
        "<footer><p>f</p></footer></body></html>"
    )
    deep = "<html><body>" + "<div><p>x</p>" * 3000 + "</div>" * 3000 + "</body></html>"

    def signatures() -> list[tuple]:
        out = []
        for body in [*PAGES, mirrored.encode(), deep.encode()]:
            doc = parse_html(body)
            if doc.root is None:
                continue
            remove_invisible(doc.root)

            def chosen(node: object, root=doc.root) -> None:
                lengths = signature.TextLengths()
                region = signature.layout_main(root, node, lengths)
                spine = signature.spine_path(region, toward=node, lengths=lengths)
                for depth, stub, cap in ((8, 2, 2000), (3, 1, 2000), (40, 4, 2000), (8, 2, 7)):
                    for by in (spine, None):
                        made = signature.layout_signature(
                            root, region, spine=by, depth=depth, stub_depth=stub, max_nodes=cap
                        )
                        out.append((made.labels, made.sizes, made.key, made.outline))

            main_content(doc.root, cleaned=True, chosen=chosen)
        return out

    fast = signatures()
    python_kernels(monkeypatch)
    assert signatures() == fast
    assert len(fast) >= 8 * len(HOSTILE)


LINK_PAGES = [
    "<body><a href='a'>1</a><a>no href</a><a href=''>empty</a><a href='  '>blank</a>"
    "<a href='\u3000\x1c'>unicode blank</a><a href=' b '>2</a><AREA HREF='c'><A HREF='d'>x</A>"
    "<p><a href='e&amp;f'>amp</a><a href='&#233;t&eacute;'>entities</a></p></body>",
    "<body><svg><a href='in-svg'>s</a></svg><template><a href='t'>t</a></template>"
    "<noscript><a href='n'>n</a></noscript><map><area href='m1'><area></map></body>",
    "<html><head><link href='not-a-link'><a href='head-a'>h</a></head><body>"
    + "".join(f"<div><a href='p{i}'>{i}</a></div>" for i in range(50))
    + "</body></html>",
]


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled walks not built",
)
@pytest.mark.parametrize("cap", [0, 1, 3, 40])
def test_compiled_links_equal_python(monkeypatch, cap: int) -> None:
    from kernels import HOLDERS

    from visdup.page import links as links_module

    assert links_module in HOLDERS
    assert stm_module._walks.links_walk(parse_html(LINK_PAGES[0].encode()).root, 0) is not None
    roots = []
    for html in [*LINK_PAGES, *(p.decode("utf-8", "replace") for p in PAGES)]:
        roots.append(parse_html(html.encode()).root)
        roots.append(lxml.html.fromstring(html))
    element = lxml.html.fromstring("<a href='self'><b><a href='inner'>i</a></b></a>")
    roots.append(element)  # the root itself is one of its links, as lxml's iter has it
    fast = [links_module.read_links(root, cap) for root in roots if root is not None]
    assert any(found.total is not None for found in fast) == (cap in (1, 3, 40))
    python_kernels(monkeypatch)
    assert fast == [links_module.read_links(root, cap) for root in roots if root is not None]


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled walks not built",
)
def test_compiled_links_on_a_tree_thousands_deep(monkeypatch) -> None:
    from visdup.page import links as links_module

    root = lxml.html.fromstring("<html><body><div>top</div></body></html>")
    el = root.find("body")
    for i in range(5000):
        el = lxml.etree.SubElement(el, "a" if i % 7 == 0 else "div", {"href": f"h{i}"})
    fast = links_module.read_links(root)
    python_kernels(monkeypatch)
    assert fast == links_module.read_links(root) and len(fast.hrefs) == 715


#: Text that links, comments and processing instructions cut, and whitespace of every kind.
PROSE = [
    "<html><body><div id='top'>lead <a href='x'>link <b>bold</b></a> tail\xa0of\u2003it"
    "<!-- c -->comment's tail<?pi p?>pi's tail<p>para<a>in <i>link</i></a>after</p>"
    "<a><div>block in a link</div></a>after link\x1c\x0b<span>\u3000</span></div>"
    "<A>capital A is no link here</A><p>caf\u00e9 \U0001f600</p></body></html>",
    "<body>" + "<div>x " * 3000 + "</div>" * 3000 + "</body>",
]


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled walks not built",
)
def test_compiled_hidden_sizes_and_outermost_equal_python() -> None:
    """own_text_sizes and outermost_of answer what visibility's Python walks answer, for
    any set of elements: nested ones, the root, links, text after comments."""
    from visdup.content import visibility
    from visdup.page.dom import outermost

    kernel = visibility._kernel
    rng = random.Random(5)
    checked = 0
    for body in [*(p.encode() for p in PROSE), *(h.encode() for h in HIDING), *PAGES]:
        root = parse_html(body).root
        if root is None:
            continue
        elements = [el for el in root.iter() if isinstance(el.tag, str)]
        for size in (1, 3, 40, len(elements)):
            chosen = rng.sample(elements, min(size, len(elements)))
            sizes = visibility._own_text_len(root)
            expected = (sizes.get(root, 0), [sizes.get(el, 0) for el in chosen])
            assert kernel.own_text_sizes(root, chosen) == expected
            assert kernel.outermost_of(root, chosen) == outermost(root, set(chosen).__contains__)
            checked += 1
    assert checked > 100
    lone = lxml.html.fromstring("<div><a>x</a></div>")  # not under root: 0, never outermost
    root = parse_html(PROSE[0].encode()).root
    assert kernel.own_text_sizes(root, [lone]) == (visibility._own_text_len(root)[root], [0])
    assert kernel.outermost_of(root, [lone]) == []
    assert kernel.own_text_sizes(root, ["not an element"]) is None


#: Selectors of every form the pooled match reads, and some it leaves to XPath.
SELECTORS = [
    "div p",
    "div > p",
    "h1 + p",
    "h1 ~ p",
    "body div.x span",
    ".a .b",
    ".a > .b",
    "#top .b",
    "div#top > p.b",
    "p.b.c",
    "ul li a",
    "li + li",
    "li ~ li.x",
    "[hidden] p",
    "p[lang=en]",
    "p[lang]",
    "DIV p",
    "div P",
    ".A",
    ".a\\:b",
    ".a b .c",
    "html > body > div",
    "* > .b",
    "div *",
    "p.x + p",
    ".x ~ .x",
    "fb:like span",
    "p:first-child",
    "div :not(.a)",
    "p[lang~=en]",
    "a[href^=x]",
    "svg|g",
    "*|p",
    "div.a .b > span + i ~ em",
    ".b",
    "#x",
    "body .\u00e9t\u00e9",
    ".tab\tx",
    ".",
    "p..x",
    "a[href$=x]",
    "a[href*=x]",
    "p[lang|=en]",
    "p[class~='b']",
    "[class^=''] p",
    "p[lang$='']",
    "a[href*='']",
    "p[lang~='']",
    "p[lang~='e n']",
    "[lang|=''] p",
    "p[data-x^=a]",
    "li[class$=x] + li",
    "p[lang=en i]",
    "p[lang!=en]",
]

SELECTOR_PAGE = (
    "<html><body><div id='top' class='a'><h1>h</h1><!-- c --><p class='b c'>1</p>"
    "<?pi x?><p class=' b\tx '>2</p><p class='x\x0by'>3</p><p lang='en' class='b'>4</p>"
    "<p lang='en-GB' data-x='ab'>4b</p><p lang='e n' class='b'>4c</p><p lang=''>4d</p>"
    "<ul><li class='x'>a</li><li>b</li><li class='x'><a href='x'>c</a></li></ul>"
    "<div class='a:b'><span class='c'>5</span></div><section hidden><p>6</p></section>"
    "<div class='a'><b class='b'><span>s</span><i>i</i><em>e</em></b></div>"
    "<fb:like><span>7</span></fb:like><p class='\u00e9t\u00e9'>8</p><div class='A'>9</div>"
    "</div><p id='x' class='x'>10</p><p class='x'>11</p></body></html>"
)


def test_pooled_selector_matches_equal_xpath() -> None:
    """A complex selector matched from its rightmost compound's elements up selects what the
    XPath cssselect writes for it selects, from the root and from a subtree."""
    from visdup.content import css, selectors

    rng = random.Random(11)
    compared = 0
    for body in [SELECTOR_PAGE.encode(), *PAGES[:: max(1, len(PAGES) // 30)]]:
        root = parse_html(body).root
        if root is None or sum(1 for _ in root.iter()) > 3000:  # XPath's "~" is quadratic
            continue
        sheets = [el.text for el in root.iter("style") if el.text]
        theirs = sorted({s for sheet in sheets for s, _ in css.style_rules(sheet)})
        everything = list(root.iter())  # one proxy per element from here on
        order = {el: n for n, el in enumerate(everything)}
        asked = SELECTORS + rng.sample(theirs, min(len(theirs), 60))
        for top in (root, root.find("body"), root.find(".//div")):
            if top is None:
                continue
            inside = set(top.iter())
            index = css._Index(top.iter())
            numbered = css._Index.of_tree(top)  # the compiled match, where it is built
            for selector in asked:
                compiled, chain = css._compile(selector), selectors.chain_of(selector)
                if compiled is None or chain is None:
                    continue
                pool = chain.pool(index)  # the elements its rightmost compound may select
                if pool is None:
                    pool = [el for el in top.iter() if isinstance(el.tag, str)]
                walk = selectors.Walk(0)  # one memo for the selector's candidates, as a page has
                found = [el for el in dict.fromkeys(pool) if chain.matches(el, top, walk)]
                found.sort(key=order.__getitem__)
                # XPath also reaches the siblings of a subtree's top ("+", "~"), which the
                # pooled match leaves to it (a page's root has none)
                expected = [el for el in top.xpath(compiled[0]) if el in inside]
                assert found == expected, selector
                pooled = css._pooled(top, selector, numbered, 10**9)
                assert pooled is None or pooled[0] == expected, selector
                compared += 1
    assert compared > 500
    # what the pooled match leaves to XPath
    for selector in ("p:first-child", "div :not(.a)", "p[lang=en i]", "p[lang!=en]", "svg|g"):
        assert selectors.chain_of(selector) is None


@pytest.mark.skipif(
    stm_module._walks is None or not stm_module._walks.DOM_WALK,
    reason="compiled DOM walk not built",
)
@pytest.mark.parametrize("few", [0, 3, 10**9])
def test_compiled_element_index_equals_the_python_loop(monkeypatch, few: int) -> None:
    """The compiled walk's index of a page (names, then elements made from their numbers one
    by one, or all at once) holds what the Python loop over ``root.iter()`` holds, element
    for element; a tree it cannot read as lxml does is left to that loop."""
    from visdup.content import css

    monkeypatch.setattr(css._Elements, "FEW", few)
    pages = [SELECTOR_PAGE.encode(), *PAGES, *(h.encode() for h in HIDING)]
    rng = random.Random(5)
    pages += [_random_page(rng).encode() for _ in range(20)]
    compared = 0
    for body in pages:
        root = parse_html(body).root
        if root is None:
            continue
        for top in (root, root.find(".//div")):
            if top is None:
                continue
            theirs, mine = css._Index(top.iter()), css._Index.of_tree(top)
            assert mine.count == theirs.count
            for name in ("tags", "classes", "ids"):
                expected, found = getattr(theirs, name), getattr(mine, name)
                assert set(found) == set(expected), name
                for key in sorted(expected, key=lambda k: rng.random()):  # any order of asking
                    got = found.get(key, [])
                    assert len(got) == len(expected[key])
                    assert all(a is b for a, b in zip(got, expected[key], strict=True)), key
                assert found.get("no such name", []) == []
            compared += 1
    assert compared > 100
    ns = lxml.etree.fromstring("<r xmlns:x='urn:x'><x:a class='c'/><b id='i'/></r>")
    assert stm_module._walks.element_names(ns) is None
    assert css._Index.of_tree(ns).classes == css._Index(ns.iter()).classes


def test_a_selector_name_no_c_string_holds_is_matched_in_python(monkeypatch) -> None:
    """A name the compiled match cannot compare as bytes (a NUL, a lone surrogate) leaves the
    selector to the Python match, which gives what XPath gives."""
    from visdup.content import css, selectors

    root = parse_html(b"<html><body><div><p class='x'>1</p><p>2</p></div></body></html>").root
    for odd in ("a\0b", "a\ud800"):
        chain = selectors.Chain([selectors.Compound(), selectors.Compound()], [" "])
        chain.compounds[0].classes.append(odd)
        chain.compounds[1].tag = "div"
        assert chain.compiled() is None
        monkeypatch.setattr(css, "chain_of", lambda _selector, chain=chain: chain)
        index = css._Index.of_tree(root)
        found = css._pooled(root, "div .x", index, 10**9)
        assert found == ([], (0, 1, 1))
    chain = selectors.chain_of("div .x")
    assert chain is not None and chain.compiled() is not None


def test_pooled_selectors_leave_deep_trees_to_xpath() -> None:
    """Walking up from the few elements a selector names asks each ancestor once per
    compound; a search that takes more steps than the tree has elements stops, and XPath
    answers: the same elements either way."""
    from visdup.content import css

    root = lxml.html.fromstring("<html><body><div>top</div></body></html>")
    el = root.find("body")
    for i in range(3000):
        el = lxml.etree.SubElement(el, "div", {"class": "x"} if i % 500 == 499 else {})
    # the Python match and the compiled one: the same steps, the same elements
    for index in (css._Index(root.iter()), css._Index.of_tree(root)):
        for selector in ("section .x", "div .x", "body div .x", "section > div .x", "div ~ .x"):
            expected = root.xpath(css._compile(selector)[0])
            found = css._pooled(root, selector, index, 10**9)
            assert found is not None and found[0] == expected, selector
            within = css._pooled(root, selector, index, index.count)
            assert within is None or within[0] == expected, selector
        assert css._pooled(root, "section .x", index, index.count) == ([], (0, 1, 1))  # one pass
        assert css._pooled(root, "body div .x", index, index.count) is None  # two passes
    body = root.find("body")
    assert css._pooled(body, "div .x", css._Index(body.iter()), 10**9) is not None
    lxml.etree.SubElement(root, "footer")  # a sibling of the subtree's top: XPath answers
    assert css._pooled(body, "div .x", css._Index(body.iter()), 10**9) is None


def _within_reference(text: str) -> Callable[[str], tuple[bool, int]]:
    """The row search as first written: from the last row's place, then before it."""
    state = {"at": 0}

    def within(own: str) -> tuple[bool, int]:
        if "  " not in text and "  " in own:
            return False, state["at"]
        at = text.find(own, state["at"])
        if at < 0:
            at = text.find(own, 0, state["at"] + len(own) - 1)
            if at < 0:
                return False, state["at"]
        state["at"] = at
        return True, at

    return within


@pytest.mark.parametrize("near, misses", [(4096, 64), (3, 1), (0, 2)])
def test_rows_are_looked_for_as_in_looks_for_them(monkeypatch, near: int, misses: int) -> None:
    """The listing's search from the last row found answers what ``in`` answers, rows in
    document order or not, and stops where the first search stopped: near the last row, in
    the whole text, or from the index of its words (``misses`` rows found nowhere make it)."""
    from visdup.content import listing

    monkeypatch.setattr(listing, "NEAR", near)
    monkeypatch.setattr(listing, "MISSES_BEFORE_WORDS", misses)
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "be", "ta al", "a", "", "x\ny", "é"]
    indexed = 0
    for _ in range(300):
        text = " ".join(rng.choice(words[:6] + words[8:]) for _ in range(rng.randint(0, 40)))
        if rng.random() < 0.2:
            text = text.replace(" ", "  ", 1)
        if rng.random() < 0.2:
            text = text.replace(" ", "\n\n", 1)
        within = listing._Within(text)
        reference = _within_reference(text)
        for _ in range(30):
            if text and rng.random() < 0.5:  # a piece of the text, between two of its spaces
                cut = text.split(" ")
                i = rng.randrange(len(cut))
                own = " ".join(cut[i : i + rng.randint(1, 5)]).strip()
            else:
                own = " ".join(rng.choice(words) for _ in range(rng.randint(1, 5))).strip()
            if not own:
                continue
            found, at = reference(own)
            assert within(own) == found == (own in text), (text, own)
            assert within.at == at, (text, own)
        indexed += within.words is not None
    assert indexed > 50 if misses < 64 else indexed == 0


def test_a_long_listing_reads_its_text_a_bounded_number_of_times() -> None:
    """Thousands of rows whose own text is nowhere in the content (their link stood inside a
    word) each cost a read of the whole text until the content's words are indexed; then a
    lookup: the whole text is read MISSES_BEFORE_WORDS times for rows of three words or more,
    however long the listing."""
    from visdup.content import listing

    rows = 3000
    items = "".join(
        f"<li>Fixed a crash in <a href='/m{i}'>m{i}</a>’s reader, patch {i}.</li>"
        for i in range(rows)
    )
    node = lxml.html.fromstring(f"<html><body><ul>{items}</ul></body></html>").find("body")
    text = " ".join(node.text_content().split())
    assert listing.rows_of_links(node, text) is False
    within = listing._Within(text)
    for i in range(rows):
        own = f"Fixed a crash in ’s reader, patch {i}."
        assert own not in text and not within(own)
    assert within.missed == listing.MISSES_BEFORE_WORDS and within.words is not None
    assert within(f"crash in m{rows - 1}’s reader") and within.at == text.rindex("crash in m")


def _random_page(rng: random.Random) -> str:
    """A small page of nested elements with classes, ids and attributes that the selectors
    below name, comments and processing instructions between them."""

    def element(depth: int) -> str:
        tag = rng.choice(["div", "p", "span", "a", "li", "section", "DIV", "b"])
        attrs = []
        if rng.random() < 0.5:
            names = rng.sample(["a", "b", "c", "a-b", "x\ty", "\u00e9", "A"], rng.randint(1, 3))
            attrs.append(f"class='{' '.join(names)}'")
        if rng.random() < 0.2:
            attrs.append(f"id='{rng.choice(['x', 'y', 'top'])}'")
        for name in rng.sample(["lang", "data-x", "href", "hidden"], rng.randint(0, 2)):
            attrs.append(f"{name}='{rng.choice(['en', 'en-GB', '', 'e n', 'ab', '-x'])}'")
        inner = ""
        for _ in range(rng.randint(0, 4) if depth < 5 else 0):
            draw = rng.random()
            inner += "<!-- c -->" if draw < 0.1 else "<?pi x?>" if draw < 0.15 else ""
            inner += element(depth + 1) if draw >= 0.15 else ""
        return f"<{tag} {' '.join(attrs)}>t{inner}</{tag}>"

    return "<html><body>" + "".join(element(0) for _ in range(rng.randint(1, 4))) + "</body></html>"


def _random_selector(rng: random.Random) -> str:
    def compound() -> str:
        text = rng.choice(["", "", "*", "div", "p", "span", "a", "li", "DIV", "b"])
        for _ in range(rng.randint(0 if text else 1, 2)):
            draw = rng.random()
            if draw < 0.4:
                text += "." + rng.choice(["a", "b", "c", "a-b", "A", "\u00e9", "x"])
            elif draw < 0.55:
                text += "#" + rng.choice(["x", "y", "top"])
            else:
                name = rng.choice(["lang", "data-x", "href", "hidden"])
                op = rng.choice(["", "=", "^=", "$=", "*=", "~=", "|="])
                value = rng.choice(["en", "en-GB", "", "e n", "ab", "x", "-x"])
                text += f"[{name}]" if not op else f"[{name}{op}'{value}']"
        return text or "*"

    selector = compound()
    for _ in range(rng.randint(0, 3)):
        selector = compound() + rng.choice([" ", " > ", " + ", " ~ "]) + selector
    return selector


def test_pooled_selectors_equal_xpath_on_random_pages() -> None:
    """Random compounds and combinators on random pages: the pooled match selects what
    cssselect's XPath selects, element for element and in document order."""
    from visdup.content import css, selectors

    rng = random.Random(2)
    compared = in_c = 0
    for _ in range(80):
        root = parse_html(_random_page(rng).encode()).root
        elements = [el for el in root.iter() if isinstance(el.tag, str)]
        index = css._Index(root.iter())
        numbered = css._Index.of_tree(root)  # matched by the compiled walk where it is built
        for _ in range(25):
            selector = _random_selector(rng)
            compiled, chain = css._compile(selector), selectors.chain_of(selector)
            if compiled is None or chain is None:
                continue
            expected = root.xpath(compiled[0])
            walk = selectors.Walk(0)
            assert [el for el in elements if chain.matches(el, root, walk)] == expected, selector
            pooled = css._pooled(root, selector, index, 10**9)
            assert pooled is None or pooled[0] == expected, selector
            pooled = css._pooled(root, selector, numbered, 10**9)
            assert pooled is None or pooled[0] == expected, selector
            in_c += pooled is not None and numbered.numbered is not None
            compared += 1
    assert compared > 1500
    if stm_module._walks is not None and stm_module._walks.DOM_WALK:
        assert in_c > 1000


CANONICAL = [
    # the first <link> whose rel names canonical (any case, among other words), href stripped
    (
        '<html><head><link rel="stylesheet" href="a.css"><link rel="Alternate CANONICAL" '
        'href=" /orig "><link rel="canonical" href="/second"></head><body><p>text of the '
        "page</p></body></html>",
        "http://site.test/orig",
    ),
    # inside what denoising removes (a hidden block): read before anything goes
    (
        "<html><body><div hidden><link rel=canonical href=/hid></div><p>text</p></body></html>",
        "http://site.test/hid",
    ),
    ("<html><head><link rel=canonical href=''></head><body><p>t</p></body></html>", None),
    ("<html><head><title>No link</title></head><body><p>t</p></body></html>", None),
]


@pytest.mark.parametrize("content", [False, True])
@pytest.mark.parametrize("template", [False, True])
@pytest.mark.parametrize("denoise", [False, True])
def test_the_canonical_link_is_the_same_whoever_reads_it(
    monkeypatch, content: bool, template: bool, denoise: bool
) -> None:
    """Read by its own walk (nothing cleans the page) or named by the invisible-node scan
    (the page is cleaned): the same link, with the kernels and without."""
    from visdup.dedup.analysis import AnalysisOptions, analyse

    options = AnalysisOptions(content=content, template=template, denoise_term=denoise)

    def run() -> list[str | None]:
        return [
            analyse(page.encode(), url="http://site.test/a/b", options=options).canonical
            for page, _ in CANONICAL
        ]

    assert run() == [expected for _, expected in CANONICAL]
    python_kernels(monkeypatch)
    assert run() == [expected for _, expected in CANONICAL]


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b"<p>ascii only</p>", None),
        ("<meta charset=utf-8><p>éü — 日本語 😀</p>".encode(), None),
        (b"\xef\xbb\xbf" + "<p>BOM then é</p>".encode(), None),
        ("<p>header says so: ü</p>".encode(), "text/html; charset=UTF-8"),
        ("<p>header lies: ü</p>".encode(), "text/html; charset=iso-8859-1"),
        ("<p>a literal \ufffd in the page</p>".encode(), None),
        (b"<p>broken \xff\xfe bytes \xc3</p>", None),
        (b"<p>\xc3\xa9 then one bad byte \xff then \xc3\xa9 again</p>", None),
        ("<meta charset=windows-1251><p>кириллица</p>".encode("cp1251"), None),
    ],
)
def test_utf8_bytes_parse_as_their_decoded_text(body: bytes, content_type: str | None) -> None:
    """A page read as UTF-8 with nothing replaced is parsed from its own bytes: the same tree,
    encoding and replacement ratio as parsing the decoded text's UTF-8."""
    import lxml.etree

    from visdup.page.parse import decode

    doc = parse_html(body, content_type=content_type)
    encoding, text = decode(body, content_type)
    parser = lxml.etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    expected = lxml.etree.fromstring(text.encode("utf-8", "surrogatepass"), parser=parser)
    assert lxml.etree.tostring(doc.root, encoding="unicode") == lxml.etree.tostring(
        expected, encoding="unicode"
    )
    assert doc.encoding == encoding
    assert doc.replacement_ratio == text.count("\ufffd") / max(1, len(text))
