"""The compiled term kernel (visdup._native._term) against the Python reference implementations.

Both must give exactly the same terms: the kernel replaces translate_python and
compress_python wherever it is built, so any difference would change page verdicts
depending on whether a compiler was present at install time.
"""

from __future__ import annotations

import gzip
import random
import threading
from pathlib import Path

import lxml.etree
import lxml.html
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visdup.page.parse import parse_html
from visdup.structure.classes import class_table as _classes
from visdup.structure.term import (
    REPLACED,
    Term,
    compress_python,
    translate_python,
)

_term = pytest.importorskip("visdup._native._term")

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
NAMES = ("grp", "row", "col", "text")
CODE = {"grp": 0, "row": 1, "col": 2, "text": 3, None: -1}


def class_codes(overrides=None) -> dict[str, int]:
    return {tag: CODE[cls] for tag, cls in _classes(overrides).items()}


DEFAULT_CODES = class_codes()


def c_translate(root, overrides=None, replaced=REPLACED) -> tuple[Term, int]:
    codes = DEFAULT_CODES if overrides is None else class_codes(overrides)
    labels, sizes, depth = _term.translate(root, codes, replaced)
    assert len(labels) == len(sizes)
    return Term.from_arrays([NAMES[c] for c in labels], [1] * len(labels), sizes), depth


def c_compress(t: Term) -> Term:
    labels, marks, sizes = _term.compress(bytes(CODE[x] for x in t.labels), list(t.marks), t.sizes)
    return Term.from_arrays([NAMES[c] for c in labels], marks, sizes)


def same_translation(root, overrides=None) -> Term:
    expected = translate_python(root, overrides)
    got, depth = c_translate(root, overrides)
    assert got == expected.term
    assert depth == expected.depth
    return got


# ---------------------------------------------------------------- translate: edge cases


def body_term(html: str) -> str:
    doc = parse_html(html)
    assert doc.root is not None
    return str(same_translation(doc.root))


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<div>a<b>b</b>c</div>", "grp(grp(grp(text)))"),
        ("<div>a<p>b</p>c</div>", "grp(grp(grp(text,grp(text),text)))"),
        ("<div hidden>x</div><p>y</p>", "grp(grp(grp(text)))"),
        ('<div style="display:none">x</div><p>y</p>', "grp(grp(grp(text)))"),
        ('<div style="DISPLAY :\t NONE">x</div><p>y</p>', "grp(grp(grp(text)))"),
        ('<div style="visibility : Hidden">x</div>', "grp(grp)"),
        ('<div style="display:block">x</div>', "grp(grp(grp(text)))"),
        ('<input type="HIDDEN"><p>y</p>', "grp(grp(grp(text)))"),
        ('<input type="text"><p>y</p>', "grp(grp(text,grp(text)))"),
        ("<p><img src=a.png><img src=b.png></p>", "grp(grp(grp(text)))"),
        ("<p><svg><g><text>x</text></g></svg></p>", "grp(grp(grp(text)))"),
        ("<ul><li>a</li><li>b</li></ul>", "grp(grp(grp(row(text),row(text))))"),
        ("<p>\u00a0\u2003\n</p>", "grp(grp(grp))"),
        ("<p>&nbsp;x</p>", "grp(grp(grp(text)))"),
        ("<div><script>var a = 1;</script><style>p{}</style></div>", "grp(grp(grp))"),
        ("<span>a</span><span>b</span><div>c</div><span>d</span>", "grp(grp(text,grp(text),text))"),
        (
            "<table><tr><td>1</td><td>2</td></tr></table>",
            "grp(grp(grp(row(col(text),col(text)))))",  # libxml2 adds no tbody
        ),
    ],
)
def test_translate_edge_cases(html, expected):
    assert body_term(f"<html><body>{html}</body></html>") == expected


