from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trees import preorder

from visdup.errors import InputError
from visdup.structure.term import (
    Term,
    TermSyntaxError,
    compress,
    compress_python,
    equivalent,
    join,
    page_term,
    translate,
)

# ---------------------------------------------------------------- the naive oracle (§1.3-1.6)
# Nested tuples (label, mark, (children...)), recursive: only for small random terms.


def nested(t: Term, i: int = 0):
    return (t.labels[i], t.marks[i], tuple(nested(t, c) for c in t.children(i)))


def flat(n) -> Term:
    return Term(*preorder(n))


def equiv(a, b) -> bool:
    return (
        a[0] == b[0]
        and len(a[2]) == len(b[2])
        and all(equiv(x, y) for x, y in zip(a[2], b[2], strict=True))
    )


def naive_join(a, b, k1=1, k2=1, p=1):
    m = math.ceil((a[1] * k1 + b[1] * k2) / p)
    return (
        a[0],
        m,
        tuple(
            naive_join(x, y, k1 * a[1], k2 * b[1], p * m) for x, y in zip(a[2], b[2], strict=True)
        ),
    )


def hrz(t):
    packed = []
    for kid in t[2]:
        if packed and equiv(packed[-1], kid):
            packed[-1] = naive_join(packed[-1], kid)
        else:
            packed.append(kid)
    return (t[0], t[1], tuple(hrz(k) for k in packed))


def safe(t) -> bool:
    label, mark, kids = t
    if mark != 1 or len(kids) != 1:
        return False
    if kids[0][0] == "text":
        return False
    return not (label == "grp" and kids[0][0] != "grp")


def shr(t):
    kid = t[2][0]
    if kid[1] == 1 and kid[0] != "grp":
        return (t[0], t[1], kid[2])
    return kid


def vrt(t):
    if not t[2]:
        return t
    if safe(t):
        return vrt(shr(t))
    return (t[0], t[1], tuple(vrt(k) for k in t[2]))


def naive_compress(t):
    while True:
        nxt = hrz(vrt(t))
        if nxt == t:
            return t
        t = nxt


LABELS = st.sampled_from(["grp", "row", "col", "text"])


def terms(max_leaves: int = 25, marks: bool = False):
    mark = st.integers(1, 4) if marks else st.just(1)
    leaf = st.tuples(LABELS, mark, st.just(()))
    return st.recursive(
        leaf,
        lambda kids: st.tuples(LABELS, mark, st.lists(kids, min_size=1, max_size=5).map(tuple)),
        max_leaves=max_leaves,
    )


def templated_terms():
    """Terms with many repeated siblings, the case compression exists for."""
    base = terms(6)
    return st.tuples(LABELS, base, st.lists(st.integers(1, 4), min_size=1, max_size=4)).map(
        lambda x: (x[0], 1, tuple(x[1] for _ in range(sum(x[2]))))
    )


# ---------------------------------------------------------------- the paper's examples


def test_example_4_1():
    t = Term.parse("grp(row(text,text),row(text,text,text,text,text))")
    assert str(compress(t)) == "grp([2]row([4]text))"


def test_example_4_3_cumulative_join():
    a = Term.parse("[3]grp([4]row([8]col))")
    b = Term.parse("[5]grp([2]row([6]col))")
    assert str(join(a, b)) == "[8]grp([3]row([7]col))"


def test_join_needs_equivalent_terms():
    with pytest.raises(ValueError):
        join(Term.parse("grp(row)"), Term.parse("grp(col)"))


def test_figure_1_table_and_list_translate_alike():
    table = (
        b"<html><body><table>"
        + b"".join(b"<tr><td>Item %d</td></tr>" % i for i in range(5))
        + b"</table></body></html>"
    )
    ul = b"<html><body><ul>" + b"".join(b"<li>Item %d</li>" % i for i in range(5)) + b"</ul>"
    ul += b"</body></html>"
    t, s = page_term(table), page_term(ul)
    assert t.nodes <= 4 and s.nodes <= 4
    assert str(s) == "grp([5]row(text))"


# ---------------------------------------------------------------- text form


@given(terms(marks=True))
@settings(max_examples=300, deadline=None)
def test_round_trip(n):
    t = flat(n)
    assert Term.parse(str(t)) == t
    assert nested(Term.parse(str(t))) == n


def test_canonical_form_omits_mark_one():
    t = Term.parse("[1]grp( [2]row ( [4]text ) )")
    assert str(t) == "grp([2]row([4]text))"
    assert t.size == 1 + 2 + 4
    assert t.nodes == 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "grp(",
        "grp(row",
        "grp)",
        "grp(row,)",
        "[0]grp",
        "[x]grp",
        "grp row",
        "grp(row))",
        "(",
        "1",
    ],
)
def test_malformed_term_text(text):
    with pytest.raises(TermSyntaxError):
        Term.parse(text)


