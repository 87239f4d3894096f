"""A page's style sheets read the first time: the compiled scan (``visdup._native._css``)
gives what Python gives, and a plain selector is parsed as cssselect parses it.

``style_rules`` reads a page's own sheets for the rules that can hide something. The kernel
scans the braces and leaves out the rules whose body names none of the hiding properties;
Python reads the rest as before. Held to the Python scan on adversarial sheets (braces left
open or closed twice, at-rules in every case, comments, blanks outside ASCII, property names
in any case and with letters that lowercase oddly) and on real pages' sheets; the rightmost
compound of a selector read backwards is the one the search at its end finds; a selector of
plain compounds and combinators gets cssselect's own tree without its tokenizer, and a
selector the pooled match reads needs no XPath for its specificity.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cssselect import SelectorError
from cssselect import parse as css_parse
from hypothesis import given, settings
from hypothesis import strategies as st

from visdup.content import css
from visdup.content.css import _key_names, _rule_bodies, declarations, style_rules
from visdup.content.selectors import _plain_parse, chain_of, parsed

try:
    from visdup._native import _css
except ImportError:  # built without a compiler: the Python scan alone
    _css = None

needs_kernel = pytest.mark.skipif(_css is None, reason="style-sheet kernel not built")

READABILITY = Path(__file__).resolve().parents[2] / "shared" / "data" / "readability-pages"

#: What the scan and the property filter turn on: braces, rule and declaration separators,
#: at-rules the page applies and ones it does not, comments, every hiding property in several
#: cases (and inside longer names), blanks of every kind Python strips, and letters outside
#: ASCII whose lowercase differs in length (U+0130) or falls in ASCII (the Kelvin sign).
PIECES = [
    "{", "}", "{", "}", ";", ":", ",", " ", "\n", "\t", "\x0c", "\xa0", "\u2003", "\u3000",
    "@media screen", "@MEDIA ALL", "@media print", "@media screen and (min-width:1px)",
    "@font-face", "@supports (x:y)", "@", "/*", "*/", "a", ".x", "#y", "div > p", "li + li",
    ":hover", "::before", "display", "DISPLAY", "Display", "visibility", "position", "opacity",
    "clip", "clip-path", "left", "margin-left", "text-indent", "TEXT-INDENT", "none", "hidden",
    "fixed", "0", "-9999px", "rect(0 0 0 0)", "!important", "color", "red", "\u0130",
    "d\u0130splay", "\u212a", "\u017f", "\U0001f600", "\u00e9",
]  # fmt: skip

sheets = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


def _python_rules(text: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, css.Declarations]]:
    with monkeypatch.context() as patch:
        patch.setattr(css, "_css_kernel", None)
        return list(style_rules(text))


@settings(max_examples=400, deadline=None)
@given(text=sheets)
def test_the_compiled_scan_reads_the_rules_python_reads(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert list(style_rules(text)) == _python_rules(text, monkeypatch)


@needs_kernel
@settings(max_examples=400, deadline=None)
@given(text=sheets)
def test_the_compiled_scan_leaves_out_only_rules_without_a_hiding_property(text: str) -> None:
    blanked = css._CSS_COMMENT.sub(" ", text)
    every = list(_rule_bodies(blanked))
    kept = _css.rule_bodies(blanked)
    # what it keeps is Python's, in Python's order; what it leaves out declares nothing
    found = iter(every)
    assert all(any(pair == other for other in found) for pair in kept)
    assert [pair for pair in every if declarations(pair[1])] == [
        pair for pair in kept if declarations(pair[1])
    ]


@needs_kernel
def test_deep_and_broken_sheets() -> None:
    deep = "a{" * 200_000 + "display:none" + "}" * 199_999
    assert _css.rule_bodies(deep) == []  # the rules holding blocks are skipped, none closes
    assert list(_rule_bodies(deep)) == []
    sheet = "}}} .a{display:none} @media screen{ .b {position:fixed} } .c{display:none"
    assert _css.rule_bodies(sheet) == list(_rule_bodies(sheet))
    assert [s for s, _ in style_rules(sheet)] == [".a", ".b"]
    with pytest.raises(TypeError):
        _css.rule_bodies(b".a{display:none}")


def test_real_pages_sheets_read_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = sorted((READABILITY / "pages").glob("*/source.html"))
    if not pages:
        pytest.skip("../shared/data/readability-pages is absent")
    style = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL | re.IGNORECASE)
    inline = re.compile(r'\sstyle\s*=\s*"([^"]*)"', re.IGNORECASE)
    read = styles = 0
    for page in pages:
        html = page.read_text("utf-8", errors="replace")
        for text in style.findall(html):
            assert list(style_rules(text)) == _python_rules(text, monkeypatch)
            read += 1
        for text in inline.findall(html):
            assert declarations(text) == _declarations_before(text)
            styles += 1
    assert read > 100 and styles > 1000


def _searched(selector: str) -> tuple[tuple[str, ...], tuple[str, ...], str | None] | None:
    """_key_names as a search for the compound at the selector's end reads it."""
    m = re.search(r"([^\s>+~]+)\s*$", selector)
    if not m:
        return None
    key = m.group(1)
    tag = css._TAG_TOKEN.match(key)
    return (
        tuple(css._CLASS_TOKEN.findall(key)),
        tuple(css._ID_TOKEN.findall(key)),
        tag.group(1).lower() if tag else None,
    )