EDGE_PAGES = [
    "<html><body></body></html>",
    "<html><head><title>t</title></head><body>   </body></html>",
    "<p>a<!-- note -->b<?pi x?>c</p><div>d<!-- c -->  </div>e",
    "<div><em>a <p>block</p> b</em> tail <span> </span> more</div>",
    "<div>\u00a0<b>\u00a0</b>\u3000</div><p>\u2028\u2029\u202f\u205f\u1680\x85</p>",
    "<div>\u200b</div><div>\ufeff</div>",  # zero-width space and BOM are not whitespace
    "<div style='color:red; display : none'>x</div><div style='displaynone'>y</div>",
    "<div style='dİsplay:none'>x</div><div style='vıſıbility:hidden'>y</div>",
    "<div style='visibility:\u00a0hidden'>x</div><div style='display:nonesuch'>y</div>",
    "<input type=hidden value=1><input type=' hidden'><input>",
    "<p type=hidden>only inputs hide by type</p><ol type=HIDDEN><li>x</li></ol>",
    "<button>b</button><select><option>o</option></select><textarea> </textarea>",
    "<video><source src=x></video><audio></audio><canvas></canvas><iframe></iframe>",
    "<noscript><p>x</p></noscript><template><p>y</p></template>",
    "<dl><dt>a</dt><dd>b</dd><dt>c</dt><dd>d</dd></dl>",
    "<h1>t</h1><hr><h2>u</h2><figure><img><figcaption>c</figcaption></figure>",
    "<form><fieldset><legend>l</legend><label>n <input name=a></label></fieldset></form>",
    "<div hidden><p>a</p></div>after<p hidden>x</p>tail after hidden",
    "<a href=#><div>block in inline</div></a> and <a>inline</a>",
    "<pre>  code\n  more </pre><blockquote>q</blockquote><address>a</address>",
    "<table><caption>c</caption><thead><tr><th>h</th></tr></thead>"
    "<tbody><tr><td></td><td> </td></tr></tbody></table>",
    "<ul><li><ul><li>a</li><li>b</li></ul></li><li><ul><li>c</li></ul></li></ul>",
    "<p>x<br>y<wbr>z</p><center>c</center><font>f</font><marquee>m</marquee>",
    "<DIV>upper</DIV><Span>mixed</Span><P Hidden>gone</P>",
    "<frameset><frame src=a></frameset>",
    "<main><article><section><header>h</header><p>p</p><footer>f</footer></section>"
    "</article><aside>a</aside><nav><ul><li>n</li></ul></nav></main>",
]


@pytest.mark.parametrize("html", EDGE_PAGES)
def test_translate_matches_python_on_edge_pages(html):
    # parse_html drops comments; lxml's own parser keeps them (their tails vanish from .tail)
    doc = parse_html(html)
    if doc.root is not None:
        same_translation(doc.root)
    same_translation(lxml.html.document_fromstring(f"<html><body>{html}</body></html>"))
    same_translation(lxml.html.fragment_fromstring(html, create_parent="div"))


def test_translate_subtrees_and_non_html_roots():
    root = lxml.html.document_fromstring(
        "<html><head><title>t</title></head><body><div>a<p>b</p></div>"
        "<ul><li>x</li></ul>ul tail<span>s<b>t</b></span>tail<div><p>p</p></div>div tail"
        "</body></html>"
    )
    for el in root.iter():
        same_translation(el)  # every element as the root: head (never rendered), li, span, ...
    comment = lxml.etree.Comment("c")
    with pytest.raises(ValueError):
        translate_python(comment)
    with pytest.raises(ValueError):
        c_translate(comment)


def test_translate_with_overridden_classes():
    root = lxml.html.document_fromstring(
        "<html><body><div>a<span>s</span><p>b</p></div><x-card>c</x-card></body></html>"
    )
    same_translation(root, {"span": "row", "div": None, "x-card": "col"})
    same_translation(root, {"body": "text", "html": None})
    replaced_less, _ = c_translate(
        lxml.html.fragment_fromstring("<p><img><img></p>"), replaced=frozenset()
    )
    assert str(replaced_less) == "grp"  # without REPLACED an empty img shows nothing


