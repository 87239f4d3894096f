"""The compiled style-sheet scan (``visdup._native._css``) gives what Python gives.

``style_rules`` reads a page's own sheets for the rules that can hide something. The kernel
scans the braces and leaves out the rules whose body names none of the hiding properties;
Python reads the rest as before. Held to the Python scan on adversarial sheets (braces left
open or closed twice, at-rules in every case, comments, blanks outside ASCII, property names
in any case and with letters that lowercase oddly) and on real pages' sheets; and the
rightmost compound of a selector read backwards is the one the search at its end finds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visdup.content import css
from visdup.content.css import _key_names, _rule_bodies, declarations, style_rules

_css = pytest.importorskip("visdup._native._css", reason="style-sheet kernel not built")

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
    read = 0
    for page in pages:
        for text in style.findall(page.read_text("utf-8", errors="replace")):
            assert list(style_rules(text)) == _python_rules(text, monkeypatch)
            read += 1
    assert read > 100


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