def test_deep_term_text_parses_and_prints_without_recursion():
    depth = 100_000
    text = "grp(" * depth + "text" + ")" * depth
    t = Term.parse(text)
    assert t.nodes == depth + 1
    assert str(t) == text
    assert str(compress(t)) == "grp(text)"
    assert t.depth == depth + 1


# ---------------------------------------------------------------- compression


@given(terms())
@settings(max_examples=2000, deadline=None)
def test_one_pass_agrees_with_naive_fixpoint(n):
    assert nested(compress(flat(n))) == naive_compress(n)


@given(terms(marks=True))
@settings(max_examples=1000, deadline=None)
def test_python_reference_agrees_with_naive_fixpoint(n):
    assert nested(compress_python(flat(n))) == naive_compress(n)


@given(templated_terms())
@settings(max_examples=1000, deadline=None)
def test_one_pass_agrees_on_repetitive_terms(n):
    assert nested(compress(flat(n))) == naive_compress(n)


@given(terms(marks=True))
@settings(max_examples=1000, deadline=None)
def test_one_pass_agrees_with_marked_input(n):
    assert nested(compress(flat(n))) == naive_compress(n)


@given(terms())
@settings(max_examples=500, deadline=None)
def test_compression_reaches_a_fixpoint(n):
    once = compress(flat(n))
    assert compress(once) == once
    assert once.nodes <= flat(n).nodes


def test_equivalent_ignores_marks():
    assert equivalent(Term.parse("grp([2]row(text))"), Term.parse("[3]grp(row([9]text))"))
    assert not equivalent(Term.parse("grp(row(text))"), Term.parse("grp(row(text,text))"))


# ---------------------------------------------------------------- translation


def test_inline_runs_are_one_text_leaf_and_invisible_elements_vanish():
    html = (
        "<html><head><title>t</title><style>p{}</style></head><body>"
        "<p>Hello <b>bold</b> and <a href=#>link</a> <span>more</span></p>"
        "<script>var x;</script><template><div>x</div></template>"
        "<div hidden><p>secret</p></div><div style='display: none'>gone</div>"
        "<input type=hidden value=1></body></html>"
    )
    assert str(page_term(html)) == "grp(text)"


def test_block_inside_inline_is_kept():
    html = "<html><body><a href=#><div>card one</div><div>card two</div></a></body></html>"
    assert str(page_term(html)) == "[2]grp(text)"
    raw = translate(__import__("lxml.html").html.fromstring(html)).term
    assert raw.labels.count("grp") >= 3


def test_images_are_content():
    assert str(page_term("<html><body><div><img src=a.png></div></body></html>")) == "grp(text)"


def test_classes_can_be_overridden():
    html = "<html><body><p>plain <b>bold</b> plain</p></body></html>"
    assert str(page_term(html)) == "grp(text)"
    assert str(page_term(html, classes={"b": "row"})) == "grp(text,row(text),text)"
    assert str(page_term(html, classes={"B": None})) == "grp(text)"
    with pytest.raises(ValueError):
        page_term(html, classes={"section": "banana"})


def test_bytes_with_encoding_and_lxml_tree_agree():
    import lxml.html

    text = (
        "<html><head><meta charset=utf-8></head><body><ul><li>é</li><li>ü</li></ul></body></html>"
    )
    a = page_term(text)
    b = page_term(text.encode("utf-8"))
    c = page_term(lxml.html.document_fromstring(text))
    assert a == b == c


@pytest.mark.parametrize(
    "body, problem",
    [(b"", "empty"), (b"   \n ", "empty"), (bytes(range(256)) * 64, "binary")],
)
def test_unusable_pages_raise_input_error(body, problem):
    with pytest.raises(InputError, match=problem):
        page_term(body)


def test_very_deep_page_is_marked_truncated_not_crashing():
    from visdup.page.parse import parse_html
    from visdup.structure.term import document_term, translate_python

    depth = 100_000
    html = b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"
    doc = parse_html(html)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # nothing below may recurse over the tree's depth
    try:
        raw, term = document_term(doc)
        python_raw = translate_python(doc.root).term
        python_term = compress_python(python_raw)
    finally:
        sys.setrecursionlimit(old)
    assert doc.truncated
    assert raw.nodes > 2000 and term.nodes < 10
    assert python_raw == raw and python_term == term