def test_translate_xml_trees_namespaces_and_entities():
    xml = (
        b'<?xml version="1.0"?><!DOCTYPE html [<!ENTITY e "ent">]>'
        b'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:v="urn:v"><body>'
        b"<div>a &e; b<P>upper</P><v:row>r</v:row></div><INPUT TYPE='hidden'/>"
        b"<input type='hidden'/><p v:hidden='1'>ns attr</p><p hidden=''>h</p>"
        b"<![CDATA[  ]]><p><![CDATA[cdata text]]></p></body></html>"
    )
    for resolve in (True, False):
        parser = lxml.etree.XMLParser(resolve_entities=resolve)
        root = lxml.etree.fromstring(xml, parser)
        same_translation(root)
        for el in root.iter(lxml.etree.Element):
            same_translation(el)
    plain = lxml.etree.fromstring(
        b"<html><body><div>a &amp; <P style='DISPLAY:NONE'>x</P><INPUT TYPE='Hidden'/>"
        b"<Input type='hidden'/></div></body></html>"
    )
    same_translation(plain)


def test_translate_api_built_trees_with_unicode_tags():
    root = lxml.etree.Element("html")
    body = lxml.etree.SubElement(root, "body")
    for tag in ("DIV", "Ünïcode", "\u212aBD", "li", "p"):
        el = lxml.etree.SubElement(body, tag)
        el.text = "x"
        el.tail = "\u00a0"
    same_translation(root, {"ünïcode": "row", "kbd": "col"})


def test_translate_deep_trees():
    deep = "<html><body>" + "<div>x" * 3000 + "</div>" * 3000 + "</body></html>"
    doc = parse_html(deep)
    assert doc.root is not None
    term = same_translation(doc.root)
    assert term.nodes > 2000
    # lxml's API nests without the parser's limit
    root = lxml.etree.Element("html")
    el = root
    for i in range(10_000):
        el = lxml.etree.SubElement(el, ("div", "span", "li")[i % 3])
        el.text = "t" if i % 7 else " "
        el.tail = "u" if i % 5 == 0 else None
    term = same_translation(root)
    assert term.depth > 5000
    assert c_compress(term) == compress_python(term)


def test_translate_rejects_bad_arguments():
    with pytest.raises(TypeError):
        _term.translate("<p>", DEFAULT_CODES, REPLACED)
    with pytest.raises(TypeError):
        _term.translate(lxml.html.fragment_fromstring("<p>x</p>"), [], REPLACED)
    root = lxml.html.fragment_fromstring("<div><p>x</p></div>")
    with pytest.raises(ValueError, match=r"-1\.\.3"):
        _term.translate(root, {**DEFAULT_CODES, "p": 7}, REPLACED)


# ---------------------------------------------------------------- translate + compress: real pages


def real_pages() -> list[tuple[str, bytes]]:
    pages = []
    site = DATA / "warpcore" / "site"
    if site.is_dir():
        pages += [(str(p), p.read_bytes()) for p in sorted(site.rglob("*.html"))]
    aeb = DATA / "aeb" / "html"
    if aeb.is_dir():
        pages += [
            (str(p), gzip.decompress(p.read_bytes())) for p in sorted(aeb.glob("*.html.gz"))[:200]
        ]
    return pages


@pytest.fixture(scope="module")
def pages():
    found = real_pages()
    if not found:
        pytest.skip(f"development data under {DATA} is absent")
    return found


def test_real_pages_translate_and_compress_match(pages):
    checked = 0
    for name, data in pages:
        doc = parse_html(data)
        if doc.root is None:
            continue
        raw = translate_python(doc.root).term
        got, _ = c_translate(doc.root)
        assert got == raw, name
        assert c_compress(raw) == compress_python(raw), name
        checked += 1
    assert checked > len(pages) * 0.9


def test_real_pages_with_comments_match(pages):
    rng = random.Random(7)
    for _, data in rng.sample(pages, min(120, len(pages))):
        try:
            root = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError):
            continue
        same_translation(root)
        body = root.find("body")
        if body is not None:
            same_translation(body)


# ---------------------------------------------------------------- compress: random terms


LABELS = st.sampled_from(NAMES)


def nested_terms(max_leaves: int = 30, marks: bool = True):
    mark = st.integers(1, 4) if marks else st.just(1)
    leaf = st.tuples(LABELS, mark, st.just(()))
    return st.recursive(
        leaf,
        lambda kids: st.tuples(LABELS, mark, st.lists(kids, min_size=1, max_size=5).map(tuple)),
        max_leaves=max_leaves,
    )