selectors = st.lists(
    st.sampled_from(
        ["div", "P", ".a", "#b", ".c-d", " ", "\n", "\xa0", "\u2028", ">", "+", "~", "*", ":x",
         "[x=y]", "\u0130", "é", "-", "_", "1"]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(selector=selectors)
def test_the_rightmost_compound_read_backwards_is_the_one_searched_for(selector: str) -> None:
    assert _key_names.__wrapped__(selector) == _searched(selector)


def _shape(tree: object) -> object:
    """A parse tree as nested tuples of its classes and fields (reprs hide the namespace)."""
    if hasattr(tree, "__dict__") and type(tree).__module__.startswith("cssselect"):
        return (type(tree).__name__, *((k, _shape(v)) for k, v in sorted(vars(tree).items())))
    return tree


def _read_by_cssselect(selector: str) -> object:
    try:
        found = css_parse(selector)
    except (SelectorError, ValueError, TypeError):
        return None
    return _shape(found[0]) if len(found) == 1 else None


#: Selectors as sheets write them, and what cssselect's tokenizer reads otherwise: numbers
#: after a dot or a combinator, a lone hyphen or two, "*", commas, escapes, attributes,
#: pseudo-classes, blanks outside CSS's own and letters outside ASCII.
SELECTOR_PIECES = [
    "div", "P", "h1", "a", "-b", "--c", "_d", ".x", ".x-1", "._y", ".-z", "#i", "#1a", "#-",
    " ", "  ", "\t", "\n", "\x0c", "\x0b", "\xa0", ">", "+", "~", " > ", " + ", "*", ",", "1",
    ".5", "-", "\\31 a", "[x]", "[x=y]", ":hover", "::before", "é", "\u0130", "|", "/**/",
]  # fmt: skip

plain_selectors = st.lists(st.sampled_from(SELECTOR_PIECES), max_size=10).map("".join)


@settings(max_examples=800, deadline=None)
@given(selector=plain_selectors)
def test_a_plain_selector_is_read_as_cssselect_reads_it(selector: str) -> None:
    mine = _plain_parse(selector)
    if mine is not None:
        assert _shape(mine) == _read_by_cssselect(selector)
        assert mine.specificity() == css_parse(selector)[0].specificity()
    assert _shape(parsed.__wrapped__(selector)) == _read_by_cssselect(selector)


@settings(max_examples=800, deadline=None)
@given(selector=plain_selectors)
def test_what_a_chain_holds_xpath_can_say(selector: str) -> None:
    # the pooled match takes the specificity from the parse and writes no XPath: no selector
    # with a chain fails to translate, and its specificity is the translation's
    if chain_of.__wrapped__(selector) is not None:
        compiled = css._compile.__wrapped__(selector)
        found = parsed.__wrapped__(selector)
        assert compiled is not None and found is not None
        assert compiled[1] == found.specificity()


def test_real_selectors_are_read_as_cssselect_reads_them() -> None:
    pages = sorted((READABILITY / "pages").glob("*/source.html"))
    if not pages:
        pytest.skip("../shared/data/readability-pages is absent")
    style = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL | re.IGNORECASE)
    read = plain = 0
    for page in pages:
        for text in style.findall(page.read_text("utf-8", errors="replace")):
            for selector, _decls in style_rules(text):
                mine = _plain_parse(selector)
                read += 1
                if mine is not None:
                    plain += 1
                    assert _shape(mine) == _read_by_cssselect(selector)
                if chain_of.__wrapped__(selector) is not None:
                    assert css._compile.__wrapped__(selector) is not None
    assert read > 5000 and plain > 0.9 * read


#: What a declaration list turns on: separators, colons in values, blanks Python strips
#: (outside ASCII too) around the property, every hiding property in several cases and
#: inside longer names, !important, and letters outside ASCII in names and values.
DECLARATION_PIECES = [
    ";", ":", " ", "\t", "\n", "\xa0", "\u3000", "\u2028", "display", "DISPLAY", "Visibility",
    "position", "opacity", "clip", "clip-path", "left", "text-indent", "margin-left", "color",
    "none", "hidden", "fixed", "0", "-999px", "rect(0,0,0,0)", "!important", "!IMPORTANT",
    "\u0130", "\u212a", "é", "url(a:b)",
]  # fmt: skip

declaration_lists = st.lists(st.sampled_from(DECLARATION_PIECES), max_size=30).map("".join)


@needs_kernel
@settings(max_examples=800, deadline=None)
@given(text=declaration_lists)
def test_the_compiled_declarations_are_pythons(text: str) -> None:
    assert _css.hiding_declarations(text) == css._hiding_parts(text)
    with pytest.MonkeyPatch.context() as monkeypatch:
        compiled = declarations(text)
        monkeypatch.setattr(css, "_css_kernel", None)
        assert compiled == declarations(text)


def _declarations_before(text: str) -> css.Declarations:
    """css.declarations as it read every part itself, for the reference."""
    out: css.Declarations = {}
    for part in text.split(";"):
        if ":" not in part:
            continue
        prop, _, value = part.partition(":")
        prop = prop.strip().lower()
        if prop not in css.HIDE_STYLE_PROPS:
            continue
        value = value.strip().lower()
        important = "!important" in value
        value = value.replace("!important", "").strip()
        out[prop] = (value, important)
    return out


@settings(max_examples=400, deadline=None)
@given(text=declaration_lists)
def test_declarations_read_as_every_part_read_them(text: str) -> None:
    assert declarations(text) == _declarations_before(text)