@st.composite
def repetitive_terms(draw):
    """Runs of repeated subtrees (with fresh marks), nested: what pages made of lists look like."""
    unit = draw(nested_terms(8))
    label = draw(LABELS)

    def remark(node):
        return (node[0], draw(st.integers(1, 4)), tuple(remark(k) for k in node[2]))

    kids = []
    for _ in range(draw(st.integers(1, 4))):
        kids += [remark(unit) for _ in range(draw(st.integers(1, 4)))]
        if draw(st.booleans()):
            kids.append(draw(nested_terms(4)))
    inner = (label, 1, tuple(kids))
    chain = draw(st.lists(st.tuples(LABELS, st.integers(1, 2)), max_size=3))
    for lab, mark in chain:
        inner = (lab, mark, (inner,) * draw(st.integers(1, 3)))
    return inner


def flat(node) -> Term:
    labels, marks, parents = [], [], []
    stack = [(node, -1)]
    while stack:
        (label, mark, kids), parent = stack.pop()
        index = len(labels)
        labels.append(label)
        marks.append(mark)
        parents.append(parent)
        stack.extend((k, index) for k in reversed(kids))
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return Term(labels, marks, sizes)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_terms())
def test_compress_matches_python_on_random_terms(node):
    t = flat(node)
    assert c_compress(t) == compress_python(t)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repetitive_terms())
def test_compress_matches_python_on_repetitive_terms(node):
    t = flat(node)
    assert c_compress(t) == compress_python(t)


@settings(max_examples=300, deadline=None)
@given(nested_terms(20, marks=False))
def test_compress_accepts_none_for_unit_marks(node):
    t = flat(node)
    labels, marks, sizes = _term.compress(bytes(CODE[x] for x in t.labels), None, list(t.sizes))
    assert (labels, marks, sizes) == _term.compress(
        bytes(CODE[x] for x in t.labels), [1] * t.nodes, list(t.sizes)
    )


def test_compress_paper_examples():
    t = Term.parse("grp(row(text,text),row(text,text,text,text,text))")
    assert str(c_compress(t)) == "grp([2]row([4]text))"
    t = Term.parse("grp([3]grp([4]row([8]col)),[5]grp([2]row([6]col)))")
    assert c_compress(t) == compress_python(t)
    assert str(c_compress(Term.parse("text"))) == "text"


def chain_pair(depth: int, mark: int) -> Term:
    """grp(x, x) where x is a chain of `depth` nodes marked `mark`: join multiplies marks."""
    one = ("row", mark, ())
    for _ in range(depth - 1):
        one = ("row", mark, (one,))
    return flat(("grp", 1, (one, one)))


def test_compress_beyond_64_bits_or_overflow():
    wide = chain_pair(40, 4)  # ancestor products reach 4**40 = 2**80
    assert c_compress(wide) == compress_python(wide)
    huge = chain_pair(80, 4)  # 2**160: beyond the kernel's integers
    with pytest.raises(OverflowError):
        c_compress(huge)
    big_mark = Term.from_arrays(["grp", "row"], [1, 2**63], [2, 1])
    with pytest.raises(OverflowError):
        c_compress(big_mark)


def test_compress_rejects_inconsistent_arrays():
    with pytest.raises(ValueError):
        _term.compress(b"\x00\x03", [1, 1], [3, 1])
    with pytest.raises(ValueError):
        _term.compress(b"\x00\x03\x03", [1, 1, 1], [2, 2, 1])
    with pytest.raises(ValueError):
        _term.compress(b"\x00\x03", [1, 0], [2, 1])
    with pytest.raises(ValueError):
        _term.compress(b"\x00\x03", [1], [2, 1])
    with pytest.raises(ValueError):
        _term.compress(b"", [], [])
    with pytest.raises(TypeError):
        _term.compress(b"\x00", 5, [1])


def test_compress_deep_chains_and_wide_levels():
    labels = ["grp"] * 20_000 + ["text"]
    chain = Term(labels, [1] * len(labels), list(range(len(labels), 0, -1)))
    assert c_compress(chain) == compress_python(chain)
    rows = Term.parse("grp(" + ",".join(["row(col(text),col(text))"] * 5000) + ")")
    assert str(c_compress(rows)) == "grp([5000]row([2]col(text)))"


def test_compress_runs_in_threads():
    rng = random.Random(3)
    terms: list[Term] = []
    for _ in range(20):
        width = rng.randint(50, 400)
        terms.append(
            Term.parse(
                "grp("
                + ",".join(
                    rng.choice(["row(text)", "row(col,col)", "grp(text)"]) for _ in range(width)
                )
                + ")"
            )
        )
    expected = [compress_python(t) for t in terms]
    failures: list[int] = []

    def work():
        for _ in range(20):
            for i, t in enumerate(terms):
                if c_compress(t) != expected[i]:
                    failures.append(i)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures


# ------------------------------------------------------------------ the text form


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_terms())
def test_print_matches_python_on_random_terms(node):
    t = flat(node)
    text = _term.print_term(t.labels, t.marks, t.sizes)
    assert text == t._print_python()
    assert Term.parse(text) == t


ODD_LABELS = st.sampled_from(["", "(", ")", ",", "[2]", "é", "ß", "文字", "a b", "\U0001f600"])
ANY_INT = st.one_of(st.integers(-3, 5), st.integers(-(2**63), 2**63 - 1), st.integers(2**63, 2**70))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.one_of(LABELS, ODD_LABELS), ANY_INT, ANY_INT), max_size=12))
def test_print_matches_python_on_any_tuples(nodes):
    """Sizes that nest or not, marks of any sign or width, labels of any text: the kernel
    prints what Python prints, or leaves the term to Python (marks and sizes past 64 bits)."""
    labels = tuple(label for label, _m, _s in nodes)
    marks = tuple(mark for _l, mark, _s in nodes)
    sizes = tuple(size for _l, _m, size in nodes)
    term = Term(labels, marks, sizes)
    text = _term.print_term(labels, marks, sizes)
    if text is None:
        assert any(not -(2**63) <= v < 2**63 for v in (*marks, *sizes))
    else:
        assert text == term._print_python()


def test_a_label_that_reads_as_a_bracket_prints_as_a_label():
    """A node labelled ``(`` is no opening of children: the node after it takes its comma,
    in the kernel and in Python alike."""
    for nodes in ([("(", 1, 0), ("grp", 0, 0)], [("row", 1, 2), ("(", 1, 0), ("grp", 1, 0)]):
        labels, marks, sizes = (tuple(x[k] for x in nodes) for k in range(3))
        printed = Term(labels, marks, sizes)._print_python()
        assert printed == _term.print_term(labels, marks, sizes)
        assert printed in ("(,[0]grp", "row((),grp")


def test_print_sizes_far_past_the_term():
    for sizes in [(0, 2**63 - 1), (2**63 - 1, 2**63 - 1, 1), (3, 2**62, 2)]:
        term = Term(("grp",) * len(sizes), (1,) * len(sizes), sizes)
        assert _term.print_term(term.labels, term.marks, term.sizes) == term._print_python()


def test_print_leaves_python_what_only_python_prints():
    assert _term.print_term((1,), (1,), (1,)) is None  # a label that is no str
    assert _term.print_term(("grp",), (True,), (1,)) is None  # an int subclass
    assert _term.print_term(("\ud800",), (1,), (1,)) is None  # a lone surrogate
    assert _term.print_term(("grp", "row"), (1,), (2, 1)) is None  # unequal lengths
    assert _term.print_term((), (), ()) == ""
    odd = Term(("\ud800", "row"), (True, 2), (2, 1))
    assert str(odd) == odd._print_python() == "\ud800([2]row)"
    with pytest.raises(TypeError):
        _term.print_term(["grp"], (1,), (1,))


def test_print_deep_chain():
    n = 20_000
    t = Term(["grp"] * n, [1] * n, list(range(n, 0, -1)))
    assert _term.print_term(t.labels, t.marks, t.sizes) == t._print_python()
